"""Readers and writers of the benchmark formats, on small fixtures and on the real files."""

from __future__ import annotations

import gzip
import hashlib
import os
import sys
import time
from pathlib import Path

import pytest

from harness.concepts.errors import DataError
from harness.concepts.run import Run
from harness.data.folder import DataFolder
from harness.formats import beir, noveleval, rankllm, scifact, topics, trec
from harness.formats import files as hfiles
from harness.formats.jsonl import iter_jsonl, iter_jsonl_objects


def write(path: Path, text: str, gz: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def assert_at(exc: pytest.ExceptionInfo[DataError], path: Path, line: int | None) -> None:
    """The error names the file and (when given) the line, both as attributes and in the message."""
    assert str(path) in str(exc.value)
    assert exc.value.line == line
    if line is not None:
        assert f"line {line}" in str(exc.value)


# --- data folder ------------------------------------------------------------------------------


def test_data_dir_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert DataFolder.from_env().path == tmp_path / "xdg" / "harness" / "data"
    assert DataFolder.from_env().origin == "default"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert DataFolder.from_env().path == Path.home() / ".cache" / "harness" / "data"
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path / "env"))
    assert DataFolder.from_env().path == tmp_path / "env"
    assert DataFolder.from_env().origin == "env"
    given = DataFolder.from_env(tmp_path / "cli")  # --data-dir wins over the environment
    assert given.path == tmp_path / "cli" and given.origin == "option"
    assert DataFolder.from_env(None).path == tmp_path / "env"  # not given: back to the environment
    # the environment is read when a context is created; a folder given to it wins
    from harness.context import Context

    assert Context.create(data_dir=tmp_path / "api").data.path == tmp_path / "api"
    assert Context.create(data_dir=tmp_path / "api").data.origin == "api"
    assert Context.create().data.path == tmp_path / "env"


def test_resolve_missing_names_path_and_remedies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path))
    folder = DataFolder.from_env()
    with pytest.raises(DataError) as exc:
        folder.resolve("trec-dl/qrels.dl19-passage.txt")
    msg = str(exc.value)
    assert str(tmp_path / "trec-dl" / "qrels.dl19-passage.txt") in msg
    assert f"(looked in the data folder {tmp_path}, from $HARNESS_DATA)" in msg and "--data-dir" in msg
    (tmp_path / "x.txt").write_text("x")
    assert folder.resolve("x.txt") == tmp_path / "x.txt"
    assert folder.resolve(tmp_path / "x.txt") == tmp_path / "x.txt"  # absolute paths as given


def test_file_identity_and_sha_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path))
    folder = DataFolder.from_env()
    p = write(tmp_path / "sub" / "f.txt", "hello\n")
    calls = []
    real = hashlib.sha256

    def counting(*a: object) -> object:
        calls.append(1)
        return real(*a)

    monkeypatch.setattr(hfiles.hashlib, "sha256", counting)
    ident = folder.file_identity(p)
    assert ident == {"path": "sub/f.txt", "sha256": real(b"hello\n").hexdigest(), "size": 6}
    folder.file_identity(p)
    assert len(calls) == 1  # cached per (path, mtime, size)
    p.write_text("hello, world\n")
    os.utime(p, ns=(time.time_ns(), time.time_ns() + 10_000_000))
    assert folder.file_identity(p)["sha256"] == real(b"hello, world\n").hexdigest()
    assert len(calls) == 2


def test_iter_lines_gzip_bom_and_bad_utf8(tmp_path: Path) -> None:
    p = write(tmp_path / "a.tsv.gz", "1\tone\n2\ttwo\n", gz=True)
    assert list(hfiles.iter_lines(p)) == [(1, "1\tone"), (2, "2\ttwo")]
    bom = tmp_path / "bom.tsv"
    bom.write_bytes(b"\xef\xbb\xbf1\tx\r\n2\ty\rz\n")
    assert list(hfiles.iter_lines(bom)) == [(1, "1\tx"), (2, "2\ty\rz")]  # lines end at \n only
    bad = tmp_path / "bad.tsv"
    bad.write_bytes(b"1\tok\n2\t\xff\xfe\n")
    with pytest.raises(DataError) as exc:
        list(hfiles.iter_lines(bad))
    assert_at(exc, bad, 2)


# --- JSONL ------------------------------------------------------------------------------------


