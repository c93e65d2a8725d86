"""``harness fuse``: fuse the final runs of results folders (or TREC run files) into a results folder
for their task (a thin face over :func:`harness.api.fuse_runs`)."""

from __future__ import annotations

import json
import sys

import click

from harness.cli.options import data_dir_option, make_context

METHODS = ("rrf", "combsum", "combmnz", "max", "wsum")  # harness.retrievers.fusion.METHODS (checked by the tests)
NORMS = ("minmax", "zscore", "none")


def _weights(ctx: click.Context, param: click.Parameter, value: str | None) -> list[float] | None:
    if value is None:
        return None
    try:
        return [float(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"{value!r}: give numbers separated by commas, e.g. 0.7,0.3") from None


@click.command("fuse")
@data_dir_option
@click.argument("inputs", nargs=-1, required=True, metavar="RUN_DIR_OR_FILE...")
@click.option("--method", type=click.Choice(METHODS), default="rrf", show_default=True,
              help="Fusion method (ranx's formulas, docs/runs.md).")
@click.option("--k", "k", type=click.FloatRange(min=0), help="RRF's constant: 1 / (k + rank) (default 60; rrf only).")
@click.option("--weights", callback=_weights, help="wsum: one weight per input, in order, e.g. 0.7,0.3.")
@click.option("--norm", type=click.Choice(NORMS), help="Score normalisation per query before fusing (default "
              "minmax, as ranx; rrf reads ranks and takes none).")
@click.option("--task", "-t", help="The inputs' task (default: the one their results.json name; needed for run "
              "files).")
@click.option("--dataset", "-d", help="A dataset spec instead of a task.")
@click.option("--metric", "-m", "metrics", multiple=True, help="Metric; repeatable. Default: the task's.")
@click.option("--depth", type=click.IntRange(min=1), help="Keep each query's top N of the fused run (default: all).")
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False), help="The fused results folder.")
@click.option("--overwrite", is_flag=True, help="Replace the results the --output folder already holds.")
@click.option("--json", "as_json", is_flag=True, help="Print the aggregate metrics as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
def fuse_cmd(inputs, method, k, weights, norm, task, dataset, metrics, depth, output, overwrite, as_json,
             quiet) -> None:
    """Fuse runs (results folders' final runs, or TREC run files) and evaluate the fused run on their task:
    a results folder that compare, report, view and export read like any other.

    Exit status: 0 done; 2 an input error (one message)."""
    from harness.api import fuse_runs

    if k is not None and method != "rrf":
        raise click.UsageError(f"--k is RRF's constant; {method} takes none")
    context = make_context(quiet=quiet)
    result = fuse_runs(inputs, method=method, k=int(k) if k is not None and k.is_integer() else k, weights=weights,
                       norm=norm, task=task, dataset=dataset, metrics=metrics or None, depth=depth, output=output,
                       overwrite=overwrite, progress=not quiet, context=context, command=["harness", *sys.argv[1:]])
    if as_json:
        click.echo(json.dumps(result.metrics, indent=2))
        return
    from harness.results.table import metrics_table

    n = sum(len(r) for r in result.runs.values())
    title = f"{result.task.name}  (fused: {method} of {len(inputs)} runs; {n} queries)"
    click.echo(metrics_table(result.metrics, title, uncertainty=result.uncertainty, details=result.metric_details,
                             notes=result.metric_notes))
