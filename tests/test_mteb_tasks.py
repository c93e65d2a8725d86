"""The table of known MTEB tasks (``harness/data/mteb_tasks.json``, ``bench/mteb_tasks_table.py``) and
``harness export mteb`` / ``harness compare`` for ``--dataset mteb:repo=R,revision=C`` runs: MTEB's own data,
served in its Hub layout by the Hub imitation (``harness.testing.HubServer``) and read from an empty data
folder, exports as MTEB's task (mteb's ``TaskResult.from_disk`` loads it with the run's main score); other
revisions, unknown repositories, forged identities and tasks whose figures MTEB computes otherwise are refused
with the reason (docs/mteb.md, "Runs on MTEB's own datasets")."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import harness
from harness import Context
from harness.cli import _Group
from harness.cli.compare import compare_cmd
from harness.cli.export import export_group
from harness.concepts.errors import HarnessError
from harness.evaluation.pipeline import evaluate
from harness.mteb.known_tasks import TABLE, match, mteb_key, read_table
from harness.mteb.result_files import export_mteb
from harness.testing import HubServer, require_data, shared_data_dir

ROOT = Path(__file__).resolve().parents[1]
SCIFACT_REV = "d56462d0e63a25450459c4f213e49ffdb866f7f9"  # MTEB's SciFact: mteb/scifact at this commit
OTHER_REV = "2" * 40
ARGUANA_REV = "c22ab2a51041ffd869aaddef7af8d8215647e41a"
SCIDOCSRR_REV = "39b8377811871075eed9de3b8a7e21aaa6acb3d8"
MIRACL_REV = "9c09abc13478308c27598f350e31d8f06b9b5481"
SCIFACT_NL_REV = "856d8dfc294b138856bbf3042450e3782321e44e"
METRICS = ["nDCG@10", "Recall@100", "MRR@10"]


@click.group(cls=_Group)  # the main CLI's group: HarnessError -> one message, exit status 2
def _cli() -> None:
    pass


_cli.add_command(compare_cmd)
_cli.add_command(export_group)


def _invoke(*args: str):
    return CliRunner().invoke(_cli, list(args), catch_exceptions=False)


# -- MTEB's Hub layout -------------------------------------------------------------------------------------------
def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


def layout(docs: dict[str, str], queries: dict[str, str], qrels: dict[str, dict[str, int]], *, split: str = "test",
           subset: str | None = None, top_ranked: dict[str, list[str]] | None = None) -> tuple[str, dict[str, bytes]]:
    """One subset's configs (card YAML lines) and files in MTEB's layout (``corpus``, ``queries``, qrels as
    ``default``; a subset ``S`` as ``S-corpus``, ``S-queries``, ``S-qrels``)."""
    p = f"{subset}-" if subset else ""
    tables = {f"{p}corpus": [{"_id": d, "title": "", "text": t} for d, t in docs.items()],
              f"{p}queries": [{"_id": q, "text": t} for q, t in queries.items()],
              (f"{p}qrels" if p else "default"): [{"query-id": q, "corpus-id": d, "score": g}
                                                  for q, row in qrels.items() for d, g in row.items()]}
    if top_ranked is not None:
        tables[f"{p}top_ranked"] = [{"query-id": q, "corpus-ids": ds} for q, ds in top_ranked.items()]
    card, files = [], {}
    for config, rows in tables.items():
        path = f"{config}/{split}.jsonl"
        card.append(f"- config_name: {config}\n  data_files:\n  - split: {split}\n    path: {path}\n")
        files[path] = _jsonl(rows)
    return "".join(card), files


def repository(*parts: tuple[str, dict[str, bytes]]) -> dict[str, bytes]:
    """A repository of the given subsets' configs and files, with its card."""
    files = {"README.md": ("---\nconfigs:\n" + "".join(c for c, _ in parts) + "---\n# MTEB layout\n").encode()}
    for _, f in parts:
        files.update(f)
    return files


TINY = layout({"d1": "cats purr softly", "d2": "dogs bark loudly", "d3": "birds sing"},
              {"q1": "purring cats", "q2": "barking dogs"}, {"q1": {"d1": 1}, "q2": {"d2": 1}})