def test_jsonl_bad_line_names_file_and_line(tmp_path: Path) -> None:
    p = write(tmp_path / "x.jsonl", '{"a": 1}\n\n{"a": 2\n')
    with pytest.raises(DataError) as exc:
        list(iter_jsonl(p))
    assert_at(exc, p, 3)
    assert "invalid JSON" in str(exc.value)


def test_jsonl_objects_and_gzip(tmp_path: Path) -> None:
    p = write(tmp_path / "x.jsonl.gz", '{"a": 1}\n\n{"a": 2}\n', gz=True)
    assert list(iter_jsonl(p)) == [(1, {"a": 1}), (3, {"a": 2})]
    q = write(tmp_path / "y.jsonl", '{"a": 1}\n[1, 2]\n')
    with pytest.raises(DataError) as exc:
        list(iter_jsonl_objects(q))
    assert_at(exc, q, 2)


# --- BEIR -------------------------------------------------------------------------------------


def make_beir(root: Path) -> Path:
    write(root / "corpus.jsonl", '{"_id": "d1", "title": "T1", "text": "one"}\n{"_id": 2, "text": "two"}\n')
    write(
        root / "queries.jsonl",
        '{"_id": "q1", "text": "find one", "instruction": "only titled docs", "instruction_og": "x",'
        ' "meta": {"level": 2}}\n{"_id": "q2", "text": "find two"}\n{"_id": "q3", "text": "train only"}\n',
    )
    write(root / "qrels" / "test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t2\nq2\t2\t0.5\n")
    return root


def test_beir_folder(tmp_path: Path) -> None:
    data = beir.read_beir(make_beir(tmp_path / "b"), "test")
    assert data.corpus["d1"].title == "T1" and data.corpus["2"].text == "two" and data.corpus["2"].title == ""
    q1 = data.queries["q1"]
    assert q1.text == "find one" and q1.instruction == "only titled docs"
    assert q1.meta == {"instruction_og": "x", "meta": {"level": 2}}
    assert data.qrels["q1"] == {"d1": 2} and isinstance(data.qrels["q1"]["d1"], int)
    assert data.qrels["q2"] == {"2": 0.5}
    with pytest.raises(DataError, match="splits present: test"):
        beir.read_beir(tmp_path / "b", "dev")


@pytest.mark.parametrize(
    ("body", "line", "needle"),
    [
        ('{"_id": "d1", "text": "a"}\n{"title": "no id", "text": "b"}\n', 2, "'_id'"),
        ('{"_id": "d1", "text": "a"}\n{"_id": "d2"}\n', 2, "missing field 'text'"),
        ('{"_id": "d1", "text": "a"}\n{"_id": "d1", "text": "b"}\n', 2, "repeated"),
        ('{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": 5}\n', 2, "must be a string"),
        ('{"_id": "d1", "text": "a"}\n{"_id": "d2", "text": "b"\n', 2, "invalid JSON"),
    ],
)
def test_beir_corpus_errors(tmp_path: Path, body: str, line: int, needle: str) -> None:
    p = write(tmp_path / "corpus.jsonl", body)
    with pytest.raises(DataError, match=needle) as exc:
        beir.read_corpus(p)
    assert_at(exc, p, line)


def test_beir_qrels_errors(tmp_path: Path) -> None:
    p = write(tmp_path / "test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\n")
    with pytest.raises(DataError, match="expected 3 fields") as exc:
        beir.read_qrels_tsv(p)
    assert_at(exc, p, 3)
    p = write(tmp_path / "test.tsv", "q1\td1\t1\nq1\td2\thigh\n")
    with pytest.raises(DataError, match="not a number") as exc:
        beir.read_qrels_tsv(p)
    assert_at(exc, p, 2)


def test_corpus_tsv_variants(tmp_path: Path) -> None:
    two = beir.read_corpus(write(tmp_path / "a.tsv", "p1\tfirst text\np2\tsecond\ttabbed\n"))
    assert two["p1"].text == "first text" and two["p2"].text == "second\ttabbed"
    three = beir.read_corpus(write(tmp_path / "b.tsv", "id\ttitle\ttext\np1\tT\tbody\n"))
    assert three["p1"].title == "T" and three["p1"].text == "body"
    p = write(tmp_path / "c.tsv", "p1\tone\nlonely\n")
    with pytest.raises(DataError) as exc:
        beir.read_corpus(p)
    assert_at(exc, p, 2)


