"""The ``harness`` command line: a thin face over the Python API (:mod:`harness.api`), one module
per command group (``eval``, ``score``, ``data``, ``cache``, ``compare``/``report``, ``list-plugins``/
``new-plugin``); plugins add theirs through the ``register_commands`` hook."""

from __future__ import annotations

import sys
from typing import Any

import click

from harness.cli.batch import batch_group
from harness.cli.cache import cache_group
from harness.cli.compare import compare_cmd, report_cmd
from harness.cli.data import data_group
from harness.cli.eval import eval_cmd
from harness.cli.export import export_group
from harness.cli.fuse import fuse_cmd
from harness.cli.index import index_group
from harness.cli.judge import judge_group
from harness.cli.options import CliState, data_dir_option, make_context
from harness.cli.plugins import list_plugins_cmd, new_plugin_cmd
from harness.cli.reproduce import reproduce_cmd
from harness.cli.score import score_cmd
from harness.cli.view import view_cmd
from harness.concepts.errors import HarnessError
from harness.llm import BatchPending


class _Group(click.Group):
    """Reports HarnessError and an OSError (about a named file: a path given by the user that is too
    long, unreadable, ...; or about none: a full disk) as one clean line and exit status 2, never a
    traceback. Batches left pending (``--no-wait``) are one status line and exit status 75."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BatchPending as exc:
            click.echo(str(exc), err=True)
            ctx.exit(exc.exit_code)
        except HarnessError as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(2)
        except OSError as exc:
            if exc.filename is None:  # a write that failed on a full disk (ENOSPC), /dev/full, ...
                click.echo(f"Error: {_os_error(exc)}", err=True)
                ctx.exit(2)
            name = str(exc.filename) + (f" -> {exc.filename2}" if exc.filename2 is not None else "")
            click.echo(f"Error: {name}: {exc.strerror or exc}", err=True)
            ctx.exit(2)


def _os_error(exc: OSError) -> str:
    """An OSError that names no file, in words (``No space left on device (ENOSPC)``)."""
    import errno

    code = errno.errorcode.get(exc.errno or 0)
    return f"{exc.strerror or exc}" + (f" ({code})" if code else "") + " while reading or writing a file"


@click.group(cls=_Group)
@click.version_option(package_name="harness-ir", prog_name="harness")
@data_dir_option  # checked by the commands that read data
def cli() -> None:
    """Evaluate retrievers, rerankers and LLM judges on instruction-following and
    complex-objective retrieval benchmarks."""


for _command in (list_plugins_cmd, eval_cmd, score_cmd, cache_group, compare_cmd, report_cmd, data_group,
                 new_plugin_cmd, batch_group, index_group, export_group, view_cmd, reproduce_cmd, judge_group,
                 fuse_cmd):
    cli.add_command(_command)


def main() -> None:
    """The ``harness`` entry point: load the plugins once (they may add commands), then run."""
    from harness.plugins.host import PluginHost

    try:
        host = PluginHost()
        host.commands(cli)
    except HarnessError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(2)
    cli(prog_name="harness", obj=CliState(host=host))


if __name__ == "__main__":  # pragma: no cover
    main()


__all__ = ["cli", "main", "make_context"]
