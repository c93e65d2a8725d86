"""Reranking tasks rerank: a dataset that carries candidates (MTEB's ``top_ranked``, pools, rank_llm files)
ranks them by default; a retriever the caller names sets them aside, with one line on stderr and a record
in results.json. The MTEB-layout repository is served by the Hub imitation (``harness.testing.HubServer``)
and read from an empty data folder; the expected figures are MTEB's reranking evaluation recomputed here with
pytrec_eval: each query's candidates scored, documents outside them absent, the mean over the run's queries
(``mteb/models/search_wrappers.py`` ``_rerank_documents``, ``mteb/_evaluators/retrieval_metrics.py``
``calculate_retrieval_scores``, mteb 2.20)."""

from __future__ import annotations

import json

import pytest
import pytrec_eval

from harness import Context, Query, Run, Task, evaluate
from harness.testing import HubServer, plugin_registry

COMMIT = "2" * 40
REPO = "org/reranking"
CARD = """---
configs:
- config_name: corpus
  data_files:
  - split: corpus
    path: corpus.jsonl
- config_name: queries
  data_files:
  - split: queries
    path: queries.jsonl
- config_name: default
  data_files:
  - split: test
    path: qrels/test.jsonl
- config_name: top_ranked
  data_files:
  - split: test
    path: top_ranked.jsonl
---
# a reranking task in MTEB's layout (test data)
"""
DOCS = {
    "d1": "lobster roll with butter", "d2": "crab bisque", "d3": "bread and butter", "d4": "harbour boats",
    "d5": "fishing boats at dawn", "d6": "soup of the day", "d7": "lobster lobster roll lobster butter",
    "d8": "boats boats fishing harbour",
}
QUERIES = {"q1": "lobster roll butter", "q2": "fishing boats harbour", "q3": "soup"}
QRELS = {"q1": {"d1": 1, "d7": 2}, "q2": {"d4": 1, "d8": 1}, "q3": {"d6": 1}}
# q3 has no row: MTEB scores nothing for it (an empty result, nDCG 0). d7 and d8, relevant and the words'
# best BM25 matches, are outside every pool: ranking the whole corpus finds them, the task never does.
TOP_RANKED = {"q1": ["d3", "d1", "d2"], "q2": ["d5", "d2", "d4", "d6"]}


