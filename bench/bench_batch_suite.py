"""Benchmark of a suite in batch mode: its members waiting together against waiting one after another.

BIRCO Reason (two rounds per task: criteria, then scores) over the ``birco`` suite's four test tasks,
through the real openai SDK and the loopback server, where every batch ends ``--delay`` seconds after
it is created (a stand-in for the provider's turnaround, minutes to hours in real life). Three ways,
each with a fresh cache, in this process:

- ``together``: ``evaluate("birco", llm_batch=True)``, the members in threads (the harness now);
- ``first-stage-then-each``: every member once with ``llm_batch_wait=False`` (all criteria submitted),
  then each member waiting in turn (what the harness did before);
- ``one-after-another``: each member evaluated on its own, waiting, in turn.

Reported: wall time, batches submitted, and wall time as a multiple of ``--delay`` (the number of
batch turnarounds waited in a row), with ratios against ``together``. Needs the BIRCO files
(``HARNESS_DATA``) and the harness-birco plugin.

    python bench/bench_batch_suite.py --delay 3
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time

from harness import Context, evaluate
from harness.llm import BatchPending, LLMSettings, RetryPolicy
from harness.testing import TestServer

MODEL = "gpt-4o-mini"
TASKS = ("birco:arguana", "birco:wtb", "birco:clinical-trial", "birco:relic")


def context(cache: str) -> Context:
    return Context.create(cache_dir=cache, llm=LLMSettings(batch_poll=0.05, retry=RetryPolicy.fast(), cache_dir=cache))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--delay", type=float, default=3.0, help="seconds from a batch's creation to its end")
    p.add_argument("--limit", type=int, default=2, help="queries per task")
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    out: dict[str, dict] = {}
    with TestServer(reply="SCORE: 5", batch_delay=a.delay) as srv:
        kw = dict(rerankers=["birco-reason"], llm=srv.spec(MODEL, "openai"), limit=a.limit, progress=False,
                  llm_batch=True)

        def timed(name: str, fn) -> None:
            before = srv.batch_submissions
            with tempfile.TemporaryDirectory() as cache:
                t = time.perf_counter()
                fn(context(cache))
                wall = time.perf_counter() - t
            out[name] = {"wall_s": round(wall, 2), "batches": srv.batch_submissions - before,
                         "turnarounds": round(wall / a.delay, 2)}

        def together(ctx: Context) -> None:
            evaluate("birco", context=ctx, **kw)

        def first_stage_then_each(ctx: Context) -> None:
            for task in TASKS:
                try:
                    evaluate(task, context=ctx, llm_batch_wait=False, **kw)
                except BatchPending:
                    pass
            for task in TASKS:
                evaluate(task, context=ctx, **kw)

        def one_after_another(ctx: Context) -> None:
            for task in TASKS:
                evaluate(task, context=ctx, **kw)

        timed("together", together)
        timed("first-stage-then-each", first_stage_then_each)
        timed("one-after-another", one_after_another)
    base = out["together"]["wall_s"]
    for row in out.values():
        row["ratio_to_together"] = round(row["wall_s"] / base, 2)
    if a.json:
        print(json.dumps({"delay_s": a.delay, "limit": a.limit, "runs": out}, indent=1))
    else:
        print(f"BIRCO Reason suite, batch mode, every batch ends {a.delay:g} s after creation, {a.limit} queries/task")
        print(f"{'way':24} {'wall s':>8} {'batches':>8} {'turnarounds':>12} {'x together':>11}")
        for name, row in out.items():
            print(f"{name:24} {row['wall_s']:8.2f} {row['batches']:8d} {row['turnarounds']:12.2f} "
                  f"{row['ratio_to_together']:11.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
