"""FollowIR end to end from an empty data folder through the Hub imitation, p-MRR under both tie rules
(hand-computed), and the figures against MTEB's own evaluation of the same scores."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from importlib import metadata

import pytest
from followir_fixture import POOLS, QREL_DIFF, QRELS, SCORES, TableReranker, repository
from harness import Context, evaluate
from harness.testing import HubServer, plugin_registry

import harness_followir
from harness_followir.benchmarks import BENCHMARKS, benchmark

CORE17 = benchmark("core17")


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """Every FollowIR repository at its pinned commit, reached through HF_ENDPOINT; downloads on."""
    with HubServer() as server:
        for b in BENCHMARKS:
            server.add_repo(b.repo, repository(), commit=b.revision)
        server.downloading(monkeypatch, tmp_path / "hf")
        yield server


def _context(tmp_path) -> Context:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    return Context.create(registry=plugin_registry(harness_followir), data_dir=data)


def test_both_tie_rules_give_the_hand_computed_values(hub, tmp_path):
    """Topic 310, counted document d3 (pool d1..d5):
    og scores d1 3, d2 2, d3 2, d4 1, d5 0; changed d1 3, d5 2, d2 = d3 = d4 = 1.
      trec_eval (ties by doc id descending): og d1, d3, d2 -> R_og(d3) = 2; changed d1, d5, d4, d3, d2 ->
      R_new = 4; R_og < R_new: 1 - 2/4 = 0.5.
      release (ties in pool order): og d1, d2, d3 -> R_og = 3; changed d1, d5, d2, d3, d4 -> R_new = 4:
      1 - 3/4 = 0.25.
    Topic 311, counted d4 and d6 (pool d6, d2, d4, d1, d3): og strictly d6 5, d2 4, d4 3, d1 2, d3 1 ->
    R_og(d6) = 1, R_og(d4) = 3 under both rules; changed d1 2, then d6 = d2 = d4 = 1, d3 0.
      trec_eval: d1, d6, d4, d2, d3 -> d6: 1 vs 2 -> 1 - 1/2 = 0.5; d4: 3 vs 3 -> 3/3 - 1 = 0; mean 0.25.
      release: d1, d6, d2, d4, d3 -> d6: 0.5; d4: 3 vs 4 -> 1 - 3/4 = 0.25; mean 0.375.
    p-MRR = mean over topics: trec_eval (0.5 + 0.25) / 2 = 0.375; release (0.25 + 0.375) / 2 = 0.3125."""
    res = evaluate("followir:core17", rerankers=[TableReranker()], progress=False, context=_context(tmp_path))
    assert res.metrics["p-MRR"] == pytest.approx(0.375)
    assert res.metrics["p-MRR[release]"] == pytest.approx(0.3125)
    assert res.per_query["310"]["p-MRR"] == pytest.approx(0.5)
    assert res.per_query["310"]["p-MRR[release]"] == pytest.approx(0.25)
    assert res.per_query["311"]["p-MRR"] == pytest.approx(0.25)
    assert res.per_query["311"]["p-MRR[release]"] == pytest.approx(0.375)


def test_the_pool_alone_moves_nothing(hub, tmp_path):
    """Without a reranker each mode is its pool in the published order: identical pools, p-MRR 0."""
    res = evaluate("followir:news21", progress=False, context=_context(tmp_path))
    assert res.metrics["p-MRR"] == 0.0 and res.metrics["p-MRR[release]"] == 0.0


def _written_run(folder, mode: str) -> dict[str, dict[str, float]]:
    """The run file the evaluation wrote for ``mode``, as {MTEB query id: {doc: score}}."""
    from harness.formats import read_trec_run

    path = next(p for p in folder.rglob("*.trec") if f"{mode}" in p.name)
    run = read_trec_run(path)
    return {f"{q}-{mode}": dict(run.scores(q)) for q in run}


def test_scores_equal_mtebs_own_evaluation(hub, tmp_path):
    """MTEB's functions (mteb/_evaluators/retrieval_metrics.py) on the same qrels: p-MRR from the scores the
    reranker gave (ties kept) under MTEB's current rule, and under the release rule with MTEB's
    pre-#5241 ``get_rank_from_dict`` (a stable score-only sort over the pool order); MAP@1000 and nDCG@5
    of each half from the run files harness wrote."""
    rm = pytest.importorskip("mteb._evaluators.retrieval_metrics", reason="mteb is not installed")
    out = tmp_path / "out"
    res = evaluate("followir:core17", rerankers=[TableReranker()], progress=False, context=_context(tmp_path),
                   output=str(out))
    qrels = {q: {d: int(s) for d, s in docs.items()} for q, docs in QRELS.items()}
    og = {q: SCORES[q] for q in SCORES if q.endswith("-og")}
    new = {q: SCORES[q] for q in SCORES if not q.endswith("-og")}
    assert res.metrics["p-MRR"] == pytest.approx(rm.calculate_pmrr(og, new, QREL_DIFF))

    def release_rank(dict_of_results, doc_id):  # mteb < 2.19.5 (and 1.x): key=lambda x: x[1], stable
        ranked = sorted(dict_of_results.items(), key=lambda x: x[1], reverse=True)
        for i, (d, score) in enumerate(ranked):
            if d == doc_id:
                return i + 1, score
        return len(ranked) + 1, 0

    in_pool_order = {q: {d: s[d] for d in POOLS[q.split("-")[0]]} for q, s in SCORES.items()}
    patch = pytest.MonkeyPatch()
    with patch.context() as m:
        m.setattr(rm, "get_rank_from_dict", release_rank)
        release = rm.calculate_pmrr({q: v for q, v in in_pool_order.items() if q.endswith("-og")},
                                    {q: v for q, v in in_pool_order.items() if not q.endswith("-og")}, QREL_DIFF)
    assert res.metrics["p-MRR[release]"] == pytest.approx(release)
    results = {**_written_run(out, "og"), **_written_run(out, "changed")}
    mteb = rm.evaluate_p_mrr_change(qrels, results, QREL_DIFF, [1, 3, 5, 10, 100, 1000])
    for mode in ("og", "changed"):
        assert res.metrics[f"MAP@1000[{mode}]"] == pytest.approx(mteb[mode]["map_at_1000"], abs=1e-5)
        assert res.metrics[f"nDCG@5[{mode}]"] == pytest.approx(mteb[mode]["ndcg_at_5"], abs=1e-5)


def _installed() -> bool:
    return any(ep.value == "harness_followir" for ep in metadata.entry_points(group="harness"))


@pytest.mark.skipif(not _installed(), reason="the CLI sees installed plugins only: "
                                             "pip install -e plugins/harness-followir")
@pytest.mark.parametrize("b", BENCHMARKS, ids=lambda b: b.name)
def test_every_task_runs_from_an_empty_data_folder(hub, tmp_path, b):
    """``harness eval --task followir:<x>`` in a subprocess (HF_ENDPOINT read as a shell would): every file
    fetched at the pin, results.json naming the repository, the commit and the sha256 of each byte read."""
    data = tmp_path / "data"
    data.mkdir()
    env = dict(os.environ, HARNESS_DATA=str(data))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "harness.cli", "eval", "--task", b.task_name, "-o", str(out), "-q"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    served = repository()
    gets = {r.path for r in hub.requests if r.method == "GET" and r.file is not None}
    assert gets == {f"/datasets/{b.repo}/resolve/{b.revision}/{p}" for p in served}
    saved = json.loads((out / "results.json").read_text())
    ident = saved["dataset"]
    assert ident["repo"] == b.repo and ident["revision"] == b.revision
    rel = f"mteb/{b.repo}/{b.revision}"
    assert {f["path"]: f["sha256"] for f in ident["files"]} == {
        f"{rel}/{p}": hashlib.sha256(v).hexdigest() for p, v in served.items()}
    assert saved["task"]["mteb"]["task_name"] == b.mteb_task
    assert {f"{b.score}[og]", "p-MRR", "p-MRR[release]"} <= set(saved["metrics"])
