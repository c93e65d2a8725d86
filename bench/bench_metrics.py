"""Metric computation for 10k queries x 100 documents: harness vs calling pytrec_eval directly.

    python bench/bench_metrics.py [--queries 10000] [--depth 100] [--repeat 3]

Both sides compute per-query values and their means for nDCG@10, RR, R@100, P@10 and
MAP on the same synthetic run and qrels in the same process; the ratio is what to read (these
machines are noisy). The values are checked to agree.
"""

from __future__ import annotations

import argparse
import random
import time

import pytrec_eval

from harness.concepts.dataset import Dataset
from harness.concepts.protocols import MetricInput
from harness.concepts.qrels import Qrels
from harness.concepts.run import Run
from harness.metrics.standard import StandardMetric


def make(n_queries: int, depth: int, seed: int = 0) -> tuple[dict, dict]:
    rng = random.Random(seed)
    run, qrels = {}, {}
    for q in range(n_queries):
        qid = f"q{q}"
        docs = [f"d{rng.randrange(1_000_000)}" for _ in range(depth)]
        run[qid] = {d: float(depth - i) + rng.random() * 0.1 for i, d in enumerate(docs)}
        judged = rng.sample(docs, 10) + [f"x{rng.randrange(1_000_000)}" for _ in range(5)]
        qrels[qid] = {d: rng.choice((0, 0, 1, 2, 3)) for d in judged}
    return run, qrels


def best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--depth", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    run_d, qrels_d = make(a.queries, a.depth)
    run = Run({q: sorted(d.items(), key=lambda x: -x[1]) for q, d in run_d.items()})
    qrels = Qrels(qrels_d)
    names = ["nDCG@10", "MRR", "Recall@100", "P@10", "MAP"]
    metric = StandardMetric(names=names)
    ds = Dataset.single("bench", {}, {}, qrels)

    native = ["ndcg_cut_10", "recip_rank", "recall_100", "P_10", "map"]

    def direct():
        """What a script does with pytrec_eval: evaluate, then average each measure."""
        ev = pytrec_eval.RelevanceEvaluator(qrels_d, set(native))
        res = ev.evaluate(run_d)
        means = {m: sum(v[m] for v in res.values()) / len(res) for m in native}
        return res, means

    def ours():
        return metric.compute(MetricInput({"default": run}, {"default": qrels}, ds))

    ours()  # warm imports
    t_direct, t_ours = float("inf"), float("inf")
    for _ in range(a.repeat):  # interleaved, best of each: the machine's noise hits both sides alike
        t_direct = min(t_direct, best_of(direct, 1))
        t_ours = min(t_ours, best_of(ours, 1))
    d, _ = direct()
    o = ours()
    mean = sum(v["ndcg_cut_10"] for v in d.values()) / len(d)
    assert abs(mean - o.aggregate["nDCG@10"]) < 1e-12, (mean, o.aggregate["nDCG@10"])
    mrr = sum(v["recip_rank"] for v in d.values()) / len(d)
    assert abs(mrr - o.aggregate["MRR"]) < 1e-12
    print(f"{a.queries} queries x {a.depth} docs, measures {names}")
    print(f"pytrec_eval direct : {t_direct:.3f} s")
    print(f"harness            : {t_ours:.3f} s")
    print(f"ratio harness/direct: {t_ours / t_direct:.2f}x (values identical: nDCG@10={mean:.6f})")


if __name__ == "__main__":
    main()
