"""Reading the files of a results folder as untrusted data, inside that folder.

A results folder reaches a researcher from colleagues and clusters, so every file its
``results.json`` names is read under these rules (see ``docs/untrusted.md``, "Results folders"):

- the name is text, relative, without ``..``, and resolves (symlinks followed) inside the folder;
- the file is a regular file (checked with ``os.stat`` before it is opened, and again on the open
  descriptor: a FIFO or a device such as ``/dev/zero`` is refused, never read) of at most
  :data:`MAX_RESULTS_JSON` bytes for ``results.json``, :data:`MAX_DATA_FILE` for the others
  (``per_query.jsonl``, run files, ``judgments.jsonl``), with lines of at most :data:`MAX_LINE` bytes;
- JSON is UTF-8, nested at most :data:`MAX_DEPTH` deep, integers at most :data:`MAX_INT_DIGITS`
  digits long, and an object never repeats a key.

Every violation is a :class:`~harness.concepts.errors.HarnessError` naming the file (and the
field or line)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any, BinaryIO

from harness.concepts.errors import HarnessError

#: the largest ``results.json`` read (bytes)
MAX_RESULTS_JSON = 64 * 2**20
#: the largest other file a results folder names: ``per_query.jsonl``, a run file, ``judgments.jsonl``
MAX_DATA_FILE = 2 * 2**30
#: the longest line of a ``per_query.jsonl`` or run file (bytes)
MAX_LINE = 64 * 2**20
#: the deepest nesting of objects and lists in a JSON document
MAX_DEPTH = 64
#: the most digits an integer in a JSON document may have (int64 has 19)
MAX_INT_DIGITS = 19

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def relative_name(name: Any, where: str, field: str) -> str:
    """``name`` checked as a file name relative to its folder: text, not absolute, no ``..``."""
    if not isinstance(name, str) or not name.strip():
        raise HarnessError(f"{where}: {field} must be a file name relative to the results folder, not {name!r}")
    if "\x00" in name:
        raise HarnessError(f"{where}: {field} {name!r} holds a NUL character")
    posix, windows = PurePosixPath(name), PureWindowsPath(name)
    if posix.is_absolute() or windows.is_absolute() or name.startswith(("/", "\\")):
        raise HarnessError(f"{where}: {field} {name!r} is an absolute path; a results folder names its files "
                           "relative to itself")
    if ".." in posix.parts or ".." in windows.parts:
        raise HarnessError(f"{where}: {field} {name!r} leaves the results folder ('..')")
    return name


def check_inside(root: str | os.PathLike[str], path: str | os.PathLike[str], where: str, field: str,
                 limit: int | None = None, must_exist: bool = True) -> Path | None:
    """The real path of ``path`` after checking that it lies inside ``root`` (symlinks resolved), is a
    regular file and holds at most ``limit`` bytes (default :data:`MAX_DATA_FILE`). A missing file is
    an error when ``must_exist``, else None. Nothing is opened."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    if os.path.commonpath([real_root, real]) != real_root:
        raise HarnessError(f"{_label(where, field, path)} resolves to {real}, outside the results folder "
                           f"{real_root}; a results folder may only name files inside itself")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        if must_exist:
            raise HarnessError(f"{where}: {field} names {path}, which does not exist") from None
        return None
    except OSError as exc:  # a symlink loop (ELOOP), a name too long, no permission
        raise HarnessError(f"{_label(where, field, path)} cannot be read: {exc.strerror or exc}") from None
    _check_stat(st, path, where, field, limit)
    return Path(real)


def _label(where: str, field: str, path: object) -> str:
    """How a message names the file: the results.json and field that name it, and the path."""
    return str(path) if str(path) == where else f"{where}: {field} ({path})"


