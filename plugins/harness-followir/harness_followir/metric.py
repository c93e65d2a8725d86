"""FollowIR's p-MRR as a harness metric, under either tie rule (``harness.metrics.p_mrr``).

``ties=trec_eval`` (default; key ``p-MRR``): MTEB's current rule (embeddings-benchmark/mteb PR #5241,
mteb >= 2.19.5): ranks by (score, doc id) descending. ``ties=release`` (key ``p-MRR[release]``): the
released FollowIR code and earlier mteb: a stable sort by score, tied documents in the order of the
task's ``top_ranked`` pool. Both read the scores as the ranking component gave them
(``Run.given_scores``: before the pipeline made tied scores strictly decreasing), so the rules differ
exactly where the component tied. Counted documents: the dataset's ``qrel_diff``.

Each topic's p-MRR is its per-query value (``per_query.jsonl``, so ``harness compare`` pairs topics as it
pairs queries); the value's uncertainty is a bootstrap over the topics (``harness.metrics.bootstrap_uncertainty``:
``resamples`` resamples, ``seed``; percentile 95% interval and the sd of the bootstrap means). The value
itself is the plain mean over topics, unchanged.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from harness import HarnessError, MetricInput, MetricResult

RULES = MappingProxyType({"trec_eval": "p-MRR", "release": "p-MRR[release]"})


class FollowIRPMRR:
    per_mode = False

    def __init__(self, ties: str = "trec_eval", og: str = "og", changed: str = "changed", resamples: int = 10_000,
                 seed: int = 0):
        if ties not in RULES:
            raise HarnessError(f"followir-p-MRR: ties must be one of {', '.join(RULES)}, not {ties!r}")
        self.ties, self.modes = ties, (og, changed)
        self.resamples, self.seed = _whole("resamples", resamples, 1), _whole("seed", seed, 0)
        self.names = [RULES[ties]]

    def config(self) -> dict[str, Any]:
        return {"ties": self.ties, "modes": {"og": self.modes[0], "changed": self.modes[1]},
                "documents": "qrel_diff", "scores": "as the ranking component gave them (ties kept)",
                "interval": {"method": "bootstrap over topics", "resamples": self.resamples, "seed": self.seed}}

    def compute(self, inp: MetricInput) -> MetricResult:
        from harness.metrics import bootstrap_uncertainty, p_mrr

        og, changed = self.modes
        missing = [m for m in self.modes if m not in inp.runs]
        if missing:
            raise HarnessError(f"p-MRR compares the runs of modes {og} and {changed}; this dataset lacks "
                               f"{', '.join(missing)} (modes: {', '.join(inp.runs)})")
        diff = inp.dataset.meta.get("qrel_diff")
        if not isinstance(diff, dict):
            raise HarnessError(f"p-MRR needs the documents whose relevance the instruction changed (qrel_diff); "
                               f"dataset {inp.dataset.name!r} gives none")
        pools = inp.dataset.candidates or {}
        og_pool = {q: r.doc_ids(q) for r in [pools.get(og)] if r is not None for q in r}
        new_pool = {q: r.doc_ids(q) for r in [pools.get(changed)] if r is not None for q in r}
        value, per = p_mrr(diff, inp.runs[og].given_scores(), inp.runs[changed].given_scores(), ties=self.ties,
                           og_pool=og_pool, changed_pool=new_pool)
        name = self.names[0]
        unc = bootstrap_uncertainty(list(per.values()), self.resamples, self.seed, unit="topics")
        return MetricResult({name: value}, {t: {name: v} for t, v in per.items()},
                            uncertainty={name: unc} if unc is not None else {},
                            details={f"{name} topics": float(len(per)),
                                     f"{name} topics skipped": float(len(diff) - len(per))})


def _whole(name: str, value: Any, least: int) -> int:
    """A whole-number option of at least ``least``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise HarnessError(f"followir-p-MRR: {name} must be a whole number >= {least}, not {value!r}")
    return value
