"""Judging chosen (query, document) pairs with a registered judge (``umbrela``, a plugin's), through the
LLM layer of an evaluation of its own: the reply cache, batch mode, dry runs, the failure policy."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.assessment.task_data import TaskData
from harness.components.component_spec import parse_spec
from harness.concepts.errors import HarnessError
from harness.concepts.judgment import Judgments
from harness.concepts.protocols import Judge, counted, describe
from harness.concepts.run import Run
from harness.context import Context
from harness.served.failure_policy import failure_report

Pair = tuple[str, str]


@dataclass
class JudgedPairs:
    """The judgments of the pairs asked for, the judge's account (spec, config, stats), the LLM usage and
    the failure report (``complete``: no transport failure beyond the accepted share)."""

    judgments: Judgments
    judge: dict[str, Any]
    usage: dict[str, Any] = field(default_factory=dict)
    failures: dict[str, Any] = field(default_factory=dict)
    dry_run: bool = False

    @property
    def complete(self) -> bool:
        return self.failures.get("complete", True)


def pairs_run(pairs: Sequence[Pair]) -> Run:
    """The pairs as a run: each query's documents in the order given."""
    order: dict[str, list[str]] = {}
    for qid, doc in pairs:
        order.setdefault(qid, []).append(doc)
    return Run.from_order(order, "pairs")


def build_judge(context: Context, spec: str, depth: int) -> tuple[Any, dict[str, Any]]:
    """The judge of ``spec``, asked to judge every document it is given (``depth``); a spec that sets its
    own ``depth`` is refused: the command chooses the pairs."""
    if "depth" in parse_spec(spec).args:
        raise HarnessError(f"judge {spec!r}: leave depth out of the judge's spec; the command chooses which pairs "
                           "are judged")
    judge, component, parsed = context.registry.build("judge", spec, context, depth=max(depth, 1))
    if not isinstance(judge, Judge):
        raise HarnessError(f"judge {spec!r} is a {type(judge).__name__}, which does not implement the Judge protocol")
    return judge, {"spec": spec, "name": component.name, "source": component.source, "args": parsed.args}


def judge_pairs(context: Context, spec: str, data: TaskData, pairs: Sequence[Pair],
                max_llm_failures: float = 0.0) -> JudgedPairs:
    """Judge each pair once (in an LLM session of its own, closed at the end)."""
    ctx = context.for_evaluation()
    try:
        run = pairs_run(pairs)
        judge, desc = build_judge(ctx, spec, max((len(run.doc_ids(q)) for q in run), default=1))
        judgments = judge.judge(data.queries, run, data.corpus) if pairs else Judgments()
        stats = counted(judge) or {}
        desc.update(describe(judge), stats=stats)
        usage = ctx.llm.report()
        failures = failure_report(usage, stats.get("transport_failures_per_query") or {}, max_llm_failures) \
            if usage else {}
        return JudgedPairs(judgments, desc, usage, failures, dry_run=bool(ctx.llm.settings.dry_run))
    finally:
        ctx.llm.close()
