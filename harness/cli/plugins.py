"""``harness list-plugins`` and ``harness new-plugin``."""

from __future__ import annotations

import json

import click

from harness.cli.options import make_context
from harness.components.kinds import KIND_TABLE


@click.command("list-plugins")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_plugins_cmd(as_json: bool) -> None:
    """Installed plugins (distribution, version) and the components each registers, by kind."""
    host = make_context(check_data=False).host
    if as_json:
        click.echo(json.dumps(host.report(), indent=2))
        return
    descriptions = {(c.kind, c.name, c.source): c.description for kind in host.registry.components
                    for c in host.registry.all(kind)}
    for p in host.report():
        head = f"{p['distribution']} {p['version']}" + (f" ({p['name']})" if p["name"] != p["distribution"] else "")
        click.echo(head)
        if p["error"]:
            click.secho(f"  ERROR: {p['error']}", fg="red")
        for kind, names in p["components"].items():
            click.echo(f"  {kind}s:")
            for n in names:
                desc = descriptions.get((kind, n, p["distribution"]), "")
                click.echo(f"    {n:<24} {desc}")


@click.command("new-plugin")
@click.argument("name")
@click.option("--kind", type=click.Choice([k.cli_name for k in KIND_TABLE if k.scaffold]),
              default="retriever", show_default=True, help="What the plugin registers (dataset: a dataset and a task).")
@click.option("--dir", "parent", default=".", type=click.Path(file_okay=False), show_default=True)
def new_plugin_cmd(name: str, kind: str, parent: str) -> None:
    """Write a plugin distribution harness-NAME/ (pyproject, package, README, tests that pass)."""
    from harness.plugins.template import write_plugin

    root = write_plugin(name, parent, kind=kind)
    click.echo(f"wrote {root}; next: pip install -e {root} && harness list-plugins")
