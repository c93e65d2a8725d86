"""``harness export``: results folders in other tools' formats (``harness export mteb``; docs/mteb.md)."""

from __future__ import annotations

import click

from harness.cli.options import data_dir_option, make_context


@click.group("export")
def export_group() -> None:
    """Write results folders in another tool's format."""


@export_group.command("mteb")
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False),
              help="The results folder to write into: OUTPUT/<org>__<model>/<revision>/<TaskName>.json.")
@click.option("--model", help="The model's name as MTEB knows it, ORG/NAME (default: the run's retriever model).")
@click.option("--revision", help="The model's revision (default: the run's, else no_revision_available).")
@data_dir_option
def export_mteb_cmd(runs, output, model, revision) -> None:
    """MTEB result files (TaskResult JSON + model_meta.json) of results folders whose tasks exist in MTEB.

    The MTEB task is the one the task registered under the run's name corresponds to, never the block its
    results.json carries. A run is refused, with the reason and nothing written, when its task has no MTEB
    counterpart, differs from MTEB's (other pool, split, revision), its results.json disagrees with the
    registered task (another MTEB task or revision, other data than the task pins), or it is incomplete."""
    from harness.mteb.result_files import export_mteb

    paths = export_mteb(list(runs), output, model=model, revision=revision, context=make_context(check_data=False))
    for p in paths:
        click.echo(str(p))
