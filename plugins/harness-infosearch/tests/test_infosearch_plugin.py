"""The InfoSearch plugin end to end on the hand-made Language fixture (the paper's Table 13
example in the hub layout): loading (JSONL and Parquet), tasks, the three TREC runs, download from a
loopback mirror, the ``infosearch`` suite, and the CLI's Table-1 row."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from importlib import metadata
from pathlib import Path

import pytest
from harness import Context, DataError, evaluate
from harness.formats import read_trec_run
from harness.testing import plugin_registry

import harness_infosearch
from harness_infosearch import dimensions
from harness_infosearch.data import load_infosearch_dataset
from harness_infosearch.layout import has_tables
from harness_infosearch.metrics import WISE

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "data"
LANG = FIXTURE / "infosearch" / "Language-v1"


@pytest.fixture
def registry():
    return plugin_registry(harness_infosearch)


@pytest.fixture
def context(registry):
    """The fixture folder as the data folder, in this evaluation's context only."""
    return Context.create(registry=registry, data_dir=FIXTURE)


def test_fixture_loads_three_modes():
    ds = load_infosearch_dataset(LANG)
    assert ds.modes == ["og", "changed", "reversed"]
    assert len(ds.corpus) == 8 and ds.corpus["lang-zh"].title == "糖尿病"
    q = ds.queries["changed"]["lang-1-zh"]
    assert q.text == "What is diabetes?"  # query text stays apart from the instruction
    assert q.instruction == "Tell me what diabetes is. Please use Chinese."
    assert ds.queries["og"]["lang-1-zh"].instruction == ""
    assert ds.queries["reversed"]["lang-1-en"].instruction.startswith("I'd rather")
    assert q.meta["group"] == "What is diabetes?"
    assert ds.qrels["changed"]["lang-1-zh"] == {"lang-zh": 1, "lang-en": 0}
    assert ds.qrels["reversed"]["lang-1-zh"] == {"lang-zh": 0, "lang-en": 1}
    assert ds.candidates["og"].doc_ids("lang-1-en")[0] == "lang-en-neg3"
    assert ds.validate() == {}
    assert len(ds.identity["files"]) == 6 and all(f["sha256"] for f in ds.identity["files"])


def test_parquet_export_reads_the_same(tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    from harness.formats import iter_jsonl_objects

    def to_parquet(src: Path, dst: Path) -> None:
        dst.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist([o for _, o in iter_jsonl_objects(src)]), dst)

    to_parquet(LANG / "corpus.jsonl", tmp_path / "corpus.parquet")
    to_parquet(LANG / "queries.jsonl", tmp_path / "queries" / "test-00000-of-00001.parquet")  # HF shard layout
    for mode in ("og", "changed", "reversed"):
        to_parquet(LANG / f"qrels_{mode}" / "test.jsonl", tmp_path / f"qrels_{mode}" / "test.parquet")
    assert has_tables(tmp_path)
    a, b = load_infosearch_dataset(LANG), load_infosearch_dataset(tmp_path)
    assert a.corpus == b.corpus and a.qrels == b.qrels and a.queries == b.queries
    assert b.candidates is None  # no top_ranked table in this export


def test_language_end_to_end_three_trec_runs(context, tmp_path):
    res = evaluate("infosearch:language", retriever="bm25", output=str(tmp_path), context=context, progress=False)
    m = res.metrics
    for key in ("nDCG@10[og]", "nDCG@10[changed]", "nDCG@10[reversed]", "MRR@1[og]", "Robustness@10[changed]",
                "p-MRR", "WISE", "WISE-ideal", "WISE-per", "SICR", "R_ori", "R_ins", "R_rev"):
        assert key in m and m[key] == m[key], key
    assert res.runs["changed"] is not res.runs["og"]
    # the query text the retriever saw: "{text} {instruction}", as the official code forms it
    assert res.task.query_format == "{text} {instruction}"
    # every figure can be recomputed from the three TREC files
    runs = {mode: read_trec_run(tmp_path / f"run.{mode}.trec") for mode in ("og", "changed", "reversed")}
    from harness import MetricInput

    again = WISE().compute(MetricInput(runs, dict(res.dataset.qrels), res.dataset))
    assert again.aggregate["WISE"] == pytest.approx(m["WISE"])
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["dataset"]["modes"] == ["og", "changed", "reversed"]


def test_metric_options_report_side_by_side(context):
    res = evaluate("infosearch:language", retriever="bm25", context=context, progress=False,
                   metrics=["WISE", "WISE:first_case=paper", "WISE@10", "SICR", "SICR:rank1=paper", "MRR@1"])
    assert {"WISE", "WISE-paper", "WISE@10", "WISE@10-per", "SICR", "SICR-paper", "MRR@1[changed]"} <= set(res.metrics)


