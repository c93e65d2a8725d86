"""``harness cache``: inspect or clear the LLM reply cache (a face over :func:`harness.llm.cache_info`,
:func:`~harness.llm.clear_cache` and :func:`~harness.llm.explain_cache_miss`)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from harness.cli.options import CACHE_DIR_OPTION, check_spec, make_context


def _size(n: float) -> str:
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
def cache_path_cmd(cache_dir: str | None) -> None:
    """Print the LLM cache folder."""
    from harness.llm import cache_path

    click.echo(str(cache_path(cache_dir)))


@cache_group.command("info")
@CACHE_DIR_OPTION
@click.option("--json", "as_json", is_flag=True, help="Print JSON")
def cache_info_cmd(cache_dir: str | None, as_json: bool) -> None:
    """Entries, size and folder of the LLM cache, with counts per model."""
    from harness.llm import cache_info

    info = cache_info(cache_dir).as_dict()
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    click.echo(f"path:    {info['path']}")
    click.echo(f"entries: {info['entries']}")
    click.echo(f"size:    {_size(info['size_bytes'])}")
    for model, n in sorted(info["by_model"].items()):
        click.echo(f"  {model:<50} {n:>8}")
    if info["refused"]:
        click.echo(f"refused: {info['refused']} entries the harness did not write (another diskcache mode such as "
                   "pickle, or a file outside the folder): never decoded, treated as missing")
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
    from harness.llm import cache_path, clear_cache

    what = f"the {model} entries" if model else "every entry"
    if not yes:
        click.confirm(f"Delete {what} in {cache_path(cache_dir)}?", abort=True)
    done = clear_cache(cache_dir, model)
    click.echo(f"removed {done.entries} entries from {done.path}"
               + (f" and {done.corrupt_copies} corrupt database(s) moved aside earlier" if done.corrupt_copies else ""))


@cache_group.command("explain")
@CACHE_DIR_OPTION
@click.option("--llm", "spec", required=True, metavar="PROVIDER:MODEL", callback=check_spec,
              help="The LLM spec the request was made with")
@click.argument("request", type=click.Path(exists=True, dir_okay=False))
def cache_explain(cache_dir: str | None, spec: str, request: str) -> None:
    """Why is REQUEST (a JSON file: {"messages": [...], option: value, ...}) a cache miss?
    Shows the fields that differ from the nearest cached entry."""
    from harness.llm import explain_cache_miss

    data = json.loads(Path(request).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or "messages" not in data:
        raise click.BadParameter("expected a JSON object with 'messages'", param_hint="REQUEST")
    options = {k: v for k, v in data.items() if k != "messages"}
    registry = make_context(cache_dir=cache_dir, check_data=False).registry  # a plugin's provider too
    result = explain_cache_miss(spec, data["messages"], options, cache_dir, registry)
    click.echo(json.dumps(result, indent=2, ensure_ascii=False))