def scifact_repository(data: Path) -> dict[str, bytes]:
    """mteb/scifact as MTEB reads it (corpus, queries and the test qrels), built from the BEIR SciFact files of
    the shared data folder through the harness's ``scifact`` dataset (the same 5,183 documents and 300 claims)."""
    ctx = Context.create(data_dir=str(data), cache_dir=str(data.parent / "cache-build"))
    ds = harness.load_dataset("scifact", ctx)
    docs = [{"_id": d.id, "title": d.title, "text": d.text} for d in ds.corpus.values()]
    queries = [{"_id": q.id, "text": q.text} for q in ds.queries["default"].values()]
    qrels = "query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, row in ds.qrels["default"].items() for d, g in row.items())
    card = ("---\nconfigs:\n- config_name: corpus\n  data_files:\n  - split: corpus\n    path: corpus.jsonl\n"
            "- config_name: queries\n  data_files:\n  - split: queries\n    path: queries.jsonl\n"
            "- config_name: default\n  data_files:\n  - split: test\n    path: qrels/test.tsv\n---\n# SciFact\n")
    return {"README.md": card.encode(), "corpus.jsonl": _jsonl(docs), "queries.jsonl": _jsonl(queries),
            "qrels/test.tsv": qrels.encode()}


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """The Hub imitation serving every repository of this module, and a fresh data folder per run."""
    root = tmp_path_factory.mktemp("hub")
    with HubServer() as server, pytest.MonkeyPatch.context() as mp:
        server.downloading(mp, root / "hf")
        mp.delenv("HARNESS_DISABLE_PLUGIN_AUTOLOAD", raising=False)
        yield server


def _run(hub_server: HubServer, tmp: Path, name: str, spec: str, **options: Any) -> Path:
    """``harness eval --dataset SPEC`` from an empty data folder; the results folder."""
    (tmp / f"data-{name}").mkdir()
    ctx = Context.create(data_dir=str(tmp / f"data-{name}"), cache_dir=str(tmp / "cache"))
    options.setdefault("retriever", "bm25")  # None: the task's own first stage
    options.setdefault("metrics", METRICS)
    evaluate(dataset=spec, output=str(tmp / name), progress=False, context=ctx, **options)
    return tmp / name


@pytest.fixture(scope="module")
def scifact_run(hub, tmp_path_factory):
    """A BM25 run on mteb/scifact at MTEB's SciFact revision."""
    data = require_data(shared_data_dir(ROOT), "scifact/scifact_csv.zip", "scifact/qrels.beir-v1.0.0-scifact.test.txt",
                        "scifact/topics.beir-v1.0.0-scifact.test.tsv.gz", fetch="scifact")
    tmp = tmp_path_factory.mktemp("scifact")
    hub.add_repo("mteb/scifact", scifact_repository(data), commit=SCIFACT_REV)
    return _run(hub, tmp, "run", f"mteb:repo=mteb/scifact,revision={SCIFACT_REV}")


def _results(run: Path) -> dict[str, Any]:
    return json.loads((run / "results.json").read_text(encoding="utf-8"))


def _leaderboard(folder: Path, task: str = "SciFact", revision: str = SCIFACT_REV) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / f"{task}.json"
    f.write_text(json.dumps({"dataset_revision": revision, "task_name": task, "mteb_version": "2.18.11",
                             "scores": {"test": [{"ndcg_at_10": 0.6912, "main_score": 0.6912, "hf_subset": "default",
                                                  "languages": ["eng-Latn"]}]},
                             "evaluation_time": 1.0, "kg_co2_emissions": None}), encoding="utf-8")
    return f


def _export_refused(run: Path, out: Path, *said: str) -> str:
    r = _invoke("export", "mteb", str(run), "-o", str(out), "--model", "org/m", "--revision", "r1")
    assert r.exit_code == 2, r.output
    assert r.output.startswith("Error: cannot export to MTEB's format") and "Traceback" not in r.output
    for text in said:
        assert text in r.output, (text, r.output)
    assert not out.exists()  # nothing written
    return r.output


# -- the table ---------------------------------------------------------------------------------------------------
def test_the_table_is_what_the_generator_makes_from_the_installed_mteb():
    from importlib.metadata import PackageNotFoundError, version

    try:
        installed = version("mteb")
    except PackageNotFoundError:
        pytest.skip("mteb is not installed: the table cannot be regenerated here")
    table = read_table()
    if installed != table.mteb_version:
        pytest.skip(f"mteb {installed} is installed; the table was generated from mteb {table.mteb_version}")
    spec = importlib.util.spec_from_file_location("mteb_tasks_table", ROOT / "bench" / "mteb_tasks_table.py")
    generator = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(generator)
    assert TABLE.read_text(encoding="utf-8") == generator.generate()


