"""InfoSearch from an empty data folder through a loopback imitation of the Hugging Face Hub
(``harness.testing.HubServer``, reached through ``HF_ENDPOINT``): each dimension repository holds
exactly the files the real ``jianqunZ/<Dim>-v1`` repositories hold (no ``top_ranked.jsonl``), at the
commit the plugin pins. The CLI runs in a subprocess, as a user's shell runs it, so the Hub client
reads ``HF_ENDPOINT`` as it does at import time.

Length-v1 has no usable pin (the official metadata gives it Language-v1's commit): the imitation serves
it on ``main`` at a commit of its own, which a download resolves and fetches (docs/infosearch.md)."""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path

import pytest
from harness import Context, evaluate
from harness.testing import HubServer, plugin_registry

import harness_infosearch
from harness_infosearch import dimensions

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "data"
LANG = FIXTURE / "infosearch" / "Language-v1"
READ = ("corpus.jsonl", "queries.jsonl", "qrels_og/test.jsonl", "qrels_changed/test.jsonl",
        "qrels_reversed/test.jsonl")


def _installed() -> bool:
    return any(ep.value == "harness_infosearch" for ep in metadata.entry_points(group="harness"))


pytestmark = pytest.mark.skipif(not _installed(), reason="the CLI sees installed plugins only: "
                                                         "pip install -e plugins/harness-infosearch")


def hub_repository(dim: dimensions.Dimension) -> dict[str, bytes]:
    """A dimension repository in the hub's layout: the five tables, a TSV beside each qrels table,
    ``empty_scores.json`` and a README (tiny content: the Language fixture, the dimension named in it)."""
    files: dict[str, bytes] = {}
    for name in READ:
        files[name] = (LANG / name).read_bytes()
        if name.startswith("qrels_"):
            rows = [json.loads(line) for line in files[name].decode().splitlines() if line.strip()]
            tsv = "query-id\tcorpus-id\tscore\n" + "".join(
                f"{r['query-id']}\t{r['corpus-id']}\t{r['score']}\n" for r in rows)
            files[name.replace(".jsonl", ".tsv")] = tsv.encode()
    files["empty_scores.json"] = b"{}\n"
    files["README.md"] = f"---\nconfigs: []\n---\n# {dim.hub_name}\n".encode()
    return files


@pytest.fixture
def hub():
    with HubServer() as server:
        server.commits = {dim.hub_name: server.add_repo(dim.hub_repo, hub_repository(dim),
                                                        commit=dimensions.REVISIONS.get(dim.hub_name))
                          for dim in dimensions.BUILTIN_DIMENSIONS}  # Length's: the one its main names
        yield server


@pytest.fixture
def shell(hub, tmp_path):
    """Run ``harness ...`` in a subprocess with HF_ENDPOINT at the imitation and an empty data folder."""
    return hub.shell(tmp_path)


def _get_paths(hub: HubServer) -> set[str]:
    return {r.path for r in hub.requests if r.method == "GET" and r.file is not None}


def _resolve(hub: HubServer, dim: dimensions.Dimension, name: str) -> str:
    """The path of a file at its dimension's pin (for unpinned Length: the commit ``main`` names)."""
    return f"/datasets/{dim.hub_repo}/resolve/{hub.commits[dim.hub_name]}/{name}"


def test_eval_language_succeeds_on_the_first_run(hub, shell, tmp_path):
    out = tmp_path / "out"
    res = shell("eval", "--task", "infosearch:language", "--retriever", "bm25", "-o", str(out), "-q")
    assert res.returncode == 0, res.stderr
    language = next(d for d in dimensions.BUILTIN_DIMENSIONS if d.name == "language")
    # exactly the five tables were fetched, at the pinned commit: no top_ranked.jsonl was asked for
    assert _get_paths(hub) == {_resolve(hub, language, name) for name in READ}
    assert not any("top_ranked" in r.path for r in hub.requests)
    folder = shell.data / "infosearch" / "Language-v1"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == sorted(READ)
    # results.json names the source and the sha256 of every byte read, which are the served bytes
    saved = json.loads((out / "results.json").read_text())["dataset"]
    assert saved["repo"] == "jianqunZ/Language-v1" and saved["revision"] == dimensions.REVISIONS["Language-v1"]
    served = hub_repository(language)
    assert {f["path"]: (f["sha256"], f["size"]) for f in saved["files"]} == {
        f"infosearch/Language-v1/{name}": (hashlib.sha256(served[name]).hexdigest(), len(served[name]))
        for name in READ}
    # the figures are those of the same tables read in place (the worked-example fixture)
    local = evaluate("infosearch:language", retriever="bm25", progress=False,
                     context=Context.create(registry=plugin_registry(harness_infosearch), data_dir=FIXTURE))
    metrics = json.loads((out / "results.json").read_text())["metrics"]
    for key in ("WISE", "SICR", "p-MRR", "nDCG@10[og]", "nDCG@10[changed]", "R_ins"):
        assert metrics[key] == pytest.approx(local.metrics[key]), key
    # a second run fetches nothing
    hub.reset_counters()
    again = shell("eval", "--task", "infosearch:language", "--retriever", "bm25", "-o", str(tmp_path / "out2"), "-q")
    assert again.returncode == 0, again.stderr
    assert _get_paths(hub) == set()


def test_data_download_infosearch_fetches_every_dimension_in_one_command(hub, shell):
    res = shell("data", "download", "infosearch")
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [f"infosearch:{d.name}: 5 file(s) ready" for d in dimensions.BUILTIN_DIMENSIONS]
    assert _get_paths(hub) == {_resolve(hub, d, name) for d in dimensions.BUILTIN_DIMENSIONS for name in READ}
    for dim in dimensions.BUILTIN_DIMENSIONS:
        folder = shell.data / "infosearch" / dim.hub_name
        assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == sorted(READ)
        served = hub_repository(dim)
        for name in READ:
            assert (folder / name).read_bytes() == served[name]
    # every table is in place: the tasks list nothing more to fetch, and a second download fetches nothing
    hub.reset_counters()
    res = shell("data", "download", "infosearch:keyword")
    assert res.returncode == 0 and "nothing to download" in res.stdout
    assert _get_paths(hub) == set()


def test_an_unknown_revision_is_one_message(hub, shell):
    rev = "f" * 40
    res = shell("data", "download", f"infosearch:source:revision={rev}")
    assert res.returncode == 2 and res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
    assert "jianqunZ/Source-v1" in res.stderr and rev in res.stderr


def test_eval_the_suite_succeeds_on_the_first_run(hub, shell, tmp_path):
    out = tmp_path / "all"
    res = shell("eval", "--task", "infosearch", "--retriever", "bm25", "-o", str(out), "-q")
    assert res.returncode == 0, res.stderr
    assert _get_paths(hub) == {_resolve(hub, d, name) for d in dimensions.BUILTIN_DIMENSIONS for name in READ}
    for dim in dimensions.BUILTIN_DIMENSIONS:
        saved = json.loads((out / f"infosearch_{dim.name}" / "results.json").read_text())["dataset"]
        assert saved.get("revision") == dimensions.REVISIONS.get(dim.hub_name) and saved["repo"] == dim.hub_repo