#: what each hub repository jianqunZ/<Dim>-v1 holds (the InfoSearch notes): no top_ranked.jsonl
HUB_REPO_FILES = ("corpus.jsonl", "queries.jsonl", "qrels_og/test.jsonl", "qrels_og/test.tsv",
                  "qrels_changed/test.jsonl", "qrels_changed/test.tsv", "qrels_reversed/test.jsonl",
                  "qrels_reversed/test.tsv", "empty_scores.json", "README.md")
READ_BY_THE_LOADER = {"corpus.jsonl", "queries.jsonl", "qrels_og/test.jsonl", "qrels_changed/test.jsonl",
                      "qrels_reversed/test.jsonl"}


def test_tasks_name_the_hub_files(registry, tmp_path):
    empty = Context.create(registry=registry, data_dir=tmp_path)  # the task lists the hub files to fetch
    task = registry.create("task", "infosearch:keyword", empty)
    assert task.dataset_args["path"] == "infosearch/Clarity-v1"
    base = "https://huggingface.co/datasets/jianqunZ/Clarity-v1/resolve/4c1892c874d09877c00243fac16452f3353039aa/"
    assert sorted(f.url for f in task.files) == sorted(base + f for f in READ_BY_THE_LOADER)
    assert {f.path for f in task.files} == {f"infosearch/Clarity-v1/{f}" for f in READ_BY_THE_LOADER}
    assert READ_BY_THE_LOADER <= set(HUB_REPO_FILES)  # every file asked for exists upstream
    full = Context.create(registry=registry, data_dir=FIXTURE)  # complete tables present: nothing to fetch
    assert registry.create("task", "infosearch:language", full).files == []
    assert [d.name for d in dimensions.registered_dimensions(registry)] == [
        "audience", "keyword", "format", "language", "length", "source"]


def test_every_dimension_is_pinned_to_a_full_commit(registry, tmp_path):
    empty = Context.create(registry=registry, data_dir=tmp_path)
    for dim in dimensions.BUILTIN_DIMENSIONS:
        task = registry.create("task", dim.task_name, empty)
        if dim.hub_name in dimensions.UNPINNED:  # Length: main, resolved to its commit when downloaded
            assert {f.url.split("/resolve/")[1].split("/")[0] for f in task.files} == {"main"}
            assert all(f.unpinned == dimensions.UNPINNED[dim.hub_name] for f in task.files)
            assert task.dataset_args["revision"] is None
            continue
        rev = dimensions.REVISIONS[dim.hub_name]
        assert len(rev) == 40 and all(c in "0123456789abcdef" for c in rev), dim.hub_name
        assert {f.url.split("/resolve/")[1].split("/")[0] for f in task.files} == {rev}
        assert not any(f.unpinned for f in task.files)
        assert task.dataset_args["revision"] == rev and task.dataset_args["repo"] == f"jianqunZ/{dim.hub_name}"
    # the official metadata gives Length the id of Language, which the Hub cannot serve for Length-v1:
    # Length is the one dimension left unpinned (docs/infosearch.md)
    assert set(dimensions.UNPINNED) == {"Length-v1"} and "Length-v1" not in dimensions.REVISIONS


def test_revision_argument_overrides_the_pin(registry, tmp_path):
    empty = Context.create(registry=registry, data_dir=tmp_path)
    rev = "0123456789abcdef0123456789abcdef01234567"
    task = registry.create("task", f"infosearch:length:revision={rev}", empty)
    assert task.name == "infosearch:length" and task.dataset_args["revision"] == rev
    assert task.dataset_args["path"] == f"infosearch/Length-v1@{rev}"  # another snapshot, another folder
    assert {f.url for f in task.files} == {
        f"https://huggingface.co/datasets/jianqunZ/Length-v1/resolve/{rev}/{f}" for f in READ_BY_THE_LOADER}
    pinned = dimensions.REVISIONS["Language-v1"]  # naming the pin itself keeps the usual folder
    assert registry.create("task", f"infosearch:language:revision={pinned}", empty).dataset_args["path"] == (
        "infosearch/Language-v1")
    own = dimensions.Dimension("tone", "Tone-v1", repo="someone/Tone-v1")  # another repository: no pin to assume
    with pytest.raises(DataError, match=r"someone/Tone-v1 has no pinned revision.*infosearch:tone:revision=COMMIT"):
        own.task(empty)
    assert own.at_revision(rev).hub_files()[0].url == (
        f"https://huggingface.co/datasets/someone/Tone-v1/resolve/{rev}/corpus.jsonl")


