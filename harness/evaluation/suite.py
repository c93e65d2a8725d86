"""A suite: every member task evaluated with the same components, each member's results in
``output/<member>/``, the suite's own ``results.json`` with the per-task table and, per metric, the
unweighted mean over the members that report it. The members are evaluated by the "run one member"
function given (:func:`harness.evaluation.pipeline.run_member`, bound to the components), so this
module never imports the pipeline and never builds an LLM session: the context does."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from harness.concepts.task import Task
from harness.context import Context
from harness.evaluation.options import EvalOptions
from harness.evaluation.stages import check_output, log
from harness.results.layout import ResultsLayout
from harness.results.result import EvalResult
from harness.served.request_errors import BatchPending
from harness.served.usage import sum_reports

#: ``run_member(task name, options, context) -> EvalResult``: one member with the suite's components
RunMember = Callable[[str, EvalOptions, Context], EvalResult]


def evaluate_suite(suite: Task, options: EvalOptions, context: Context, run_member: RunMember) -> EvalResult:
    """Run every member task of ``suite`` through ``run_member`` with ``options`` and ``context`` (each
    member gets a fresh LLM session of its own); members' results go to ``output/<member>/`` and the
    suite's own ``results.json`` holds the per-task table and the means. ``output`` is checked once,
    before any member runs (see :meth:`harness.results.layout.ResultsLayout.prepare`)."""
    if options.output:
        check_output(options.output, options.overwrite, members=suite.tasks)
    results = _run_members(suite, options, context, run_member)
    command = list(options.command) if options.command is not None else None
    result = EvalResult(suite, metrics=member_means(results), command=command,
                        usage=sum_reports(r.usage for r in results.values()), versions=context.versions(),
                        members=results)
    if options.output:
        ResultsLayout(Path(options.output)).write_suite(result)
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


def _run_members(suite: Task, options: EvalOptions, context: Context, run_member: RunMember
                 ) -> dict[str, EvalResult]:
    """Each member's result. In batch mode, waiting, the members run together (:func:`_together`);
    with ``--no-wait`` each runs until its batches are submitted and the suite stops once, one line
    for all."""
    settings = context.llm.settings
    batching = settings.batch and not settings.dry_run
    progress = options.progress

    def run(name: str, ctx: Context = context) -> EvalResult:
        sub_out = None if options.output is None else str(Path(options.output) / name.replace(":", "_"))
        return run_member(name, options.replace(output=sub_out, overwrite=True), ctx)

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
    stop = threading.Event()
    ctx = context.for_evaluation(stop=stop)  # its members' sessions stop their batch waits on it
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
