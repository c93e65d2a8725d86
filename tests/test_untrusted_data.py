"""Issue 37, item 5: duplicates are errors, grades are bounded, numbers in files are read strictly.

A dataset in MTEB's layout is served by the Hub imitation (``harness.testing.HubServer``) with its
corpus, queries and qrels each split over two shards, and read through the real entry point
(``python -m harness.cli eval --dataset mteb:...``) in a subprocess; TREC qrels and runs go through
``harness score``. Every hostile case asserts exit status 2, exactly one ``Error:`` line naming the
places, no traceback and no results written; the honest dataset's nDCG@10 is checked against
pytrec_eval called directly on the run the harness wrote and the qrels built here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.testing import HubServer

pytest.importorskip("pyarrow")

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

CARD = """---
configs:
- config_name: corpus
  data_files:
  - split: test
    path: corpus/test-*
- config_name: queries
  data_files:
  - split: test
    path: queries/test-*
- config_name: default
  data_files:
  - split: test
    path: qrels/test-*
---
# two shards per table
"""
DOCS = {
    "d1": ("Cats", "cats purr softly on warm laps"), "d2": ("Dogs", "dogs bark at the mail carrier"),
    "d3": ("Parrots", "parrots mimic human speech"), "d4": ("Goldfish", "goldfish swim in small round bowls"),
    "d5": ("Barns", "cats chase mice in old barns"), "d6": ("Parks", "dogs fetch sticks in parks and bark"),
    "d7": ("Hamsters", "hamsters run on wheels at night"), "d8": ("Horses", "horses gallop across open fields"),
}
QUERIES = {"q1": "why do cats purr", "q2": "dogs that bark", "q3": "fish that swim in bowls",
           "q4": "animals that run at night"}
QRELS = {"q1": {"d1": 2, "d5": 1, "d2": 0}, "q2": {"d2": 2, "d6": 1}, "q3": {"d4": 1, "d3": 0},
         "q4": {"d7": 2, "d1": 1}}
SHARD = "{table}/test-0000{i}-of-00002.{ext}"


def corpus_rows(ids):
    return [{"_id": d, "title": DOCS[d][0], "text": DOCS[d][1]} for d in ids]


def query_rows(ids):
    return [{"_id": q, "text": QUERIES[q]} for q in ids]


def qrels_rows(qids):
    return [{"query-id": q, "corpus-id": d, "score": g} for q in qids for d, g in QRELS[q].items()]


def honest_shards() -> dict[str, list[list[dict]]]:
    """Each table in two shards, no row twice."""
    return {"corpus": [corpus_rows(["d1", "d2", "d3", "d4"]), corpus_rows(["d5", "d6", "d7", "d8"])],
            "queries": [query_rows(["q1", "q2"]), query_rows(["q3", "q4"])],
            "qrels": [qrels_rows(["q1", "q2"]), qrels_rows(["q3", "q4"])]}


def encode(rows: list[dict], ext: str) -> bytes:
    if ext == "jsonl":
        return "".join(json.dumps(r) + "\n" for r in rows).encode()
    import io

    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    return buf.getvalue()


def repository(shards: dict[str, list[list[dict]]], ext: str = "parquet",
               raw: dict[str, bytes] | None = None) -> dict[str, bytes]:
    files = {"README.md": CARD.encode()}
    for table, parts in shards.items():
        for i, rows in enumerate(parts):
            files[SHARD.format(table=table, i=i, ext=ext)] = encode(rows, ext)
    return {**files, **(raw or {})}


@pytest.fixture
def hub(monkeypatch, tmp_path):
    with HubServer() as server:
        server.downloading(monkeypatch, tmp_path / "hf")
        yield server


def run_cli(*args: str, data: Path) -> subprocess.CompletedProcess:
    data.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          timeout=600, env={**os.environ, "HARNESS_DATA": str(data)})


def assert_one_error(res: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit status 2, no traceback, exactly one ``Error:`` line, every needle in it, no figure printed."""
    out = res.stdout + res.stderr
    assert res.returncode == 2, out
    assert "Traceback" not in out and "nDCG" not in out, out
    errors = [line for line in res.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, out
    for needle in needles:
        assert needle in errors[0], f"{needle!r} not in {errors[0]!r}"
    return errors[0]


def evaluate(hub: HubServer, tmp_path: Path, files: dict[str, bytes], name: str = "org/probe"):
    commit = hub.add_repo(name, files)
    out = tmp_path / "out"
    res = run_cli("eval", "--dataset", f"mteb:repo={name},revision={commit}", "--retriever", "bm25",
                  "-o", str(out), "-q", data=tmp_path / "data")
    return res, out, tmp_path / "data" / "mteb" / name / commit


def pytrec_ndcg10(run_file: Path, qrels: dict[str, dict[str, int]]) -> float:
    """nDCG@10 of a TREC run file by pytrec_eval, read here without the harness."""
    import pytrec_eval

    run: dict[str, dict[str, float]] = {}
    for line in run_file.read_text().splitlines():
        qid, _, docid, _, score, _ = line.split()
        run.setdefault(qid, {})[docid] = float(score)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10"}).evaluate(run)
    return sum(v["ndcg_cut_10"] for v in per_query.values()) / len(per_query)


def figures(out: Path) -> tuple[float, dict]:
    saved = json.loads((out / "results.json").read_text())
    return saved["metrics"]["nDCG@10"], saved["counts"]


# ---------------------------------------------------------------------------- the honest dataset, and copies

def test_the_honest_sharded_dataset_scores_as_pytrec_eval_does(hub, tmp_path):
    res, out, _ = evaluate(hub, tmp_path, repository(honest_shards()))
    assert res.returncode == 0, res.stderr
    ndcg, counts = figures(out)
    assert ndcg == pytest.approx(pytrec_ndcg10(out / "run.trec", QRELS), abs=1e-12)
    assert 0.3 < ndcg < 1.0  # a ranking with something to lose
    assert "identical_duplicates" not in counts


def test_rows_repeated_identically_in_another_shard_are_kept_once_and_counted(hub, tmp_path):
    shards = honest_shards()
    shards["corpus"][1] += corpus_rows(["d1", "d2"])  # the first shard's documents again, the same
    shards["queries"][1] += query_rows(["q1"])
    shards["qrels"][1] += [{"query-id": "q1", "corpus-id": "d1", "score": 2}]
    res, out, _ = evaluate(hub, tmp_path, repository(shards))
    assert res.returncode == 0, res.stderr
    ndcg, counts = figures(out)
    assert ndcg == pytest.approx(pytrec_ndcg10(out / "run.trec", QRELS), abs=1e-12)
    assert counts["identical_duplicates"] == {"corpus": 2, "queries": 1, "qrels": 1}
    honest, honest_out, _ = evaluate(hub, tmp_path / "honest", repository(honest_shards()), "org/honest")
    assert honest.returncode == 0 and figures(honest_out)[0] == ndcg


# ---------------------------------------------------------------------------- conflicting duplicates

@pytest.mark.parametrize("ext", ["parquet", "jsonl"])
def test_a_document_defined_twice_with_other_text_is_one_error_naming_both_shards(hub, tmp_path, ext):
    shards = honest_shards()
    shards["corpus"][1].append({"_id": "d1", "title": "Cats", "text": "horses gallop across open fields"})
    res, out, folder = evaluate(hub, tmp_path, repository(shards, ext))
    unit = "row" if ext == "parquet" else "line"
    assert_one_error(res, "document 'd1'", "different content",
                     f"{folder / SHARD.format(table='corpus', i=0, ext=ext)}, {unit} 1",
                     f"{folder / SHARD.format(table='corpus', i=1, ext=ext)}, {unit} 5")
    assert not (out / "results.json").exists()


def test_a_query_defined_twice_with_other_text_is_one_error(hub, tmp_path):
    shards = honest_shards()
    shards["queries"][1].insert(0, {"_id": "q2", "text": "cats that bark"})
    res, out, folder = evaluate(hub, tmp_path, repository(shards))
    assert_one_error(res, "query 'q2'", f"{folder / SHARD.format(table='queries', i=0, ext='parquet')}, row 2",
                     f"{folder / SHARD.format(table='queries', i=1, ext='parquet')}, row 1")
    assert not (out / "results.json").exists()


@pytest.mark.parametrize("ext", ["parquet", "jsonl"])
def test_a_pair_judged_1_and_0_in_two_shards_is_one_error(hub, tmp_path, ext):
    shards = honest_shards()
    shards["qrels"][1].append({"query-id": "q1", "corpus-id": "d1", "score": 0})  # 2 in the first shard
    res, out, folder = evaluate(hub, tmp_path, repository(shards, ext))
    unit = "row" if ext == "parquet" else "line"
    assert_one_error(res, "document 'd1' for query 'q1'", "different grades",
                     f"{folder / SHARD.format(table='qrels', i=0, ext=ext)}, {unit} 1",
                     f"{folder / SHARD.format(table='qrels', i=1, ext=ext)}, {unit} 5")
    assert not (out / "results.json").exists()


def test_an_instruction_given_twice_with_other_text_is_one_error(hub, tmp_path):
    card = CARD.replace("---\n# two", "- config_name: instruction\n  data_files:\n  - split: test\n"
                                     "    path: instruction/test-*\n---\n# two")
    rows = [[{"query-id": q, "instruction": f"find {q}"} for q in ("q1", "q2")],
            [{"query-id": q, "instruction": f"find {q}"} for q in ("q3", "q4")]]
    raw = {"README.md": card.encode()}
    same = repository({**honest_shards(), "instruction": [rows[0], rows[1] + [rows[0][0]]]}, raw=raw)
    ok, out, _ = evaluate(hub, tmp_path, same)
    assert ok.returncode == 0, ok.stderr
    assert figures(out)[1]["identical_duplicates"] == {"instruction": 1}
    rows[1].append({"query-id": "q1", "instruction": "find nothing"})
    other = repository({**honest_shards(), "instruction": rows}, raw=raw)
    res, _, folder = evaluate(hub, tmp_path / "other", other, "org/other")
    assert_one_error(res, "the instruction of query 'q1'",
                     f"{folder / SHARD.format(table='instruction', i=0, ext='parquet')}, row 1",
                     f"{folder / SHARD.format(table='instruction', i=1, ext='parquet')}, row 3")


# ---------------------------------------------------------------------------- grades

BIG = {"3e9": 3_000_000_000, "int32 max": 2_147_483_647, "1e8": 10**8, "2^63": 2**63, "400 digits": int("9" * 400),
       "-2^63-1": -(2**63) - 1, "101": 101, "-101": -101}


def _with_grade(grade_json: str) -> dict[str, bytes]:
    """The honest repository in JSONL with q3's judgment of d4 (line 1 of the second qrels shard) given
    ``grade_json`` as written."""
    shards = honest_shards()
    files = repository(shards, "jsonl")
    lines = files[SHARD.format(table="qrels", i=1, ext="jsonl")].decode().splitlines()
    lines[0] = '{"query-id": "q3", "corpus-id": "d4", "score": ' + grade_json + "}"
    files[SHARD.format(table="qrels", i=1, ext="jsonl")] = ("\n".join(lines) + "\n").encode()
    return files


@pytest.mark.parametrize("name", list(BIG))
def test_a_grade_out_of_range_in_mteb_qrels_is_one_error(hub, tmp_path, name):
    res, out, folder = evaluate(hub, tmp_path, _with_grade(str(BIG[name])))
    assert_one_error(res, f"{folder / SHARD.format(table='qrels', i=1, ext='jsonl')}, line 1",
                     "grade range -100 to 100")
    assert not (out / "results.json").exists()


@pytest.mark.parametrize(("written", "needle"), [
    ('"1_00"', "'1_00'"), ('" 1"', "' 1'"), ('"nan"', "finite"), ("NaN", "finite"), ("1e999", "finite"),
    ('"\\u0661"', "'١'"), ("true", "True"), ('"3000000000"', "grade range"), ("3e9", "grade range"),
])
def test_a_grade_written_loosely_in_mteb_qrels_is_one_error(hub, tmp_path, written, needle):
    res, out, folder = evaluate(hub, tmp_path, _with_grade(written))
    assert_one_error(res, f"{folder / SHARD.format(table='qrels', i=1, ext='jsonl')}, line 1", "'score' must be",
                     needle)


@pytest.mark.parametrize(("value", "kind"), [(3_000_000_000, pa.int64()), (2_147_483_647, pa.int32()),
                                             (10**8, pa.int64()), (2**63, pa.uint64()), (3e9, pa.float64())])
def test_a_grade_out_of_range_in_a_parquet_shard_is_one_error(hub, tmp_path, value, kind):
    rows = qrels_rows(["q3", "q4"])
    rows[0]["score"] = value
    schema = pa.schema([("query-id", pa.string()), ("corpus-id", pa.string()), ("score", kind)])
    buf = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buf)
    path = SHARD.format(table="qrels", i=1, ext="parquet")
    res, _, folder = evaluate(hub, tmp_path, repository(honest_shards(), raw={path: buf.getvalue().to_pybytes()}))
    assert_one_error(res, f"{folder / path}: row 1", "grade range -100 to 100")


