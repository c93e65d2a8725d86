"""Check before work (issue 13, item 5): bad input ends as one clean "Error: ..." line naming the
problem (file and line where there is one) and a non-zero exit status, never a traceback or a
silently wrong number.

The command-line cases run the real entry point in a subprocess (``python -m harness.cli``), so a
traceback printed anywhere would be seen; the session's isolated environment (tests/conftest.py:
private HARNESS_CACHE_DIR, no downloads) is inherited. Unit tests for each reader follow.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import harness
from harness.components.registry import Component, Registry
from harness.concepts.errors import DataError, HarnessError
from harness.concepts.qrels import Qrels
from harness.concepts.run import Run
from harness.data.folder import DataFolder
from harness.formats import beir, noveleval, rankllm, trec
from harness.formats.jsonl import iter_jsonl

DEMO = Path(harness.__file__).resolve().parent / "data" / "demo"
LONG = "a" * 300  # one path component over the 255-byte limit of common file systems


def run_cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def assert_clean_error(res: subprocess.CompletedProcess, *needles: str) -> str:
    """Non-zero exit, no traceback anywhere, an error line, and every needle in the output."""
    out = res.stdout + res.stderr
    assert res.returncode != 0, out
    assert "Traceback" not in out, out
    assert "Error:" in res.stderr, out
    for needle in needles:
        assert needle in out, f"{needle!r} not in {out!r}"
    return out


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def demo_qrels(tmp_path: Path) -> Path:
    """The demo's qrels as a TREC qrels file (79 lines, 10 queries)."""
    q = beir.read_qrels(DEMO / "qrels" / "test.tsv")
    lines = [f"{qid} 0 {docid} {grade}" for qid, docs in q.items() for docid, grade in docs.items()]
    return write(tmp_path / "demo.qrels", "\n".join(lines) + "\n")


@pytest.fixture
def demo_run(tmp_path: Path) -> Path:
    """A run over the demo queries (each query's judged documents, in a fixed order)."""
    q = beir.read_qrels(DEMO / "qrels" / "test.tsv")
    lines = [f"{qid} Q0 {docid} {i} {10.0 - i} t" for qid, docs in q.items() for i, docid in enumerate(sorted(docs), 1)]
    return write(tmp_path / "demo.run", "\n".join(lines) + "\n")


@pytest.fixture
def demo_copy(tmp_path: Path) -> Path:
    """A copy of the demo's BEIR folder (to make bad variants of it)."""
    root = tmp_path / "demo-copy"
    for rel in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        write(root / rel, (DEMO / rel).read_text(encoding="utf-8"))
    return root


def test_module_entry_point_works() -> None:
    res = run_cli("--help")
    assert res.returncode == 0 and "eval" in res.stdout and "Traceback" not in res.stderr


# --- duplicate (qid, docid) in qrels -------------------------------------------------------------


def test_cli_score_duplicate_qrels_line(demo_qrels: Path, demo_run: Path) -> None:
    first = demo_qrels.read_text().splitlines()[0]
    qid, _, docid, _ = first.split()
    with demo_qrels.open("a") as f:
        f.write(f"{qid} 0 {docid} 0\n")  # line 80 repeats line 1 with another grade
    out = assert_clean_error(run_cli("score", "--qrels", str(demo_qrels), "--run", str(demo_run)),
                             f"{demo_qrels}, line 80", "first on line 1", repr(docid))
    assert "nDCG" not in out


def test_cli_eval_duplicate_qrels_line(demo_copy: Path) -> None:
    qrels = demo_copy / "qrels" / "test.tsv"
    lines = qrels.read_text().splitlines()
    write(qrels, "\n".join([*lines, lines[3]]) + "\n")  # the 4th line again, as the last line
    res = run_cli("eval", "--dataset", f"beir:path='{demo_copy}'", "-q")
    assert_clean_error(res, f"{qrels}, line {len(lines) + 1}", "judged twice", "first on line 4")


