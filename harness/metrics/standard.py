"""Standard IR measures computed by ir-measures over pytrec_eval (values equal trec_eval's).

Names are written as users know them (``nDCG@10``, ``MRR@10``, ``Recall@100``, ``P@10``, ``MAP``)
or in any ir-measures syntax (``nDCG(gains={0:0,1:1,2:3})@10``, ``AP(rel=2)@1000``); the name
given is the key in the results. Averages follow trec_eval: over the run's queries that have qrels.
"""

from __future__ import annotations

import operator
import re
from typing import Any

from harness.concepts.errors import HarnessError
from harness.concepts.protocols import MetricInput, MetricResult
from harness.metrics.names import STANDARD_ALIASES, check_cutoff

_NAME = re.compile(r"^(?P<family>[A-Za-z][A-Za-z\-]*)(?P<rest>.*)$")


def to_ir_measures(name: str) -> str:
    """``MRR@10`` -> ``RR@10``, ``Recall@100`` -> ``R@100``, ``MAP`` -> ``AP``; other names as given."""
    m = _NAME.match(name.strip())
    if m and m["family"] in STANDARD_ALIASES:
        return STANDARD_ALIASES[m["family"]][0] + m["rest"]
    return name.strip()


def parse_measure(name: str, check: bool = True) -> Any:
    """Parse a name into an ir-measures measure, or raise HarnessError. With ``check``, a cutoff
    (``@k``, ``cutoff=k``) outside 1..:data:`MAX_CUTOFF` is an error naming the metric."""
    import ir_measures

    try:
        measure = ir_measures.parse_measure(to_ir_measures(name))
    except (ValueError, NameError, SyntaxError, TypeError, AttributeError, RecursionError, AssertionError) as exc:
        raise HarnessError(f"not a standard measure: {name[:80]!r} ({str(exc)[:200]})") from exc
    cutoff = dict(measure.params).get("cutoff")
    if check and cutoff is not None:
        check_cutoff(name, cutoff)
    if check:  # the parameters' types (rel=1.5 is refused here, not as an AssertionError while computing)
        try:
            measure.validate_params()
        except (AssertionError, ValueError, TypeError) as exc:
            raise HarnessError(f"metric {name[:80]!r}: {str(exc)[:200] or 'invalid parameters'}") from None
        gains = dict(measure.params).get("gains")
        if gains is not None and not all(type(k) is int and type(v) is int for k, v in gains.items()):
            raise HarnessError(f"metric {name[:80]!r}: gains map whole relevance grades to whole gains, e.g. "
                               "gains={0:0,1:1,2:3} (pytrec_eval computes with integers)")
    return measure


def native_pytrec(measure: Any) -> tuple[str, int | None] | None:
    """The pytrec_eval measure computing ``measure`` exactly, and the run depth it needs
    (``RR@k`` is ``recip_rank`` on the run cut at k), or None when only ir-measures can."""
    params = dict(measure.params)
    cutoff = params.pop("cutoff", None)
    if params.get("rel", 1) != 1 or params.get("judged_only", False) or params.get("gains") is not None:
        return None
    if set(params) - {"rel", "judged_only", "gains", "dcg"} or params.get("dcg", "log2") != "log2":
        return None
    name = measure.NAME
    if name == "nDCG":
        return ("ndcg" if cutoff is None else f"ndcg_cut_{cutoff}"), None
    if name == "P" and cutoff is not None:
        return f"P_{cutoff}", None
    if name == "R" and cutoff is not None:
        return f"recall_{cutoff}", None
    if name == "AP":
        return ("map" if cutoff is None else f"map_cut_{cutoff}"), None
    if name == "RR":
        return "recip_rank", cutoff
    if name == "Rprec" and cutoff is None:
        return "Rprec", None
    if name == "Success" and cutoff is not None:
        return f"success_{cutoff}", None
    return None


def _cut(run: dict[str, dict[str, float]], k: int) -> dict[str, dict[str, float]]:
    """Each ranking cut to its top k in trec_eval order (score desc, docid desc)."""
    return {q: dict(sorted(h.items(), key=lambda x: (x[1], x[0]), reverse=True)[:k]) for q, h in run.items()}