def _jsonl(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def repository() -> dict[str, bytes]:
    return {
        "README.md": CARD.encode(),
        "corpus.jsonl": _jsonl({"_id": d, "title": "", "text": t} for d, t in DOCS.items()),
        "queries.jsonl": _jsonl({"_id": q, "text": t} for q, t in QUERIES.items()),
        "qrels/test.jsonl": _jsonl({"query-id": q, "corpus-id": d, "score": g}
                                   for q, docs in QRELS.items() for d, g in docs.items()),
        "top_ranked.jsonl": _jsonl({"query-id": q, "corpus-ids": ids} for q, ids in TOP_RANKED.items()),
    }


def mteb_ndcg10(results: dict[str, dict[str, float]]) -> float:
    """MTEB's nDCG@10 of a run: pytrec_eval's ndcg_cut_10, the mean over the run's queries (unrounded;
    MTEB then rounds to 5 places)."""
    per_query = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg_cut.10"}).evaluate(results)
    return sum(v["ndcg_cut_10"] for v in per_query.values()) / len(per_query)


def scored_candidates(score) -> dict[str, dict[str, float]]:
    """MTEB's reranking: every query's candidates scored by the model, nothing else (q3: none)."""
    return {q: {d: score(QUERIES[q], DOCS[d]) for d in TOP_RANKED.get(q, [])} for q in QUERIES}


def overlap(query: str, text: str) -> float:
    """A model for the test: shared words, ties broken by the text's length (every score distinct here)."""
    return len(set(query.split()) & set(text.split())) + len(text) / 1000


class Overlap:
    """The ``overlap`` model as a reranker: it scores the documents of the run it is given."""

    def rerank(self, queries, run, corpus):
        return Run.from_scores({q: {d: overlap(queries[q].text, corpus[d].text) for d in run.doc_ids(q)}
                                for q in run})


def read_run(path) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        q, _, d, _, s, _ = line.split()
        out.setdefault(q, {})[d] = float(s)
    return out


@pytest.fixture
def hub(monkeypatch, tmp_path):
    with HubServer() as server:
        server.downloading(monkeypatch, tmp_path / "hf")
        server.add_repo(REPO, repository(), commit=COMMIT)
        yield server


SPEC = f"mteb:repo={REPO},revision={COMMIT}"


def _ctx(tmp_path, registry=None) -> Context:
    (tmp_path / "data").mkdir(exist_ok=True)
    return Context.create(data_dir=tmp_path / "data", registry=registry)


def test_a_dataset_with_top_ranked_ranks_only_its_candidates_by_default(hub, tmp_path):
    shell = hub.shell(tmp_path)
    res = shell("eval", "--dataset", SPEC, "-o", str(tmp_path / "out"), "--json")
    assert res.returncode == 0, res.stderr[-3000:]
    assert "set aside" not in res.stderr
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["components"]["retriever"]["spec"] == "candidates" and saved["task"]["first_stage"] == "auto"
    assert "candidates_set_aside" not in saved["components"]["retriever"]
    run = read_run(tmp_path / "out" / "run.trec")
    assert {q: list(docs) for q, docs in run.items()} == TOP_RANKED  # the pools, in their order; q3: nothing
    # MTEB's evaluation of the candidates in their given order (scores falling with the position)
    expected = mteb_ndcg10({q: {d: float(-i) for i, d in enumerate(TOP_RANKED.get(q, []))} for q in QUERIES})
    assert saved["metrics"]["nDCG@10"] == pytest.approx(expected, abs=1e-12)
    assert json.loads(res.stdout)["nDCG@10"] == pytest.approx(expected, abs=1e-12)
    # the written run, evaluated as MTEB does (its results hold every query; a TREC file cannot hold q3's none)
    assert mteb_ndcg10({q: run.get(q, {}) for q in QUERIES}) == pytest.approx(expected, abs=1e-12)


def test_the_candidates_scored_by_a_model_give_mteb_s_reranking_figure(hub, tmp_path):
    """The Python API without a retriever: the candidates, reranked by the model, equal MTEB's
    ``_rerank_documents`` followed by its evaluation."""
    result = evaluate(dataset=SPEC, rerankers=[Overlap()], context=_ctx(tmp_path), progress=False)
    assert result.components["retriever"]["spec"] == "candidates"
    expected = mteb_ndcg10(scored_candidates(overlap))
    assert result.metrics["nDCG@10"] == pytest.approx(expected, abs=1e-12)
    assert all(set(result.runs["default"].doc_ids(q)) <= set(TOP_RANKED.get(q, [])) for q in QUERIES)
    # the whole corpus would have found d7 and d8: another, higher figure, which the task does not define
    corpus = mteb_ndcg10({q: {d: overlap(QUERIES[q], t) for d, t in DOCS.items()} for q in QUERIES})
    assert corpus > expected + 0.1


def test_a_named_retriever_sets_the_candidates_aside_and_says_so(hub, tmp_path):
    shell = hub.shell(tmp_path)
    res = shell("eval", "--dataset", SPEC, "--retriever", "bm25", "-o", str(tmp_path / "out"), "-q")
    assert res.returncode == 0, res.stderr[-3000:]
    said = [line for line in res.stderr.splitlines() if "set aside" in line]
    assert len(said) == 1 and "bm25" in said[0] and "candidate" in said[0], res.stderr
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    retriever = saved["components"]["retriever"]
    assert retriever["spec"] == "bm25" and retriever["candidates_set_aside"] is True
    assert retriever["set_aside_by"] == "caller"
    run = read_run(tmp_path / "out" / "run.trec")
    assert run["q1"] and next(iter(run["q1"])) == "d7" and "d8" in run["q2"]  # the whole corpus was ranked
    assert saved["metrics"]["nDCG@10"] == pytest.approx(mteb_ndcg10(run), abs=1e-12)


def test_a_task_that_says_retrieve_keeps_its_retriever_quietly(hub, tmp_path, capsys):
    """A task's own choice is not the caller's: no line; results.json still records the candidates unused.
    A task whose first stage is its candidates, given another retriever by the caller: the line."""
    registry = plugin_registry()
    retrieve = Task(name="by-corpus", dataset="mteb", dataset_args={"repo": REPO, "revision": COMMIT},
                    first_stage="retrieve", retriever="bm25")
    result = evaluate(retrieve, context=_ctx(tmp_path, registry), progress=False)
    assert result.components["retriever"]["spec"] == "bm25"
    assert result.components["retriever"]["set_aside_by"] == "task"
    named = evaluate(retrieve, retriever="bm25", context=_ctx(tmp_path, registry), progress=False)
    assert named.components["retriever"]["set_aside_by"] == "task"
    assert "set aside" not in capsys.readouterr().err
    rerank = Task(name="by-pool", dataset="mteb", dataset_args={"repo": REPO, "revision": COMMIT})
    assert evaluate(rerank, context=_ctx(tmp_path, registry), progress=False).components["retriever"]["spec"] == \
        "candidates"
    aside = evaluate(rerank, retriever="bm25", context=_ctx(tmp_path, registry), progress=False)
    err = capsys.readouterr().err
    assert err.count("set aside") == 1 and "by-pool" in err
    assert aside.components["retriever"]["set_aside_by"] == "caller"


def test_a_plain_rankllm_dataset_gives_the_trec_dl_figure(data_dir):
    """``--dataset rankllm:...`` on the DL19 file ranks its candidates, as ``--task trec-dl19`` does (0.5058)."""
    spec = (f"rankllm:candidates='{data_dir / 'trec-dl/bm25_top100.dl19.json'}',"
            f"qrels='{data_dir / 'trec-dl/qrels.dl19-passage.txt'}'")
    result = evaluate(dataset=spec, context=Context.create(data_dir=data_dir), progress=False)
    assert result.components["retriever"]["spec"] == "candidates"
    assert round(result.metrics["nDCG@10"], 4) == 0.5058


def test_a_long_candidate_list_is_ranked_whole_as_mteb_scores_it():
    """MTEB scores every candidate (up to its top_k of 1,000): a plain dataset's 150 candidates are all
    reranked, not the task default's first 100. The relevant document sits at position 145 (fifth once reversed)."""
    from harness import Dataset, Document, Qrels, hookimpl

    docs = {f"p{i:03d}": Document(f"p{i:03d}", f"passage {i}") for i in range(150)}
    pool = list(docs)

    class LongPool:
        @hookimpl
        def register_datasets(self, register):
            register("long-pool", lambda: Dataset.single(
                "long-pool", docs, {"q": Query("q", "passage")}, Qrels({"q": {"p145": 1}}),
                Run.from_order({"q": pool})), "150 candidates")

    class Reverse:
        def rerank(self, queries, run, corpus):
            return Run.from_order({q: run.doc_ids(q)[::-1] for q in run})

    result = evaluate(dataset="long-pool", rerankers=[Reverse()], registry=plugin_registry(LongPool()),
                      progress=False)
    assert len(result.runs["default"]["q"]) == 150
    per_query = pytrec_eval.RelevanceEvaluator({"q": {"p145": 1}}, {"ndcg_cut.10"}).evaluate(
        {"q": {d: float(i) for i, d in enumerate(pool)}})  # MTEB: every candidate scored (here: reversed)
    assert per_query["q"]["ndcg_cut_10"] > 0
    assert result.metrics["nDCG@10"] == pytest.approx(per_query["q"]["ndcg_cut_10"], abs=1e-12)
    assert evaluate(dataset="long-pool", rerankers=[Reverse()], depth=100, registry=plugin_registry(LongPool()),
                    progress=False).metrics["nDCG@10"] == 0.0  # --depth still cuts
