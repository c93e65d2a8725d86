"""Dev-set triplets (q, more relevant, less relevant) by the released extraction rules
(``triplet_extraction.py``, notes §2) and pairwise accuracy, for tuning prompts without touching test.

Rules: binary tasks: (relevant, each non-relevant); Clinical-Trial (0/1/2): (2, 1), (2, 0), (1, 0);
DORIS-MAE (fractional): (x, y) with x > max/2 and max/2 <= y <= x - 0.25, max the query's highest grade.
``rule="auto"`` picks DORIS for non-integer grades, graded for a maximum of 2, else binary.

The metric ``birco-pairwise`` reads a run: a triplet is correct when the more relevant document is ranked
above the less relevant one. The paper used fewer than 100 triplets per dataset; ``sample=N`` draws N
triplets per task (seeded) instead of using all of them (how the released script chose its subset is
not stated in the notes).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from harness import MetricInput, MetricResult

RULES = ("auto", "binary", "graded", "doris")


def pick_rule(qrels: Mapping[str, Mapping[str, float]]) -> str:
    grades = [float(g) for p in qrels.values() for g in p.values()]
    if any(not g.is_integer() for g in grades):
        return "doris"
    return "graded" if grades and max(grades) >= 2 else "binary"


def query_triplets(pool: Mapping[str, float], rule: str) -> list[tuple[str, str]]:
    """``(more relevant, less relevant)`` pairs of one query's pool under ``rule``."""
    items = [(d, float(g)) for d, g in pool.items()]
    if rule == "binary":
        pos = [d for d, g in items if g >= 1]
        neg = [d for d, g in items if g < 1]
        return [(p, n) for p in pos for n in neg]
    if rule == "graded":
        out = []
        for hi, lo in ((2, 1), (2, 0), (1, 0)):
            out += [(p, n) for p, gp in items if gp == hi for n, gn in items if gn == lo]
        return out
    if rule == "doris":
        if not items:
            return []
        top = max(g for _, g in items)
        return [(p, n) for p, x in items if x > top / 2 for n, y in items if top / 2 <= y <= x - 0.25]
    raise ValueError(f"unknown triplet rule {rule!r}; choose one of {RULES}")


def extract_triplets(qrels: Mapping[str, Mapping[str, float]], rule: str = "auto", sample: int = 0,
                     seed: int = 42) -> list[tuple[str, str, str]]:
    """Every ``(qid, more relevant, less relevant)`` triplet, or ``sample`` of them drawn with ``seed``."""
    rule = pick_rule(qrels) if rule == "auto" else rule
    out = [(q, p, n) for q, pool in qrels.items() for p, n in query_triplets(pool, rule)]
    if sample and len(out) > sample:
        out = random.Random(seed).sample(out, sample)
    return out


class PairwiseAccuracy:
    """Share of dev triplets whose more relevant document the run ranks above the less relevant one."""

    per_mode = True

    def __init__(self, rule: str = "auto", sample: int = 0, seed: int = 42):
        if rule not in RULES:
            raise ValueError(f"unknown triplet rule {rule!r}; choose one of {RULES}")
        self.rule, self.sample, self.seed = rule, int(sample), int(seed)
        self.names = ["birco-pairwise"]

    def compute(self, inp: MetricInput) -> MetricResult:
        (mode,) = inp.runs
        run, qrels = inp.runs[mode], inp.qrels[mode] or {}
        trips = extract_triplets(qrels, self.rule, self.sample, self.seed)
        ranks = {q: {d: i for i, d in enumerate(run.doc_ids(q))} for q in run}
        per: dict[str, list[float]] = {}
        for q, p, n in trips:
            r = ranks.get(q, {})
            inf = float("inf")
            per.setdefault(q, []).append(float(r.get(p, inf) < r.get(n, inf)))
        vals = [v for vs in per.values() for v in vs]
        acc = sum(vals) / len(vals) if vals else float("nan")
        return MetricResult({"birco-pairwise": acc},
                            {q: {"birco-pairwise": sum(v) / len(v)} for q, v in per.items()},
                            details={"birco-pairwise:triplets": float(len(vals))})

    def config(self) -> dict[str, Any]:
        return {"metric": "birco-pairwise", "rule": self.rule, "sample": self.sample, "seed": self.seed}