class StandardMetric:
    """One or more standard measures, computed together: pytrec_eval directly where it computes
    the measure natively (one evaluator per run depth), ir-measures for everything else."""

    per_mode = True

    def __init__(self, name: str | None = None, names: list[str] | None = None, cutoff: int | None = None):
        given = list(names or []) + ([name] if name else [])
        if cutoff is not None and name and "@" not in name:
            given[-1] = f"{name}@{cutoff}"
        if not given:
            raise HarnessError("StandardMetric needs at least one measure name")
        self.names = given
        self.measures = {n: parse_measure(n) for n in self.names}

    def merge(self, other: StandardMetric) -> StandardMetric:
        return StandardMetric(names=self.names + [n for n in other.names if n not in self.names])

    def config(self) -> dict[str, Any]:
        return {"measures": {n: str(m) for n, m in self.measures.items()},
                "library": "pytrec_eval (trec_eval) via ir-measures"}

    def compute(self, inp: MetricInput) -> MetricResult:
        (mode,) = inp.runs
        run, qrels = inp.runs[mode], inp.qrels.get(mode)
        if qrels is None or not len(qrels):
            raise HarnessError(f"mode {mode!r} has no qrels: standard measures need relevance judgments")
        if not qrels.is_integer:
            raise HarnessError(
                "these qrels have fractional grades, which trec_eval/pytrec_eval cannot take; use a "
                "metric that supports fractional gain (e.g. the BIRCO plugin's linear-gain nDCG)"
            )
        run_dict = run.to_dict()
        qrels_dict = qrels.as_int_dict()
        native, other = _group_measures(self.measures)
        per_query: dict[str, dict[str, float]] = {}
        if native:
            per_query = _native_per_query(native, qrels_dict, run_dict)
        if other:
            _other_per_query(other, qrels_dict, run_dict, per_query)
        # trec_eval semantics: mean over the run's queries that have qrels
        if any(q not in run_dict for q in per_query):
            per_query = {q: v for q, v in per_query.items() if q in run_dict}
        return MetricResult(aggregate=_means(self.names, per_query), per_query=per_query)


def _group_measures(measures: dict[str, Any]) -> tuple[dict[int | None, dict[str, str]], dict[str, Any]]:
    """The natively computable measures grouped by the run depth they need (``{depth: {pytrec name: our
    name}}``), and the others (``{our name: measure}``)."""
    native: dict[int | None, dict[str, str]] = {}
    other: dict[str, Any] = {}
    for n, m in measures.items():
        nat = native_pytrec(m)
        if nat is None:
            other[n] = m
        else:
            native.setdefault(nat[1], {})[nat[0]] = n
    return native, other


def _native_per_query(native: dict[int | None, dict[str, str]], qrels_dict: dict[str, dict[str, int]],
                      run_dict: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Per-query values of the native measures, one pytrec_eval evaluator per run depth."""
    import pytrec_eval

    per_query: dict[str, dict[str, float]] = {}
    for depth, mapping in native.items():
        ev = pytrec_eval.RelevanceEvaluator(qrels_dict, set(mapping))
        res = ev.evaluate(run_dict if depth is None else _cut(run_dict, depth))
        theirs, ours = list(mapping), list(mapping.values())
        if len(theirs) == 1:
            (t1,), (o1,) = theirs, ours
            rows = {q: {o1: vals[t1]} for q, vals in res.items()}
        else:
            get = operator.itemgetter(*theirs)
            rows = {q: dict(zip(ours, get(vals))) for q, vals in res.items()}
        if not per_query:
            per_query = rows
        else:
            for q, row in rows.items():
                per_query.setdefault(q, {}).update(row)
    return per_query


def _other_per_query(other: dict[str, Any], qrels_dict: dict[str, dict[str, int]],
                     run_dict: dict[str, dict[str, float]], per_query: dict[str, dict[str, float]]) -> None:
    """Add the per-query values of the other measures (ir-measures) to ``per_query``."""
    import ir_measures

    by_measure = {m: n for n, m in other.items()}
    evaluator = ir_measures.evaluator(list(other.values()), qrels_dict)
    for metric in evaluator.iter_calc(run_dict):
        per_query.setdefault(metric.query_id, {})[by_measure[metric.measure]] = float(metric.value)


def _means(names: list[str], per_query: dict[str, dict[str, float]]) -> dict[str, float]:
    """The mean of each measure over the queries (a query without a value counts as 0; none: NaN)."""
    rows = list(per_query.values())
    aggregate: dict[str, float] = {}
    for n in names:
        try:
            total = sum(map(operator.itemgetter(n), rows))
        except KeyError:  # a measure that gave no value for some query counts as 0 there
            total = sum(r.get(n, 0.0) for r in rows)
        aggregate[n] = total / len(rows) if rows else float("nan")
    return aggregate