def test_the_table_gives_scifact_as_the_scifact_task_pins_it():
    """The table's SciFact row is the pin tasks/scifact.toml carries (transcribed from MTEB separately)."""
    pinned = harness.load_task("scifact").mteb
    found = match("mteb/scifact", SCIFACT_REV, "test", "default")
    assert found.task is not None and found.task.name == pinned["task_name"] == "SciFact"
    assert (found.task.dataset, found.task.revision, found.task.main_score) == (
        pinned["dataset"], pinned["dataset_revision"], pinned["main_score"])
    assert match("mteb/scifact", OTHER_REV, "test", "default").task is None
    assert match("mteb/scifact", SCIFACT_REV, "train", "default").task is None
    assert mteb_key("nDCG@10", found.task.k_values) == "ndcg_at_10" and mteb_key("nDCG@7", found.task.k_values) is None
    assert mteb_key("MAP@1000", found.task.k_values) == "map_at_1000" and mteb_key("P@5", (5,)) == "precision_at_5"


def test_an_abbreviated_revision_in_mteb_matches_the_full_commit_it_begins():
    ifir = next(t for t in read_table().tasks if t.name == "IFIRFiQA")
    assert len(ifir.revision) == 7
    assert ifir.revision_matches(ifir.revision + "0" * 33) and not ifir.revision_matches("f" * 40)


# -- MTEB's SciFact ----------------------------------------------------------------------------------------------
def test_a_run_on_mteb_scifact_exports_as_scifact_and_mteb_reads_it(scifact_run, tmp_path):
    mteb = pytest.importorskip("mteb", reason="mteb is not installed: its TaskResult.from_disk cannot be run")
    ran = _results(scifact_run)
    assert ran["dataset"]["repo"] == "mteb/scifact" and ran["dataset"]["revision"] == SCIFACT_REV
    assert "mteb" not in ran["task"]  # no block is claimed: the identity decides
    r = _invoke("export", "mteb", str(scifact_run), "-o", str(tmp_path), "--model", "org/bm25", "--revision", "r1")
    assert r.exit_code == 0, r.output
    path = tmp_path / "org__bm25" / "r1" / "SciFact.json"
    loaded = mteb.TaskResult.from_disk(path)
    assert loaded.task_name == "SciFact" and loaded.dataset_revision == SCIFACT_REV
    entry = loaded.scores["test"][0]
    assert entry["main_score"] == pytest.approx(ran["metrics"]["nDCG@10"], abs=5e-7)
    assert entry["ndcg_at_10"] == entry["main_score"]
    assert entry["recall_at_100"] == pytest.approx(ran["metrics"]["Recall@100"], abs=5e-7)
    assert entry["mrr_at_10"] == pytest.approx(ran["metrics"]["MRR@10"], abs=5e-7)
    # mteb's own check of the file against its SciFact task: every split and subset the task scores is there
    checked = loaded.validate_and_filter_scores(mteb.get_task("SciFact"))
    assert checked.get_score() == pytest.approx(ran["metrics"]["nDCG@10"], abs=5e-7)
    # the same bytes as the harness's own scifact task: its published BM25 figure
    assert round(ran["metrics"]["nDCG@10"], 4) == 0.6827


def test_the_mteb_scifact_run_compares_with_scifacts_leaderboard_file(scifact_run, tmp_path):
    r = _invoke("compare", str(scifact_run), str(_leaderboard(tmp_path / "lb")), "--metric", "nDCG@10", "-B", "50")
    assert r.exit_code == 0, r.output
    assert any("(MTEB)*" in line and "0.6912" in line for line in r.output.splitlines())


