"""``harness cache``: inspect or clear the LLM reply cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from harness.cli.options import CACHE_DIR_OPTION, _check_spec


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


def _pending_batches(folder: Path) -> int:
    """Batches of `--llm-batch` runs still live in the journal beside the cache (0 without one)."""
    from harness.llm.batch.journal import FILENAME, LIVE, BatchJournal

    if not (folder / FILENAME).is_file():
        return 0
    journal = BatchJournal(folder / FILENAME)
    try:
        return len(journal.batches(LIVE))
    finally:
        journal.close()


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
    info["pending_batches"] = _pending_batches(cache.path)
    cache.close()
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    click.echo(f"path:    {info['path']}")
    click.echo(f"entries: {info['entries']}")
    click.echo(f"size:    {_size(info['size_bytes'])}")
    for model, n in sorted(info["by_model"].items()):
        click.echo(f"  {model:<50} {n:>8}")
    if info["pending_batches"]:
        click.echo(f"pending batches: {info['pending_batches']} (`harness batch status` lists them)")
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
    from harness.llm.session import get_client
    from harness.runtime.cachedir import default_cache_dir

    data = json.loads(Path(request).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "messages" not in data:
        raise click.BadParameter("expected a JSON object with 'messages'", param_hint="REQUEST")
    root = cache_dir if cache_dir is not None else default_cache_dir()
    client = get_client(spec, cache_dir=root, dry_run=True)
    options = {k: v for k, v in data.items() if k != "messages"}
    result = client.explain_miss(data["messages"], **options)
    click.echo(json.dumps(result, indent=2, ensure_ascii=False))