# --- NaN / infinite scores ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["nan", "NaN", "inf", "-Infinity", "1e999"])
def test_cli_score_non_finite_run_score(demo_qrels: Path, demo_run: Path, bad: str) -> None:
    lines = demo_run.read_text().splitlines()
    parts = lines[2].split()
    parts[4] = bad
    lines[2] = " ".join(parts)
    write(demo_run, "\n".join(lines) + "\n")
    assert_clean_error(run_cli("score", "--qrels", str(demo_qrels), "--run", str(demo_run)),
                       f"{demo_run}, line 3", "not a finite number", repr(bad))


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_cli_eval_non_finite_rankllm_score(tmp_path: Path, demo_qrels: Path, bad: str) -> None:
    cands = write(tmp_path / "cands.json", '[{"query": "what is diabetes", "hits": ['
                  '{"qid": "q1", "docid": "dia1", "content": "a", "score": 2.0},'
                  f'{{"qid": "q1", "docid": "dia2", "content": "b", "score": {bad}}}]}}]')
    res = run_cli("eval", "--dataset", f"rankllm:candidates='{cands}',qrels='{demo_qrels}'",
                  "--retriever", "candidates", "-q")
    assert_clean_error(res, str(cands), "entry 0 (query q1), hit 1", "finite number")


# --- empty runs and runs that share no query with the qrels --------------------------------------------


@pytest.mark.parametrize("body", ["", "\n\n  \n"])
def test_cli_score_empty_run(demo_qrels: Path, tmp_path: Path, body: str) -> None:
    run = write(tmp_path / "empty.run", body)
    out = assert_clean_error(run_cli("score", "--qrels", str(demo_qrels), "--run", str(run)),
                             str(run), "the run file is empty")
    assert "nan" not in out


def test_cli_score_run_sharing_no_query(demo_qrels: Path, tmp_path: Path) -> None:
    run = write(tmp_path / "other.run", "zz1 Q0 dia1 1 1.0 t\nzz2 Q0 dia2 1 1.0 t\n")
    out = assert_clean_error(run_cli("score", "--qrels", str(demo_qrels), "--run", str(run)),
                             "no query of the run", str(run), str(demo_qrels), "'zz1'", "'q1'")
    assert "nan" not in out


# --- --limit / --depth -------------------------------------------------------------------------------


@pytest.mark.parametrize("args", [("--limit", "-1"), ("--limit", "0"), ("--depth", "0"), ("-k", "-5")])
def test_cli_limit_and_depth_must_be_positive(args: tuple[str, str]) -> None:
    option = "--limit" if args[0] == "--limit" else "--depth"
    assert_clean_error(run_cli("eval", "--task", "demo", "-q", *args), f"Invalid value for '{option}'",
                       "x>=1")


@pytest.mark.parametrize("kwargs", [{"limit": -1}, {"limit": 0}, {"depth": 0}, {"depth": -3}, {"limit": 1.5},
                                    {"limit": True}])
def test_api_limit_and_depth_must_be_positive(kwargs: dict) -> None:
    name = next(iter(kwargs))
    with pytest.raises(HarnessError, match=f"{name} must be a whole number >= 1"):
        harness.evaluate("demo", progress=False, **kwargs)


def test_api_limit_one_evaluates_one_query() -> None:
    result = harness.evaluate("demo", limit=1, progress=False)
    assert sum(len(r) for r in result.runs.values()) == 1


# --- metric cutoffs ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("metric", ["nDCG@99999999999999999999", "nDCG@0", "nDCG@-1", "MRR@1000001", "P@1.5",
                                    "nDCG(cutoff=0)"])
def test_cli_eval_metric_cutoff_out_of_range(metric: str) -> None:
    assert_clean_error(run_cli("eval", "--task", "demo", "-q", "-m", metric), f"metric {metric!r}",
                       "from 1 to 1,000,000")


