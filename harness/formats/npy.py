"""Array files and checksums of index folders, read as untrusted data with bounded work: a file is a
regular file (checked with ``os.stat`` before it is opened, then on the descriptor, so a FIFO or a
device never blocks or streams), a ``.npy`` header is parsed with numpy's bounded parser (nothing is
unpickled, the array is not loaded) and checked against the shape, dtype and byte size expected, and
a file's sha256 is streamed. Every problem is one :class:`DataError` naming the file. Used by the
dense (``harness.retrievers.dense.index_files``) and BM25 (``harness.retrievers.bm25_index``) indexes."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from harness.concepts.errors import DataError

_READ = 1 << 20
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _kind(mode: int) -> str:
    return ("a folder" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a symbolic link" if stat.S_ISLNK(mode)
            else "not a regular file")


def open_regular(path: Path, links: bool = True) -> BinaryIO:
    """``path`` opened for reading bytes, refused unless it is a regular file: ``stat`` before the
    file is opened (a FIFO, device, socket or folder is never opened; with ``links=False`` a symbolic
    link neither), then ``fstat`` on the descriptor opened with ``O_NONBLOCK`` (a file swapped in
    between is refused too)."""
    try:
        st = os.stat(path) if links else os.lstat(path)
    except FileNotFoundError:
        raise DataError(f"{path.name} is missing", path) from None
    except OSError as exc:
        raise DataError(f"unreadable: {exc.strerror or exc}", path) from None
    if not stat.S_ISREG(st.st_mode):
        raise DataError(f"is {_kind(st.st_mode)}, not a regular file", path)
    try:
        fd = os.open(path, _OPEN_FLAGS | (0 if links else _NOFOLLOW))
    except OSError as exc:
        raise DataError(f"unreadable: {exc.strerror or exc}", path) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise DataError(f"is {_kind(st.st_mode)}, not a regular file", path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def npy_header(path: Path, links: bool = True) -> tuple[tuple[Any, ...], np.dtype, bool, int]:
    """``(shape, dtype, fortran_order, data offset)`` of a ``.npy`` file (a regular file, see
    :func:`open_regular`), read from its header only (numpy's own bounded parser; nothing is unpickled)."""
    fmt = np.lib.format
    try:
        with open_regular(path, links) as fh:
            version = fmt.read_magic(fh)
            if version == (1, 0):
                shape, fortran, dtype = fmt.read_array_header_1_0(fh)
            elif version == (2, 0):
                shape, fortran, dtype = fmt.read_array_header_2_0(fh)
            else:
                raise ValueError(f"unsupported .npy version {version}")
            return shape, dtype, fortran, fh.tell()
    except OSError as exc:
        raise DataError(f"unreadable: {exc.strerror or exc}", path) from None
    except (ValueError, TypeError, SyntaxError, EOFError, RecursionError) as exc:
        raise DataError(f"not a .npy array file ({str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__})",
                        path) from None


def describe_dtype(dtype: np.dtype) -> str:
    """A dtype as a message shows it (``<f4``, ``>f8``, ``a structured dtype [...]``)."""
    if dtype.fields is not None:
        text = repr(dtype.descr)
        return "a structured dtype " + (text if len(text) <= 60 else text[:57] + "...")
    return dtype.str


def check_array_file(path: Path, shape: tuple[int, ...], dtype: str, links: bool = True) -> int:
    """The header of ``path`` says ``shape`` of exactly ``dtype`` (byte order included) in C order,
    and the file holds exactly that many bytes after it; returns the header's length."""
    got_shape, got, fortran, offset = npy_header(path, links)
    want = np.dtype(dtype)
    if got != want or got.str != want.str:
        raise DataError(f"holds {describe_dtype(got)} values; the manifest says {dtype} ({want.str})", path)
    if fortran:
        raise DataError("is stored in Fortran order; an index stores C order", path)
    if tuple(got_shape) != tuple(shape):
        raise DataError(f"holds an array of shape {tuple(got_shape)!r}; the manifest says {tuple(shape)!r}", path)
    size = os.stat(path).st_size
    expected = offset + int(np.prod(shape, dtype=np.int64)) * want.itemsize
    if size != expected:
        raise DataError(f"is {size} bytes; a {tuple(shape)!r} {dtype} array takes {expected}", path)
    return offset


def file_sha256(path: Path, links: bool = True) -> str:
    """sha256 of a regular file (see :func:`open_regular`), read 1 MiB at a time."""
    h = hashlib.sha256()
    try:
        with open_regular(path, links) as fh:
            while chunk := fh.read(_READ):
                h.update(chunk)
    except OSError as exc:
        raise DataError(f"unreadable: {exc.strerror or exc}", path) from None
    return h.hexdigest()


class HashingWriter:
    """A write-only file wrapper that hashes what goes through it (``np.save`` writes into it)."""

    def __init__(self, fh: Any) -> None:
        self.fh, self.sha = fh, hashlib.sha256()

    def write(self, data: Any) -> int:
        self.sha.update(data)
        return self.fh.write(data)

    def hexdigest(self) -> str:
        return self.sha.hexdigest()
