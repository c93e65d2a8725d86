"""The evaluation flow: task -> dataset -> first stage -> rerankers -> judge -> metrics.

One pass of the flow runs once per mode of the dataset over the same components; per-mode
metrics see one mode's run, cross-mode metrics (WISE, p-MRR) see the runs of every mode.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.concepts.dataset import Dataset
from harness.concepts.errors import HarnessError
from harness.concepts.judgment import Judgments
from harness.concepts.protocols import MetricInput, describe
from harness.concepts.query import Query, format_query
from harness.concepts.run import Run
from harness.concepts.task import Task
from harness.plugins.component_spec import parse_spec
from harness.plugins.registry import Registry


@dataclass
class EvalResult:
    """Everything a run produced; ``to_dict`` is what results.json holds."""

    task: Task
    dataset: Dataset
    components: dict[str, Any]
    metrics: dict[str, float]
    per_query: dict[str, dict[str, float]]
    runs: dict[str, Run]
    judgments: dict[str, Judgments]
    counts: dict[str, Any]
    timings: dict[str, float]
    usage: dict[str, Any] = field(default_factory=dict)
    command: list[str] | None = None
    llm_failures: dict[str, Any] = field(default_factory=dict)  # harness.llm.failures.failure_report

    @property
    def complete(self) -> bool:
        """False when LLM requests got no usable reply beyond the accepted share (INCOMPLETE)."""
        return self.llm_failures.get("complete", True)

    def to_dict(self) -> dict[str, Any]:
        from harness import __version__
        from harness.plugins.host import distribution_versions

        return {
            "harness_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "status": "complete" if self.complete else "incomplete",
            "command": self.command,
            "task": self.task.as_dict(),
            "components": self.components,
            "versions": distribution_versions(),
            "dataset": {
                **self.dataset.identity,
                "name": self.dataset.name,
                "modes": self.dataset.modes,
                "n_docs": len(self.dataset.corpus),
                "n_queries": {m: len(q) for m, q in self.dataset.queries.items()},
                "n_qrels": {m: r.n_judgments() for m, r in self.dataset.qrels.items()},
            },
            "metrics": self.metrics,
            "counts": self.counts,
            "timings": {k: round(v, 4) for k, v in self.timings.items()},
            "usage": self.usage,
            "llm_failures": self.llm_failures,
        }


def _log(msg: str, progress: bool) -> None:
    if progress:
        print(msg, file=sys.stderr, flush=True)


def resolve_task(registry: Registry, task: str | Task | None, dataset: str | None) -> Task:
    if isinstance(task, Task):
        return task
    if task:
        return registry.create("task", task)
    if dataset:
        spec = parse_spec(dataset)
        return Task(name=spec.name, dataset=dataset, first_stage="retrieve", metrics=["nDCG@10"])
    raise HarnessError("give a task (--task NAME) or a dataset (--dataset SPEC); `harness list-plugins` lists them")


def load_task_dataset(registry: Registry, task: Task, download: bool = True) -> Dataset:
    """Create the task's dataset, fetching its files first when they are missing."""
    if task.files and download:
        from harness.data.download import ensure_task_files

        ensure_task_files(task)
    return registry.create("dataset", task.dataset, **task.dataset_args)


def task_queries(dataset: Dataset, mode: str, template: str) -> dict[str, Query]:
    """The mode's queries as components see them: ``text`` formed by the task's template, the raw
    text in ``meta['query']``, the instruction kept in ``instruction``."""
    out = {}
    for qid, q in dataset.queries[mode].items():
        out[qid] = Query(qid, format_query(q, template), q.instruction, {**q.meta, "query": q.text})
    return out


def _create(registry: Registry, kind: str, spec: str) -> tuple[Any, dict[str, Any]]:
    obj, comp, parsed = registry.build(kind, spec)
    return obj, {"spec": spec, "name": comp.name, "source": comp.source, "args": parsed.args, **describe(obj)}


