"""``harness batch``: the batches ``--llm-batch`` runs left at the providers, from the journal beside
the LLM cache: ``status`` (what is pending, and how far each is), ``collect`` (gather what has ended
into the cache), ``cancel``, and ``clean`` (delete the provider's copies of collected batches)."""

from __future__ import annotations

import datetime as dt
import sys
from typing import Any

import click

from harness.cli.options import CACHE_DIR_OPTION, make_context
from harness.concepts.errors import HarnessError
from harness.llm.errors import LLMError


def _journal(context: Any) -> Any:
    return context.llm.journal(context.llm.cache())


def _client(context: Any, rec: Any) -> Any:
    """The batch-mode client of a journal record's endpoint (its provider, model and base URL)."""
    from harness.llm.spec import LLMSpec
    from harness.runtime.redact import MASK

    if rec.base_url and MASK in rec.base_url:
        raise HarnessError(f"batch {rec.remote_id}: its base URL held credentials, which the journal does not "
                           f"keep; collect it by running the `harness eval` command that submitted it")
    return context.llm.client(LLMSpec(rec.provider, rec.model, rec.base_url, text=f"{rec.provider}:{rec.model}"))


def _when(t: float | None) -> str:
    return "-" if not t else dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S")


def _settings(cache_dir: str | None) -> Any:
    from harness.llm.settings import LLMSettings

    return LLMSettings.from_env(cache_dir=cache_dir, batch=True)


@click.group("batch")
def batch_group() -> None:
    """Batches submitted by `harness eval --llm-batch`: status, collect, cancel, clean."""


@batch_group.command("status")
@CACHE_DIR_OPTION
@click.option("--all", "show_all", is_flag=True, help="Also list collected, abandoned and cancelled batches.")
@click.option("--offline", is_flag=True, help="Show the journal only; ask no provider.")
def status_cmd(cache_dir: str | None, show_all: bool, offline: bool) -> None:
    """List the batches in the journal and, for pending ones, how far the provider has got."""
    from harness.llm.batch.journal import LIVE
    from harness.results.table import render

    context = make_context(_settings(cache_dir), cache_dir, check_data=False)
    journal = _journal(context)
    records = journal.batches(None if show_all else LIVE)
    if not records:
        click.echo(f"no {'' if show_all else 'pending '}batches in {journal.path}")
        return
    rows = []
    for rec in records:
        remote = "-"
        if rec.state == "submitted" and not offline:
            try:
                s = _client(context, rec).batch.api.status(rec.remote_id)
                remote = f"{s.status} {s.done}/{s.total}"
            except (HarnessError, LLMError) as exc:
                remote = f"unknown ({type(exc).__name__})"
        rows.append((rec.remote_id or f"#{rec.id} (not submitted)", f"{rec.provider}:{rec.model}", rec.state,
                     remote, rec.n, _when(rec.created), rec.note or ""))
    click.echo(render(rows, ["batch", "model", "journal", "provider", "requests", "created", "note"]))


@batch_group.command("collect")
@CACHE_DIR_OPTION
@click.option("--wait", is_flag=True, help="Wait until every pending batch has ended.")
def collect_cmd(cache_dir: str | None, wait: bool) -> None:
    """Gather the results of every ended batch into the LLM cache (a later run finds them there).

    Exit status: 0 every batch collected; 75 some are still running."""
    import time

    from harness.llm.batch.journal import LIVE

    context = make_context(_settings(cache_dir), cache_dir, check_data=False)
    journal = _journal(context)
    pause = 2.0
    while True:
        running = 0
        for rec in journal.batches(LIVE):
            runner = _client(context, rec).batch
            if rec.state == "intent":
                if not rec.owner_gone:
                    running += 1
                    continue
                rec = runner.recover(rec)
                if rec.state != "submitted":
                    click.echo(f"#{rec.id}: {rec.note}")
                    continue
            status = runner.retrying(lambda r=rec, x=runner: x.api.status(r.remote_id))
            if not status.ended:
                running += 1
                click.echo(f"{rec.remote_id}: {status.status}, {status.done}/{status.total} requests done")
                continue
            runner.collect(journal.get(rec.id))
            click.echo(f"{rec.remote_id}: {status.status}; collected ({journal.get(rec.id).note})")
        if not running or not wait:
            break
        time.sleep(pause)
        pause = min(pause * 1.5, 60.0)
    if context.llm.clients:
        click.echo(context.llm.usage().table())
    if running:
        click.echo(f"{running} batch(es) still running; `harness batch collect` again later")
        sys.exit(75)


@batch_group.command("cancel")
@CACHE_DIR_OPTION
@click.argument("batch_ids", nargs=-1)
@click.option("--all", "cancel_all", is_flag=True, help="Cancel every pending batch.")
def cancel_cmd(cache_dir: str | None, batch_ids: tuple[str, ...], cancel_all: bool) -> None:
    """Ask the provider to cancel pending batches (by id, or --all). What they finished is still
    billed and kept: `harness batch collect` gathers it once they have ended."""
    from harness.llm.batch.journal import LIVE

    if not batch_ids and not cancel_all:
        raise click.UsageError("name the batches to cancel (see `harness batch status`) or give --all")
    context = make_context(_settings(cache_dir), cache_dir, check_data=False)
    journal = _journal(context)
    live = [r for r in journal.batches(LIVE) if r.state == "submitted"]
    chosen = live if cancel_all else [r for r in live if r.remote_id in batch_ids]
    unknown = sorted(set(batch_ids) - {r.remote_id for r in chosen})
    if unknown:
        raise HarnessError(f"no pending batch {', '.join(unknown)} in {journal.path} (`harness batch status`)")
    for rec in chosen:
        runner = _client(context, rec).batch
        runner.retrying(lambda r=rec, x=runner: x.api.cancel(r.remote_id))
        journal.note(rec.id, "cancel requested; `harness batch collect` gathers what it finished")
        click.echo(f"{rec.remote_id}: cancel requested")


@batch_group.command("clean")
@CACHE_DIR_OPTION
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
def clean_cmd(cache_dir: str | None, yes: bool) -> None:
    """Delete what collected batches left at the provider: OpenAI's uploaded input and result files
    (they count against the organisation's file storage and hold every prompt), Anthropic's batches.
    Their replies stay in the LLM cache; pending batches are not touched."""
    from harness.llm.batch.api import BatchCleanup

    context = make_context(_settings(cache_dir), cache_dir, check_data=False)
    journal = _journal(context)
    chosen = [r for r in journal.batches(["collected"]) if r.remote_id and r.removed is None]
    if not chosen:
        click.echo(f"nothing to clean: no collected batch in {journal.path} keeps copies at the provider")
        return
    if not yes:
        click.confirm(f"Delete the provider's copies of {len(chosen)} collected batch(es)? Their replies stay in "
                      f"the cache, but clearing the cache would then mean paying for them again", abort=True)
    kept = 0
    for rec in chosen:
        runner = _client(context, rec).batch
        if not isinstance(runner.api, BatchCleanup):
            kept += 1
            click.echo(f"{rec.remote_id}: kept ({rec.provider}'s batch API offers no delete)")
            continue
        deleted = runner.retrying(lambda r=rec, x=runner: x.api.delete(r.remote_id))
        what = ", ".join(deleted) if deleted else "nothing left"
        journal.mark_removed(rec.id, f"{rec.note or 'collected'}; deleted at the provider: {what}")
        click.echo(f"{rec.remote_id}: deleted {what}")
    if kept:
        click.echo(f"{kept} batch(es) kept: delete them in the provider's console")
