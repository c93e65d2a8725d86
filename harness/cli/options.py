"""Options shared by the commands, and the :class:`harness.Context` a command runs with.

The CLI builds one context per command from its options and the environment (``--data-dir``,
``--cache-dir``, the LLM options, ``--quiet``); it never writes ``os.environ`` or module state. The
plugin host loaded by :func:`harness.cli.main` (to add plugins' commands) is reused.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

import click

from harness.concepts.errors import HarnessError
from harness.llm import DEFAULT_MAX_CONCURRENCY
from harness.runtime.numbers import MAX_SECONDS

if TYPE_CHECKING:  # pragma: no cover
    from harness.context import Context
    from harness.llm import LLMSettings
    from harness.plugins.host import PluginHost


@dataclass
class CliState:
    """What the group's options leave for the command (``click.Context.obj``)."""

    host: PluginHost | None = None
    data_dir: str | None = None


def cli_state(ctx: click.Context | None = None) -> CliState:
    ctx = ctx or click.get_current_context()
    root = ctx.find_root()
    if not isinstance(root.obj, CliState):
        root.obj = CliState()
    return root.obj


def make_context(llm_settings: LLMSettings | None = None, cache_dir: str | None = None, quiet: bool = False,
                 check_data: bool = True) -> Context:
    """The context of the running command: the plugin host, ``--data-dir`` (a folder given by the
    option must exist unless ``check_data`` is False), the cache root, LLM settings and progress."""
    from harness.context import Context
    from harness.plugins.host import PluginHost
    from harness.runtime.progress import ProgressSettings

    state = cli_state()
    if state.host is None:
        state.host = PluginHost()
    context = Context.create(host=state.host, data_dir=state.data_dir, data_dir_given_by="--data-dir",
                             cache_dir=cache_dir, llm=llm_settings,
                             progress=ProgressSettings.from_env(quiet=quiet))
    if check_data:
        context.data.check_exists()
    return context


_DATA_DIR_HELP = ("Where benchmark files are read from and downloaded to (default: $HARNESS_DATA, else "
                  "~/.cache/harness/data). Give it before or after the command name.")


def data_dir_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--data-dir`` for the group and for each command that reads data, so it works before or after
    the command name (the last one given wins); it is recorded for :func:`make_context`."""

    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
        if value is not None and not ctx.resilient_parsing:
            cli_state(ctx).data_dir = value

    return click.option("--data-dir", type=click.Path(file_okay=False), expose_value=False, callback=callback,
                        help=_DATA_DIR_HELP)(f)


class FiniteFloat(click.FloatRange):
    """A :class:`click.FloatRange` that also refuses ``nan`` (which passes every comparison) and ``inf``."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        import math

        out = super().convert(value, param, ctx)
        if not math.isfinite(out):
            self.fail(f"{value!r} is not a finite number {self._describe_range()}.", param, ctx)
        return out


def _seconds() -> FiniteFloat:
    """Seconds: finite, from 0.001 to :data:`~harness.runtime.numbers.MAX_SECONDS` (one day)."""
    return FiniteFloat(min=0.001, max=MAX_SECONDS)


