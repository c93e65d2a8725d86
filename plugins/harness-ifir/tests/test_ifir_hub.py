"""IFIR-EVAL from an empty data folder through a loopback imitation of the Hugging Face Hub
(``harness.testing.HubServer`` at ``HF_ENDPOINT``): ``songtingyu/IFIR`` in the hub's layout (a folder per
subset with ``<subset>-corpus.jsonl`` in LFS, ``<subset>-query.jsonl``, ``<subset>-qrel.tsv``,
``test_data.json``; ``.gitattributes``, ``.gitignore`` and a README at the top), tiny content made from
the hand-made fixture. The CLI runs in a subprocess so the Hub client reads ``HF_ENDPOINT`` at import.

No full commit id of the real repository is pinned (docs/ifir.md): a plain download asks the Hub which
commit ``main`` names and fetches that commit; the other commands name the commit the imitation serves
with ``revision=``."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from harness import Context, PluginHost, evaluate
from harness.testing import HubServer

from harness_ifir import SUBSETS

FIXTURE = Path(__file__).resolve().parent / "fixture"
COMMIT = "5e1f0c0ffee0123456789abcdef0123456789abc"
NAMES = ("{s}-corpus.jsonl", "{s}-query.jsonl", "{s}-qrel.tsv", "test_data.json")


def hub_files() -> dict[str, bytes]:
    """Every subset folder (fiqa's fixture content under each subset's names) and the top-level files."""
    src = FIXTURE / "ifir" / "fiqa"
    files = {".gitattributes": b"*.jsonl filter=lfs diff=lfs merge=lfs -text\n", ".gitignore": b".DS_Store\n",
             "README.md": b"---\nlicense: mit\n---\n# IFIR\n"}
    for s in SUBSETS:
        for pattern, fixture_name in zip(NAMES, ("fiqa-corpus.jsonl", "fiqa-query.jsonl", "fiqa-qrel.tsv",
                                                 "test_data.json"), strict=True):
            files[f"{s}/{pattern.format(s=s)}"] = (src / fixture_name).read_bytes()
    return files


@pytest.fixture
def hub():
    with HubServer() as server:
        server.add_repo("songtingyu/IFIR", hub_files(), commit=COMMIT,
                        lfs=[f"{s}/{s}-corpus.jsonl" for s in SUBSETS])  # the corpora are LFS objects upstream
        yield server


@pytest.fixture
def shell(hub, tmp_path):
    if "ifir:fiqa" not in PluginHost().registry.components["task"]:
        pytest.skip("the CLI sees installed plugins only: pip install -e plugins/harness-ifir --no-deps")
    return hub.shell(tmp_path)


def _listing(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_data_download_fiqa_then_eval_records_what_was_read(hub, shell, tmp_path, registry):
    res = shell("data", "download", f"ifir:fiqa:revision={COMMIT}")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["ifir:fiqa: 4 file(s) ready"]
    folder = shell.data / "ifir" / f"fiqa@{COMMIT}"
    assert _listing(shell.data) == sorted(f"ifir/fiqa@{COMMIT}/{n.format(s='fiqa')}" for n in NAMES)
    served = hub_files()
    for name in NAMES:
        assert (folder / name.format(s="fiqa")).read_bytes() == served[f"fiqa/{name.format(s='fiqa')}"]
    gets = {r.file for r in hub.requests if r.method == "GET" and r.file}
    assert gets == {f"fiqa/{n.format(s='fiqa')}" for n in NAMES}
    assert any(r.origin == "lfs" for r in hub.file_requests("fiqa/fiqa-corpus.jsonl", method="GET"))

    hub.reset_counters()  # the evaluation reads the folder in place: nothing fetched again
    out = tmp_path / "out"
    res = shell("eval", "--task", f"ifir:fiqa:revision={COMMIT}", "--retriever", "bm25", "-o", str(out), "-q")
    assert res.returncode == 0, res.stderr
    assert not [r for r in hub.requests if r.method == "GET" and r.file]
    saved = json.loads((out / "results.json").read_text())
    ident = saved["dataset"]
    assert ident["revision"] == COMMIT
    assert {f["path"]: f["sha256"] for f in ident["files"]} == {
        f"ifir/fiqa@{COMMIT}/{n.format(s='fiqa')}": hashlib.sha256(served[f"fiqa/{n.format(s='fiqa')}"]).hexdigest()
        for n in NAMES}
    # the same figures as the fixture read in place
    context = Context.create(registry=registry, data_dir=FIXTURE)
    local = evaluate("ifir:fiqa", retriever="bm25", progress=False, context=context)
    for key in ("nDCG@20[query]", "nDCG@20[instructed]"):
        assert saved["metrics"][key] == pytest.approx(local.metrics[key]), key


def test_data_download_without_a_pin_fetches_the_commit_main_names(hub, shell, tmp_path):
    """``harness data download ifir:fiqa``: main is resolved once to its full commit (said on stderr), every
    file is fetched at that commit (never at the branch), into ``ifir/fiqa/``; eval then reads it in place."""
    later = dict(hub_files())
    later["fiqa/test_data.json"] = json.dumps(json.loads(later["fiqa/test_data.json"]), indent=1).encode()
    head = hub.add_repo("songtingyu/IFIR", later, commit="8" * 40)  # main moves to a later upload
    res = shell("data", "download", "ifir:fiqa")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["ifir:fiqa: 4 file(s) ready"]
    assert f"songtingyu/IFIR: no commit is pinned in this release (no full commit id of songtingyu/IFIR could be " \
        f"verified for this release; see docs/ifir.md); main is commit {head} now: fetching that commit" in res.stderr
    assert _listing(shell.data) == sorted(f"ifir/fiqa/{n.format(s='fiqa')}" for n in NAMES)
    assert (shell.data / "ifir" / "fiqa" / "test_data.json").read_bytes() == later["fiqa/test_data.json"]
    resolves = [r.path for r in hub.requests if "/resolve/" in r.path and r.origin == "hub"]
    assert resolves and all(f"/resolve/{head}/" in p for p in resolves), resolves
    hub.reset_counters()
    out = tmp_path / "out"
    res = shell("eval", "--task", "ifir:fiqa", "--retriever", "bm25", "-o", str(out), "-q")
    assert res.returncode == 0, res.stderr
    assert hub.requests == []  # in place: the Hub is not asked again
    files = json.loads((out / "results.json").read_text())["dataset"]["files"]
    assert {f["path"]: f["sha256"] for f in files}["ifir/fiqa/test_data.json"] == hashlib.sha256(
        later["fiqa/test_data.json"]).hexdigest()


def test_data_download_ifir_fetches_the_seven_subsets(hub, shell):
    res = shell("data", "download", f"ifir:revision={COMMIT}")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [f"ifir:{s}: 4 file(s) ready" for s in SUBSETS]
    assert _listing(shell.data) == sorted(f"ifir/{s}@{COMMIT}/{n.format(s=s)}" for s in SUBSETS for n in NAMES)
    # what the repository holds beyond the subsets' files is never asked for
    assert not [r for r in hub.requests if r.file in (".gitattributes", ".gitignore", "README.md")]


def test_two_uploads_are_told_apart(hub, shell, tmp_path):
    """A later upload (test_data.json re-uploaded, the qrel TSV dropped): both revisions download (the
    identity-only TSV is optional), each into its own folder, and results.json tells them apart."""
    later = {k: v for k, v in hub_files().items() if k != "fiqa/fiqa-qrel.tsv"}
    later["fiqa/test_data.json"] = json.dumps(json.loads(later["fiqa/test_data.json"]), separators=(",", ":")).encode()
    commit2 = hub.add_repo("songtingyu/IFIR", later, commit="7" * 40, branch=None)
    idents = {}
    for rev in (COMMIT, commit2):
        res = shell("eval", "--task", f"ifir:fiqa:revision={rev}", "--retriever", "bm25", "-o", str(tmp_path / rev),
                    "-q")
        assert res.returncode == 0, res.stderr
        idents[rev] = json.loads((tmp_path / rev / "results.json").read_text())["dataset"]
    assert "fiqa-qrel.tsv: not published at its source, skipped" in res.stderr
    test_data = {rev: next(f["sha256"] for f in ident["files"] if f["path"].endswith("test_data.json"))
                 for rev, ident in idents.items()}
    assert test_data == {COMMIT: hashlib.sha256(hub_files()["fiqa/test_data.json"]).hexdigest(),
                         commit2: hashlib.sha256(later["fiqa/test_data.json"]).hexdigest()}
    assert test_data[COMMIT] != test_data[commit2]
    assert [f["path"].rsplit("/", 1)[1] for f in idents[commit2]["files"]] == [
        "fiqa-corpus.jsonl", "test_data.json", "fiqa-query.jsonl"]
