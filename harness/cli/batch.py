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
from harness.llm.errors import LLMError, ModelNotFound

#: exit status of `collect` and `cancel` when the provider did not know some batch (or refused one)
INCOMPLETE = 3


def _journal(context: Any) -> Any:
    return context.llm.journal(context.llm.cache())


#: the hosts a journal's endpoint may name without --endpoint: the providers' own, and this machine
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
ENDPOINT_OPTION = click.option(
    "--endpoint", "endpoints", multiple=True, metavar="URL",
    help="Allow this base URL from the journal (repeatable). Without it, only the providers' own endpoints, "
         "OPENAI_BASE_URL / ANTHROPIC_BASE_URL and this machine are contacted with your key.")


def _allowed(base_url: str | None, endpoints: tuple[str, ...]) -> bool:
    """Whether the journal's ``base_url`` may receive the user's key: the provider's default (None), the
    providers' own endpoints, the base URLs of the user's environment, loopback, or one given by --endpoint."""
    import os
    from urllib.parse import urlsplit

    from harness.llm.providers.anthropic import ANTHROPIC_URL
    from harness.llm.providers.openai import OPENAI_URL
    from harness.llm.spec import normalize_url

    if not base_url:
        return True
    try:
        host = (urlsplit(base_url).hostname or "").lower()
    except ValueError:
        return False
    if host in _LOOPBACK:
        return True
    mine = [OPENAI_URL, ANTHROPIC_URL, os.environ.get("OPENAI_BASE_URL", ""),
            os.environ.get("ANTHROPIC_BASE_URL", ""), *endpoints]
    return normalize_url(base_url) in {normalize_url(u) for u in mine if u}


def _client(context: Any, rec: Any, endpoints: tuple[str, ...] = ()) -> Any:
    """The batch-mode client of a journal record's endpoint (its provider, model and base URL). The
    journal is a file the user may not have written: its base URL gets the user's key only when it is
    one the user's settings name (:func:`_allowed`)."""
    from harness.llm.spec import LLMSpec
    from harness.runtime.redact import MASK, redact_url

    if rec.base_url and MASK in rec.base_url:
        raise HarnessError(f"batch {rec.remote_id}: its base URL held credentials, which the journal does not "
                           f"keep; collect it by running the `harness eval` command that submitted it")
    if not _allowed(rec.base_url, endpoints):
        shown = redact_url(rec.base_url)
        raise HarnessError(f"batch {rec.remote_id or '#' + str(rec.id)}: its endpoint {shown} comes from the batch "
                           f"journal, not from your settings, so your API key is not sent there; if you submitted "
                           f"it, allow it with --endpoint {shown}")
    return context.llm.client(LLMSpec(rec.provider, rec.model, rec.base_url, text=f"{rec.provider}:{rec.model}"))


def _when(t: float | None) -> str:
    return "-" if not t else dt.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S")


def _unknown(journal: Any, rec: Any) -> str:
    """Mark a batch the provider answered 404 for as abandoned; returns the line that lists it."""
    from harness.llm.batch.runner import unknown_batch

    note = unknown_batch(rec)
    journal.mark_abandoned(rec.id, note)
    return f"{rec.remote_id}: {note}"


def _report(lines: list[str], what: str) -> None:
    """List the batches ``what`` could not handle, at the end of a command."""
    if lines:
        click.echo(f"{len(lines)} batch(es) {what}:")
        for line in lines:
            click.echo(f"  {line}")


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
@ENDPOINT_OPTION
def status_cmd(cache_dir: str | None, show_all: bool, offline: bool, endpoints: tuple[str, ...]) -> None:
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
                s = _client(context, rec, endpoints).batch.api.status(rec.remote_id)
                remote = f"{s.status} {s.done}/{s.total}"
            except ModelNotFound:
                remote = "unknown to the provider (404)"
            except HarnessError as exc:  # e.g. an endpoint only the journal names: not asked
                remote = "not asked: endpoint from the journal (--endpoint)" if "--endpoint" in str(exc) else \
                    f"unknown ({type(exc).__name__})"
            except LLMError as exc:
                remote = f"unknown ({type(exc).__name__})"
        rows.append((rec.remote_id or f"#{rec.id} (not submitted)", f"{rec.provider}:{rec.model}", rec.state,
                     remote, rec.n, _when(rec.created), rec.note or ""))
    click.echo(render(rows, ["batch", "model", "journal", "provider", "requests", "created", "note"]))