def _check_prices(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A price file is read now (bounded: a regular file of at most 1 MiB, finite prices), so a bad
    one fails before any work, whether or not an LLM is used."""
    if value is None or ctx.resilient_parsing:
        return value
    from pathlib import Path

    from harness.llm import PriceTable

    try:
        PriceTable().overridden(Path(value).expanduser())
    except HarnessError as exc:
        raise click.BadParameter(str(exc)) from exc
    return value


def check_output_file(path: str, option: str = "--output") -> None:
    """Before any work: the file ``path`` a command will write can be written (its folder exists
    and is writable; the path, when it exists, is a writable file, not a folder)."""
    import os
    from pathlib import Path

    target = Path(path).expanduser()
    folder = target.parent
    if target.is_dir():
        raise click.BadParameter(f"{target} is a folder; give a file path", param_hint=option)
    if not folder.is_dir():
        raise click.BadParameter(f"{target}: the folder {folder} does not exist", param_hint=option)
    if not os.access(target if target.exists() else folder, os.W_OK):
        raise click.BadParameter(f"{target} cannot be written (permission denied)", param_hint=option)


def write_text_file(path: str, text: str) -> None:
    """Write ``text`` to ``path``; a failure (a full disk, ``/dev/full``) is one message naming the file."""
    from pathlib import Path

    try:
        Path(path).expanduser().write_text(text, encoding="utf-8")
    except OSError as exc:
        raise HarnessError(f"cannot write {path}: {exc.strerror or exc}") from None


def check_spec(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
    from harness.llm import parse_llm_spec

    try:
        parse_llm_spec(value)
    except HarnessError as exc:
        raise click.BadParameter(str(exc)) from exc
    return value


LLM_OPTION = click.option(
    "--llm", metavar="PROVIDER:MODEL", envvar="HARNESS_LLM", callback=check_spec,
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
    "--llm-timeout", type=_seconds(), default=None, envvar="HARNESS_LLM_TIMEOUT", metavar="SECONDS",
    help="Read timeout of one LLM HTTP attempt [default 60; env HARNESS_LLM_TIMEOUT]",
)
CONNECT_TIMEOUT_OPTION = click.option(
    "--llm-connect-timeout", type=_seconds(), default=None, envvar="HARNESS_LLM_CONNECT_TIMEOUT",
    metavar="SECONDS",
    help="Time to open a connection to an LLM endpoint [default 10; env HARNESS_LLM_CONNECT_TIMEOUT]",
)
BUDGET_OPTION = click.option(
    "--llm-budget", type=_seconds(), default=None, envvar="HARNESS_LLM_BUDGET", metavar="SECONDS",
    help="Time one LLM call may take in all, retries and waits included [default 120; env HARNESS_LLM_BUDGET]",
)
PRICES_OPTION = click.option(
    "--prices", type=click.Path(exists=True, dir_okay=False), default=None, envvar="HARNESS_PRICES",
    callback=_check_prices,
    help="JSON/TOML file overriding LLM prices (USD per 1M tokens; a regular file of at most 1 MiB) "
         "[env HARNESS_PRICES]",
)
BATCH_OPTION = click.option(
    "--llm-batch", is_flag=True, default=False,
    help="Send the LLM requests no cache holds through the provider's batch API (openai, anthropic): about "
         "half the price, results within 24 h; a killed run resumes without paying twice",
)
NO_WAIT_OPTION = click.option(
    "--no-wait", is_flag=True, default=False,
    help="With --llm-batch: submit (or collect what has ended) and stop with exit status 75 while batches are "
         "pending; run the same command again to go on",
)
BATCH_RETRY_OPTION = click.option(
    "--llm-batch-retry", type=click.Choice(["batch", "direct"]), default=None,
    help="How requests an expired or failed batch did not process are sent again, once [default batch]",
)
LLM_OPTIONS = (
    LLM_OPTION, MAX_CONCURRENCY_OPTION, DRY_RUN_OPTION, CACHE_DIR_OPTION, NO_CACHE_OPTION, PRICES_OPTION,
    TIMEOUT_OPTION, CONNECT_TIMEOUT_OPTION, BUDGET_OPTION, BATCH_OPTION, NO_WAIT_OPTION, BATCH_RETRY_OPTION,
)


#: the options that are LLM settings (:mod:`harness.served.precedence`): option parameter -> setting
_SETTING_OF = MappingProxyType({"llm": "llm", "max_concurrency": "max_concurrency", "llm_timeout": "timeout",
                                "llm_connect_timeout": "connect_timeout", "llm_budget": "budget"})


def _with_origins(settings: LLMSettings) -> LLMSettings:
    """``settings`` with each option's origin recorded: ``cli option`` when typed, ``env`` when click
    read it from its variable (results.json says which)."""
    from dataclasses import replace

    from click.core import ParameterSource

    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return settings
    labels = {ParameterSource.COMMANDLINE: "cli option", ParameterSource.ENVIRONMENT: "env"}
    found = {name: labels[src] for param, name in _SETTING_OF.items()
             if (src := ctx.get_parameter_source(param)) in labels}
    kept = tuple((k, v) for k, v in settings.origins if k not in found)
    return replace(settings, origins=(*kept, *found.items()))


def llm_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """Add the LLM options to a click command; the command receives ``llm_settings`` (an
    :class:`LLMSettings`: the environment's defaults with the options given applied) and
    ``cache_dir`` (the cache root, or None) instead of the separate values."""

    @functools.wraps(f)
    def wrapper(*args: Any, llm: str | None, max_concurrency: int | None, dry_run: bool,
                cache_dir: str | None, no_llm_cache: bool, prices: str | None, llm_timeout: float | None,
                llm_connect_timeout: float | None, llm_budget: float | None, llm_batch: bool, no_wait: bool,
                llm_batch_retry: str | None, **kwargs: Any) -> Any:
        from harness.llm import LLMSettings

        if no_wait and not llm_batch:
            raise click.UsageError("--no-wait applies to --llm-batch runs; add --llm-batch")
        try:
            settings = LLMSettings.from_env(
                llm=llm, max_concurrency=max_concurrency, dry_run=dry_run or None, cache_dir=cache_dir,
                use_cache=False if no_llm_cache else None, prices=prices, timeout=llm_timeout,
                connect_timeout=llm_connect_timeout, budget=llm_budget, batch=llm_batch or None,
                batch_wait=False if no_wait else None, batch_retry=llm_batch_retry)
        except ValueError as exc:  # a malformed HARNESS_* number
            raise click.UsageError(str(exc)) from None
        return f(*args, llm_settings=_with_origins(settings), cache_dir=cache_dir, **kwargs)

    for option in reversed(LLM_OPTIONS):
        wrapper = option(wrapper)
    return wrapper


