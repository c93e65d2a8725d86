"""What the files of an index folder must hold, checked with bounded work before anything is used:
the manifest (``index.json``) and each ``shard.json`` against a schema (types, ranges, bounded
counts), each ``emb.npy`` header (shape, dtype, byte size) against its ``shard.json`` and the
manifest without loading the array (never a pickle), ``ids.json`` against its digest, and the
sha256 checksums a build records (the ``.npy`` header parser and the checksums are shared with the
BM25 index: :mod:`harness.formats.npy`). Every problem is one :class:`DataError` naming the file and what
is wrong."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from harness.concepts.errors import DataError
from harness.formats.npy import HashingWriter, file_sha256, npy_header, open_regular  # noqa: F401 (index.py)

FORMAT = 1
KIND = "harness-dense-index"
DTYPES = ("float32", "float16")
#: documents in one index (MS MARCO v2 has 1.4e8 passages)
MAX_COUNT = 10**10
#: shard folders are named with six digits
MAX_SHARDS = 1_000_000
MAX_DIMENSION = 1 << 20
#: a manifest or shard.json larger than this is not one the harness wrote
MAX_JSON_BYTES = 1 << 20
#: bytes of ids.json allowed per document (plus MAX_JSON_BYTES)
MAX_ID_BYTES = 4096
CHECKSUM = "sha256"
CHECKSUM_FILES = ("emb.npy", "ids.json")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def read_json(path: Path, what: str, limit: int = MAX_JSON_BYTES) -> Any:
    """A JSON file of at most ``limit`` bytes; one :class:`DataError` when it is missing, not a regular
    file (a FIFO is refused from its stat, never opened), too large, not UTF-8, not JSON or nested too deep."""
    if not path.exists():
        raise DataError(f"{what} is missing", path)
    try:
        with open_regular(path) as fh:
            raw = fh.read(limit + 1)
    except FileNotFoundError:
        raise DataError(f"{what} is missing", path) from None
    except OSError as exc:
        raise DataError(f"unreadable {what}: {exc.strerror or exc}", path) from None
    if len(raw) > limit:
        raise DataError(f"{what} is larger than {limit} bytes", path)
    try:
        return json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DataError(f"{what} is not UTF-8 ({exc.reason} at byte {exc.start})", path) from None
    except ValueError as exc:
        raise DataError(f"{what} is not JSON ({exc})", path) from None
    except RecursionError:
        raise DataError(f"{what} nests too deep", path) from None


def need_int(data: Mapping[str, Any], key: str, path: Path, lo: int, hi: int, optional: bool = False) -> int | None:
    value = data.get(key)
    if value is None and optional:
        return None
    if type(value) is not int or not lo <= value <= hi:
        raise DataError(f"{key} must be an integer from {lo} to {hi}, not {_show(value)}", path)
    return value


def need_hex(data: Mapping[str, Any], key: str, path: Path) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not _HEX64.fullmatch(value):
        raise DataError(f"{key} must be a sha256 (64 lowercase hex digits), not {_show(value)}", path)
    return value


def need_type(data: Mapping[str, Any], key: str, path: Path, kinds: tuple[type, ...], optional: bool = True) -> Any:
    value = data.get(key)
    if value is None and optional:
        return None
    if type(value) not in kinds:
        names = " or ".join(k.__name__ for k in kinds)
        raise DataError(f"{key} must be {'null or ' if optional else ''}{names}, not {_show(value)}", path)
    return value


def check_manifest(data: Any, path: Path) -> dict[str, Any]:
    """The manifest's layout fields, checked (the encoder and model sections are checked by the search
    that uses them). Counts are bounded, so a hostile count plans no more than :data:`MAX_SHARDS` shards."""
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise DataError("not a harness dense index manifest (kind is not 'harness-dense-index')", path)
    if data.get("format") != FORMAT:
        raise DataError(f"index format {_show(data.get('format'))}; this harness reads format {FORMAT} "
                        f"(rebuild it with `harness index build`)", path)
    count = need_int(data, "count", path, 0, MAX_COUNT)
    size = need_int(data, "shard_size", path, 1, MAX_COUNT)
    assert count is not None and size is not None
    if -(-count // size) > MAX_SHARDS:
        raise DataError(f"count {count} in shards of {size} makes {-(-count // size)} shards; an index has at most "
                        f"{MAX_SHARDS}", path)
    need_int(data, "dimension", path, 1, MAX_DIMENSION, optional=True)
    if data.get("dtype") not in DTYPES:
        raise DataError(f"dtype must be one of {', '.join(DTYPES)}, not {_show(data.get('dtype'))}", path)
    need_hex(data, "ids_sha256", path)
    for key in ("complete", "normalize"):
        need_type(data, key, path, (bool,))
    for key in ("query_template", "doc_template"):
        need_type(data, key, path, (str,))
    for key in ("encoder", "model", "source"):
        need_type(data, key, path, (dict,))
    if data.get("checksums") not in (None, CHECKSUM):
        raise DataError(f"checksums must be {CHECKSUM!r} or absent, not {_show(data.get('checksums'))}", path)
    return data


def check_shard_meta(meta: Any, path: Path, *, number: int, start: int, end: int, dtype: str,
                     dimension: int | None, checksums: bool) -> dict[str, Any]:
    """A ``shard.json`` against its place in the plan and the manifest."""
    if not isinstance(meta, dict):
        raise DataError("shard.json must hold a JSON object", path)
    for key, want in (("number", number), ("start", start), ("end", end), ("rows", end - start)):
        if type(meta.get(key)) is not int or meta[key] != want:
            raise DataError(f"{key} is {_show(meta.get(key))}; the manifest plans {want} for this shard", path)
    if meta.get("dtype") != dtype:
        raise DataError(f"dtype is {_show(meta.get('dtype'))}; the manifest says {dtype}", path)
    dim = need_int(meta, "dimension", path, 1, MAX_DIMENSION)
    if dimension is not None and dim != dimension:
        raise DataError(f"dimension is {dim}; the manifest says {dimension}", path)
    need_hex(meta, "ids_sha256", path)
    sums = meta.get(CHECKSUM)
    if sums is None:
        if checksums:
            raise DataError(f"records no {CHECKSUM} checksums, while the manifest says every shard has them", path)
    elif not isinstance(sums, dict) or set(sums) != set(CHECKSUM_FILES):
        raise DataError(f"{CHECKSUM} must map {' and '.join(CHECKSUM_FILES)} to their digests, not {_show(sums)}", path)
    else:
        for name in CHECKSUM_FILES:
            need_hex(sums, name, path)
    return meta


def check_npy(path: Path, rows: int, dimension: int, dtype: str) -> None:
    """The header of ``emb.npy`` says ``rows`` x ``dimension`` of ``dtype`` in C order, and the file
    holds exactly that many bytes after it."""
    shape, got, fortran, offset = npy_header(path)
    want = np.dtype(dtype)
    if got != want:
        raise DataError(f"holds {got.str if got.fields is None else 'a structured dtype ' + _show(got.descr)} "
                        f"vectors; the manifest says {dtype}", path)
    if fortran:
        raise DataError("is stored in Fortran order; an index stores C order", path)
    if tuple(shape) != (rows, dimension):
        raise DataError(f"holds an array of shape {_show(tuple(shape))}; shard.json says ({rows}, {dimension})", path)
    size = path.stat().st_size
    if size != offset + rows * dimension * want.itemsize:
        raise DataError(f"is {size} bytes; a ({rows}, {dimension}) {dtype} array takes "
                        f"{offset + rows * dimension * want.itemsize}", path)


def check_ids(data: Any, path: Path, rows: int) -> list[str]:
    if not isinstance(data, list) or len(data) != rows or not all(type(d) is str for d in data):
        raise DataError(f"must be a list of {rows} document ids (strings)", path)
    return data