@pytest.mark.parametrize("forge, said", [
    (lambda d: d["dataset"].update(revision=OTHER_REV), "dataset.revision is '2222"),
    (lambda d: (d["dataset"].update(revision=OTHER_REV),
                d["task"].update(dataset=f"mteb:repo=mteb/scifact,revision={OTHER_REV}")),
     "not a file of mteb/mteb/scifact/2222"),
    (lambda d: d["dataset"].update(files=[]), "dataset.files lists no file"),
    (lambda d: d["dataset"]["files"][0].update(sha256="x"), "not a sha256"),
    (lambda d: d["dataset"].update(repo="mteb/arguana"), "dataset.repo is 'mteb/arguana'"),
    (lambda d: d["task"].update(mteb={**harness.load_task("scifact").mteb, "task_name": "ArguAna"}),
     "task.mteb.task_name is 'ArguAna', not 'SciFact'"),
])
def test_a_forged_identity_is_refused(scifact_run, tmp_path, forge, said):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(scifact_run, run)
    data = _results(run)
    forge(data)
    (run / "results.json").write_text(json.dumps(data), encoding="utf-8")
    _export_refused(run, tmp_path / "out", "results.json", said)
    r = _invoke("compare", str(run), str(_leaderboard(tmp_path / "lb")), "--metric", "nDCG@10", "-B", "50")
    assert r.exit_code == 2 and said in r.output and "(MTEB)" not in r.output


def test_another_revision_of_mteb_scifact_is_refused(hub, tmp_path):
    hub.add_repo("mteb/scifact", repository(TINY), commit=OTHER_REV)
    run = _run(hub, tmp_path, "other", f"mteb:repo=mteb/scifact,revision={OTHER_REV}")
    _export_refused(run, tmp_path / "out", "differs from MTEB's SciFact", f"at {SCIFACT_REV}",
                    "another revision is other data")
    r = _invoke("compare", str(run), str(_leaderboard(tmp_path / "lb")), "--metric", "nDCG@10", "-B", "50")
    assert r.exit_code == 2 and "not comparable" in r.output and "(MTEB)" not in r.output


def test_a_repository_not_in_the_table_is_refused(hub, tmp_path):
    hub.add_repo("org/scifact-copy", repository(TINY), commit=SCIFACT_REV)
    run = _run(hub, tmp_path, "copy", f"mteb:repo=org/scifact-copy,revision={SCIFACT_REV}")
    out = _export_refused(run, tmp_path / "out", "mteb:repo=org/scifact-copy is the dataset of no MTEB task",
                          f"mteb {read_table().mteb_version}")
    assert "SciFact.json" not in out
    r = _invoke("compare", str(run), str(_leaderboard(tmp_path / "lb")), "--metric", "nDCG@10", "-B", "50")
    assert r.exit_code == 2 and "none of the tasks of the runs compared" in r.output


# -- how MTEB computes a task's figures ----------------------------------------------------------------------------
def test_a_task_that_ignores_the_querys_own_document(hub, tmp_path):
    """ArguAna drops a retrieved document whose id is the query's: a run that ranks one is refused, a run that
    ranks none exports (the run files are read to tell)."""
    own = layout({"a1": "taxes should rise", "a2": "taxes should fall", "a3": "cats"},
                 {"a1": "taxes should rise"}, {"a1": {"a2": 1}})
    hub.add_repo("mteb/arguana", repository(own), commit=ARGUANA_REV)
    run = _run(hub, tmp_path, "own", f"mteb:repo=mteb/arguana,revision={ARGUANA_REV}")
    assert any(line.split()[:3] == ["a1", "Q0", "a1"] for line in (run / "run.trec").read_text().splitlines())
    _export_refused(run, tmp_path / "out", "differs from MTEB's ArguAna", "ignore_identical_ids",
                    "ranks the query's own id 1 times (query 'a1')")


def test_a_task_without_own_ids_in_the_run_exports(hub, tmp_path):
    with HubServer() as other, pytest.MonkeyPatch.context() as mp:  # the same repository and commit, other bytes
        other.downloading(mp, tmp_path / "hf")
        other.add_repo("mteb/arguana", repository(TINY), commit=ARGUANA_REV)
        run = _run(other, tmp_path, "clean", f"mteb:repo=mteb/arguana,revision={ARGUANA_REV}")
    written = export_mteb([run], tmp_path / "out", model="org/m", revision="r1")
    data = json.loads(written[0].read_text(encoding="utf-8"))
    assert data["task_name"] == "ArguAna" and data["dataset_revision"] == ARGUANA_REV
    assert data["scores"]["test"][0]["main_score"] == round(_results(run)["metrics"]["nDCG@10"], 6)