def test_without_top_ranked_the_dimension_is_retrieved_over_the_corpus(registry, tmp_path):
    """The hub's layout has no top_ranked.jsonl: the tables are complete, nothing is fetched, and the task
    retrieves over the whole corpus (as the official code does); the identity names every file read."""
    folder = tmp_path / "infosearch" / "Language-v1"
    shutil.copytree(LANG, folder, ignore=shutil.ignore_patterns("top_ranked.jsonl"))
    assert has_tables(folder)
    context = Context.create(registry=registry, data_dir=tmp_path)
    task = registry.create("task", "infosearch:language", context)
    assert task.files == [] and task.first_stage == "retrieve"
    res = evaluate("infosearch:language", retriever="bm25", context=context, progress=False, metrics=["nDCG@10"])
    assert res.dataset.candidates is None
    ident = res.dataset.identity
    assert ident["revision"] == dimensions.REVISIONS["Language-v1"] and ident["repo"] == "jianqunZ/Language-v1"
    assert {f["path"] for f in ident["files"]} == {f"infosearch/Language-v1/{f}" for f in READ_BY_THE_LOADER}
    assert all(f["sha256"] == _sha256(folder / f["path"].split("/", 2)[2]) for f in ident["files"])


def _sha256(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_register_dimension_rejects_bad_names():
    with pytest.raises(ValueError):
        dimensions.register_dimension(lambda *a: None, dimensions.Dimension("a:b", "X-v1"))


@pytest.fixture
def mirror(tmp_path):
    """A loopback HTTP server serving the fixture as every published dimension."""
    root = tmp_path / "mirror"
    for dim in dimensions.BUILTIN_DIMENSIONS:
        shutil.copytree(LANG, root / "infosearch" / dim.hub_name)
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_QuietHandler, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep test output clean
        pass


def test_suite_downloads_from_mirror_and_reports_every_dimension(registry, mirror, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_DATA_URL", mirror)
    monkeypatch.delenv("HARNESS_AUTO_DOWNLOAD", raising=False)
    (tmp_path / "data").mkdir()  # a data folder given explicitly must exist (a typo is reported, not created)
    context = Context.create(registry=registry, data_dir=tmp_path / "data")
    res = evaluate("infosearch", retriever="bm25", output=str(tmp_path / "out"), context=context, progress=False)
    assert (tmp_path / "data" / "infosearch" / "Clarity-v1" / "qrels_reversed" / "test.jsonl").is_file()
    assert list(res.members) == [f"infosearch:{d.name}" for d in dimensions.BUILTIN_DIMENSIONS]
    # identical data in every dimension: the mean equals each member's figure
    for key in ("WISE", "SICR", "nDCG@10[og]", "R_ins"):
        assert res.metrics[key] == pytest.approx(res.members["infosearch:language"].metrics[key])
    assert (tmp_path / "out" / "infosearch_source" / "run.reversed.trec").is_file()
    from harness_infosearch.cli import rows_from_results
    from harness_infosearch.table1 import table1

    text = table1(rows_from_results(json.loads((tmp_path / "out" / "results.json").read_text())))
    assert "bm25 | infosearch:audience" in text and "bm25 | mean" in text


def _installed() -> bool:
    try:
        eps = metadata.entry_points(group="harness")
    except Exception:  # pragma: no cover
        return False
    return any(ep.value == "harness_infosearch" for ep in eps)


@pytest.mark.skipif(not _installed(), reason="pip install -e plugins/harness-infosearch")
def test_cli_eval_and_table1_row(tmp_path):
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "harness.cli", "--data-dir", str(FIXTURE)]
    env_run = partial(subprocess.run, capture_output=True, text=True, timeout=120)
    res = env_run([*cmd, "eval", "--task", "infosearch:language", "--retriever", "bm25", "-o", str(out), "-q"])
    assert res.returncode == 0, res.stderr
    assert "WISE" in res.stdout and "nDCG@10[reversed]" in res.stdout
    assert {p.name for p in out.glob("run.*.trec")} == {"run.og.trec", "run.changed.trec", "run.reversed.trec"}
    table = env_run([*cmd, "infosearch", "table", str(out)])
    assert table.returncode == 0, table.stderr
    header, _, row = table.stdout.splitlines()
    assert header.split()[:3] == ["nDCG", "Ori", "nDCG"] and "R_rev" in header
    assert row.startswith("bm25 | infosearch:language")
    print(table.stdout)


def test_a_query_without_its_instructions_names_its_own_file(tmp_path):
    """With the corpus in two shards, the error still names the queries file (not the second shard)."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq
    from harness.formats import iter_jsonl_objects

    rows = [o for _, o in iter_jsonl_objects(LANG / "corpus.jsonl")]
    (tmp_path / "corpus").mkdir()
    for i, part in enumerate((rows[:4], rows[4:])):
        pq.write_table(pa.Table.from_pylist(part), tmp_path / "corpus" / f"test-0000{i}-of-00002.parquet")
    for mode in ("og", "changed", "reversed"):
        shutil.copytree(LANG / f"qrels_{mode}", tmp_path / f"qrels_{mode}")
    queries = [o for _, o in iter_jsonl_objects(LANG / "queries.jsonl")]
    del queries[0]["instruction_changed"]
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    with pytest.raises(DataError) as err:
        load_infosearch_dataset(tmp_path)
    assert "lacks instruction_changed" in str(err.value)
    assert "queries.jsonl" in str(err.value) and "corpus" not in str(err.value)
