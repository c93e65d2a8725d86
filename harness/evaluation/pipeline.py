"""The evaluation flow: task -> dataset -> first stage -> rerankers -> judge -> metrics.

One pass of the flow runs once per mode of the dataset over the same components; per-mode
metrics see one mode's run, cross-mode metrics (WISE, p-MRR) see the runs of every mode.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from harness.concepts.dataset import Dataset
from harness.concepts.errors import HarnessError
from harness.concepts.judgment import Judgments
from harness.concepts.protocols import (
    CandidateRetriever,
    Judge,
    Metric,
    MetricInput,
    QueryObjectRetriever,
    Reranker,
    Retriever,
    counted,
    describe,
)
from harness.concepts.query import Query, format_query
from harness.concepts.run import Run
from harness.concepts.task import Task
from harness.plugins.component_spec import parse_spec
from harness.plugins.registry import Registry
from harness.results.result import EvalResult
from harness.runtime.context import Context


def _log(msg: str, progress: bool) -> None:
    if progress:
        print(msg, file=sys.stderr, flush=True)


def resolve_task(context: Context, task: str | Task | None, dataset: str | None) -> Task:
    if isinstance(task, Task):
        return task
    if task:
        return context.registry.create("task", task, context)
    if dataset:
        spec = parse_spec(dataset)
        return Task(name=spec.name, dataset=dataset, first_stage="retrieve", metrics=["nDCG@10"])
    raise HarnessError("give a task (--task NAME) or a dataset (--dataset SPEC); `harness list-plugins` lists them")


def load_task_dataset(context: Context, task: Task, download: bool = True) -> Dataset:
    """Create the task's dataset, fetching its files into the context's data folder first when they
    are missing."""
    if task.files and download:
        from harness.data.download import ensure_task_files

        ensure_task_files(task, context.data, context.progress)
    return context.registry.create("dataset", task.dataset, context, **task.dataset_args)


def task_queries(dataset: Dataset, mode: str, template: str) -> dict[str, Query]:
    """The mode's queries as components see them: ``text`` formed by the task's template, the raw
    text in ``meta['query']``, the instruction kept in ``instruction``."""
    out = {}
    for qid, q in dataset.queries[mode].items():
        out[qid] = Query(qid, format_query(q, template), q.instruction, {**q.meta, "query": q.text})
    return out


ComponentArg = str | Any


def _create(context: Context, kind: str, spec: ComponentArg, protocol: type) -> tuple[Any, dict[str, Any]]:
    """A component from a spec string (through the registry) or an object given as it is; either
    way checked against its protocol."""
    if isinstance(spec, str):
        obj, comp, parsed = context.registry.build(kind, spec, context)
        desc = {"spec": spec, "name": comp.name, "source": comp.source, "args": parsed.args}
    else:
        obj = spec
        name = type(obj).__name__
        desc = {"spec": f"object:{name}", "name": name, "source": f"object ({type(obj).__module__})", "args": {}}
    if not isinstance(obj, protocol):
        raise HarnessError(f"{kind} {desc['spec']!r} is a {type(obj).__name__}, which does not implement the "
                           f"{protocol.__name__} protocol (docs/plugin_hooks.md)")
    return obj, {**desc, **describe(obj)}


def _record_stats(pairs: list[tuple[dict[str, Any], Any]]) -> None:
    """Components that count their work (texts encoded, cache hits, LLM calls) expose ``stats()``."""
    for desc, obj in pairs:
        stats = counted(obj)
        if stats is not None:
            desc["stats"] = stats


def _llm_failures(usage: dict[str, Any], components: dict[str, Any], max_share: float) -> dict[str, Any]:
    if not usage:
        return {}
    from harness.llm.failures import failure_report, merge_per_query

    described = [components.get("retriever", {}), *components.get("rerankers", []), components.get("judge", {})]
    return failure_report(usage, merge_per_query(d.get("stats") or {} for d in described), max_share)


def check_limits(limit: int | None = None, depth: int | None = None) -> None:
    """``limit`` (queries) and ``depth`` (first-stage depth) are None or whole numbers >= 1."""
    for name, value in (("limit", limit), ("depth", depth)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise HarnessError(f"{name} must be a whole number >= 1 (or None for the task's default), got {value!r}")


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
    task: str | Task | None = None,
    *,
    dataset: str | None = None,
    retriever: ComponentArg | None = None,
    rerankers: Sequence[ComponentArg] = (),
    judge: ComponentArg | None = None,
    metrics: Sequence[str | Metric] | None = None,
    limit: int | None = None,
    depth: int | None = None,
    output: str | None = None,
    overwrite: bool = False,
    progress: bool = True,
    command: list[str] | None = None,
    context: Context | None = None,
    registry: Registry | None = None,
    llm: str | None = None,
    max_concurrency: int | None = None,
    dry_run: bool | None = None,
    max_llm_failures: float = 0.0,
    llm_batch: bool | None = None,
    llm_batch_wait: bool | None = None,
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
    from harness.llm.failures import check_share
    from harness.metrics.resolve import resolve_metrics

    check_limits(limit=limit, depth=depth)
    try:
        max_llm_failures = check_share(max_llm_failures)
    except (TypeError, ValueError) as exc:
        raise HarnessError(str(exc)) from None
    ctx = _context_for(context, registry, llm, max_concurrency, dry_run, llm_batch, llm_batch_wait)
    the_task = resolve_task(ctx, task, dataset)
    if the_task.is_suite:
        return evaluate_suite(the_task, ctx, retriever=retriever, rerankers=rerankers, judge=judge, metrics=metrics,
                              limit=limit, depth=depth, output=output, overwrite=overwrite, progress=progress,
                              command=command, max_llm_failures=max_llm_failures)
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    metric_names = list(metrics) if metrics else list(the_task.metrics)
    metric_objs = resolve_metrics(ctx.registry, metric_names)  # fail on a bad name before any work
    if output:  # an unwritable or already used --output fails now, not after the evaluation
        from harness.evaluation.output_files import check_result_files
        from harness.results.store import prepare_output

        prepare_output(output, overwrite=overwrite)
        check_result_files(output)  # every file the run writes, not only the folder

    # components first: a bad spec or a missing API key fails before any data is read or downloaded
    k = depth or the_task.depth
    first_spec = retriever or ("candidates" if the_task.first_stage == "candidates" else the_task.retriever)
    components: dict[str, Any] = {}
    first, components["retriever"] = _create(ctx, "retriever", first_spec, Retriever | CandidateRetriever |
                                             QueryObjectRetriever)
    reranker_objs = []
    for spec in rerankers:
        obj, desc = _create(ctx, "reranker", spec, Reranker)
        reranker_objs.append(obj)
        components.setdefault("rerankers", []).append(desc)
    judge_obj = None
    if judge:
        judge_obj, components["judge"] = _create(ctx, "judge", judge, Judge)
    labels = [components["retriever"]["spec"], *(d["spec"] for d in components.get("rerankers", []))]

    t = time.perf_counter()
    ds = load_task_dataset(ctx, the_task)
    if limit is not None:
        ds = ds.limit(limit)
    counts: dict[str, Any] = {"unknown_ids": ds.validate()}
    timings["load"] = time.perf_counter() - t
    _log(f"[harness] {the_task.name}: {len(ds.corpus)} documents, "
         f"{', '.join(f'{m}: {len(q)} queries' for m, q in ds.queries.items())}", progress)

    given = isinstance(first, CandidateRetriever)
    if given and not ds.candidates:
        raise HarnessError(f"dataset {ds.name!r} gives no candidate lists; pass --retriever bm25 or dense")

    t = time.perf_counter()
    if not given:
        _log(f"[harness] indexing with {labels[0]}", progress)
        first.index(ds.corpus)
    timings["index"] = time.perf_counter() - t

    runs: dict[str, Run] = {}
    judgments: dict[str, Judgments] = {}
    for mode in ds.modes:
        queries = task_queries(ds, mode, the_task.query_format)
        t = time.perf_counter()
        if given:
            first.set_candidates(ds.candidates.get(mode) if ds.candidates else None)
        # excluded documents (Dataset.excluded) are dropped after retrieving deep enough that k remain
        deep = k + max((len(ds.excluded.get(q, ())) for q in queries), default=0)
        if isinstance(first, QueryObjectRetriever):
            run = first.search_queries(queries, deep)
        else:
            run = first.search({q: v.text for q, v in queries.items()}, deep)
        if ds.excluded:
            run = run.without(ds.excluded).top(k)
        timings[f"retrieve[{mode}]"] = time.perf_counter() - t
        for label, rr in zip(labels[1:], reranker_objs):
            t = time.perf_counter()
            run = rr.rerank(queries, run, ds.corpus).without(ds.excluded)
            if not run.is_strictly_decreasing():  # the one rule: a ranking's order survives trec_eval's sort
                counts.setdefault("scores_made_strict", []).append(f"{label}[{mode}]")
                run = run.with_strict_scores()
            timings[f"rerank {label}[{mode}]"] = time.perf_counter() - t
        run.name = "harness"
        runs[mode] = run
        if judge_obj is not None:
            t = time.perf_counter()
            judgments[mode] = judge_obj.judge(queries, run, ds.corpus)
            timings[f"judge[{mode}]"] = time.perf_counter() - t
            counts.setdefault("judge_failures", {})[mode] = judgments[mode].n_failed
    pairs = [(components["retriever"], first), *zip(components.get("rerankers", []), reranker_objs)]
    if judge_obj is not None:
        pairs.append((components["judge"], judge_obj))
    _record_stats(pairs)
    counts["queries_without_results"] = {m: sum(1 for h in r.values() if not h) for m, r in runs.items()}
    counts["queries_without_qrels"] = {
        m: sum(1 for q in r if q not in ds.qrels.get(m, {})) for m, r in runs.items()
    }

    t = time.perf_counter()
    multi = len(ds.modes) > 1
    aggregate: dict[str, float] = {}
    per_query: dict[str, dict[str, float]] = {}
    uncertainty: dict[str, Any] = {}  # name -> Uncertainty
    details: dict[str, float] = {}  # counts metrics report that are not metrics
    notes: dict[str, str] = {}  # why a metric has no value
    for metric in metric_objs:
        if metric.per_mode:
            for mode in ds.modes:
                res = metric.compute(MetricInput({mode: runs[mode]}, {mode: ds.qrels.get(mode)}, ds,
                                                 {mode: judgments[mode]} if mode in judgments else {}))
                suffix = f"[{mode}]" if multi else ""
                aggregate.update({f"{n}{suffix}": v for n, v in res.aggregate.items()})
                uncertainty.update({f"{n}{suffix}": u for n, u in res.uncertainty.items()})
                details.update({f"{n}{suffix}": v for n, v in res.details.items()})
                notes.update({f"{n}{suffix}": v for n, v in res.notes.items()})
                for q, vals in res.per_query.items():
                    per_query.setdefault(q, {}).update({f"{n}{suffix}": v for n, v in vals.items()})
        else:
            res = metric.compute(MetricInput(runs, dict(ds.qrels), ds, judgments))
            aggregate.update(res.aggregate)
            uncertainty.update(res.uncertainty)
            details.update(res.details)
            notes.update(res.notes)
            for q, vals in res.per_query.items():
                per_query.setdefault(q, {}).update(vals)
        components.setdefault("metrics", []).append(describe(metric) | {"names": list(metric.names)})
    timings["metrics"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t0

    usage = ctx.llm.report()
    result = EvalResult(the_task, ds, components, aggregate, per_query, runs, judgments, counts, timings,
                        usage=usage, command=command,
                        llm_failures=_llm_failures(usage, components, max_llm_failures),
                        uncertainty=uncertainty, metric_details=details, metric_notes=notes,
                        versions=ctx.versions())
    ctx.llm.close()
    if output:
        from harness.evaluation.view_files import write_view_files
        from harness.results.store import write_results

        write_view_files(output, ds, runs, ctx.llm.clients)
        write_results(result, output)
        _log(f"[harness] results written to {output}", progress)
    return result


def _run_members(suite: Task, context: Context, output: str | None, progress: bool,
                 kwargs: dict[str, Any]) -> dict[str, EvalResult]:
    """Each member's result. In batch mode, waiting, the members run together (:func:`_together`);
    with ``--no-wait`` each runs until its batches are submitted and the suite stops once, one line
    for all."""
    from harness.llm.errors import BatchPending

    settings = context.llm.settings
    batching = settings.batch and not settings.dry_run

    def run(name: str, ctx: Context = context) -> EvalResult:
        sub_out = None if output is None else str(Path(output) / name.replace(":", "_"))
        return evaluate(name, output=sub_out, overwrite=True, progress=progress, context=ctx, **kwargs)

    if batching and settings.batch_wait and len(suite.tasks) > 1:
        _log(f"[harness] suite {suite.name}: {', '.join(suite.tasks)} together (they wait on batches)", progress)
        return _together(suite.tasks, context, run)
    results: dict[str, EvalResult] = {}
    pending: dict[str, BatchPending] = {}
    for name in suite.tasks:
        _log(f"[harness] suite {suite.name}: {name}", progress)
        try:
            results[name] = run(name)
        except BatchPending as waiting:  # --no-wait: the member's batches are submitted
            pending[name] = waiting
    if pending:
        raise BatchPending(f"pending: {sum(p.requests for p in pending.values())} request(s) in "
                           f"{sum(p.batches for p in pending.values())} batch(es) for {len(pending)} task(s) of "
                           f"{suite.name} ({', '.join(pending)}); run the same command again to collect them and go on",
                           batches=sum(p.batches for p in pending.values()),
                           requests=sum(p.requests for p in pending.values()))
    return results


def _together(names: list[str], context: Context, run: Callable[[str, Context], EvalResult]) -> dict[str, EvalResult]:
    """``run(name, ctx)`` for every member at once, a thread each. In batch mode members spend their time
    waiting on batches: together, every member submits its first stage at once and each submits its next
    round as soon as its last one is in, not after the members before it have finished (BIRCO Reason on
    its four tasks: 2 batch waits, criteria then scores, not 1 + 4). Each member is one evaluation, so
    its usage counts what it submitted and collected, once. The first error (in suite order, among those
    raised by the time it is seen) is raised at once, and Ctrl-C stops at once: either way the other
    members' batch waits are told to stop, and their batches stay in the journal for the next run."""
    import threading
    from dataclasses import replace

    from harness.llm.session import LLMSession

    stop = threading.Event()
    ctx = replace(context, llm=LLMSession(context.llm.settings, context.registry, context.progress, stop=stop))
    results: dict[str, EvalResult] = {}
    errors: dict[str, BaseException] = {}

    def one(name: str) -> None:
        try:
            results[name] = run(name, ctx)
        except BaseException as exc:  # handed to the main thread below
            errors[name] = exc

    threads = [threading.Thread(target=one, args=(name,), name=f"harness-suite-{name}", daemon=True)
               for name in names]
    for thread in threads:
        thread.start()
    try:
        while any(t.is_alive() for t in threads) and not errors:
            for thread in threads:
                thread.join(0.2)  # bounded joins keep the main thread responsive to Ctrl-C and errors
    except KeyboardInterrupt:
        stop.set()
        print("interrupted: the suite's pending batches stay in the journal; run the same command again to collect "
              "them and go on (`harness batch status` shows them)", file=sys.stderr)
        raise
    if errors:
        stop.set()
        raise errors[next(name for name in names if name in errors)]
    return {name: results[name] for name in names}


