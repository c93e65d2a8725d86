"""The ``harness view`` command (attached to the main CLI with ``cli.add_command(view_cmd)``)."""

from __future__ import annotations

import click


@click.command("view")
@click.argument("paths", nargs=-1, required=True)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on (loopback unless told otherwise).")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535),
              help="Port (0: a free one).")
@click.option("--bundle", "bundle", type=click.Path(file_okay=False),
              help="Write the app as a static folder (opens from file://) instead of serving it: a new or "
                   "empty folder, or a bundle written before (with --overwrite).")
@click.option("--overwrite", is_flag=True, help="Replace the bundle --bundle OUT already holds.")
@click.option("--cache", "cache_dir", type=click.Path(file_okay=False),
              help="The LLM cache folder holding the runs' prompts and replies, opened read-only (default: a cache "
                   "the results folder holds; one elsewhere is opened only when named here).")
@click.option("-B", "--permutations", default=10_000, show_default=True, type=click.IntRange(1, 1_000_000),
              help="Resamples of the paired randomization test on the compare page.")
def view_cmd(paths, host, port, bundle, overwrite, cache_dir, permutations) -> None:
    """Browse results folders (or folders of them): runs, a run's queries, a query's rankings and
    LLM calls, and comparisons of runs of one task. Read-only; serves only the folders given."""
    from harness.view.catalog import Catalog

    if overwrite and not bundle:
        raise click.UsageError("--overwrite replaces a bundle: give it with --bundle OUT")
    catalog = Catalog(list(paths), cache_dir=cache_dir)
    if bundle:
        from harness.view.bundle import write_bundle

        out = write_bundle(catalog, bundle, permutations=permutations, overwrite=overwrite)
        click.echo(f"{len(catalog.runs)} runs written to {out}; open {(out / 'index.html').resolve().as_uri()}")
        return
    from harness.view.server import ViewServer

    try:
        server = ViewServer(catalog, host, port, permutations=permutations)
    except OSError as exc:
        raise click.UsageError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    click.echo(f"harness view: {len(catalog.runs)} runs at {server.url}  (Ctrl-C to stop)", err=False)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
