"""`harness compare` and `harness report` under the main CLI's group (a HarnessError becomes one line and
exit status 2), for the tests that drive them with click's runner."""

from __future__ import annotations

import click
from click.testing import CliRunner, Result

from harness.cli import _Group
from harness.cli.compare import compare_cmd, report_cmd


@click.group(cls=_Group)
def _cli() -> None:
    pass


_cli.add_command(compare_cmd)
_cli.add_command(report_cmd)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(_cli, list(args), catch_exceptions=False)
