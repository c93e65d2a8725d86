"""``harness data``: where benchmark files are, and fetching them."""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from harness.cli.options import data_dir_option, make_context

if TYPE_CHECKING:  # pragma: no cover
    from harness.concepts.task import Task
    from harness.context import Context

# file times come from the kernel's coarse clock, which may lag time.time() by a tick
_CLOCK_SLACK_S = 0.1


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

    Creates the data folder when it does not exist. A task that publishes no files to fetch is
    reported with where its files must go, and the exit status is 2 unless they are already in place."""
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
                since = time.time() - _CLOCK_SLACK_S
                try:  # nothing to fetch: is its data in place? (the loader says where it must go, or fetches it)
                    dataset = load_dataset(task.name, context)
                except DataError as exc:
                    problems.append(f"{task.name}: nothing to download: the task publishes no files for harness "
                                    f"to fetch, and its data is not in place: {exc}")
                else:
                    click.echo(_loaded_line(task.name, dataset, folder, since))
    for problem in problems:
        click.echo(f"Error: {problem}", err=True)
    if problems:
        ctx.exit(2)


def _loaded_line(name: str, dataset, folder, since: float) -> str:
    """What `data download` says of a task without a file list once its loader has run: the files the
    dataset read (its identity) that were written since ``since`` -- fetched by a loader that downloads
    at load time, such as ``mteb:`` -- else that its data is in place."""
    sizes = []
    for f in (getattr(dataset, "identity", None) or {}).get("files") or []:
        try:
            st = folder.locate(f["path"]).stat()
        except (OSError, KeyError, TypeError):
            continue
        if st.st_mtime >= since:
            sizes.append(st.st_size)
    if not sizes:
        return f"{name}: nothing to download (the task publishes no files); its data is in place"
    return (f"{name}: fetched {len(sizes)} file(s), {sum(sizes):,} bytes, into {folder.path} (read by the task's "
            "loader; the task publishes no file list)")


@data_group.command("verify")
@click.argument("tasks", nargs=-1)
@data_dir_option
@click.pass_context
def data_verify_cmd(ctx, tasks) -> None:
    """Check the files in place against TASKS' pins (sha256, size); all tasks when none is named.

    Prints, per task, ok / not downloaded / incomplete / checksum mismatch (both digests) and where
    each file comes from. Exit status 1 for a mismatch or an incomplete task, and for a named task
    that is not downloaded; a task with nothing in place is only listed when no task is named."""
    context = make_context()
    root = context.data.path
    click.echo(f"data folder {root} ({context.data.source})")
    named = set(tasks)
    seen, unlisted = _tasks_to_verify(context, tasks or context.registry.names("task"), named)
    for line in unlisted:
        click.echo(line)
    failed, absent = [], []
    for task in seen:
        state = _verify_one(task, root)
        if state == "absent":
            if named:
                absent.append(task.name)
        elif state:
            failed.append(f"{task.name} ({state})")
    if absent:
        click.echo(f"Error: not downloaded: {', '.join(absent)}: none of the files is in {root}; run "
                   f"`harness data download {' '.join(absent)}`", err=True)
    if failed:
        click.echo(f"Error: {len(failed)} task(s) do not match their pins: {', '.join(failed)}; "
                   "`harness data download TASK` fetches a file again", err=True)
    if absent or failed:
        ctx.exit(1)


def _tasks_to_verify(context: Context, names: Iterable[str], named: set[str]) -> tuple[list[Task], list[str]]:
    """The tasks ``names`` stand for (a suite: its members, each once), and a line for each task not
    named whose files cannot be listed now (a named one raises its ``DataError``)."""
    from harness.api import load_task
    from harness.concepts.errors import DataError

    seen: list[Task] = []
    unlisted: list[str] = []

    def expand(name: str) -> None:
        try:
            task = load_task(name, context)
        except DataError as exc:  # e.g. an unpinned Hub release whose commit cannot be asked for now
            if name in named:
                raise
            unlisted.append(f"{name}: not downloaded; its files cannot be listed now ({exc})")
            return
        if task.is_suite:  # a suite's files are its members'
            for member in task.tasks:
                expand(member)
        elif task.name not in (t.name for t in seen):
            seen.append(task)

    for name in names:
        expand(name)
    return seen, unlisted


def _verify_one(task: Task, root: Path) -> str:
    """Check one task's files and print what was found; returns ``"absent"`` when none is in place, the
    task's state when it does not match its pins, else ``""``."""
    from harness.data.verify import NOT_DOWNLOADED, verify_task

    check = verify_task(task, root)
    click.echo(f"{task.name}: {check.state}" + ("" if check.files else " (the task publishes no files to verify)"))
    if check.state == NOT_DOWNLOADED:
        click.echo(f"  {len(check.files)} file(s), none in place; `harness data download {task.name}` fetches them")
        return "absent"
    for c in check.files:
        click.echo(f"  {c.line()}")
    return check.state if check.failed else ""