# ---------------------------------------------------------------------------- harness score

@pytest.fixture
def trec_files(tmp_path):
    """TREC qrels of :data:`QRELS` and a run ranking every document for every query."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in QRELS.items() for d, g in docs.items()))
    run = tmp_path / "run.trec"
    run.write_text("".join(f"{q} Q0 {d} {r} {10 - r}.5 probe\n" for q in QRELS for r, d in enumerate(sorted(DOCS), 1)))
    return qrels, run


def _score(qrels: Path, run: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    return run_cli("score", "--qrels", str(qrels), "--run", str(run), "--json", data=tmp_path / "data")


def test_score_on_honest_files_equals_pytrec_eval(trec_files, tmp_path):
    qrels, run = trec_files
    res = _score(qrels, run, tmp_path)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["aggregate"]["nDCG@10"] == pytest.approx(pytrec_ndcg10(run, QRELS), abs=1e-12)


SCORE_GRADES = ["3000000000", "2147483647", "100000000", str(2**63), "9" * 400, "-101", "101", "1_00", "nan", "inf",
                "1e999", "\u0661", "0x1", "1e3"]


@pytest.mark.parametrize("grade", SCORE_GRADES, ids=[g[:12] for g in SCORE_GRADES])
def test_score_refuses_a_grade_out_of_range_or_loosely_written(trec_files, tmp_path, grade):
    qrels, run = trec_files
    lines = qrels.read_text().splitlines()
    lines[4] = f"q2 0 d6 {grade}"  # line 5
    qrels.write_text("\n".join(lines) + "\n")
    assert_one_error(_score(qrels, run, tmp_path), f"{qrels}, line 5", "relevance grade")


RUN_NUMBERS = [
    (4, "1_00", "score '1_00' is not a number"), (4, "\u0661", "is not a number"), (4, "nan", "not a finite number"),
    (4, "9" * 400, "not a finite number"), (3, "1_0", "rank '1_0' is not a whole number"),
    (3, "1.5", "rank '1.5' is not a whole number"), (3, "nan", "is not a whole number"),
]


@pytest.mark.parametrize(("column", "value", "needle"), RUN_NUMBERS,
                         ids=[f"{'rank' if c == 3 else 'score'}={v[:8]}" for c, v, _ in RUN_NUMBERS])
def test_score_reads_run_numbers_strictly(trec_files, tmp_path, column, value, needle):
    qrels, run = trec_files
    lines = run.read_text().splitlines()
    parts = lines[2].split()
    parts[column] = value
    lines[2] = " ".join(parts)
    run.write_text("\n".join(lines) + "\n")
    assert_one_error(_score(qrels, run, tmp_path), f"{run}, line 3", needle)


def test_a_repeated_judgment_in_trec_qrels_names_both_lines(trec_files, tmp_path):
    qrels, run = trec_files
    qrels.write_text(qrels.read_text() + "q1 0 d1 0\n")  # line 1 judged it 2
    assert_one_error(_score(qrels, run, tmp_path), f"{qrels}, line 10", "judged twice", "first on line 1")


# ---------------------------------------------------------------------------- the last defence before pytrec_eval

@pytest.mark.parametrize("grade", [3_000_000_000, 2**63, 10**400, 1e300, -(2**31)],
                         ids=["3e9", "2^63", "10^400", "1e300", "-2^31"])
def test_qrels_built_in_python_never_reach_pytrec_eval_out_of_range(monkeypatch, grade):
    """A plugin or a caller of ``harness.score`` may build :class:`Qrels` without a reader: the metric
    refuses the grade before pytrec_eval is constructed (a tripwire stands in for it)."""
    import pytrec_eval

    import harness
    from harness import DataError, Qrels, Run

    def tripwire(*args, **kwargs):
        raise AssertionError("pytrec_eval was given the qrels")

    monkeypatch.setattr(pytrec_eval, "RelevanceEvaluator", tripwire)
    qrels = Qrels({"q1": {"d1": 1, "d2": grade}, "q2": {"d3": 1}})
    with pytest.raises(DataError, match=r"query 'q1', document 'd2': the grade must be in the grade range"):
        harness.score(qrels, Run.from_order({"q1": ["d1", "d2"], "q2": ["d3"]}))


# ---------------------------------------------------------------------------- RankGPT / rank_llm candidates

def _candidates(tmp_path: Path, d1_again: str) -> Path:
    """q1 and q2 both list d1; q2's copy has the text ``d1_again``."""
    def hit(q, d, text):
        return {"qid": q, "docid": d, "content": text, "score": 1.0}

    entries = [{"query": QUERIES["q1"], "hits": [hit("q1", "d1", DOCS["d1"][1]), hit("q1", "d5", DOCS["d5"][1])]},
               {"query": QUERIES["q2"], "hits": [hit("q2", "d2", DOCS["d2"][1]), hit("q2", "d1", d1_again)]}]
    path = tmp_path / "cands.json"
    path.write_text(json.dumps(entries))
    (tmp_path / "qrels.txt").write_text("q1 0 d1 2\nq2 0 d2 2\n")
    return path


def test_a_candidate_passage_with_two_texts_is_one_error_naming_both_hits(tmp_path):
    cands = _candidates(tmp_path, "horses gallop across open fields")
    res = run_cli("eval", "--dataset", f"rankllm:candidates='{cands}',qrels='{tmp_path / 'qrels.txt'}'",
                  "--retriever", "candidates", "-o", str(tmp_path / "out"), "-q", data=tmp_path / "data")
    assert_one_error(res, str(cands), "entry 1 (query q2), hit 1", "document 'd1'", "entry 0 (query q1), hit 0")
    assert not (tmp_path / "out" / "results.json").exists()
    same = _candidates(tmp_path, DOCS["d1"][1])  # the same passage under two queries: fine
    ok = run_cli("eval", "--dataset", f"rankllm:candidates='{same}',qrels='{tmp_path / 'qrels.txt'}'",
                 "--retriever", "candidates", "-q", data=tmp_path / "data")
    assert ok.returncode == 0, ok.stderr