@pytest.mark.parametrize("metric", ["nDCG@99999999999999999999", "nDCG@0"])
def test_cli_score_metric_cutoff_out_of_range(demo_qrels: Path, demo_run: Path, metric: str) -> None:
    assert_clean_error(run_cli("score", "--qrels", str(demo_qrels), "--run", str(demo_run), "-m", metric),
                       f"metric {metric!r}", "from 1 to 1,000,000")


class _Found:
    per_mode = True

    def __init__(self, cutoff: int = 10):
        self.cutoff = cutoff
        self.names = [f"found@{cutoff}"]


def _registry_with_family() -> Registry:
    reg = Registry()
    reg.add(Component("metric", "found", _Found, "a family", "test-plugin"))
    return reg


@pytest.mark.parametrize("name", ["found@0", "found@-2", "found@99999999999999999999", "found@1000001",
                                  "found:cutoff=0", "found:cutoff=abc", "found:cutoff=1.5"])
def test_registered_family_cutoff_out_of_range(name: str) -> None:
    from harness.metrics.resolve import resolve_metrics

    with pytest.raises(HarnessError, match=r"metric .*found.*the cutoff k must be a whole number from 1 to 1,000,000"):
        resolve_metrics(_registry_with_family(), [name])


def test_cutoff_bounds_are_inclusive() -> None:
    from harness.metrics.names import MAX_CUTOFF
    from harness.metrics.resolve import resolve_metrics

    (low,), (high,) = (resolve_metrics(_registry_with_family(), [n]) for n in ("found@1", f"found@{MAX_CUTOFF}"))
    assert (low.cutoff, high.cutoff) == (1, MAX_CUTOFF)
    (std,) = resolve_metrics(Registry(), [f"nDCG@{MAX_CUTOFF}", "P@1"])
    assert std.names == [f"nDCG@{MAX_CUTOFF}", "P@1"]


# --- component specs ------------------------------------------------------------------------------------------


def test_cli_deeply_nested_spec_value() -> None:
    out = assert_clean_error(run_cli("eval", "--task", "demo", "-q", "--retriever", "bm25:k1=" + "[" * 100_000),
                             "nest more than 32 deep")
    assert len(out) < 2000  # the spec is shortened in the message


@pytest.mark.parametrize("spec", ["bm25:k1=(", "bm25:k1=0.9)", "bm25:k1=[1,2}"])
def test_cli_unbalanced_spec(spec: str) -> None:
    assert_clean_error(run_cli("eval", "--task", "demo", "-q", "--retriever", spec), "unbalanced brackets",
                       repr(spec))