def test_beir_parquet(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    root = tmp_path / "pq"
    (root / "qrels").mkdir(parents=True)
    pq.write_table(pa.table({"_id": ["d1", "d2"], "title": ["T", ""], "text": ["one", "two"]}),
                   root / "corpus.parquet")
    pq.write_table(pa.table({"_id": ["q1"], "text": ["find"], "instruction": ["be brief"]}),
                   root / "queries.parquet")
    pq.write_table(pa.table({"query-id": ["q1", "q1"], "corpus-id": ["d1", "d2"], "score": [1, 0]}),
                   root / "qrels" / "test.parquet")
    data = beir.read_beir(root)
    assert set(data.corpus) == {"d1", "d2"} and data.corpus["d1"].title == "T"
    assert data.queries["q1"].instruction == "be brief"
    assert data.qrels["q1"] == {"d1": 1, "d2": 0}


def test_parquet_without_pyarrow_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    p = write(tmp_path / "corpus.parquet", "not really parquet")
    with pytest.raises(DataError, match=r"pip install 'harness-ir\[parquet\]'"):
        beir.read_corpus(p)


# --- TREC -------------------------------------------------------------------------------------


def test_trec_qrels_formats_and_errors(tmp_path: Path) -> None:
    q = trec.read_qrels(write(tmp_path / "q.txt", "1 0 d1 2\n1 Q0 d2 0\n\n2\tQ0\td3\t0.25\n"))
    assert q["1"] == {"d1": 2, "d2": 0} and q["2"] == {"d3": 0.25} and not q.is_integer
    p = write(tmp_path / "bad.txt", "1 0 d1 2\n1 0 d2\n")
    with pytest.raises(DataError, match="expected 4 fields") as exc:
        trec.read_qrels(p)
    assert_at(exc, p, 2)
    p = write(tmp_path / "bad2.txt", "1 0 d1 2\n1 0 d2 x\n")
    with pytest.raises(DataError, match="not a number") as exc:
        trec.read_qrels(p)
    assert_at(exc, p, 2)


def test_read_run_sorts_like_trec_eval(tmp_path: Path) -> None:
    p = write(tmp_path / "r.txt",
              "q1 Q0 a 1 1.0 tagA\nq1 Q0 b 2 3.0 tagA\nq1 Q0 c 3 1.0 tagA\nq2 Q0 x 1 0.5 tagA\n")
    run = trec.read_run(p)
    assert run.name == "tagA"
    assert run.doc_ids("q1") == ["b", "c", "a"]  # score desc, ties by docid desc
    p = write(tmp_path / "dup.txt", "q1 Q0 a 1 1.0 t\nq1 Q0 a 2 0.5 t\n")
    with pytest.raises(DataError, match="listed twice") as exc:
        trec.read_run(p)
    assert_at(exc, p, 2)
    p = write(tmp_path / "short.txt", "q1 Q0 a 1 1.0\n")
    with pytest.raises(DataError, match="expected 6 fields") as exc:
        trec.read_run(p)
    assert_at(exc, p, 1)


@pytest.mark.parametrize("name", ["run.txt", "run.txt.gz"])
def test_write_run_round_trip(tmp_path: Path, name: str) -> None:
    run = Run({"q1": [("d3", 2.5), ("d1", 0.1234567890123)], "q2": [("d9", -1.0)]}, name="my run")
    out = trec.write_run(run, tmp_path / name)
    lines = list(hfiles.iter_lines(out))
    assert lines[0][1] == "q1 Q0 d3 1 2.5 my_run"
    assert lines[1][1].split()[3] == "2" and lines[2][1] == "q2 Q0 d9 1 -1.0 my_run"
    back = trec.read_run(out)
    assert back.to_dict() == run.to_dict() and back.name == "my_run"
    assert not (tmp_path / (name + ".tmp")).exists()


def test_topics(tmp_path: Path) -> None:
    t = topics.read_topics(write(tmp_path / "t.tsv.gz", "1\tfirst query\n\n2\tsecond\twith tab\n", gz=True))
    assert t["1"].text == "first query" and t["2"].text == "second\twith tab"
    p = write(tmp_path / "bad.tsv", "1\tok\n2 no tab here\n")
    with pytest.raises(DataError, match="no tab") as exc:
        topics.read_topics(p)
    assert_at(exc, p, 2)
    p = write(tmp_path / "dup.tsv", "1\ta\n1\tb\n")
    with pytest.raises(DataError, match="repeated") as exc:
        topics.read_topics(p)
    assert_at(exc, p, 2)


# --- RankGPT / rank_llm -----------------------------------------------------------------------


def test_rankllm_real_dl19(data_dir: Path) -> None:
    c = rankllm.read_rankllm(data_dir / "trec-dl" / "bm25_top100.dl19.json")
    assert len(c.queries) == 43 and all(len(c.candidates[q]) == 100 for q in c.queries)
    assert c.queries["264014"].text == "how long is life cycle of flea"
    first = c.candidates["264014"][:2]
    assert first == [("5611210", 15.780599594116211), ("6641238", pytest.approx(15.0908, abs=1e-3))]
    assert c.corpus["5611210"].text.startswith("5. Cancel. A flea can live up to a year")
    assert len(c.corpus) == 4297


def test_rankllm_request_layout_and_errors(tmp_path: Path) -> None:
    p = write(tmp_path / "req.json", '[{"query": {"text": "q", "qid": 7}, "candidates": ['
              '{"docid": "a", "score": 2, "doc": {"contents": "A", "title": "TA"}},'
              '{"docid": "b", "score": 1, "doc": {"segment": "B"}}]}]')
    c = rankllm.read_rankllm(p)
    assert c.queries["7"].text == "q" and c.candidates["7"] == [("a", 2.0), ("b", 1.0)]
    assert c.corpus["a"].title == "TA" and c.corpus["b"].text == "B"
    p = write(tmp_path / "bad.json", '[{"query": "q", "hits": [{"content": "x", "qid": 1, "score": 1}]}]')
    with pytest.raises(DataError, match=r"entry 0 \(query 1\), hit 0: 'docid'"):
        rankllm.read_rankllm(p)
    p = write(tmp_path / "syntax.json", '[\n{"query": "q",\n "hits": [}\n]')
    with pytest.raises(DataError, match="invalid JSON") as exc:
        rankllm.read_rankllm(p)
    assert_at(exc, p, 3)
    p = write(tmp_path / "dup.json", '[{"query": "q", "hits": [{"content": "x", "qid": 1, "docid": "a", '
              '"score": 1}, {"content": "x", "qid": 1, "docid": "a", "score": 0}]}]')
    with pytest.raises(DataError, match="listed twice"):
        rankllm.read_rankllm(p)


# --- SciFact ----------------------------------------------------------------------------------


def test_sentence_list_parsing() -> None:
    assert scifact.parse_sentence_list("['A b.'\n 'C \"d\".' \"It's\"]") == ["A b.", 'C "d".', "It's"]
    assert scifact.parse_sentence_list("['x', 'y']") == ["x", "y"]
    assert scifact.parse_sentence_list("[]") == []
    for bad in ("__import__('os').system('true')", "['a' + 'b']", "['a', f(1)]", "'a'", "[b'x']"):
        with pytest.raises(ValueError):
            scifact.parse_sentence_list(bad)


# sha256 of the BEIR SciFact corpus.jsonl "text" of two documents (title kept apart)
BEIR_TEXT_SHA = {
    "4983": "6e1e455b22b6012aec0fbd5b942d77f6b9a9e1020ab3e639f6e6758a93e98ca5",
    "5836": "879d669bc5b461313928590b799ec2f34095955ca1e2e15c26fe6a01a32e1cf8",
}


def test_scifact_csv_zip_matches_beir(data_dir: Path) -> None:
    zpath = data_dir / "scifact" / "scifact_csv.zip"
    before = sorted(os.listdir(zpath.parent))
    corpus = scifact.read_scifact_corpus(zpath)
    assert len(corpus) == 5183
    for docid, sha in BEIR_TEXT_SHA.items():
        assert hashlib.sha256(corpus[docid].text.encode()).hexdigest() == sha
    assert corpus["4983"].title.startswith("Microstructural development of human newborn cerebral")
    assert not corpus["4983"].text.startswith("Microstructural")
    assert all(d.text and "' '" not in d.text[:3] for d in corpus.values())
    assert sorted(os.listdir(zpath.parent)) == before  # read in place, nothing extracted


def test_scifact_bad_csv(tmp_path: Path) -> None:
    p = write(tmp_path / "corpus.csv", 'doc_id,title,abstract,structured\n1,T,"[\'ok\']",False\n'
              '2,U,"[\'a\' os.system(1)]",False\n')
    with pytest.raises(DataError, match="bad abstract") as exc:
        scifact.read_scifact_corpus(p)
    assert_at(exc, p, 3)
    p = write(tmp_path / "c2.csv", "doc_id,title\n1,T\n")
    with pytest.raises(DataError, match="lacks columns"):
        scifact.read_scifact_corpus(p)


# --- NovelEval --------------------------------------------------------------------------------


def test_noveleval_real(data_dir: Path) -> None:
    ne = noveleval.read_noveleval(data_dir / "noveleval")
    assert len(ne.queries) == 21 and len(ne.corpus) == 420
    assert all(ne.candidates.doc_ids(q) == [f"{q}-{i}" for i in range(20)] for q in ne.queries)
    assert ne.qrels.n_judgments() == 420 and {g for d in ne.qrels.values() for g in d.values()} == {0, 1, 2}
    # CSV quoting undone: inner quotes restored, tabs inside a quoted field kept
    assert ne.corpus["0-4"].text.startswith('"The exact number? Oh boy')
    assert "Player\tClub" in ne.corpus["14-17"].text


def test_noveleval_bad_line(tmp_path: Path) -> None:
    root = tmp_path / "ne"
    write(root / "queries.tsv", "0\tq zero\n")
    write(root / "corpus.tsv", "0-0\tfine\n0-1\tbroken\textra\n")
    write(root / "qrels.txt", "0 Q0 0-0 1\n")
    with pytest.raises(DataError, match="expected 2 fields") as exc:
        noveleval.read_noveleval(root)
    assert_at(exc, root / "corpus.tsv", 2)


def test_real_trec_qrels(data_dir: Path) -> None:
    dl19 = trec.read_qrels(data_dir / "trec-dl" / "qrels.dl19-passage.txt")
    dl20 = trec.read_qrels(data_dir / "trec-dl" / "qrels.dl20-passage.txt")
    assert (len(dl19), dl19.n_judgments()) == (43, 9260)
    assert (len(dl20), dl20.n_judgments()) == (54, 11386)
    assert dl19.is_integer and {g for d in dl19.values() for g in d.values()} == {0, 1, 2, 3}
    sci = trec.read_qrels(data_dir / "scifact" / "qrels.beir-v1.0.0-scifact.test.txt")
    assert sci.n_judgments() == 339
    assert len(topics.read_topics(data_dir / "scifact" / "topics.beir-v1.0.0-scifact.test.tsv.gz")) == 300


def test_beir_qrels_as_hub_jsonl(tmp_path: Path) -> None:
    """Hub releases ship qrels as JSONL records (qrels/test.jsonl); errors name file and line."""
    from harness.formats.beir import read_beir

    (tmp_path / "qrels").mkdir()
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d1", "title": "", "text": "a"}\n')
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "x"}\n')
    (tmp_path / "qrels" / "test.jsonl").write_text('{"query-id": "q1", "corpus-id": "d1", "score": 2}\n')
    data = read_beir(tmp_path)
    assert dict(data.qrels) == {"q1": {"d1": 2}}
    (tmp_path / "qrels" / "test.jsonl").write_text('{"query-id": "q1", "corpus-id": "d1", "score": 2}\n'
                                                   '{"query-id": "q1", "corpus-id": "d2", "score": "hi"}\n')
    with pytest.raises(DataError, match=r"test.jsonl, line 2: 'score' must be a number"):
        read_beir(tmp_path)


def test_hub_qrels_one_rule_for_scores_and_ids(tmp_path):
    """The one hub-JSONL qrels reader plugins use: numeric strings are numbers, alternate id keys are
    accepted, a missing score is an error (no silent default), a repeated pair is an error."""
    from harness.formats.beir import read_qrels_records

    p = tmp_path / "test.jsonl"
    p.write_text('{"query-id": "q1", "corpus-id": "d1", "score": "2"}\n'
                 '{"query_id": 7, "corpus_id": "d2", "score": 0.5}\n')
    q = read_qrels_records(p)
    assert q["q1"]["d1"] == 2 and type(q["q1"]["d1"]) is int and q["7"]["d2"] == 0.5
    p.write_text('{"query-id": "q1", "corpus-id": "d1"}\n')
    with pytest.raises(DataError, match="line 1: 'score' must be a number, got None"):
        read_qrels_records(p)
    p.write_text('{"query-id": "q1", "corpus-id": "d1", "score": 1}\n'
                 '{"query-id": "q1", "corpus-id": "d1", "score": 0}\n')
    with pytest.raises(DataError, match="line 2: document 'd1' judged twice for query 'q1' \\(first on line 1\\)"):
        read_qrels_records(p)
