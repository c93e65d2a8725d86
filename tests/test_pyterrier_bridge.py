"""PyTerrier in both directions. Frames follow PyTerrier's conventions (qid, query, docno, text, score, rank
from 0; ``pt.model.add_ranks``: score descending, ties in row order), checked with pandas alone; a
transformer object is evaluated as ``--reranker pyterrier:MODULE:OBJECT`` (a plain pandas object, then a
real ``pt.apply`` transformer); a harness reranker through ``harness.pyterrier.Reranker`` ranks as
``harness eval --reranker`` does (the dense reranker, and the LLM test double against the loopback
server), inside PyTerrier pipelines (``>>``, ``%``) and ``pt.Experiment``."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.concepts.document import Document
from harness.concepts.query import Query
from harness.concepts.run import Run
from harness.datasets.loaders import load_demo_dataset
from harness.formats.trec import read_run
from harness.testing.llm_server import TestServer

pd = pytest.importorskip("pandas", reason="PyTerrier frames need pandas: pip install 'harness-ir[pyterrier]'")

from harness.formats.pyterrier_frames import (  # noqa: E402
    frame_from_ranking,
    frame_with_ranking,
    ranking_from_frame,
    run_from_frame,
)

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

#: a transformer without PyTerrier: PyTerrier's protocol is a ``transform`` of frames
PLAIN_MODULE = '''
class LongestFirst:
    """Scores each row by its text's length, as pt.apply.doc_score would; keeps every column."""
    def transform(self, frame):
        out = frame.copy()
        out["score"] = [float(len(t)) for t in out["text"]]
        return out.drop(columns=["rank"])

longest = LongestFirst()

def make(sign=1.0):
    class Signed(LongestFirst):
        def transform(self, frame):
            out = super().transform(frame)
            out["score"] = sign * out["score"]
            return out
    return Signed()
