"""The final rankings a results folder holds, read as :class:`~harness.concepts.run.Run` objects: each
run file ``results.json`` names, read inside the folder and bounded (:mod:`harness.formats.bounded`),
every line checked by the TREC run reader."""

from __future__ import annotations

from harness.concepts.errors import HarnessError
from harness.concepts.run import Run
from harness.formats.trec import run_from_lines
from harness.results.store import StoredResults


def stored_runs(stored: StoredResults) -> dict[str, Run]:
    """mode -> the final ranking of that mode; a folder naming no run file is an error."""
    if stored.is_suite:
        raise HarnessError(f"{stored.path}: a suite's results; give the folder of one member task")
    files = stored.run_files()
    if not files:
        raise HarnessError(f"{stored.path}: names no run file (files['run[MODE]'])")
    return {mode: run_from_lines(stored.lines(path, f"files['run[{mode}]']"), path, stored.folder.name)
            for mode, path in files.items()}


def single_run(stored: StoredResults) -> Run:
    """The one final ranking of a single-mode result; several modes are an error naming them."""
    runs = stored_runs(stored)
    if len(runs) != 1:
        raise HarnessError(f"{stored.path}: holds the runs of {len(runs)} modes ({', '.join(runs)}); one set of "
                           "qrels scores one mode's run")
    return next(iter(runs.values()))
