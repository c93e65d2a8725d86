"""``harness eval ... --sweep KEY=V1,V2``: the sweep run and its summary (one row per combination)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:  # pragma: no cover
    from harness.context import Context


def run_sweep_command(task, dataset, retriever, rerankers, judge, metrics, limit, depth, output, overwrite, quiet,
                      max_llm_failures, sweeps, context: Context, as_json: bool = False,
                      qrels: str | None = None) -> None:
    """Every combination (:func:`harness.api.evaluate_sweep`), then a table of each one's folder, main metric,
    USD, output and reasoning tokens (``--json``: each one's folder, values and metrics); exit status 3 when a
    combination is INCOMPLETE."""
    from harness.api import evaluate_sweep
    from harness.llm import EXIT_INCOMPLETE
    from harness.results.table import render_table

    if not output:
        raise click.UsageError("--sweep writes one results folder per combination: give --output FOLDER")
    runs = evaluate_sweep(task, sweep=list(sweeps), dataset=dataset, retriever=retriever, rerankers=rerankers,
                          judge=judge, metrics=metrics or None, limit=limit, depth=depth, output=output,
                          overwrite=overwrite, progress=not quiet, max_llm_failures=max_llm_failures,
                          context=context, command=["harness", *sys.argv[1:]], qrels=qrels)
    rows = []
    for r in runs:
        res = r.result
        total = (res.usage or {}).get("total") or {}
        main = next((m for m in res.task.metrics if m in res.metrics), next(iter(res.metrics), None))
        value = res.metrics.get(main) if main else None
        cost = total.get("cost_usd")
        rows.append((r.folder.name, main or "", value if value is not None else float("nan"),
                     "n/a" if cost is None else f"{cost:.6f}", total.get("output_tokens", 0),
                     total.get("reasoning_tokens", 0), "" if res.complete else "INCOMPLETE"))
    if as_json:
        click.echo(json.dumps([{"folder": r.folder.name, "values": r.values, "metrics": r.result.metrics,
                                "complete": r.result.complete} for r in runs], indent=2))
    else:
        click.echo(f"sweep: {len(runs)} combination(s) under {output}")
        click.echo(render_table(rows, ["folder", "metric", "value", "USD", "out tok", "reason tok", "status"]))
    if any(not r.result.complete for r in runs):
        sys.exit(EXIT_INCOMPLETE)