def _record_stats(components: dict[str, Any], first: Any, rerankers: list[Any], judge: Any) -> None:
    """Components that count their work (texts encoded, cache hits, LLM calls) expose ``stats()``."""
    pairs = [(components["retriever"], first), *zip(components.get("rerankers", []), rerankers)]
    if judge is not None:
        pairs.append((components["judge"], judge))
    for desc, obj in pairs:
        stats = getattr(obj, "stats", None)
        if callable(stats):
            desc["stats"] = dict(stats())


def _llm_usage() -> dict[str, Any]:
    """LLM settings, usage (calls, cache hits, failures, tokens, cost) and endpoints whenever an
    LLM client was created in this evaluation, zero calls included."""
    if "harness.llm.client" not in sys.modules:
        return {}
    from harness.llm import current, session_clients, session_endpoints, session_usage

    if not session_clients():
        return {}
    return {"settings": current().as_dict(), **session_usage().as_dict(),
            "endpoints": [e.describe() for e in session_endpoints()]}


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


def evaluate(
    task: str | Task | None = None,
    *,
    dataset: str | None = None,
    retriever: str | None = None,
    rerankers: Sequence[str] = (),
    judge: str | None = None,
    metrics: Sequence[str] | None = None,
    limit: int | None = None,
    depth: int | None = None,
    output: str | None = None,
    overwrite: bool = False,
    progress: bool = True,
    command: list[str] | None = None,
    registry: Registry | None = None,
    llm: str | None = None,
    max_concurrency: int | None = None,
    dry_run: bool | None = None,
    max_llm_failures: float = 0.0,
) -> EvalResult | SuiteResult:
    """Run one evaluation. Mirrors ``harness eval``: ``llm``, ``max_concurrency`` and ``dry_run`` are
    its ``--llm``, ``--max-concurrency`` and ``--dry-run`` (defaults for LLM-backed components).

    ``limit`` and ``depth`` must be None or >= 1. ``output`` is created and probed for writing before
    any data is read; a folder already holding ``results.json`` is refused unless ``overwrite``.

    LLM requests that got no usable reply make the result INCOMPLETE (``result.complete`` is False,
    ``result.llm_failures`` says what failed) unless they are at most ``max_llm_failures`` (a share
    in [0, 1]) of the run's requests; a rejected key or an unknown model raises at once."""
    from harness.metrics.resolve import resolve_metrics
    from harness.plugins.host import get_registry

    check_limits(limit=limit, depth=depth)
    try:
        from harness.llm.failures import check_share

        max_llm_failures = check_share(max_llm_failures)
    except (TypeError, ValueError) as exc:
        raise HarnessError(str(exc)) from None
    registry = registry or get_registry()
    the_task = resolve_task(registry, task, dataset)
    if the_task.is_suite:
        return evaluate_suite(the_task, retriever=retriever, rerankers=rerankers, judge=judge, metrics=metrics,
                              limit=limit, depth=depth, output=output, overwrite=overwrite, progress=progress,
                              command=command, registry=registry, llm=llm, max_concurrency=max_concurrency,
                              dry_run=dry_run, max_llm_failures=max_llm_failures)
    if llm is not None or max_concurrency is not None or dry_run is not None:
        from harness.llm import configure

        configure(llm=llm, max_concurrency=max_concurrency, dry_run=dry_run)
    if "harness.llm.client" in sys.modules:  # usage is counted per evaluation
        from harness.llm.client import reset_clients

        reset_clients()
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    metric_names = list(metrics) if metrics else list(the_task.metrics)
    metric_objs = resolve_metrics(registry, metric_names)  # fail on a bad name before any work
    if output:  # an unwritable or already used --output fails now, not after the evaluation
        from harness.results.store import prepare_output

        prepare_output(output, overwrite=overwrite)

    # components first: a bad spec or a missing API key fails before any data is read or downloaded
    k = depth or the_task.depth
    first_spec = retriever or ("candidates" if the_task.first_stage == "candidates" else the_task.retriever)
    components: dict[str, Any] = {}
    first, components["retriever"] = _create(registry, "retriever", first_spec)
    reranker_objs = []
    for spec in rerankers:
        obj, desc = _create(registry, "reranker", spec)
        reranker_objs.append(obj)
        components.setdefault("rerankers", []).append(desc)
    judge_obj = None
    if judge:
        judge_obj, components["judge"] = _create(registry, "judge", judge)

    t = time.perf_counter()
    ds = load_task_dataset(registry, the_task)
    if limit is not None:
        ds = ds.limit(limit)
    counts: dict[str, Any] = {"unknown_ids": ds.validate()}
    timings["load"] = time.perf_counter() - t
    _log(f"[harness] {the_task.name}: {len(ds.corpus)} documents, "
         f"{', '.join(f'{m}: {len(q)} queries' for m, q in ds.queries.items())}", progress)

    if getattr(first, "uses_candidates", False) and not ds.candidates:
        raise HarnessError(f"dataset {ds.name!r} gives no candidate lists; pass --retriever bm25 or dense")

    t = time.perf_counter()
    if not getattr(first, "uses_candidates", False):
        _log(f"[harness] indexing with {first_spec}", progress)
        first.index(ds.corpus)
    timings["index"] = time.perf_counter() - t

    runs: dict[str, Run] = {}
    judgments: dict[str, Judgments] = {}
    for mode in ds.modes:
        queries = task_queries(ds, mode, the_task.query_format)
        t = time.perf_counter()
        if getattr(first, "uses_candidates", False):
            first.set_candidates(ds.candidates.get(mode) if ds.candidates else None)
        # retrievers that need more than the text (a perspective, a root query) set query_objects = True
        run = first.search(queries if getattr(first, "query_objects", False) else
                           {q: v.text for q, v in queries.items()}, k)
        timings[f"retrieve[{mode}]"] = time.perf_counter() - t
        for spec, rr in zip(rerankers, reranker_objs):
            t = time.perf_counter()
            run = rr.rerank(queries, run, ds.corpus)
            if not run.is_strictly_decreasing():
                counts.setdefault("scores_made_strict", []).append(f"{spec}[{mode}]")
                run = run.with_strict_scores()
            timings[f"rerank {spec}[{mode}]"] = time.perf_counter() - t
        run.name = "harness"
        runs[mode] = run
        if judge_obj is not None:
            t = time.perf_counter()
            judgments[mode] = judge_obj.judge(queries, run, ds.corpus)
            timings[f"judge[{mode}]"] = time.perf_counter() - t
            counts.setdefault("judge_failures", {})[mode] = judgments[mode].n_failed
    _record_stats(components, first, reranker_objs, judge_obj)
    counts["queries_without_results"] = {m: sum(1 for h in r.values() if not h) for m, r in runs.items()}
    counts["queries_without_qrels"] = {
        m: sum(1 for q in r if q not in ds.qrels.get(m, {})) for m, r in runs.items()
    }

    t = time.perf_counter()
    multi = len(ds.modes) > 1
    aggregate: dict[str, float] = {}
    per_query: dict[str, dict[str, float]] = {}
    for metric in metric_objs:
        if metric.per_mode:
            for mode in ds.modes:
                res = metric.compute(MetricInput({mode: runs[mode]}, {mode: ds.qrels.get(mode)}, ds,
                                                 {mode: judgments[mode]} if mode in judgments else {}))
                suffix = f"[{mode}]" if multi else ""
                aggregate.update({f"{n}{suffix}": v for n, v in res.aggregate.items()})
                for q, vals in res.per_query.items():
                    per_query.setdefault(q, {}).update({f"{n}{suffix}": v for n, v in vals.items()})
        else:
            res = metric.compute(MetricInput(runs, dict(ds.qrels), ds, judgments))
            aggregate.update(res.aggregate)
            for q, vals in res.per_query.items():
                per_query.setdefault(q, {}).update(vals)
        components.setdefault("metrics", []).append(describe(metric) | {"names": list(metric.names)})
    timings["metrics"] = time.perf_counter() - t
    timings["total"] = time.perf_counter() - t0

    usage = _llm_usage()
    result = EvalResult(the_task, ds, components, aggregate, per_query, runs, judgments, counts, timings,
                        usage=usage, command=command,
                        llm_failures=_llm_failures(usage, components, max_llm_failures))
    if output:
        from harness.results.store import write_results

        write_results(result, output)
        _log(f"[harness] results written to {output}", progress)
    return result


