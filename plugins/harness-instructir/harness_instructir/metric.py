"""InstructIR's Robustness@k as a harness metric (``harness.metrics.Robustness``, the implementation the
InfoSearch plugin shares).

``group=id`` (default; key ``Robustness@k``): MTEB's ``robustness_at_10`` groups queries by
``query_id.split("_")[0]`` (``1078446_3`` -> ``1078446``). ``group=text`` (key ``Robustness@k[text]``): the
authors' ``robustness_evaluate(type='query')`` groups by the query text after ``[SEP]``, the base query
(``Query.text``). On InstructIR the two coincide: the 1,267 base-query ids and the 1,267 base-query texts
pair one to one.
"""

from __future__ import annotations

from typing import Any

from harness import HarnessError, MetricInput, MetricResult

GROUPS = ("id", "text")


class InstructIRRobustness:
    per_mode = True

    def __init__(self, cutoff: int = 10, group: str = "id"):
        from harness.metrics import Robustness

        if group not in GROUPS:
            raise HarnessError(f"instructir-Robustness: group must be id (MTEB's) or text (the authors'), "
                               f"not {group!r}")
        key = f"Robustness@{int(cutoff)}" + ("" if group == "id" else f"[{group}]")
        self._core = Robustness(cutoff=cutoff, group=group, key=key)
        self.names = self._core.names

    def config(self) -> dict[str, Any]:
        source = {"id": "MTEB robustness_at_10: query id before the first '_'",
                  "text": "authors' robustness_evaluate: the base query text"}
        return {**self._core.config(), "grouping": source[self._core.group], "ndcg": "pytrec_eval ndcg_cut"}

    def compute(self, inp: MetricInput) -> MetricResult:
        return self._core.compute(inp)
