"""The data folder: where benchmark files live, which setting chose it, and how a relative path
is found. A :class:`DataFolder` is part of the :class:`harness.Context` of an evaluation (nothing
here is process-wide).

The folder is, in order: the one given explicitly (the CLI's ``--data-dir``, ``Context(data_dir=)``),
the environment variable ``HARNESS_DATA``, or the user cache folder (``$XDG_CACHE_HOME/harness/data``,
else ``~/.cache/harness/data``). Messages name which of these chose it. Task files and dataset
arguments name files relative to it; absolute paths are used as given.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from harness.concepts.errors import DataError
from harness.formats.files import sha256_file

ENV_DATA = "HARNESS_DATA"
ENV_AUTO_DOWNLOAD = "HARNESS_AUTO_DOWNLOAD"
ENV_DATA_URL = "HARNESS_DATA_URL"
POINT_ELSEWHERE = f"{ENV_DATA}=/path/to/data or `--data-dir /path/to/data`"
_OFF = ("0", "false", "no", "off")


def default_data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The user cache folder: ``$XDG_CACHE_HOME/harness/data`` or ``~/.cache/harness/data``."""
    env = os.environ if environ is None else environ
    cache = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "harness" / "data"


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long, ...
        return False


@dataclass(frozen=True)
class DataFolder:
    """``path``; ``origin``: ``"option"`` (``--data-dir``), ``"api"`` (given in Python), ``"env"``
    (``$HARNESS_DATA``) or ``"default"``; ``given_by``: the option or call that gave it, for messages;
    ``auto_download``: fetch a task's missing files on first use (``$HARNESS_AUTO_DOWNLOAD``);
    ``mirror``: a base URL serving files by their data-folder paths (``$HARNESS_DATA_URL``)."""

    #: how a message tells the user to point at another folder
    point_elsewhere: ClassVar[str] = POINT_ELSEWHERE

    path: Path
    origin: str = "default"
    given_by: str = ""
    auto_download: bool = True
    mirror: str | None = None

    @classmethod
    def from_env(cls, path: str | os.PathLike[str] | None = None, given_by: str = "--data-dir",
                 environ: Mapping[str, str] | None = None) -> DataFolder:
        """``path`` when given (``given_by`` names who gave it), else ``$HARNESS_DATA``, else the default."""
        env = os.environ if environ is None else environ
        auto = env.get(ENV_AUTO_DOWNLOAD, "1").strip().lower() not in _OFF
        mirror = env.get(ENV_DATA_URL) or None
        if path is not None:
            origin = "option" if given_by.startswith("--") else "api"
            return cls(Path(path).expanduser(), origin, given_by, auto, mirror)
        if env.get(ENV_DATA):
            return cls(Path(env[ENV_DATA]).expanduser(), "env", f"${ENV_DATA}", auto, mirror)
        return cls(default_data_dir(env), "default", "", auto, mirror)

    @property
    def source(self) -> str:
        """Where the folder comes from, for messages: ``given by --data-dir``, ``from $HARNESS_DATA``,
        ``the default: neither --data-dir nor $HARNESS_DATA is set``."""
        if self.origin in ("option", "api"):
            return f"given by {self.given_by}"
        if self.origin == "env":
            return f"from ${ENV_DATA}"
        return f"the default: neither --data-dir nor ${ENV_DATA} is set"

    def locate(self, relpath: str | os.PathLike[str]) -> Path:
        """Where ``relpath`` would be: itself when absolute, else under the folder."""
        p = Path(relpath).expanduser()
        return p if p.is_absolute() else self.path / p

    def missing_message(self, relpath: str | os.PathLike[str], full: Path, remedy: str | None = None,
                        note: str = "", what: str = "data file") -> str:
        """The explanation given when a data file (``what``) is absent: the full path, then ``note``,
        then, for a path relative to the folder, the folder, which setting chose it (and whether it
        exists), and ``remedy`` (default: put it there, point to another folder, or download it)."""
        msg = f"{what} not found: {full}{note}"
        if not Path(relpath).expanduser().is_absolute():
            gone = "" if _is_dir(self.path) else "; that folder does not exist"
            if remedy is None:
                remedy = (f"Put it there, or point to another data folder with {POINT_ELSEWHERE}, or, if a task "
                          "publishes the file, fetch it with `harness data download TASK`")
            msg += f" (looked in the data folder {self.path}, {self.source}{gone}). {remedy}"
        return msg

    def resolve(self, relpath: str | os.PathLike[str]) -> Path:
        """The existing file or folder ``relpath`` names; a :class:`DataError` saying where it looked
        and how to point elsewhere or download when it is absent."""
        full = self.locate(relpath)
        try:
            exists = full.exists()
        except OSError as exc:  # a name too long, a file where a folder should be, ...
            raise DataError(f"cannot use the path {full}: {exc.strerror or exc}") from None
        if not exists:
            raise DataError(self.missing_message(relpath, full))
        return full

    def display_path(self, path: str | os.PathLike[str]) -> str:
        """``path`` relative to the folder (POSIX separators) when inside it; files shipped in the
        package as ``harness/...``; anything else absolute."""
        p = Path(path).resolve()
        package = Path(__file__).resolve().parents[1]  # harness/
        for base, prefix in ((self.path, ""), (package, "harness/")):
            try:
                return prefix + p.relative_to(base.expanduser().resolve()).as_posix()
            except (ValueError, OSError):
                continue
        return str(p)

    def file_identity(self, path: str | os.PathLike[str]) -> dict[str, Any]:
        """``{"path": relative path, "sha256": ..., "size": ...}`` for results provenance."""
        p = Path(path)
        return {"path": self.display_path(p), "sha256": sha256_file(p), "size": p.stat().st_size}

    def check_exists(self) -> None:
        """A folder given by an option or in Python must exist: a mistyped path is reported, never
        created (``harness data download`` creates the folder it downloads into)."""
        if self.origin not in ("option", "api"):
            return
        try:
            exists = self.path.is_dir()
        except OSError as exc:  # a name too long, a file where a folder should be, ...
            raise DataError(f"cannot use the data folder {self.path} {self.source}: {exc.strerror or exc}") from None
        if not exists:
            raise DataError(f"the data folder {self.path} {self.source} does not exist; check the path, or create "
                            f"it and fetch a task's files into it with `harness data download TASK --data-dir "
                            f"{self.path}`")