@dataclass
class SuiteResult:
    """A suite's members' results and, per metric, the unweighted mean over the members that report it."""

    task: Task
    results: dict[str, EvalResult]
    metrics: dict[str, float]
    command: list[str] | None = None
    usage: dict[str, Any] = field(default_factory=dict)  # LLM usage summed over the members

    @property
    def per_task(self) -> dict[str, dict[str, float]]:
        return {name: r.metrics for name, r in self.results.items()}

    @property
    def complete(self) -> bool:
        return all(r.complete for r in self.results.values())

    @property
    def incomplete_members(self) -> list[str]:
        return [name for name, r in self.results.items() if not r.complete]

    def to_dict(self) -> dict[str, Any]:
        from harness import __version__
        from harness.plugins.host import distribution_versions

        first = next(iter(self.results.values()))
        return {
            "harness_version": __version__,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "status": "complete" if self.complete else "incomplete",
            "incomplete_tasks": self.incomplete_members,
            "command": self.command,
            "task": self.task.as_dict(),
            "components": first.components,
            "versions": distribution_versions(),
            "tasks": {name: {"metrics": r.metrics, "results": f"{name.replace(':', '_')}/results.json",
                             "dataset": r.to_dict()["dataset"]} for name, r in self.results.items()},
            "metrics": self.metrics,
            "aggregation": "unweighted mean over member tasks",
            "usage": self.usage,
        }