@batch_group.command("collect")
@CACHE_DIR_OPTION
@click.option("--wait", is_flag=True, help="Wait until every pending batch has ended.")
@ENDPOINT_OPTION
def collect_cmd(cache_dir: str | None, wait: bool, endpoints: tuple[str, ...]) -> None:
    """Gather the results of every ended batch into the LLM cache (a later run finds them there).

    Exit status: 0 every batch collected; 75 some are still running; 3 the provider did not know some
    batch (marked abandoned and listed at the end; the others were still collected)."""
    import time

    from harness.llm.batch.journal import LIVE

    context = make_context(_settings(cache_dir), cache_dir, check_data=False)
    journal = _journal(context)
    pause = 2.0
    unknown: list[str] = []
    while True:
        running = 0
        for rec in journal.batches(LIVE):
            runner = _client(context, rec, endpoints).batch
            if rec.state == "intent":
                if not rec.owner_gone:
                    running += 1
                    continue
                rec = runner.recover(rec)
                if rec.state != "submitted":
                    click.echo(f"#{rec.id}: {rec.note}")
                    continue
            try:
                status = runner.retrying(lambda r=rec, x=runner: x.api.status(r.remote_id))
                if not status.ended:
                    running += 1
                    click.echo(f"{rec.remote_id}: {status.status}, {status.done}/{status.total} requests done")
                    continue
                runner.collect(journal.get(rec.id))
            except ModelNotFound:
                unknown.append(_unknown(journal, rec))
                continue
            click.echo(f"{rec.remote_id}: {status.status}; collected ({journal.get(rec.id).note})")
        if not running or not wait:
            break
        time.sleep(pause)
        pause = min(pause * 1.5, 60.0)
    if context.llm.clients:
        click.echo(context.llm.usage().table())
    if running:
        click.echo(f"{running} batch(es) still running; `harness batch collect` again later")
    _report(unknown, "the provider does not know (marked abandoned; the next run submits their requests again)")
    if unknown or running:
        sys.exit(INCOMPLETE if unknown else 75)


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
    unknown: list[str] = []
    refused: list[str] = []
    for rec in chosen:
        runner = _client(context, rec, endpoints).batch
        try:
            runner.retrying(lambda r=rec, x=runner: x.api.cancel(r.remote_id))
        except ModelNotFound:
            unknown.append(_unknown(journal, rec))
            continue
        except LLMError as exc:  # already ended, say: the others are still cancelled
            refused.append(f"{rec.remote_id}: {exc}")
            continue
        journal.note(rec.id, "cancel requested; `harness batch collect` gathers what it finished")
        click.echo(f"{rec.remote_id}: cancel requested")
    _report(unknown, "the provider does not know (marked abandoned)")
    _report(refused, "not cancelled")
    if unknown or refused:
        sys.exit(INCOMPLETE)


@batch_group.command("clean")
@CACHE_DIR_OPTION
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@ENDPOINT_OPTION
def clean_cmd(cache_dir: str | None, yes: bool, endpoints: tuple[str, ...]) -> None:
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
        runner = _client(context, rec, endpoints).batch
        if not isinstance(runner.api, BatchCleanup):
            kept += 1
            click.echo(f"{rec.remote_id}: kept ({rec.provider}'s batch API offers no delete)")
            continue
        try:
            deleted = runner.retrying(lambda r=rec, x=runner: x.api.delete(r.remote_id))
        except ModelNotFound:  # the batch itself is gone: nothing is left to delete
            deleted = []
        what = ", ".join(deleted) if deleted else "nothing left"
        journal.mark_removed(rec.id, f"{rec.note or 'collected'}; deleted at the provider: {what}")
        click.echo(f"{rec.remote_id}: deleted {what}")
    if kept:
        click.echo(f"{kept} batch(es) kept: delete them in the provider's console")
