"""``harness data``: where benchmark files are, and fetching them."""

from __future__ import annotations

import click

from harness.cli.options import data_dir_option, make_context


@click.group("data")
@data_dir_option  # `data download` may create the folder; `data path` checks it
def data_group() -> None:
    """Benchmark files: where they are, and fetching them."""


@data_group.command("path")
@data_dir_option
def data_path_cmd() -> None:
    """Print the data folder (and, on stderr, which setting chose it)."""
    folder = make_context().data
    root = folder.path
    click.echo(str(root))
    state = "" if root.is_dir() else "; it does not exist yet: `harness data download TASK` creates it"
    click.echo(f"({folder.source}{state})", err=True)


@data_group.command("download")
@click.argument("tasks", nargs=-1, required=True)
@click.option("--base-url", envvar="HARNESS_DATA_URL", help="Mirror serving the files by their data-folder paths.")
@data_dir_option
@click.pass_context
def data_download_cmd(ctx, tasks, base_url) -> None:
    """Fetch TASKS' files into the data folder, verifying checksums (resumes broken transfers).

    Creates the data folder when it does not exist. A task that publishes no files to fetch (e.g.
    IFIR-EVAL) is reported with where its files must go, and the exit status is 2 unless they are
    already in place."""
    from harness.api import load_dataset, load_task
    from harness.concepts.errors import DataError
    from harness.data.download import download_task_files

    context = make_context(check_data=False)
    folder = context.data

    def members(name: str) -> list:
        task = load_task(name, context)
        return [task] + [m for sub in task.tasks for m in members(sub)]

    problems = []
    for name in tasks:
        for task in members(name):  # a suite brings its member tasks' files
            if task.files:
                root = folder.path
                if not root.is_dir():
                    click.echo(f"creating the data folder {root} ({folder.source})", err=True)
                paths = download_task_files(task, root, base_url=base_url or folder.mirror,
                                            progress=context.progress)
                click.echo(f"{task.name}: {len(paths)} file(s) ready")
            elif not task.is_suite:
                try:  # nothing to fetch: is its data in place? (the loader says where it must go)
                    load_dataset(task.name, context)
                except DataError as exc:
                    problems.append(f"{task.name}: nothing to download: the task publishes no files for harness "
                                    f"to fetch, and its data is not in place: {exc}")
                else:
                    click.echo(f"{task.name}: nothing to download (the task publishes no files); its data is "
                               "in place")
    for problem in problems:
        click.echo(f"Error: {problem}", err=True)
    if problems:
        ctx.exit(2)
