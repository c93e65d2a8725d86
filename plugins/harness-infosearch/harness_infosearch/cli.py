"""``harness infosearch``: Table-1-style rows from results folders, and the installed dimensions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from .table1 import table1


def rows_from_results(data: Mapping[str, Any], label: str | None = None) -> list[tuple[str, Mapping[str, float]]]:
    """One row per dimension and a mean row for a suite's results.json; one row for a single task."""
    comps = data.get("components", {})
    system = " -> ".join([comps.get("retriever", {}).get("spec", "?"),
                          *(r.get("spec", "?") for r in comps.get("rerankers", []))])
    if "tasks" in data:
        rows = [(f"{label or system} | {name}", t["metrics"]) for name, t in data["tasks"].items()]
        return rows + [(f"{label or system} | mean", data["metrics"])]
    return [(f"{label or system} | {data.get('task', {}).get('name', '?')}", data["metrics"])]


@click.group("infosearch")
def infosearch_group() -> None:
    """InfoSearch: Table-1 rows and the installed dimensions."""


@infosearch_group.command("table")
@click.argument("results", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--wide", is_flag=True, help="Add MRR@1 per mode, Ideal WISE and Per.")
@click.option("--label", help="Row label instead of the retriever -> rerankers spec.")
def table_cmd(results: tuple[str, ...], wide: bool, label: str | None) -> None:
    """Print Table-1-style rows from `harness eval -o DIR` results folders (or results.json files)."""
    from harness import read_results

    rows: list[tuple[str, Mapping[str, float]]] = []
    for item in results:  # the one reader of the results contract (older schema versions converted)
        rows += rows_from_results(read_results(item).data, label)
    click.echo(table1(rows, wide))


@infosearch_group.command("dimensions")
def dimensions_cmd() -> None:
    """List the installed InfoSearch dimensions and whether their data is present."""
    from harness import render_table
    from harness.cli import make_context

    from .dimensions import registered_dimensions
    from .layout import has_tables

    context = make_context(check_data=False)  # every installed plugin's dimensions, the data folder
    rows = []
    for d in registered_dimensions(context.registry):
        folder = context.data.locate(d.folder)
        rows.append((d.task_name, d.hub_name, "yes" if has_tables(folder) else "no", str(folder)))
    click.echo(render_table(rows, ["task", "dataset", "data present", "folder"]))
