"""Click pieces for the ``harness`` CLI: the ``cache`` group (``info``, ``path``, ``clear``,
``explain``) and :func:`llm_options`, the shared ``--llm/--max-concurrency/--dry-run/--cache-dir/
--no-llm-cache/--prices/--llm-timeout/--llm-connect-timeout/--llm-budget`` options. Imports only
click and light modules (``harness --help`` stays fast).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from harness.concepts.errors import HarnessError
from harness.llm.settings import DEFAULT_MAX_CONCURRENCY, configure


def _check_spec(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from harness.llm.spec import parse_llm_spec

    try:
        parse_llm_spec(value)
    except HarnessError as exc:
        raise click.BadParameter(str(exc)) from exc
    return value


LLM_OPTION = click.option(
    "--llm", metavar="PROVIDER:MODEL", envvar="HARNESS_LLM", callback=_check_spec,
    help="Default LLM for LLM components, e.g. openai:gpt-4o-mini, anthropic:claude-3-5-haiku-latest, "
         "vllm:MODEL:base_url=http://127.0.0.1:8000/v1 [env HARNESS_LLM]",
)
MAX_CONCURRENCY_OPTION = click.option(
    "--max-concurrency", type=click.IntRange(1, 4096), default=None, envvar="HARNESS_MAX_CONCURRENCY",
    help=f"LLM requests in flight per endpoint "
         f"[default {DEFAULT_MAX_CONCURRENCY}; env HARNESS_MAX_CONCURRENCY]",
)
DRY_RUN_OPTION = click.option(
    "--dry-run", is_flag=True, default=False,
    help="Send no LLM request: estimate calls, tokens and cost (cache hits are free); "
         "components see empty placeholder replies",
)
CACHE_DIR_OPTION = click.option(
    "--cache-dir", type=click.Path(file_okay=False), default=None,
    help="Cache root; LLM replies go to its llm/ subfolder [default $HARNESS_CACHE_DIR or ~/.cache/harness]",
)
NO_CACHE_OPTION = click.option(
    "--no-llm-cache", is_flag=True, default=False, help="Neither read nor write the LLM reply cache",
)
TIMEOUT_OPTION = click.option(
    "--llm-timeout", type=click.FloatRange(min=0.001), default=None, envvar="HARNESS_LLM_TIMEOUT", metavar="SECONDS",
    help="Read timeout of one LLM HTTP attempt [default 60; env HARNESS_LLM_TIMEOUT]",
)
CONNECT_TIMEOUT_OPTION = click.option(
    "--llm-connect-timeout", type=click.FloatRange(min=0.001), default=None, envvar="HARNESS_LLM_CONNECT_TIMEOUT",
    metavar="SECONDS",
    help="Time to open a connection to an LLM endpoint [default 10; env HARNESS_LLM_CONNECT_TIMEOUT]",
)
BUDGET_OPTION = click.option(
    "--llm-budget", type=click.FloatRange(min=0.001), default=None, envvar="HARNESS_LLM_BUDGET", metavar="SECONDS",
    help="Time one LLM call may take in all, retries and waits included [default 120; env HARNESS_LLM_BUDGET]",
)
PRICES_OPTION = click.option(
    "--prices", type=click.Path(exists=True, dir_okay=False), default=None, envvar="HARNESS_PRICES",
    help="JSON/TOML file overriding LLM prices (USD per 1M tokens) [env HARNESS_PRICES]",
)
LLM_OPTIONS = (
    LLM_OPTION, MAX_CONCURRENCY_OPTION, DRY_RUN_OPTION, CACHE_DIR_OPTION, NO_CACHE_OPTION, PRICES_OPTION,
    TIMEOUT_OPTION, CONNECT_TIMEOUT_OPTION, BUDGET_OPTION,
)


def llm_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add the LLM options to a click command. Before the command runs they are applied with
    :func:`harness.llm.configure`, and the command receives ``llm_settings`` (an ``LLMSettings``)
    instead of the six separate values."""

    @functools.wraps(f)
    def wrapper(*args: Any, llm: str | None, max_concurrency: int | None, dry_run: bool,
                cache_dir: str | None, no_llm_cache: bool, prices: str | None, llm_timeout: float | None,
                llm_connect_timeout: float | None, llm_budget: float | None, **kwargs: Any) -> Any:
        from dataclasses import replace

        from harness.llm.settings import current

        retry = replace(current().retry, budget=llm_budget) if llm_budget is not None else None
        settings = configure(llm=llm, max_concurrency=max_concurrency, dry_run=dry_run or None,
                             cache_dir=cache_dir, use_cache=False if no_llm_cache else None, prices=prices,
                             timeout=llm_timeout, connect_timeout=llm_connect_timeout, retry=retry)
        return f(*args, llm_settings=settings, **kwargs)

    for option in reversed(LLM_OPTIONS):
        wrapper = option(wrapper)
    return wrapper