def test_spec_brackets_unit() -> None:
    from harness.components.component_spec import MAX_NESTING, parse_args, parse_spec, parse_value

    ok = "x:v=" + "[" * MAX_NESTING + "]" * MAX_NESTING
    assert parse_spec(ok).args["v"] is not None
    for bad in ("x:v=" + "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1), "x:v=" + "{" * 50_000):
        with pytest.raises(HarnessError, match="nest more than"):
            parse_spec(bad)
    with pytest.raises(HarnessError, match="nest more than"):
        parse_value("[" * 100_000)
    with pytest.raises(HarnessError, match="unbalanced"):
        parse_args("a=(1,b=2")
    with pytest.raises(HarnessError, match="unbalanced"):
        parse_spec("x(:a=1")
    # quoted values keep any brackets; balanced ones parse as before
    assert parse_spec("x:a='(b',c=[1,[2]]").args == {"a": "(b", "c": [1, [2]]}


# --- paths: a component over 255 characters ----------------------------------------------------------------------


def test_cli_output_name_too_long(tmp_path: Path) -> None:
    target = tmp_path / LONG
    assert_clean_error(run_cli("eval", "--task", "demo", "-q", "-o", str(target)),
                       "cannot create the output folder", str(target))


def test_cli_score_qrels_name_too_long(tmp_path: Path, demo_run: Path) -> None:
    assert_clean_error(run_cli("score", "--qrels", str(tmp_path / LONG), "--run", str(demo_run)), LONG)


def test_cli_score_run_name_too_long(tmp_path: Path, demo_qrels: Path) -> None:
    assert_clean_error(run_cli("score", "--qrels", str(demo_qrels), "--run", str(tmp_path / LONG)), LONG)


@pytest.mark.parametrize("task", ["scifact", "noveleval", "trec-dl19"])
def test_cli_data_dir_name_too_long(tmp_path: Path, task: str) -> None:
    root = tmp_path / LONG
    assert_clean_error(run_cli("--data-dir", str(root), "eval", "--task", task, "-q"), str(root),
                       "too long")


def test_cli_dataset_path_too_long(tmp_path: Path) -> None:
    assert_clean_error(run_cli("eval", "--dataset", f"beir:path='{tmp_path / LONG}'", "-q"),
                       str(tmp_path / LONG), "too long")


def test_resolve_name_too_long_is_a_data_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="cannot use the path"):
        DataFolder.from_env().resolve(tmp_path / LONG / "x.txt")


# --- --output: checked before any work; existing results are kept unless --overwrite ------------------------


def test_cli_output_under_a_file_fails_before_any_data_is_read(tmp_path: Path) -> None:
    blocker = write(tmp_path / "file.txt", "not a folder\n")
    # the dataset does not exist either: the output error must come first
    res = run_cli("eval", "--dataset", f"beir:path='{tmp_path / 'no-such-data'}'", "-q", "-o", str(blocker / "sub"))
    out = assert_clean_error(res, "cannot create the output folder", str(blocker / "sub"))
    assert "no-such-data" not in out


def test_cli_output_that_is_a_file(tmp_path: Path) -> None:
    blocker = write(tmp_path / "file.txt", "not a folder\n")
    assert_clean_error(run_cli("eval", "--task", "demo", "-q", "-o", str(blocker)), str(blocker))


def test_cli_existing_results_need_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = run_cli("eval", "--task", "demo", "-q", "-o", str(out))
    assert first.returncode == 0, first.stderr
    before = (out / "results.json").read_bytes()
    # refused before any data is read: a missing dataset is not what is reported
    res = run_cli("eval", "--dataset", f"beir:path='{tmp_path / 'no-such-data'}'", "-q", "-o", str(out))
    msg = assert_clean_error(res, f"--output {out} already holds results", "--overwrite")
    assert "no-such-data" not in msg
    assert (out / "results.json").read_bytes() == before
    again = run_cli("eval", "--task", "demo", "-q", "-o", str(out), "--overwrite", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["nDCG@10"] == pytest.approx(0.7491, abs=1e-4)
    assert not [p for p in out.iterdir() if p.name.startswith(".harness-write-probe")]


def test_api_output_check(tmp_path: Path) -> None:
    out = tmp_path / "deep" / "new"
    harness.evaluate("demo", output=str(out), progress=False)
    assert (out / "results.json").is_file()
    with pytest.raises(HarnessError, match="already holds results"):
        harness.evaluate("demo", output=str(out), progress=False)
    harness.evaluate("demo", output=str(out), overwrite=True, progress=False)


def test_prepare_output_unit(tmp_path: Path) -> None:
    from harness.results.layout import ResultsLayout

    def prepare_output(folder, **kw):
        return ResultsLayout(folder).prepare(**kw)

    out = prepare_output(tmp_path / "a" / "b")
    assert out.is_dir() and not list(out.iterdir())  # created, the probe file removed
    write(out / "m_x" / "results.json", "{}")
    prepare_output(out)  # no results.json at the top: fine
    with pytest.raises(HarnessError, match="already holds results"):
        prepare_output(out, members=["m:x"])  # a suite member's folder holds results
    prepare_output(out, overwrite=True, members=["m:x"])
    with pytest.raises(HarnessError, match="cannot create the output folder"):
        prepare_output(write(tmp_path / "f", "") / "sub")


def test_suite_output_checked_once_before_members_run(tmp_path: Path) -> None:
    from harness.concepts.task import Task

    suite = Task(name="mini-suite", tasks=["demo"])
    out = tmp_path / "suite"
    write(out / "demo" / "results.json", "{}")
    with pytest.raises(HarnessError, match="already holds results"):
        harness.evaluate(suite, output=str(out), progress=False)
    assert (out / "demo" / "results.json").read_text() == "{}"
    result = harness.evaluate(suite, output=str(out), overwrite=True, progress=False)
    assert set(result.members) == {"demo"}
    assert (out / "results.json").is_file() and (out / "demo" / "results.json").read_text() != "{}"


# --- reader unit tests -----------------------------------------------------------------------------------------------


def test_trec_qrels_duplicate_pair(tmp_path: Path) -> None:
    p = write(tmp_path / "q.txt", "1 0 d1 2\n1 0 d2 1\n\n1 Q0 d1 0\n")
    with pytest.raises(DataError, match=r"document 'd1' judged twice for query '1' \(first on line 1\)") as exc:
        trec.read_qrels(p)
    assert exc.value.line == 4 and f"{p}, line 4" in str(exc.value)
    # the same document under another query is fine
    assert trec.read_qrels(write(tmp_path / "ok.txt", "1 0 d1 2\n2 0 d1 1\n")).n_judgments() == 2


def test_beir_tsv_qrels_duplicate_pair(tmp_path: Path) -> None:
    p = write(tmp_path / "test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\t0\nq1\td1\t1\n")
    with pytest.raises(DataError, match=r"judged twice .*first on line 2") as exc:
        beir.read_qrels(p)
    assert exc.value.line == 4
    p = write(tmp_path / "trec4.tsv", "q1 0 d1 1\nq1 0 d1 2\n")  # TREC 4-field lines in a .tsv
    with pytest.raises(DataError, match="first on line 1") as exc:
        beir.read_qrels(p)
    assert exc.value.line == 2


def test_beir_jsonl_qrels_duplicate_pair_and_non_finite(tmp_path: Path) -> None:
    rec = '{{"query-id": "q1", "corpus-id": "{d}", "score": {s}}}\n'
    p = write(tmp_path / "test.jsonl", rec.format(d="d1", s=1) + rec.format(d="d2", s=0) + rec.format(d="d1", s=2))
    with pytest.raises(DataError, match="first on line 1") as exc:
        beir.read_qrels(p)
    assert exc.value.line == 3
    for bad in ("NaN", "Infinity", "1e999"):
        p = write(tmp_path / "nan.jsonl", rec.format(d="d1", s=1) + rec.format(d="d2", s=bad))
        with pytest.raises(DataError, match="'score' must be a finite number") as exc:
            beir.read_qrels(p)
        assert exc.value.line == 2


def test_beir_parquet_qrels_duplicate_pair(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    p = tmp_path / "test.parquet"
    pq.write_table(pa.table({"query-id": ["q1", "q1", "q1"], "corpus-id": ["d1", "d2", "d1"], "score": [1, 0, 2]}), p)
    with pytest.raises(DataError, match=r"row 3: document 'd1' judged twice for query 'q1' \(first on row 1\)"):
        beir.read_qrels(p)


def test_noveleval_and_any_qrels_duplicate_pair(tmp_path: Path) -> None:
    from harness.datasets.loaders import read_any_qrels

    root = tmp_path / "ne"
    write(root / "queries.tsv", "0\tq zero\n")
    write(root / "corpus.tsv", "0-0\tfine\n0-1\talso fine\n")
    write(root / "qrels.txt", "0 Q0 0-0 1\n0 Q0 0-1 0\n0 Q0 0-0 2\n")
    with pytest.raises(DataError, match="first on line 1") as exc:
        noveleval.read_noveleval(root)
    assert exc.value.line == 3 and str(root / "qrels.txt") in str(exc.value)
    # the SciFact / TREC task loaders read qrels through read_any_qrels
    with pytest.raises(DataError, match="judged twice"):
        read_any_qrels(root / "qrels.txt")


def test_demo_qrels_still_read() -> None:
    q = beir.read_qrels(DEMO / "qrels" / "test.tsv")
    assert (len(q), q.n_judgments()) == (10, 79)


@pytest.mark.parametrize("bad", ["nan", "-nan", "inf", "+Infinity", "-inf", "1e400"])
def test_read_run_non_finite_score(tmp_path: Path, bad: str) -> None:
    p = write(tmp_path / "r.run", f"q1 Q0 a 1 1.0 t\nq1 Q0 b 2 {bad} t\n")
    with pytest.raises(DataError, match="is not a finite number") as exc:
        trec.read_run(p)
    assert exc.value.line == 2 and f"{p}, line 2" in str(exc.value)


@pytest.mark.parametrize("body", ["", "\n", "  \n\t\n"])
def test_read_run_empty(tmp_path: Path, body: str) -> None:
    p = write(tmp_path / "e.run", body)
    with pytest.raises(DataError, match="the run file is empty") as exc:
        trec.read_run(p)
    assert str(p) in str(exc.value)


@pytest.mark.parametrize("bad", ["NaN", "Infinity", "-Infinity", "1e999", "1" + "0" * 400])
def test_rankllm_non_finite_score(tmp_path: Path, bad: str) -> None:
    p = write(tmp_path / "c.json", '[{"query": "q", "hits": [{"content": "x", "qid": 1, "docid": "a", "score": 1},'
              f'{{"content": "y", "qid": 1, "docid": "b", "score": {bad}}}]}}]')
    with pytest.raises(DataError, match=r"entry 0 \(query 1\), hit 1: 'score' must be a finite number") as exc:
        rankllm.read_rankllm(p)
    assert str(p) in str(exc.value)


def test_rankllm_request_layout_non_finite_score(tmp_path: Path) -> None:
    p = write(tmp_path / "r.json", '[{"query": {"text": "q", "qid": 7}, "candidates": ['
              '{"docid": "a", "score": NaN, "doc": {"contents": "A"}}]}]')
    with pytest.raises(DataError, match=r"entry 0 \(query 7\), hit 0: 'score' must be a finite number"):
        rankllm.read_rankllm(p)


def test_json_readers_nesting_and_huge_integers(tmp_path: Path) -> None:
    deep = write(tmp_path / "deep.json", "[" * 100_000 + "]" * 100_000)
    with pytest.raises(DataError, match="nested too deeply"):
        rankllm.read_rankllm(deep)
    huge = write(tmp_path / "huge.json", "[" + "1" * 5000 + "]")
    with pytest.raises(DataError, match="invalid JSON"):
        rankllm.read_rankllm(huge)
    lines = write(tmp_path / "x.jsonl", '{"a": 1}\n' + "[" * 100_000 + "]" * 100_000 + "\n" + "1" * 5000 + "\n")
    with pytest.raises(DataError, match="nested too deeply") as exc:
        list(iter_jsonl(lines))
    assert exc.value.line == 2
    write(lines, "1" * 5000 + "\n")
    with pytest.raises(DataError, match="invalid JSON") as exc:
        list(iter_jsonl(lines))
    assert exc.value.line == 1


def test_api_score_needs_a_shared_query() -> None:
    qrels = Qrels({"q1": {"d1": 1}})
    with pytest.raises(HarnessError, match="no query of the run has judgments in the qrels"):
        harness.score(qrels, Run.from_order({"q9": ["d1"]}))
    with pytest.raises(HarnessError, match="no query of the run"):
        harness.score(qrels, Run({}))
    assert harness.score(qrels, Run.from_order({"q1": ["d1"], "q9": ["d1"]})).aggregate["nDCG@10"] == 1.0
