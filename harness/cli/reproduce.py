"""``harness reproduce``: run the rows of the table of published figures (``harness/data/reproductions.toml``,
``docs/reproductions.md``) that this machine can run, through :func:`harness.evaluate`, and compare each
measured figure with the published one; list the other rows with why they cannot run here."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import click

from harness.cli.options import data_dir_option, make_context
from harness.cli.reproduce_rows import Machine, Row, load_rows, plain, render_markdown, select
from harness.concepts.errors import HarnessError

if TYPE_CHECKING:  # pragma: no cover
    from harness.context import Context

OK, OUTSIDE, FAILED, INCOMPLETE, NOT_RUN = "ok", "OUTSIDE", "failed", "INCOMPLETE", "not run"


@dataclass(frozen=True)
class Outcome:
    """What became of one row: ``status`` (``ok``, ``OUTSIDE`` its tolerance, ``failed``, ``INCOMPLETE``,
    ``not run``), the measured figure (x the row's scale), and why (the reasons a row did not run, an error)."""

    row: Row
    status: str
    measured: float | None = None
    why: tuple[str, ...] = ()
    seconds: float | None = None

    @property
    def difference(self) -> float | None:
        return None if self.measured is None else self.measured - self.row.published

    def as_dict(self) -> dict[str, Any]:
        r = self.row
        return {"id": r.id, "status": self.status, "metric": r.metric, "published": r.published, "scale": r.scale,
                "measured": self.measured, "difference": self.difference, "tolerance": r.tolerance,
                "source": r.source, "why": list(self.why), "seconds": self.seconds}


@click.command("reproduce")
@data_dir_option
@click.argument("row_ids", nargs=-1, metavar="[ROW]...")
@click.option("--offline-only", is_flag=True, help="Leave out the rows that need the network (an API key).")
@click.option("--rows", "rows_file", type=click.Path(dir_okay=False), help="A table of rows in the packaged "
              "table's format (default: the packaged harness/data/reproductions.toml).")
@click.option("--list", "list_only", is_flag=True, help="Say which rows can run here and why the others "
              "cannot; run nothing.")
@click.option("--markdown", is_flag=True, help="Print the table as docs/reproductions.md; run nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object per row.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
def reproduce_cmd(row_ids, offline_only, rows_file, list_only, markdown, as_json, quiet) -> None:
    """Check the published figures this machine can compute (docs/reproductions.md).

    Runs each row whose plugin, extras, data, weights, GPU and key are here (nothing is downloaded), prints
    published vs measured and the difference, and lists the other rows with why. Exit status: 0 every row
    that ran is within its tolerance; 1 a row is outside it or failed; 3 a row is INCOMPLETE (LLM requests
    got no usable reply); 2 an input error."""
    rows = select(load_rows(rows_file), row_ids)
    if markdown:
        click.echo(render_markdown(rows), nl=False)
        return
    context = make_context(quiet=quiet)
    context.data = replace(context.data, auto_download=False)  # rows run on what is here; nothing is fetched
    machine = Machine(context)
    plan = [(row, machine.why_not(row, offline_only)) for row in rows]
    if not as_json:
        click.echo(f"data folder: {context.data.path} ({context.data.source})")
    if list_only:
        _print_plan(plan, as_json)
        return
    outcomes = [Outcome(row, NOT_RUN, why=tuple(why)) if why else run_row(row, context, quiet) for row, why in plan]
    _print_outcomes(outcomes, as_json)
    statuses = {o.status for o in outcomes}
    if statuses & {OUTSIDE, FAILED}:
        sys.exit(1)
    if INCOMPLETE in statuses:
        from harness.llm import EXIT_INCOMPLETE

        sys.exit(EXIT_INCOMPLETE)


def run_row(row: Row, context: Context, quiet: bool = False) -> Outcome:
    """Evaluate ``row``'s system as ``harness eval`` would and judge the figure against the row."""
    from harness.api import evaluate
    from harness.results.table import lookup

    start = time.monotonic()
    try:
        result = evaluate(row.task, dataset=row.dataset, retriever=row.retriever, rerankers=list(row.rerankers),
                          metrics=list(row.metrics) or None, depth=row.depth, progress=not quiet,
                          context=context.for_evaluation(llm=row.llm), command=["harness", "reproduce", row.id])
    except (HarnessError, OSError) as exc:
        message = str(exc) if isinstance(exc, HarnessError) else f"{exc.filename or ''}: {exc.strerror or exc}"
        return Outcome(row, FAILED, why=(message,), seconds=time.monotonic() - start)
    seconds = time.monotonic() - start
    value = lookup(result.metrics, getattr(result, "uncertainty", None) or {}, row.metric)
    if value is None or value != value:
        reported = ", ".join(result.metrics) or "nothing"
        return Outcome(row, FAILED, why=(f"the run reports no value for {row.metric!r} (it reports: {reported})",),
                       seconds=seconds)
    measured = value * row.scale
    slack = 1e-9 * max(1.0, abs(row.published))  # float noise in measured x scale, never a real difference
    status = OK if abs(measured - row.published) <= row.tolerance + slack else OUTSIDE
    why: tuple[str, ...] = ()
    if not result.complete:
        from harness.llm import banner

        status = OUTSIDE if status == OUTSIDE else INCOMPLETE
        why = (banner(result.llm_failures, sum(len(r) for r in result.runs.values())),)
    return Outcome(row, status, measured, why, seconds)


def _digits(row: Row) -> int:
    """Decimals to print a row's figures with: the published figure's, and two more (at most 9)."""
    text = plain(row.published)
    return min(9, (len(text.split(".", 1)[1]) if "." in text else 0) + 2)


def _print_plan(plan: list[tuple[Row, list[str]]], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([{"id": r.id, "runs_here": not why, "why": why} for r, why in plan], indent=2))
        return
    for row, why in plan:
        click.echo(f"{row.id}: " + ("runs here" if not why else "not here: " + "; ".join(why)))


def _print_outcomes(outcomes: list[Outcome], as_json: bool) -> None:
    if as_json:
        click.echo(json.dumps([o.as_dict() for o in outcomes], indent=2))
        return
    from harness.results.table import Cell, render_table

    ran = [o for o in outcomes if o.status != NOT_RUN]
    if ran:
        body = []
        for o in ran:
            d = _digits(o.row)
            measured = Cell("-" if o.measured is None else f"{o.measured:.{d}f}")
            diff = Cell("-" if o.difference is None else f"{o.difference:+.{d}f}")
            body.append((o.row.id, o.row.metric, Cell(plain(o.row.published)), measured, diff,
                         Cell(plain(o.row.tolerance)), o.status, Cell(f"{o.seconds:.1f}s")))
        click.echo(render_table(body, ["row", "metric", "published", "measured", "difference", "tolerance",
                                       "verdict", "time"]))
        for o in ran:
            for line in o.why:
                click.echo(f"{o.row.id}: {line}")
    skipped = [o for o in outcomes if o.status == NOT_RUN]
    if skipped:
        click.echo(f"\nnot run here ({len(skipped)}):")
        for o in skipped:
            click.echo(f"  {o.row.id}: " + "; ".join(o.why))
    counts = {s: sum(o.status == s for o in outcomes) for s in (OK, OUTSIDE, FAILED, INCOMPLETE, NOT_RUN)}
    click.echo(f"\n{len(ran)} of {len(outcomes)} rows ran: {counts[OK]} within tolerance, {counts[OUTSIDE]} outside, "
               f"{counts[FAILED]} failed, {counts[INCOMPLETE]} incomplete; {counts[NOT_RUN]} not run here")