def sum_usage(usages: list[dict[str, Any]]) -> dict[str, Any]:
    """Members' LLM usage added up: totals and per-model counts (calls, cache hits, tokens, cost)."""
    usages = [u for u in usages if u]
    if not usages:
        return {}

    def add(into: dict[str, Any], part: dict[str, Any]) -> None:
        for key, value in part.items():
            if isinstance(value, dict) and key in ("errors", "failure_kinds"):  # counts by kind
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


def evaluate_suite(suite: Task, *, output: str | None = None, overwrite: bool = False, progress: bool = True,
                   **kwargs: Any) -> SuiteResult:
    """Run every member task of ``suite`` with the same components; members' results go to
    ``output/<member>/`` and the suite's own ``results.json`` holds the per-task table and the means.
    ``output`` is checked once, before any member runs (see :func:`harness.results.store.prepare_output`)."""
    if output:
        from harness.results.store import prepare_output

        prepare_output(output, overwrite=overwrite, members=suite.tasks)
    results: dict[str, EvalResult] = {}
    for name in suite.tasks:
        _log(f"[harness] suite {suite.name}: {name}", progress)
        sub_out = None if output is None else str(Path(output) / name.replace(":", "_"))
        results[name] = evaluate(name, output=sub_out, overwrite=True, progress=progress, **kwargs)
    names: list[str] = []
    for r in results.values():
        names += [n for n in r.metrics if n not in names]
    means = {}
    for n in names:
        vals = [r.metrics[n] for r in results.values() if n in r.metrics and r.metrics[n] == r.metrics[n]]
        means[n] = sum(vals) / len(vals) if vals else float("nan")
    result = SuiteResult(suite, results, means, command=kwargs.get("command"),
                         usage=sum_usage([r.usage for r in results.values()]))
    if output:
        from harness.results.store import write_suite_results

        write_suite_results(result, output)
    return result
