"""``harness data verify``: the files in place checked against the task's pins (sha256, size).

Per file: ``ok``, ``absent``, ``checksum mismatch`` (both digests), ``size mismatch`` (no published
sha256), ``present (no published checksum)``. Per task: ``ok``, ``not downloaded`` (no file in
place), ``incomplete`` (some required file absent), ``checksum mismatch`` (any file differs) or
``no files`` (the task publishes none).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.concepts.task import DataFile, Task
from harness.data.pins import url_source
from harness.formats.files import sha256_file

OK, NOT_DOWNLOADED, INCOMPLETE = "ok", "not downloaded", "incomplete"
MISMATCH, NO_FILES = "checksum mismatch", "no files"


@dataclass(frozen=True)
class FileCheck:
    """One file: ``state`` (``ok``, ``absent``, ``checksum mismatch``, ``size mismatch``,
    ``unchecked``: present, no published checksum or size), ``detail`` (the digests, sizes)."""

    file: DataFile
    local: Path
    state: str
    detail: str = ""

    @property
    def bad(self) -> bool:
        return self.state in ("checksum mismatch", "size mismatch")

    def line(self) -> str:
        """``PATH: STATE (detail) from SOURCE``."""
        state = "absent (optional)" if self.state == "absent" and self.file.optional else self.state
        detail = f": {self.detail}" if self.detail else ""
        return f"{self.file.path}: {state}{detail}; from {url_source(self.file.url).describe()}"


@dataclass(frozen=True)
class TaskCheck:
    """A task's verdict and its files' checks."""

    task: str
    files: tuple[FileCheck, ...]

    @property
    def state(self) -> str:
        if not self.files:
            return NO_FILES
        if any(c.bad for c in self.files):
            return MISMATCH
        present = [c for c in self.files if c.state != "absent"]
        if not present:
            return NOT_DOWNLOADED
        if any(c.state == "absent" and not c.file.optional for c in self.files):
            return INCOMPLETE
        return OK

    @property
    def failed(self) -> bool:
        """A mismatch or an incomplete download (exit status 1)."""
        return self.state in (MISMATCH, INCOMPLETE)


def check_file(f: DataFile, root: Path) -> FileCheck:
    """``f`` under ``root`` against its sha256 and size."""
    local = root / f.path
    if not local.is_file():
        return FileCheck(f, local, "absent")
    size = local.stat().st_size
    if f.sha256:
        actual = sha256_file(local)
        if actual != f.sha256.lower():
            sizes = (f"{f.size} bytes expected, {size} found" if f.size is not None and f.size != size
                     else f"{size} bytes")
            return FileCheck(f, local, "checksum mismatch",
                             f"expected sha256 {f.sha256.lower()}, actual {actual} ({sizes})")
        if f.size is not None and size != f.size:  # a published sha256 with a wrong size: cannot happen
            return FileCheck(f, local, "size mismatch", f"expected {f.size} bytes, found {size}")
        return FileCheck(f, local, OK, f"sha256 {actual}, {size} bytes")
    if f.size is not None:
        if size != f.size:
            return FileCheck(f, local, "size mismatch", f"expected {f.size} bytes, found {size} (no published sha256)")
        return FileCheck(f, local, OK, f"{size} bytes (no published sha256: checked by size)")
    return FileCheck(f, local, "unchecked", f"present (no published checksum), {size} bytes")


def verify_task(task: Task, root: Path) -> TaskCheck:
    """Check every file of ``task`` under the data folder ``root``."""
    return TaskCheck(task.name, tuple(check_file(f, root) for f in task.files))


__all__ = ["FileCheck", "TaskCheck", "check_file", "verify_task"]