def test_a_reranking_task_exports_only_a_run_over_its_candidates(hub, tmp_path):
    mteb = pytest.importorskip("mteb", reason="mteb is not installed: its TaskResult.from_disk cannot be run")
    docs = {"d1": "cats purr softly", "d2": "dogs bark loudly", "d3": "birds sing", "d4": "cats and dogs"}
    part = layout(docs, {"q1": "purring cats", "q2": "barking dogs"}, {"q1": {"d1": 1}, "q2": {"d2": 1}},
                  top_ranked={"q1": ["d1", "d3"], "q2": ["d2", "d4", "d3"]})
    hub.add_repo("mteb/SciDocsRR", repository(part), commit=SCIDOCSRR_REV)
    spec = f"mteb:repo=mteb/SciDocsRR,revision={SCIDOCSRR_REV}"
    whole = _run(hub, tmp_path, "whole", spec, metrics=["MAP@1000", "nDCG@10"])
    _export_refused(whole, tmp_path / "out", "differs from MTEB's SciDocsRR", "top_ranked", "first stage was 'bm25'")
    for name, retriever in (("pooled", "candidates"), ("default", None)):  # by default a dataset's candidates rank
        pooled = _run(hub, tmp_path, name, spec, retriever=retriever, metrics=["MAP@1000", "nDCG@10"])
        written = export_mteb([pooled], tmp_path / f"out-{name}", model="org/m", revision="r1")
        loaded = mteb.TaskResult.from_disk(written[0])
        main = loaded.scores["test"][0]["main_score"]
        assert loaded.task_name == "SciDocsRR" and loaded.scores["test"][0]["map_at_1000"] == main
        assert main == pytest.approx(_results(pooled)["metrics"]["MAP@1000"], abs=5e-7)


def test_the_subsets_of_a_multilingual_task_become_one_file(hub, tmp_path):
    mteb = pytest.importorskip("mteb", reason="mteb is not installed: its TaskResult.from_disk cannot be run")
    ar = layout({"1": "قطط", "2": "كلاب"}, {"q": "قطط"}, {"q": {"1": 1}}, split="dev", subset="ar")
    bn = layout({"1": "বিড়াল", "2": "কুকুর"}, {"q": "কুকুর"}, {"q": {"2": 1}}, split="dev", subset="bn")
    hub.add_repo("mteb/MIRACLRetrieval", repository(ar, bn), commit=MIRACL_REV)
    runs = [_run(hub, tmp_path, s, f"mteb:repo=mteb/MIRACLRetrieval,revision={MIRACL_REV},split=dev,subset={s}")
            for s in ("ar", "bn")]
    written = export_mteb(runs, tmp_path / "out", model="org/m", revision="r1")
    assert [p.name for p in written] == ["MIRACLRetrieval.json", "model_meta.json"]
    loaded = mteb.TaskResult.from_disk(written[0])
    rows = {e["hf_subset"]: e for e in loaded.scores["dev"]}
    assert set(rows) == {"ar", "bn"} and rows["ar"]["languages"] == ["ara-Arab"]
    for subset, run in zip(("ar", "bn"), runs):
        assert rows[subset]["main_score"] == round(_results(run)["metrics"]["nDCG@10"], 6)
    with pytest.raises(HarnessError, match=r"both give MTEB task MIRACLRetrieval \(split dev, subset ar\)"):
        export_mteb([runs[0], runs[0]], tmp_path / "twice", model="org/m")


def test_a_task_mteb_loads_with_its_own_code_is_refused(hub, tmp_path):
    task = next(t for t in read_table().tasks if t.name == "ChatDoctorRetrieval")
    assert "load_data" in task.own_code and len(task.revision) == 40
    hub.add_repo(task.dataset, repository(TINY), commit=task.revision)
    run = _run(hub, tmp_path, "own-code", f"mteb:repo={task.dataset},revision={task.revision}")
    _export_refused(run, tmp_path / "out", "differs from MTEB's ChatDoctorRetrieval",
                    "loads its data with its own code")


def test_data_several_mteb_tasks_share_is_refused(hub, tmp_path):
    """SciFact-NL and SciFact-NL.v2 read the same files (they differ in the model prompt)."""
    hub.add_repo("clips/beir-nl-scifact", repository(TINY), commit=SCIFACT_NL_REV)
    run = _run(hub, tmp_path, "nl", f"mteb:repo=clips/beir-nl-scifact,revision={SCIFACT_NL_REV}")
    _export_refused(run, tmp_path / "out", "several MTEB tasks (SciFact-NL, SciFact-NL.v2)")
