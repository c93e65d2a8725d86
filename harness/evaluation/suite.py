"""A suite: every member task evaluated with the same components, each member's results in
``output/<member>/``, the suite's own ``results.json`` with the per-task table and, per metric, the
unweighted mean over the members that report it. The members are evaluated by the ``evaluate`` given
(:func:`harness.evaluation.pipeline.evaluate`), so this module never imports the pipeline."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from harness.concepts.task import Task
from harness.context import Context
from harness.evaluation.stages import check_output, log
from harness.results.result import EvalResult

#: ``evaluate(name, output=..., overwrite=..., progress=..., context=..., **kwargs)``
Evaluate = Callable[..., EvalResult]


def evaluate_suite(suite: Task, context: Context, evaluate: Evaluate, *, output: str | None = None,
                   overwrite: bool = False, progress: bool = True, **kwargs: Any) -> EvalResult:
    """Run every member task of ``suite`` through ``evaluate`` with the same components and ``context``
    (each member gets a fresh LLM session of its own); members' results go to ``output/<member>/`` and
    the suite's own ``results.json`` holds the per-task table and the means. ``output`` is checked
    once, before any member runs (see :func:`harness.results.store.prepare_output`)."""
    from harness.llm.usage import sum_reports

    if output:
        check_output(output, overwrite, members=suite.tasks)
    results = _run_members(suite, context, evaluate, output, progress, kwargs)
    result = EvalResult(suite, metrics=member_means(results), command=kwargs.get("command"),
                        usage=sum_reports(r.usage for r in results.values()), versions=context.versions(),
                        members=results)
    if output:
        from harness.results.store import write_suite_results

        write_suite_results(result, output)
    return result


def member_means(results: Mapping[str, EvalResult]) -> dict[str, float]:
    """Per metric, the unweighted mean over the members that report it (NaN values left out; NaN
    when no member has a value)."""
    names: list[str] = []
    for r in results.values():
        names += [n for n in r.metrics if n not in names]
    means = {}
    for n in names:
        vals = [r.metrics[n] for r in results.values() if n in r.metrics and r.metrics[n] == r.metrics[n]]
        means[n] = sum(vals) / len(vals) if vals else float("nan")
    return means


def _run_members(suite: Task, context: Context, evaluate: Evaluate, output: str | None, progress: bool,
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
        log(f"[harness] suite {suite.name}: {', '.join(suite.tasks)} together (they wait on batches)", progress)
        return _together(suite.tasks, context, run)
    results: dict[str, EvalResult] = {}
    pending: dict[str, BatchPending] = {}
    for name in suite.tasks:
        log(f"[harness] suite {suite.name}: {name}", progress)
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