# -- harness cache ... -------------------------------------------------------------------------
def _cache(cache_dir: str | None) -> Any:
    from harness.llm.cache import LLMCache, llm_cache_dir

    return LLMCache(llm_cache_dir(cache_dir))


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


@click.group("cache")
def cache_group() -> None:
    """Inspect or clear the LLM reply cache."""


@cache_group.command("path")
@CACHE_DIR_OPTION
def cache_path(cache_dir: str | None) -> None:
    """Print the LLM cache folder."""
    click.echo(str(_cache(cache_dir).path))


@cache_group.command("info")
@CACHE_DIR_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print JSON")
def cache_info(cache_dir: str | None, as_json: bool) -> None:
    """Entries, size and folder of the LLM cache, with counts per model."""
    cache = _cache(cache_dir)
    info = cache.info()
    cache.close()
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    click.echo(f"path:    {info['path']}")
    click.echo(f"entries: {info['entries']}")
    click.echo(f"size:    {_size(info['size_bytes'])}")
    for model, n in sorted(info["by_model"].items()):
        click.echo(f"  {model:<50} {n:>8}")
    if info["corrupt_copies"]:
        click.echo(f"corrupt databases moved aside (kept for inspection; `harness cache clear` removes them): "
                   f"{', '.join(info['corrupt_copies'])}")


@cache_group.command("clear")
@CACHE_DIR_OPTION
@click.option("--model", metavar="PROVIDER:MODEL", help="Only this model's entries, e.g. openai:gpt-4o-mini")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation")
def cache_clear(cache_dir: str | None, model: str | None, yes: bool) -> None:
    """Delete cached LLM replies (all, or one model's)."""
    cache = _cache(cache_dir)
    what = f"the {model} entries" if model else "every entry"
    if not yes:
        click.confirm(f"Delete {what} in {cache.path}?", abort=True)
    copies = [] if model else cache.corrupt_copies()
    n = cache.clear(model)
    cache.close()
    click.echo(f"removed {n} entries from {cache.path}"
               + (f" and {len(copies)} corrupt database(s) moved aside earlier" if copies else ""))


@cache_group.command("explain")
@CACHE_DIR_OPTION
@click.option("--llm", "spec", required=True, metavar="PROVIDER:MODEL", callback=_check_spec,
              help="The LLM spec the request was made with")
@click.argument("request", type=click.Path(exists=True, dir_okay=False))
def cache_explain(cache_dir: str | None, spec: str, request: str) -> None:
    """Why is REQUEST (a JSON file: {"messages": [...], option: value, ...}) a cache miss?
    Shows the fields that differ from the nearest cached entry."""
    from harness.llm.client import get_client

    data = json.loads(Path(request).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "messages" not in data:
        raise click.BadParameter("expected a JSON object with 'messages'", param_hint="REQUEST")
    client = get_client(spec, cache_dir=cache_dir, dry_run=True, shared=False)
    options = {k: v for k, v in data.items() if k != "messages"}
    result = client.explain_miss(data["messages"], **options)
    click.echo(json.dumps(result, indent=2, ensure_ascii=False))
