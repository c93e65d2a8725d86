"""The evaluation flow: task -> dataset -> first stage -> rerankers -> judge -> metrics -> results.

:func:`evaluate` composes the stages of :mod:`harness.evaluation.stages` (each with explicit inputs
and outputs); the flow runs once per mode of the dataset over the same components: per-mode metrics
see one mode's run, cross-mode metrics (WISE, p-MRR) see the runs of every mode. A suite's members
are run by :mod:`harness.evaluation.suite`.
"""

from __future__ import annotations

from collections.abc import Sequence

from harness.concepts.errors import HarnessError
from harness.concepts.protocols import Metric
from harness.concepts.task import Task
from harness.context import Context
from harness.evaluation import stages
from harness.evaluation.stages import ComponentArg, task_queries
from harness.evaluation.suite import evaluate_suite
from harness.metrics.resolve import resolve_metrics
from harness.plugins.registry import Registry
from harness.results.result import EvalResult

__all__ = ["evaluate", "task_queries", "EvalResult"]


def _context_for(context: Context | None, registry: Registry | None, llm: str | None, max_concurrency: int | None,
                 dry_run: bool | None, batch: bool | None = None, batch_wait: bool | None = None) -> Context:
    """The evaluation's own context: the one given (or one from the environment), with a fresh LLM
    session carrying this call's LLM options. Nothing of it outlives the evaluation."""
    if context is None:
        context = Context.create(registry=registry)
    elif registry is not None and registry is not context.registry:
        raise HarnessError("give either context= or registry=, not both")
    return context.for_evaluation(llm=llm, max_concurrency=max_concurrency, dry_run=dry_run, batch=batch,
                                  batch_wait=batch_wait)


def evaluate(
    task: str | Task | None = None, *, dataset: str | None = None, retriever: ComponentArg | None = None,
    rerankers: Sequence[ComponentArg] = (), judge: ComponentArg | None = None,
    metrics: Sequence[str | Metric] | None = None, limit: int | None = None, depth: int | None = None,
    output: str | None = None, overwrite: bool = False, progress: bool = True, command: list[str] | None = None,
    context: Context | None = None, registry: Registry | None = None, llm: str | None = None,
    max_concurrency: int | None = None, dry_run: bool | None = None, max_llm_failures: float = 0.0,
    llm_batch: bool | None = None, llm_batch_wait: bool | None = None,
) -> EvalResult:
    """Run one evaluation. Mirrors ``harness eval``: ``llm``, ``max_concurrency``, ``dry_run``,
    ``llm_batch`` and ``llm_batch_wait=False`` are its ``--llm``, ``--max-concurrency``,
    ``--dry-run``, ``--llm-batch`` and ``--no-wait`` (for LLM-backed components). With
    ``llm_batch_wait=False`` a run whose batches are still pending raises
    :class:`~harness.llm.errors.BatchPending`; calling it again collects them and goes on.

    Components are spec strings (``"bm25:k1=0.9"``, resolved through the registry) or objects that
    implement the protocol (a retriever built in a notebook). ``context``: the plugins, data folder,
    caches, LLM defaults and progress settings to run with (default: from the environment);
    ``registry``: a registry to use instead of the installed plugins. Settings given here apply to
    this evaluation only.

    ``limit`` and ``depth`` must be None or >= 1. ``output`` is created and probed for writing before
    any data is read; a folder already holding ``results.json`` is refused unless ``overwrite``.

    LLM requests that got no usable reply make the result INCOMPLETE (``result.complete`` is False,
    ``result.llm_failures`` says what failed) unless they are at most ``max_llm_failures`` (a share
    in [0, 1]) of the run's requests; a rejected key or an unknown model raises at once."""
    max_llm_failures = stages.check_arguments(limit, depth, max_llm_failures)
    ctx = _context_for(context, registry, llm, max_concurrency, dry_run, llm_batch, llm_batch_wait)
    the_task = stages.resolve_task(ctx, task, dataset)
    if the_task.is_suite:
        return evaluate_suite(the_task, ctx, evaluate, retriever=retriever, rerankers=rerankers, judge=judge,
                              metrics=metrics, limit=limit, depth=depth, output=output, overwrite=overwrite,
                              progress=progress, command=command, max_llm_failures=max_llm_failures)
    ledger = stages.Ledger()
    metric_objs = resolve_metrics(ctx.registry, list(metrics or the_task.metrics))  # a bad name fails first
    if output:  # an unwritable or already used --output fails now, not after the evaluation
        stages.check_output(output, overwrite)
    comps = stages.build_components(ctx, the_task, retriever, rerankers, judge)  # before any data is read
    ds = stages.load(ctx, the_task, limit, ledger, progress)
    depth = stages.settle_first_stage(comps, the_task, ds, depth)  # auto: the candidates when the data has them
    stages.index(comps, ds, ledger, progress)
    ranked = stages.Rankings()
    for mode in ds.modes:
        queries = task_queries(ds, mode, the_task.query_format)
        run = stages.first_stage(comps, ds, mode, queries, depth, ledger)
        if comps.rerankers:  # each stage's ranking is kept: the first stage's, then the final one
            ranked.first_stage[mode] = stages.kept(run, "first_stage")
        ranked.runs[mode] = run = stages.rerank(comps, ds, mode, queries, run, ledger)
        if comps.judge is not None:
            ranked.judgments[mode] = stages.judge(comps, ds, mode, queries, run, ledger)
    stages.account(comps, ds, ranked.runs, ledger)
    with ledger.timed("metrics"):
        scores = stages.apply_metrics(metric_objs, ranked.runs, ds, ranked.judgments)
        comps.describe_metrics(metric_objs)
    result = stages.assemble_result(ctx, the_task, ds, comps, ranked, scores, ledger, command, max_llm_failures)
    ctx.llm.close()
    if output:
        stages.write_output(output, result, ctx.llm.clients, progress)
    return result
