"""Reading files: gzip detected from the magic bytes, UTF-8 with a BOM dropped, line numbers for
messages, and a streamed sha256 for results provenance."""

from __future__ import annotations

import codecs
import gzip
import hashlib
import io
import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, TextIO

from harness.concepts.errors import DataError

_CHUNK = 1 << 20
# (resolved path, mtime_ns, size) -> sha256: a content memo (a changed file has another key), so it
# can never change a result; it spares hashing the same large file twice in one process
_SHA_MEMO: dict[tuple[str, int, int], str] = {}


def sha256_file(path: str | os.PathLike[str]) -> str:
    """Hex sha256 of a file, streamed; cached per (path, mtime, size) for this process."""
    p = Path(path).resolve()
    st = p.stat()
    key = (str(p), st.st_mtime_ns, st.st_size)
    cached = _SHA_MEMO.get(key)
    if cached is None:
        h = hashlib.sha256()
        with open(p, "rb") as f:
            while chunk := f.read(_CHUNK):
                h.update(chunk)
        cached = _SHA_MEMO[key] = h.hexdigest()
    return cached


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