'''


def invoke(*args: str) -> str:
    res = CliRunner().invoke(cli, list(args))
    assert res.exit_code == 0, res.output
    return res.output


def _small() -> tuple[dict[str, Query], Run, dict[str, Document]]:
    queries = {"q1": Query("q1", "cats and dogs", "", {"query": "cats"}), "q2": Query("q2", "birds")}
    run = Run({"q1": [("d3", 3.0), ("d1", 2.0), ("d2", 2.0)], "q2": [("d2", 1.5)]})
    corpus = {"d1": Document("d1", "a", "T1"), "d2": Document("d2", "bb"), "d3": Document("d3", "ccc")}
    return queries, run, corpus


def test_frames_follow_pyterriers_conventions():
    queries, run, corpus = _small()
    frame = frame_from_ranking(queries, run, corpus)
    assert list(frame.columns) == ["qid", "query", "docno", "text", "title", "score", "rank"]
    assert frame["rank"].tolist() == [0, 1, 2, 0] and frame["query"].tolist()[0] == "cats and dogs"
    assert frame["title"].tolist() == ["", "T1", "", ""]
    with_instruction = frame.assign(instruction=["", "", "", "fly"])
    back_q, back_run, back_corpus = ranking_from_frame(with_instruction, "{text} {instruction}")
    assert back_run.to_dict() == run.to_dict() and back_corpus == corpus
    assert back_q["q2"].text == "birds fly" and back_q["q2"].meta["query"] == "birds"
    # without a rank column: score descending, ties in row order (pt.model.add_ranks, method="first")
    shuffled = frame.drop(columns=["rank"]).iloc[[2, 1, 0, 3]]
    assert run_from_frame(shuffled).doc_ids("q1") == ["d3", "d2", "d1"]
    # a rank column wins over the scores; no score: the row order, scores n..1
    assert run_from_frame(frame.assign(rank=[2, 1, 0, 0])).doc_ids("q1") == ["d2", "d1", "d3"]
    assert run_from_frame(frame.drop(columns=["score", "rank"])).scores("q1") == {"d3": 3.0, "d1": 2.0, "d2": 1.0}
    reranked = frame_with_ranking(frame.assign(extra=list("wxyz")), Run({"q1": [("d2", 9.0), ("d3", 1.0)]}))
    assert reranked["docno"].tolist() == ["d2", "d3"] and reranked["rank"].tolist() == [0, 1]
    assert reranked["extra"].tolist() == ["y", "w"]  # every column travels with its row
    with pytest.raises(Exception, match="lacks the column"):
        run_from_frame(frame.drop(columns=["docno"]))
    with pytest.raises(Exception, match="not a finite number"):
        run_from_frame(frame.assign(score=[1.0, float("nan"), 0.0, 0.0]))


def _by_length(first_stage: Run, corpus, sign: float = 1.0) -> dict[str, list[str]]:
    """The ranking a length scorer gives, by hand: sign * len(text) descending, ties in the first stage's order."""
    out = {}
    for q in first_stage:
        ids = first_stage.doc_ids(q)
        out[q] = sorted(ids, key=lambda d: (-sign * len(corpus[d].text), ids.index(d)))
    return out


@pytest.fixture
def plain_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    (tmp_path / "plain_pt.py").write_text(textwrap.dedent(PLAIN_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    return "plain_pt"


@pytest.mark.parametrize("target,sign", [("longest", 1.0), ("make:sign=-1", -1.0)])
def test_a_transformer_object_is_evaluated_as_a_reranker(plain_module: str, tmp_path: Path, target: str, sign: float):
    invoke("eval", "--task", "demo", "--reranker", f"pyterrier:{plain_module}:{target}", "-o", str(tmp_path / "o"),
           "--quiet")
    first = read_run(tmp_path / "o" / "run.first_stage.trec")
    final = read_run(tmp_path / "o" / "run.trec")
    corpus = load_demo_dataset().corpus
    assert {q: final.doc_ids(q) for q in final} == _by_length(first, corpus, sign)
    comp = json.loads((tmp_path / "o" / "results.json").read_text())["components"]["rerankers"][0]
    assert comp["name"] == "pyterrier" and comp["target"] == f"{plain_module}:{target.split(':')[0]}"


def test_bad_targets_are_one_message(plain_module: str):
    for spec, says in (("pyterrier:no_such_module_x:y", "cannot import"), (f"pyterrier:{plain_module}:nothing",
                                                                             "has no attribute"),
                       (f"pyterrier:{plain_module}:longest:sign=2", "a transformer already"),
                       ("pyterrier:justamodule", "give MODULE:OBJECT")):
        res = CliRunner().invoke(cli, ["eval", "--task", "demo", "--reranker", spec])
        assert res.exit_code == 2 and says in res.output, res.output


# -- with PyTerrier -------------------------------------------------------------------------------------------------
def _frame_from_first_stage(folder: Path) -> pd.DataFrame:
    """The demo's first stage as PyTerrier's frame, raw query text and instruction apart."""
    ds = load_demo_dataset()
    queries, corpus = ds.queries["default"], ds.corpus
    first = read_run(folder / "run.first_stage.trec")
    rows = [{"qid": q, "query": queries[q].text, "instruction": queries[q].instruction, "docno": d,
             "text": corpus[d].text, "title": corpus[d].title, "score": s, "rank": i}
            for q in first for i, (d, s) in enumerate(first[q])]
    return pd.DataFrame(rows)


def _orders(frame: pd.DataFrame) -> dict[str, list[str]]:
    return {q: g.sort_values("rank")["docno"].tolist() for q, g in frame.groupby("qid", sort=False)}


def test_pt_apply_transformer_as_a_reranker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    pytest.importorskip("pyterrier", reason="needs python-terrier: pip install 'harness-ir[pyterrier]'")
    (tmp_path / "pt_pipes.py").write_text("import pyterrier as pt\n"
                                          "longest = pt.apply.doc_score(lambda row: float(len(row['text'])))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    invoke("eval", "--task", "demo", "--reranker", "pyterrier:pt_pipes:longest", "-o", str(tmp_path / "o"), "--quiet")
    first, final = read_run(tmp_path / "o" / "run.first_stage.trec"), read_run(tmp_path / "o" / "run.trec")
    assert {q: final.doc_ids(q) for q in final} == _by_length(first, load_demo_dataset().corpus)


def test_bridge_ranks_as_harness_eval_with_the_dense_reranker(tmp_path: Path):
    pt = pytest.importorskip("pyterrier", reason="needs python-terrier: pip install 'harness-ir[pyterrier]'")
    pytest.importorskip("sentence_transformers", reason="the dense reranker needs pip install 'harness-ir[dense]'")
    from harness.pyterrier import Reranker

    invoke("eval", "--task", "demo", "--reranker", "dense", "-o", str(tmp_path / "o"), "--quiet")
    frame = _frame_from_first_stage(tmp_path / "o")
    reranker = Reranker("dense")
    assert isinstance(reranker, pt.Transformer)
    out = reranker.transform(frame)
    final = read_run(tmp_path / "o" / "run.trec")
    assert _orders(out) == {q: final.doc_ids(q) for q in final}
    assert set(out.columns) == set(frame.columns)
    # in a pipeline: a source of the first stage, the reranker, a cut-off (PyTerrier's %)
    pipeline = pt.Transformer.from_df(frame) >> reranker % 3
    top = pipeline.transform(frame[["qid", "query"]].drop_duplicates())
    assert _orders(top) == {q: final.doc_ids(q)[:3] for q in final}
    # pt.Experiment's nDCG@10 (ir_measures) on the bridge equals harness eval's
    qrels = pd.DataFrame([{"qid": q, "docno": d, "label": int(g)}
                          for q, docs in load_demo_dataset().qrels["default"].items() for d, g in docs.items()])
    table = pt.Experiment([pt.Transformer.from_df(frame) >> reranker], frame[["qid", "query"]].drop_duplicates(),
                          qrels, eval_metrics=["ndcg_cut_10"])
    ours = json.loads((tmp_path / "o" / "results.json").read_text())["metrics"]["nDCG@10"]
    assert table["ndcg_cut_10"].iloc[0] == pytest.approx(ours, abs=1e-9)


def test_bridge_ranks_as_harness_eval_with_an_llm_reranker(tmp_path: Path, llm_double: str):
    pytest.importorskip("pyterrier", reason="needs python-terrier: pip install 'harness-ir[pyterrier]'")
    from harness.pyterrier import Reranker

    def reply(request):  # Yes for passages on three of the demo's topics, else No: a reordering to reproduce
        doc = request["messages"][0]["content"].split("\n")[1].lower()
        return "Yes" if any(w in doc for w in ("diabetes", "insulin", "solar")) else "No"

    with TestServer(reply=reply) as srv:
        invoke("eval", "--task", "demo", "--reranker", llm_double, "--llm", srv.spec("judge"), "-o",
               str(tmp_path / "o"), "--quiet")
        bridge = Reranker(llm_double, llm=srv.spec("judge"))
        out = bridge.transform(_frame_from_first_stage(tmp_path / "o"))
        usage = bridge.usage()
    final = read_run(tmp_path / "o" / "run.trec")
    assert _orders(out) == {q: final.doc_ids(q) for q in final}
    assert usage["total"]["calls"] + usage["total"].get("cache_hits", 0) > 0  # the LLM layer's counters
    assert bridge.config()["spec"] == llm_double and "prompt" in bridge.config()
