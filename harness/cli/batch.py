"""``harness batch``: the batches ``--llm-batch`` runs left at the providers, from the journal beside
the LLM cache: ``status`` (what is pending, and how far each is), ``collect`` (gather what has ended
into the cache), ``cancel``, and ``clean`` (delete the provider's copies of collected batches). A face
over :class:`harness.llm.Batches`."""

from __future__ import annotations

import datetime as dt
import sys
from typing import TYPE_CHECKING

import click

from harness.cli.options import CACHE_DIR_OPTION, make_context

if TYPE_CHECKING:  # pragma: no cover
    from harness.context import Context
    from harness.llm import Batches

#: exit status of `collect` and `cancel` when the provider did not know some batch (or refused one)
INCOMPLETE = 3

ENDPOINT_OPTION = click.option(
    "--endpoint", "endpoints", multiple=True, metavar="URL",
    help="Allow this base URL from the journal (repeatable). Without it, only the providers' own endpoints, "
         "OPENAI_BASE_URL / ANTHROPIC_BASE_URL and this machine are contacted with your key.")


def _context(cache_dir: str | None) -> Context:
    """The command's context: the environment's LLM settings in batch mode, the cache root ``cache_dir``."""
    from harness.llm import LLMSettings

    return make_context(LLMSettings.from_env(cache_dir=cache_dir, batch=True), cache_dir, check_data=False)


def _batches(context: Context, endpoints: tuple[str, ...]) -> Batches:
    from harness.llm import Batches

    return Batches(context.llm, endpoints)


def _when(t: float | None) -> str:
    return "-" if not t else dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S")


def _report(lines: list[str], what: str) -> None:
    """List the batches ``what`` could not handle, at the end of a command."""
    if lines:
        click.echo(f"{len(lines)} batch(es) {what}:")
        for line in lines:
            click.echo(f"  {line}")


@click.group("batch")
def batch_group() -> None:
    """Batches submitted by `harness eval --llm-batch`: status, collect, cancel, clean."""


@batch_group.command("status")
@CACHE_DIR_OPTION
@click.option("--all", "show_all", is_flag=True, help="Also list collected, abandoned and cancelled batches.")
@click.option("--offline", is_flag=True, help="Show the journal only; ask no provider.")
@ENDPOINT_OPTION
def status_cmd(cache_dir: str | None, show_all: bool, offline: bool, endpoints: tuple[str, ...]) -> None:
    """List the batches in the journal and, for pending ones, how far the provider has got."""
    from harness.results.table import render_table

    batches = _batches(_context(cache_dir), endpoints)
    found = batches.status(include_ended=show_all, offline=offline)
    if not found:
        click.echo(f"no {'' if show_all else 'pending '}batches in {batches.path}")
        return
    rows = [(s.record.remote_id or f"#{s.record.id} (not submitted)", f"{s.record.provider}:{s.record.model}",
             s.record.state, s.describe(), s.record.n, _when(s.record.created), s.record.note or "") for s in found]
    click.echo(render_table(rows, ["batch", "model", "journal", "provider", "requests", "created", "note"]))


@batch_group.command("collect")
@CACHE_DIR_OPTION
@click.option("--wait", is_flag=True, help="Wait until every pending batch has ended.")
@ENDPOINT_OPTION
def collect_cmd(cache_dir: str | None, wait: bool, endpoints: tuple[str, ...]) -> None:
    """Gather the results of every ended batch into the LLM cache (a later run finds them there).

    Exit status: 0 every batch collected; 75 some are still running; 3 the provider did not know some
    batch (marked abandoned and listed at the end; the others were still collected)."""
    done = _batches(_context(cache_dir), endpoints).collect(wait=wait, echo=click.echo)
    if done.usage:
        click.echo(done.usage)
    if done.running:
        click.echo(f"{done.running} batch(es) still running; `harness batch collect` again later")
    _report(done.unknown, "the provider does not know (marked abandoned; the next run submits their requests again)")
    if done.unknown or done.running:
        sys.exit(INCOMPLETE if done.unknown else 75)


@batch_group.command("cancel")
@CACHE_DIR_OPTION
@click.argument("batch_ids", nargs=-1)
@click.option("--all", "cancel_all", is_flag=True, help="Cancel every pending batch.")
@ENDPOINT_OPTION
def cancel_cmd(cache_dir: str | None, batch_ids: tuple[str, ...], cancel_all: bool, endpoints: tuple[str, ...]) -> None:
    """Ask the provider to cancel pending batches (by id, or --all). What they finished is still
    billed and kept: `harness batch collect` gathers it once they have ended.

    Exit status: 0 every cancel was requested; 3 the provider did not know some batch (marked
    abandoned) or refused to cancel it, listed at the end; the others were still cancelled."""
    if not batch_ids and not cancel_all:
        raise click.UsageError("name the batches to cancel (see `harness batch status`) or give --all")
    done = _batches(_context(cache_dir), endpoints).cancel(batch_ids, cancel_all, echo=click.echo)
    _report(done.unknown, "the provider does not know (marked abandoned)")
    _report(done.refused, "not cancelled")
    if done.unknown or done.refused:
        sys.exit(INCOMPLETE)


@batch_group.command("clean")
@CACHE_DIR_OPTION
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@ENDPOINT_OPTION
def clean_cmd(cache_dir: str | None, yes: bool, endpoints: tuple[str, ...]) -> None:
    """Delete what collected batches left at the provider: OpenAI's uploaded input and result files
    (they count against the organisation's file storage and hold every prompt), Anthropic's batches.
    Their replies stay in the LLM cache; pending batches are not touched."""
    batches = _batches(_context(cache_dir), endpoints)
    chosen = batches.cleanable()
    if not chosen:
        click.echo(f"nothing to clean: no collected batch in {batches.path} keeps copies at the provider")
        return
    if not yes:
        click.confirm(f"Delete the provider's copies of {len(chosen)} collected batch(es)? Their replies stay in "
                      f"the cache, but clearing the cache would then mean paying for them again", abort=True)
    done = batches.clean(chosen, echo=click.echo)
    if done.kept:
        click.echo(f"{len(done.kept)} batch(es) kept: delete them in the provider's console")