def sum_usage(usages: list[dict[str, Any]]) -> dict[str, Any]:
    """Members' LLM usage added up: totals and per-model counts (calls, cache hits, tokens, cost)."""
    usages = [u for u in usages if u]
    if not usages:
        return {}

    def add(into: dict[str, Any], part: dict[str, Any]) -> None:
        for key, value in part.items():
            if isinstance(value, dict) and key in ("errors", "failure_kinds", "batch"):  # counts by kind, batch part
                add(into.setdefault(key, {}), value)
            elif isinstance(value, list) and key == "failure_examples":
                into.setdefault(key, []).extend(value[: max(0, 5 - len(into.get(key, [])))])
            elif not isinstance(value, bool) and isinstance(value, (int, float)):
                into[key] = into.get(key, 0) + value

    total: dict[str, Any] = {}
    models: dict[str, dict[str, Any]] = {}
    for u in usages:
        add(total, u.get("total", {}))
        for name, m in u.get("models", {}).items():
            add(models.setdefault(name, {}), m)
    return {"dry_run": any(u.get("dry_run") for u in usages), "estimated": any(u.get("estimated") for u in usages),
            "total": total, "models": models, "members": len(usages)}


def evaluate_suite(suite: Task, context: Context, *, output: str | None = None, overwrite: bool = False,
                   progress: bool = True, **kwargs: Any) -> EvalResult:
    """Run every member task of ``suite`` with the same components and ``context`` (each member gets
    a fresh LLM session of its own); members' results go to ``output/<member>/`` and the suite's own
    ``results.json`` holds the per-task table and the means. ``output`` is checked once, before any
    member runs (see :func:`harness.results.store.prepare_output`)."""
    if output:
        from harness.evaluation.output_files import check_result_files
        from harness.results.store import prepare_output

        prepare_output(output, overwrite=overwrite, members=suite.tasks)
        check_result_files(output, suite.tasks)
    results = _run_members(suite, context, output, progress, kwargs)
    names: list[str] = []
    for r in results.values():
        names += [n for n in r.metrics if n not in names]
    means = {}
    for n in names:
        vals = [r.metrics[n] for r in results.values() if n in r.metrics and r.metrics[n] == r.metrics[n]]
        means[n] = sum(vals) / len(vals) if vals else float("nan")
    result = EvalResult(suite, metrics=means, command=kwargs.get("command"),
                        usage=sum_usage([r.usage for r in results.values()]), versions=context.versions(),
                        members=results)
    if output:
        from harness.results.store import write_suite_results

        write_suite_results(result, output)
    return result
