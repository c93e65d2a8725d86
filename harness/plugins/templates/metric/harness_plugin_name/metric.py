"""The metric: `NAME@k` is the mean grade of a query's top k documents divided by the best grade in
its qrels (unjudged documents count 0; a ranking shorter than k is padded with 0s), averaged over
the queries that have a positive grade."""

from __future__ import annotations

from harness import MetricInput, MetricResult

NAME = "plugin-name"


class MeanGainMetric:
    """Metric protocol: `names`, `per_mode`, `compute(MetricInput) -> MetricResult`. `NAME@k` on the
    command line creates it with `cutoff=k`."""

    per_mode = True  # computed on each mode's run on its own (False: it compares modes)

    def __init__(self, cutoff: int = 10):
        self.cutoff = int(cutoff)
        self.names = [f"{NAME}@{self.cutoff}"]

    def compute(self, inp: MetricInput) -> MetricResult:
        (mode,) = inp.runs  # a per-mode metric gets one mode at a time
        run, qrels = inp.runs[mode], inp.qrels[mode]
        name = self.names[0]
        per_query = {}
        for qid, grades in qrels.items():
            best = max(grades.values(), default=0)
            if best <= 0:
                continue  # nothing relevant: the query does not count
            top = run.doc_ids(qid)[: self.cutoff] if qid in run else []
            gained = sum(max(grades.get(d, 0), 0) for d in top)
            per_query[qid] = {name: gained / (best * self.cutoff)}
        mean = sum(v[name] for v in per_query.values()) / len(per_query) if per_query else float("nan")
        return MetricResult({name: mean}, per_query)
