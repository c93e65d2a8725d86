"""The data folder: where benchmark files live, how a relative path is found, and file identity.

The folder is, in order: the value given to :func:`set_data_dir` (the CLI's ``--data-dir``),
the environment variable ``HARNESS_DATA``, or the user cache folder
(``$XDG_CACHE_HOME/harness/data``, else ``~/.cache/harness/data``). Messages name which of these
chose it (:func:`data_dir_source`). Task files and dataset arguments name files relative to it;
absolute paths are used as given.
"""

from __future__ import annotations

import codecs
import gzip
import hashlib
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, TextIO

from harness.concepts.errors import DataError

ENV_DATA = "HARNESS_DATA"
ENV_AUTO_DOWNLOAD = "HARNESS_AUTO_DOWNLOAD"
ENV_DATA_URL = "HARNESS_DATA_URL"

_override: Path | None = None
_override_source = "harness.data.folder.set_data_dir()"  # who called set_data_dir, for messages
_sha_cache: dict[tuple[str, int, int], str] = {}
_CHUNK = 1 << 20


def set_data_dir(path: str | os.PathLike[str] | None, source: str | None = None) -> None:
    """Use ``path`` as the data folder for this process (``None`` restores the default lookup).

    ``source`` names who chose it, for messages: the CLI passes ``"--data-dir"``; the default is
    ``"harness.data.folder.set_data_dir()"``."""
    global _override, _override_source
    _override = Path(path).expanduser() if path is not None else None
    _override_source = source or "harness.data.folder.set_data_dir()"


def default_data_dir() -> Path:
    """The user cache folder: ``$XDG_CACHE_HOME/harness/data`` or ``~/.cache/harness/data``."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "harness" / "data"


def data_dir_origin() -> str:
    """Which setting chose the data folder: ``"option"`` (``--data-dir``), ``"api"``
    (:func:`set_data_dir` from Python), ``"env"`` (``$HARNESS_DATA``) or ``"default"``."""
    if _override is not None:
        return "option" if _override_source.startswith("--") else "api"
    return "env" if os.environ.get(ENV_DATA) else "default"


def data_dir_source() -> str:
    """Where the current data folder comes from, for messages: ``given by --data-dir``,
    ``from $HARNESS_DATA``, ``the default: neither --data-dir nor $HARNESS_DATA is set``."""
    origin = data_dir_origin()
    if origin in ("option", "api"):
        return f"given by {_override_source}"
    if origin == "env":
        return f"from ${ENV_DATA}"
    return f"the default: neither --data-dir nor ${ENV_DATA} is set"


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:  # a name too long, ...
        return False


POINT_ELSEWHERE = f"{ENV_DATA}=/path/to/data or `--data-dir /path/to/data`"


def data_dir() -> Path:
    """The data folder (it need not exist yet)."""
    if _override is not None:
        return _override
    env = os.environ.get(ENV_DATA)
    if env:
        return Path(env).expanduser()
    return default_data_dir()


def locate(relpath: str | os.PathLike[str], root: Path | None = None) -> Path:
    """Where ``relpath`` would be: itself when absolute, else under ``root`` (default: the data folder)."""
    p = Path(relpath).expanduser()
    return p if p.is_absolute() else (root if root is not None else data_dir()) / p


def missing_message(relpath: str | os.PathLike[str], full: Path, remedy: str | None = None, note: str = "",
                    what: str = "data file") -> str:
    """The explanation given when a data file (``what``) is absent: the full path, then ``note``,
    then, for a path relative to the data folder, the folder, which setting chose it (and whether it
    exists), and ``remedy`` (default: put it there, point to another folder, or download it)."""
    msg = f"{what} not found: {full}{note}"
    if not Path(relpath).expanduser().is_absolute():
        root = data_dir()
        gone = "" if _is_dir(root) else "; that folder does not exist"
        if remedy is None:  # (harness.data.download names the task when it knows it)
            remedy = (f"Put it there, or point to another data folder with {POINT_ELSEWHERE}, or, if a task "
                      "publishes the file, fetch it with `harness data download TASK`")
        msg += f" (looked in the data folder {root}, {data_dir_source()}{gone}). {remedy}"
    return msg


def resolve(relpath: str | os.PathLike[str]) -> Path:
    """The existing file or folder ``relpath`` names (relative to :func:`data_dir` unless absolute).

    Raises :class:`DataError` saying where it looked and how to point elsewhere or download.
    """
    full = locate(relpath)
    try:
        exists = full.exists()
    except OSError as exc:  # a name too long, a file where a folder should be, ...
        raise DataError(f"cannot use the path {full}: {exc.strerror or exc}") from None
    if not exists:
        raise DataError(missing_message(relpath, full))
    return full


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file, streamed; cached per (path, mtime, size) for this process."""
    p = Path(path).resolve()
    st = p.stat()
    key = (str(p), st.st_mtime_ns, st.st_size)
    cached = _sha_cache.get(key)
    if cached is None:
        h = hashlib.sha256()
        with open(p, "rb") as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
        cached = _sha_cache[key] = h.hexdigest()
    return cached


def display_path(path: str | os.PathLike[str]) -> str:
    """``path`` relative to the data folder (POSIX separators) when inside it; files shipped in the
    package as ``harness/...``; anything else absolute."""
    p = Path(path).resolve()
    package = Path(__file__).resolve().parents[1]  # harness/
    for base, prefix in ((data_dir(), ""), (package, "harness/")):
        try:
            return prefix + p.relative_to(base.expanduser().resolve()).as_posix()
        except ValueError:
            continue
    return str(p)


def file_identity(path: str | os.PathLike[str]) -> dict[str, Any]:
    """``{"path": relative path, "sha256": ..., "size": ...}`` for results provenance."""
    p = Path(path)
    return {"path": display_path(p), "sha256": sha256_file(p), "size": p.stat().st_size}


def open_binary(path: str | os.PathLike[str]) -> BinaryIO:
    """Open a file for reading bytes; gzip is detected from the magic bytes and decompressed."""
    p = Path(path)
    try:
        with open(p, "rb") as f:
            magic = f.read(2)
    except FileNotFoundError:
        raise DataError("file not found", p) from None
    except OSError as exc:
        raise DataError(f"cannot read: {exc.strerror or exc}", p) from exc
    if magic == b"\x1f\x8b":
        return gzip.open(p, "rb")  # type: ignore[return-value]
    return open(p, "rb")


def open_text(path: str | os.PathLike[str]) -> TextIO:
    """Open a text file (gzip transparently) as UTF-8 with a leading BOM dropped; ``newline=""`` as
    the csv module wants."""
    return io.TextIOWrapper(open_binary(path), encoding="utf-8-sig", newline="")


def iter_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """``(line number from 1, line without its line ending)`` for each line of a text file.

    Lines end at ``\\n`` only (a stray ``\\r`` inside a field stays in it). Undecodable bytes or a
    corrupt gzip stream raise :class:`DataError` naming the line.
    """
    lineno = 0
    with open_binary(path) as f:
        try:
            for lineno, raw in enumerate(f, 1):
                if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw = raw[len(codecs.BOM_UTF8):]
                try:
                    line = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    msg = f"not valid UTF-8 ({exc.reason} at byte {exc.start})"
                    raise DataError(msg, path, lineno) from exc
                yield lineno, line.rstrip("\r\n")
        except (OSError, EOFError) as exc:  # gzip.BadGzipFile is an OSError
            raise DataError(f"cannot read ({exc})", path, lineno + 1) from exc
