"""Before any work: every file an evaluation will write under ``--output`` can be written.

:func:`harness.results.store.prepare_output` creates the folder and writes a probe file in it; this
module checks each path the run writes (``results.json`` and its ``.tmp``, ``per_query.jsonl``,
``judgments.jsonl``, the TREC runs; a suite's member folders and theirs): one that exists must be a
regular, writable file (not a folder, a link, a FIFO or a device), so a folder where ``results.json``
goes fails now, not after the whole evaluation."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

from harness.concepts.errors import HarnessError

#: the files an evaluation writes in its folder (run files: ``run.trec`` or ``run.<mode>.trec``)
RESULT_FILES = ("results.json", "results.json.tmp", "per_query.jsonl", "judgments.jsonl", "run.trec",
                "run.first_stage.trec", "queries.jsonl", "qrels.jsonl",
                "llm_calls.jsonl")  # the last four: harness view's


def check_result_files(output: str | Path, members: Sequence[str] = ()) -> None:
    """Raise :class:`HarnessError` naming the first path under ``output`` the run could not write."""
    out = Path(output)
    folders = [out]
    for member in members:
        sub = out / member.replace(":", "_")
        _check(sub, folder=True)
        folders.append(sub)
    for folder in folders:
        names = list(RESULT_FILES)
        if folder.is_dir():  # run files named for their mode
            with os.scandir(folder) as entries:
                names += [e.name for e in entries if e.name.startswith("run.") and e.name.endswith(".trec")]
        for name in dict.fromkeys(names):
            _check(folder / name, folder=False)


def _check(path: Path, folder: bool) -> None:
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise HarnessError(f"--output: cannot check {path}: {exc.strerror or exc}") from None
    want = stat.S_ISDIR if folder else stat.S_ISREG
    if not want(st.st_mode):
        kind = "a folder" if folder else "a file"
        raise HarnessError(f"--output: {path} is not {kind} (the run writes {kind} there); remove it or choose "
                           "another folder")
    if not os.access(path, os.W_OK):
        raise HarnessError(f"--output: {path} cannot be written (permission denied)")