def _check_stat(st: os.stat_result, path: object, where: str, field: str, limit: int | None) -> None:
    limit = MAX_DATA_FILE if limit is None else limit
    if not stat.S_ISREG(st.st_mode):
        kind = ("a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO" if stat.S_ISFIFO(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)
                else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise HarnessError(f"{_label(where, field, path)} is {kind}, not a regular file")
    if st.st_size > limit:
        raise HarnessError(f"{_label(where, field, path)} holds {st.st_size:,} bytes, more than the {limit:,} "
                           "bytes a results folder's file may hold")


def open_inside(root: str | os.PathLike[str], path: str | os.PathLike[str], where: str, field: str,
                limit: int | None = None) -> BinaryIO:
    """Open ``path`` for reading bytes after :func:`check_inside`; the descriptor is checked again
    (regular file, size), so a file swapped for a FIFO or a symlink in between is refused too."""
    real = check_inside(root, path, where, field, limit)
    try:
        fd = os.open(real, _OPEN_FLAGS)
    except OSError as exc:
        raise HarnessError(f"{_label(where, field, path)} cannot be read: {exc.strerror or exc}") from None
    try:
        _check_stat(os.fstat(fd), path, where, field, limit)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(root: str | os.PathLike[str], path: str | os.PathLike[str], where: str, field: str,
               limit: int) -> bytes:
    """The whole file (at most ``limit`` bytes, else an error), read under :func:`open_inside`."""
    with open_inside(root, path, where, field, limit) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise HarnessError(f"{_label(where, field, path)} holds more than the {limit:,} bytes a results "
                           "folder's file may hold")
    return data


def iter_lines(root: str | os.PathLike[str], path: str | os.PathLike[str], where: str, field: str,
               limit: int | None = None) -> Iterator[tuple[int, str]]:
    """``(line number from 1, line without its ending)`` for each line, decoded as UTF-8; a line
    longer than :data:`MAX_LINE` or invalid UTF-8 is an error naming the file and line."""
    with open_inside(root, path, where, field, limit) as fh:
        lineno, longest, left = 0, MAX_LINE, MAX_DATA_FILE if limit is None else limit
        while True:
            raw = fh.readline(longest + 1)
            if not raw:
                return
            lineno += 1
            left -= len(raw)
            if len(raw) > longest:
                raise HarnessError(f"{path}:{lineno}: a line longer than {longest:,} bytes")
            if left < 0:  # grew while being read
                raise HarnessError(f"{_label(where, field, path)} holds more than the "
                                   f"{limit or MAX_DATA_FILE:,} bytes a results folder's file may hold")
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise HarnessError(f"{path}:{lineno}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
            yield lineno, line.rstrip("\r\n")


class _Refused(Exception):
    """A JSON hook's refusal; :func:`loads` prefixes the file."""


def _int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _Refused(f"an integer of {digits} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))
        raise _Refused(f"the key {key!r} appears twice in one object")
    return out


def decoder() -> json.JSONDecoder:
    """A JSON decoder with the bounds of :func:`loads` (build one per file, pass it to each line)."""
    return json.JSONDecoder(parse_int=_int, object_pairs_hook=_object)


def _check_depth(value: Any, where: str) -> None:
    stack = [(value, 1)]
    while stack:
        v, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise HarnessError(f"{where}: nested more than {MAX_DEPTH} levels deep")
        if isinstance(v, dict):
            stack.extend((x, depth + 1) for x in v.values() if isinstance(x, (dict, list)))
        elif isinstance(v, list):
            stack.extend((x, depth + 1) for x in v if isinstance(x, (dict, list)))


def loads(data: bytes | str, where: str, dec: json.JSONDecoder | None = None, nested: bool = True) -> Any:
    """One JSON document from untrusted bytes: UTF-8, bounded integers, nesting and no repeated key;
    every problem a :class:`HarnessError` naming ``where``. ``dec``: a :func:`decoder` to reuse;
    ``nested=False`` skips the depth walk for a caller that keeps no nested value (the parser's own
    recursion limit still ends in a message)."""
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise HarnessError(f"{where}: not valid UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        value = (dec or decoder()).decode(data)
    except _Refused as exc:
        raise HarnessError(f"{where}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise HarnessError(f"{where}: not JSON ({exc.msg}, line {exc.lineno})") from None
    except RecursionError:
        raise HarnessError(f"{where}: nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:  # Python's own limit on integer digits, should a hook be bypassed
        raise HarnessError(f"{where}: {exc}") from None
    if nested:
        _check_depth(value, where)
    return value
