"""The evaluation flow: task -> dataset -> first stage -> rerankers -> judge -> metrics -> results.

:func:`evaluate` is the Python face (``harness eval``): it settles the options and the context, then
:func:`run` composes the stages of :mod:`harness.evaluation.stages` (each with explicit inputs and
outputs); the flow runs once per mode of the dataset over the same components: per-mode metrics see
one mode's run, cross-mode metrics (WISE, p-MRR) see the runs of every mode. A suite's members are
run by :mod:`harness.evaluation.suite`, through a bound "run one member" function.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from harness.concepts.errors import HarnessError
from harness.concepts.run import Run
from harness.concepts.task import Task
from harness.context import Context
from harness.evaluation import stages
from harness.evaluation.options import ComponentArg, ComponentSpecs, EvalOptions, split_keywords
from harness.evaluation.stages import task_queries
from harness.evaluation.suite import evaluate_suite
from harness.metrics.resolve import resolve_metrics
from harness.results.result import EvalResult

__all__ = ["evaluate", "run", "run_member", "task_queries", "EvalResult", "EvalOptions", "ComponentSpecs",
           "FirstStages", "prepare"]


def evaluate(task: str | Task | None = None, *, dataset: str | None = None, retriever: ComponentArg | None = None,
             rerankers: Sequence[ComponentArg] = (), judge: ComponentArg | None = None,
             options: EvalOptions | None = None, context: Context | None = None, **settings: Any) -> EvalResult:
    """Run one evaluation (``harness eval``): ``task`` (a registered name or a :class:`~harness.Task`) or
    ``dataset`` (a spec: the task is made from it, first stage ``auto``), with the first stage ``retriever``
    (default the task's), the ``rerankers`` in order and a ``judge``; each a spec string (``"bm25:k1=0.9"``)
    or an object implementing its protocol.

    ``options``: an :class:`EvalOptions` (metrics, limit, depth, output, overwrite, progress, command,
    max_llm_failures); its fields may also be given as keywords (``limit=2, progress=False``), which
    replace the ones of ``options``. ``context``: the plugins, data folder, caches, LLM settings and
    progress settings to run with (default: the environment's); each evaluation gets a fresh LLM session,
    so settings given here apply to this evaluation only. The LLM keywords of plugin API 1.0 (``llm``,
    ``max_concurrency``, ``dry_run``, ``llm_batch``, ``llm_batch_wait``) and ``registry`` still work,
    deprecated: they belong to the context (``context.for_evaluation(llm=..., dry_run=True)``).

    LLM requests that got no usable reply make the result INCOMPLETE (``result.complete`` is False,
    ``result.llm_failures`` says what failed) unless they are at most ``max_llm_failures`` of the run's
    requests; a rejected key or an unknown model raises at once. With batch mode and ``batch_wait`` off,
    a run whose batches are still pending raises :class:`~harness.llm.BatchPending`; calling it again
    collects them and goes on."""
    the_task, opts, ctx = prepare(task, dataset, options, context, settings)
    return run(the_task, ComponentSpecs(retriever, tuple(rerankers), judge), opts, ctx)


def prepare(task: str | Task | None, dataset: str | None, options: EvalOptions | None, context: Context | None,
            settings: Mapping[str, Any]) -> tuple[Task, EvalOptions, Context]:
    """:func:`evaluate`'s arguments settled (and ``harness.evaluate_sweep``'s): the task, the options with the
    keywords applied, and a context whose LLM session is this evaluation's own."""
    fields, llm_changes, registry = split_keywords(dict(settings))
    opts = (options or EvalOptions()).replace(**fields)
    if context is not None and registry is not None and registry is not context.registry:
        raise HarnessError("give either context= or registry=, not both")
    ctx = (context if context is not None else Context.create(registry=registry)).for_evaluation(**llm_changes)
    return stages.resolve_task(ctx, task, dataset), opts, ctx


def run_member(specs: ComponentSpecs, name: str, options: EvalOptions, context: Context) -> EvalResult:
    """One member task of a suite: the same components, a fresh LLM session of its own."""
    ctx = context.for_evaluation()
    return run(stages.resolve_task(ctx, name, None), specs, options, ctx)


def run(task: Task, specs: ComponentSpecs, options: EvalOptions, context: Context,
        shared: FirstStages | None = None) -> EvalResult:
    """The stages of one evaluation of ``task`` in ``context`` (whose LLM session is this evaluation's own),
    written to ``options.output`` when given; a suite runs each member through :func:`run_member`. ``shared``:
    first stages computed by earlier evaluations of the same task (a sweep's), reused when this one's is
    the same (:class:`FirstStages`)."""
    if task.is_suite:
        if options.qrels is not None:
            raise HarnessError(f"--qrels replaces one task's qrels; {task.name!r} is a suite of "
                               f"{len(task.tasks)} tasks")
        return evaluate_suite(task, options, context, partial(run_member, specs))
    result = compute(task, specs, options, context, shared)
    if options.output:
        stages.write_output(options.output, result, context.llm.clients, options.progress)
    return result


def compute(task: Task, specs: ComponentSpecs, options: EvalOptions, context: Context,
            shared: FirstStages | None = None) -> EvalResult:
    """:func:`run` for a single task, without writing the results folder."""
    ledger = stages.Ledger()
    metric_objs = resolve_metrics(context.registry, list(options.metrics or task.metrics))  # a bad name fails first
    if options.output:  # an unwritable or already used --output fails now, not after the evaluation
        stages.check_output(options.output, options.overwrite)
    base = shared.get(task, specs, options) if shared is not None else None
    if base is None:
        comps = stages.build_components(context, task, specs)  # before any data is read
        ds = stages.load(context, task, options.limit, ledger, options.progress, options.qrels)
        depth = stages.settle_first_stage(comps, task, ds, options.depth)  # auto: the candidates when the data has them
        stages.index(comps, ds, ledger, options.progress)
        if shared is not None:
            base = shared.add(task, specs, options, SharedFirstStage(
                Path(options.output or "").name, ds, comps.first, comps.described["retriever"], depth,
                dict(ledger.counts)))
    else:
        comps = stages.build_components(context, task, replace(specs, retriever=base.first))
        comps.described["retriever"] = base.described
        ds, depth = base.ds, base.depth
        ledger.counts.update(base.counts)
    ranked = stages.Rankings()
    for mode in ds.modes:
        queries = task_queries(ds, mode, task.query_format)
        if base is None:
            ranking = stages.first_stage(comps, ds, mode, queries, depth, ledger)
        else:  # a shared first stage: computed once, each evaluation reranks a copy of its own
            if mode not in base.runs:
                base.runs[mode] = stages.first_stage(comps, ds, mode, queries, depth, ledger)
            ranking = Run(dict(base.runs[mode]), base.runs[mode].name)
        if comps.rerankers:  # each stage's ranking is kept: the first stage's, then the final one
            ranked.first_stage[mode] = stages.kept(ranking, "first_stage")
        ranked.runs[mode] = ranking = stages.rerank(comps, ds, mode, queries, ranking, ledger)
        if comps.judge is not None:
            ranked.judgments[mode] = stages.judge(comps, ds, mode, queries, ranking, ledger)
    stages.account(comps, ds, ranked.runs, ledger)
    with ledger.timed("metrics"):
        scores = stages.apply_metrics(metric_objs, ranked.runs, ds, ranked.judgments)
        comps.describe_metrics(metric_objs)
    result = stages.assemble_result(context, task, ds, comps, ranked, scores, ledger, options)
    context.llm.close()
    return result


@dataclass
class SharedFirstStage:
    """A first stage computed once: the results folder that computed it, the dataset, the first stage's
    component and account, its depth, the load's counts and its runs per mode."""

    folder: str
    ds: Any
    first: Any
    described: dict[str, Any]
    depth: int
    counts: dict[str, Any]
    runs: dict[str, Run] = field(default_factory=dict)


class FirstStages:
    """First stages computed by evaluations in this process (``harness eval --sweep``'s combinations), by what
    makes two the same: the task, the first stage's spec, the depth, the query limit and the qrels file."""

    def __init__(self) -> None:
        self._done: dict[tuple, SharedFirstStage] = {}

    @staticmethod
    def key(task: Task, specs: ComponentSpecs, options: EvalOptions) -> tuple:
        return task.name, repr(specs.retriever), options.depth, options.limit, options.qrels

    def get(self, task: Task, specs: ComponentSpecs, options: EvalOptions) -> SharedFirstStage | None:
        return self._done.get(self.key(task, specs, options))

    def add(self, task: Task, specs: ComponentSpecs, options: EvalOptions, first: SharedFirstStage
            ) -> SharedFirstStage:
        self._done[self.key(task, specs, options)] = first
        return first
