"""A BM25 index on disk: a corpus tokenized and weighted once, searched memory-mapped.

Layout of an index folder::

    index.json    the manifest: kind, format, k1, b, epsilon, tokenizer, stopwords, stemmer, min_weight,
                  counts (documents, terms, postings), avgdl, average_idf, the sha256 of the ordered ids
                  and of the corpus (ids and texts), where the corpus came from, each array's dtype and
                  shape, the sha256 of every other file (``sha256``) and of the manifest's own fields
                  (``manifest_sha256``)
    ids.json      document ids, in corpus (score-vector) order
    terms.json    terms, in term-id order
    weights.npy   float64 [postings]: each (term, document) pair's BM25Okapi weight
    docs.npy      int32 [postings]: its document, ascending within a term
    offsets.npy   int64 [terms + 1]: term t's postings are offsets[t]:offsets[t + 1]
    idf.npy       float64 [terms], after the epsilon floor
    rank.npy      int32 [documents]: each document's position in doc-id order (ties)

Every file is written to a temporary name, flushed, fsynced and renamed into place; the manifest is
written last, so a folder holding a manifest holds the whole index. Reading treats every file as
untrusted (``docs/untrusted.md``, "BM25 index folders"): regular files only (``stat`` before ``open``:
a FIFO never blocks, a link is refused), the manifest read with bounded work (size, nesting, integer
digits, no repeated key), its schema, types, counts within bounds and its ``manifest_sha256`` (so the
parameters a run records are the ones the weights were built with), each ``.npy`` header, dtype and
byte size against the manifest without loading the array (never a pickle), each file's sha256 before
the first search (``verify=False`` skips that), offsets and document numbers within range, weights
finite; anything else is one :class:`HarnessError` naming the file. An index built before checksums
were recorded is refused (rebuild it).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from harness.concepts.errors import DataError, HarnessError
from harness.formats.bounded import loads
from harness.formats.npy import HashingWriter, check_array_file, file_sha256, open_regular

FORMAT = 1
KIND = "harness-bm25-index"
MANIFEST = "index.json"
#: bounds on what a manifest may declare (checked before anything is read)
MAX_DOCS = 2**31 - 1
MAX_POSTINGS = 2**40
MAX_JSON_BYTES = 2**34
ARRAYS = ("weights", "docs", "offsets", "idf", "rank")
#: the files whose sha256 a build records in the manifest's ``sha256`` object
FILES = (*(f"{a}.npy" for a in ARRAYS), "ids.json", "terms.json")
CHECKSUM = "sha256"
#: the manifest's own digest: sha256 of its other fields (:func:`manifest_digest`)
MANIFEST_DIGEST = "manifest_sha256"
MAX_MANIFEST_BYTES = 2**20
_HEX64 = re.compile(r"[0-9a-f]{64}")
_NUMBER = (int, float)
_KEYS: Mapping[str, type | tuple[type, ...]] = MappingProxyType({
    "kind": str, "format": int, "k1": _NUMBER, "b": _NUMBER, "epsilon": _NUMBER,
    "tokenizer": str, "stopwords": (str, list), "stemmer": str, "min_weight": _NUMBER, "documents": int,
    "terms": int, "postings": int, "avgdl": _NUMBER, "average_idf": _NUMBER, "ids_sha256": str,
    "corpus_sha256": str, "source": dict, "arrays": dict, "complete": bool,
})


def ids_digest(ids: Sequence[str]) -> str:
    """sha256 of the ordered document ids (as JSON, so no id can pass for a separator)."""
    return hashlib.sha256(json.dumps(list(ids), ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()


def corpus_digest(ids: Iterable[str], texts: Iterable[str]) -> str:
    """sha256 of the ordered (id, text) pairs, each length-prefixed: what an index was computed from."""
    h = hashlib.sha256()
    update = h.update
    for doc_id, text in zip(ids, texts, strict=True):
        for part in (doc_id.encode("utf-8", "surrogatepass"), text.encode("utf-8", "surrogatepass")):
            update(len(part).to_bytes(8, "little"))
            update(part)
    return h.hexdigest()


def expected_arrays(documents: int, terms: int, postings: int) -> dict[str, tuple[str, tuple[int, ...]]]:
    """name -> (dtype, shape) of each array of an index with these counts."""
    return {"weights": ("float64", (postings,)), "docs": ("int32", (postings,)), "offsets": ("int64", (terms + 1,)),
            "idf": ("float64", (terms,)), "rank": ("int32", (documents,))}


def manifest_digest(manifest: Mapping[str, Any]) -> str:
    """sha256 of every field of ``manifest`` but :data:`MANIFEST_DIGEST` itself, as canonical JSON
    (keys sorted, no spaces, ASCII): the parameters (k1, b, epsilon, tokenizer, stopwords, stemmer,
    min_weight), counts, corpus digests, source, arrays and file digests, as the build wrote them."""
    fields = {k: v for k, v in manifest.items() if k != MANIFEST_DIGEST}
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


# -- writing -------------------------------------------------------------------------------------------


def _atomic(path: Path, write: Any) -> str:
    """Write through ``write(file)`` to a temporary name, fsync, rename into place; the bytes' sha256."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
    try:
        with open(tmp, "wb") as fh:
            writer = HashingWriter(fh)
            write(writer)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return writer.hexdigest()


def _json_bytes(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False).encode("utf-8", "surrogatepass")


def prepare_folder(folder: Path, overwrite: bool) -> None:
    """An empty or new folder; one holding an index is emptied with ``overwrite``, else refused."""
    if (folder / MANIFEST).exists() or (folder.exists() and any(folder.iterdir())):
        if not (folder / MANIFEST).exists():
            raise HarnessError(f"{folder} exists and is not an index; choose an empty or new folder")
        if not overwrite:
            raise HarnessError(f"{folder} already holds an index; pass --overwrite to replace it, or choose "
                               f"another folder")
        (folder / MANIFEST).unlink()
        for name in ["ids.json", "terms.json", *(f"{a}.npy" for a in ARRAYS)]:
            (folder / name).unlink(missing_ok=True)
    folder.mkdir(parents=True, exist_ok=True)


def write_index(folder: str | os.PathLike[str], arrays: Mapping[str, np.ndarray], ids: Sequence[str],
                terms: Sequence[str], manifest: Mapping[str, Any], overwrite: bool = False) -> dict[str, Any]:
    """Write an index (arrays as :func:`expected_arrays` names them); returns the manifest written."""
    folder = Path(folder).expanduser()
    prepare_folder(folder, overwrite)
    shapes, sums = {}, {}
    for name in ARRAYS:
        arr = np.ascontiguousarray(arrays[name])
        sums[f"{name}.npy"] = _atomic(folder / f"{name}.npy", lambda fh, a=arr: np.save(fh, a, allow_pickle=False))
        shapes[name] = {"dtype": str(arr.dtype), "shape": list(arr.shape)}
    sums["ids.json"] = _atomic(folder / "ids.json", lambda fh: fh.write(_json_bytes(list(ids))))
    sums["terms.json"] = _atomic(folder / "terms.json", lambda fh: fh.write(_json_bytes(list(terms))))
    out = {"kind": KIND, "format": FORMAT, **manifest, "arrays": shapes, "created": round(time.time(), 3),
           "complete": True, "checksums": CHECKSUM, CHECKSUM: sums}
    out[MANIFEST_DIGEST] = manifest_digest(json.loads(_json_bytes(out)))  # of the fields as a reader sees them
    _atomic(folder / MANIFEST, lambda fh: fh.write(_json_bytes(out) + b"\n"))
    return out


@dataclass
class BuildReport:
    """What ``harness index build -r bm25`` did."""

    folder: str
    documents: int
    terms: int
    postings: int
    index_seconds: float
    save_seconds: float
    bytes: int

    def line(self) -> str:
        return (f"{self.folder}: BM25 index of {self.documents} documents, {self.terms} terms, {self.postings} "
                f"postings ({self.bytes / 2**20:.1f} MiB); tokenized and weighted in {self.index_seconds:.1f} s, "
                f"written in {self.save_seconds:.1f} s")


def is_index(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder``'s manifest says it is a BM25 index (read with the bounds of
    :func:`read_manifest`, not checked further; a manifest that cannot be read so is not one)."""
    try:
        m = _read_json(Path(folder).expanduser(), MANIFEST, MAX_MANIFEST_BYTES)
    except HarnessError:
        return False
    return isinstance(m, dict) and m.get("kind") == KIND


# -- reading -------------------------------------------------------------------------------------------


def _bad(folder: Path, what: str) -> HarnessError:
    return HarnessError(f"{folder}: not a valid BM25 index ({what}); rebuild it with `harness index build -r bm25`")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _read_json(folder: Path, name: str, limit: int) -> Any:
    """``folder/name``: a regular file (never a link, a FIFO or a device: see
    :func:`~harness.formats.npy.open_regular`) of at most ``limit`` bytes, UTF-8 JSON with bounded
    nesting and integers and no repeated key (:func:`harness.formats.bounded.loads`)."""
    path = folder / name
    try:
        with open_regular(path, links=False) as fh:
            raw = fh.read(limit + 1)
    except OSError as exc:
        raise DataError(f"unreadable: {exc.strerror or exc}", path) from None
    if len(raw) > limit:
        raise DataError(f"holds more than {limit:,} bytes, more than an index of its counts writes", path)
    try:
        text = raw.decode("utf-8", "surrogatepass")  # ids may hold lone surrogates, written so
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 ({exc.reason} at byte {exc.start})", path) from None
    return loads(text, str(path))


def _check_fields(folder: Path, m: Mapping[str, Any]) -> None:
    """The manifest's schema: each field of its type, numbers finite, counts within bounds, the
    arrays' dtypes and shapes those the counts make."""
    path = folder / MANIFEST
    for key, kind in _KEYS.items():
        value = m.get(key)
        if not isinstance(value, kind) or isinstance(value, bool) is not (kind is bool):
            raise DataError(f"field {key!r} is {_show(value)}; rebuild the index with `harness index build -r bm25`",
                            path)
    for key in ("k1", "b", "epsilon", "avgdl", "average_idf", "min_weight"):
        if not math.isfinite(m[key]):
            raise DataError(f"field {key!r} is {m[key]!r}, not a finite number", path)
    if not m["complete"]:
        raise _bad(folder, "the build did not finish")
    if not (1 <= m["documents"] <= MAX_DOCS and 1 <= m["terms"] <= MAX_POSTINGS
            and m["terms"] <= m["postings"] <= MAX_POSTINGS):
        raise _bad(folder, f"counts out of bounds: {m['documents']} documents, {m['terms']} terms, "
                           f"{m['postings']} postings")
    if isinstance(m["stopwords"], list) and not all(isinstance(w, str) for w in m["stopwords"]):
        raise DataError("field 'stopwords' holds a non-string", path)
    want = {name: {"dtype": dtype, "shape": list(shape)}
            for name, (dtype, shape) in expected_arrays(m["documents"], m["terms"], m["postings"]).items()}
    if m["arrays"] != want:
        raise DataError(f"field 'arrays' is {_show(m['arrays'])}; the counts make {_show(want)}", path)


def _check_checksum_fields(m: Mapping[str, Any], path: Path) -> bool:
    """Whether the manifest records checksums (``checksums``, ``sha256``, ``manifest_sha256``), each
    field checked; a manifest with none of them was written before checksums were recorded."""
    if not any(key in m for key in ("checksums", CHECKSUM, MANIFEST_DIGEST)):
        return False
    if m.get("checksums") != CHECKSUM:
        raise DataError(f"field 'checksums' must be {CHECKSUM!r}, not {_show(m.get('checksums'))}", path)
    sums = m.get(CHECKSUM)
    if (not isinstance(sums, dict) or set(sums) != set(FILES)
            or not all(isinstance(v, str) and _HEX64.fullmatch(v) for v in sums.values())):
        raise DataError(f"field {CHECKSUM!r} must map {', '.join(FILES)} to their sha256 (64 lowercase hex digits), "
                        f"not {_show(sums)}", path)
    digest = m.get(MANIFEST_DIGEST)
    if not isinstance(digest, str) or not _HEX64.fullmatch(digest):
        raise DataError(f"field {MANIFEST_DIGEST!r} must be a sha256 (64 lowercase hex digits), not {_show(digest)}",
                        path)
    return True


def read_manifest(folder: str | os.PathLike[str], check_digest: bool = True) -> dict[str, Any]:
    """The manifest, its schema, types and counts checked, and (``check_digest``) its fields against
    the ``manifest_sha256`` its build recorded, when it records one (:func:`require_checksums`)."""
    folder = Path(folder).expanduser()
    path = folder / MANIFEST
    if not os.path.lexists(path):
        raise HarnessError(f"{folder}: not an index (no {MANIFEST}); build one with `harness index build -r bm25`")
    m = _read_json(folder, MANIFEST, MAX_MANIFEST_BYTES)
    if not isinstance(m, dict) or m.get("kind") != KIND:
        raise DataError(f"not a BM25 index manifest (kind is not {KIND!r})", path)
    if m.get("format") != FORMAT:
        raise HarnessError(f"{folder}: BM25 index format {_show(m.get('format'))}; this harness reads format "
                           f"{FORMAT} (rebuild it with `harness index build -r bm25`)")
    _check_fields(folder, m)
    if _check_checksum_fields(m, path) and check_digest:
        got = manifest_digest(m)
        if got != m[MANIFEST_DIGEST]:
            raise DataError(f"its fields do not match the {MANIFEST_DIGEST} its build recorded (sha256 {got}, "
                            f"recorded {m[MANIFEST_DIGEST]}): a parameter, count or digest was edited after the "
                            f"build, so it no longer describes the weights; rebuild the index with "
                            f"`harness index build -r bm25 --overwrite`", path)
    return m


def require_checksums(folder: Path, m: Mapping[str, Any]) -> None:
    """Refuse an index whose manifest records no checksums (built before they were recorded): neither
    its parameters nor its weights could be checked, and no check is an error, never a pass."""
    if MANIFEST_DIGEST not in m:
        raise DataError("records no checksums (the index was built before the harness recorded them), so neither "
                        "its parameters nor its weights can be verified; rebuild it with `harness index build -r "
                        "bm25 ... --overwrite` (seconds to minutes)", folder / MANIFEST)


def _mismatch(folder: Path, m: Mapping[str, Any], name: str) -> tuple[Path, str, str] | None:
    """``(file, sha256 now, sha256 recorded)`` when ``name``'s sha256 differs from the manifest's."""
    path = folder / name
    got, want = file_sha256(path, links=False), m[CHECKSUM][name]
    return None if got == want else (path, got, want)


def _map(path: Path, dtype: str, shape: tuple[int, ...], offset: int) -> np.ndarray:
    """The array after its header, memory-mapped read-only from the regular file opened here."""
    with open_regular(path, links=False) as fh:
        try:
            return np.memmap(fh, dtype=np.dtype(dtype), mode="r", offset=offset, shape=shape, order="C")
        except (OSError, ValueError) as exc:
            raise DataError(f"cannot be mapped: {exc}", path) from None


@dataclass
class BM25Index:
    """An index folder opened for search: arrays memory-mapped, ids and terms in memory; ``verified``:
    whether every file's sha256 was checked against the manifest when it was opened."""

    folder: Path
    manifest: dict[str, Any]
    ids: list[str]
    terms: list[str]
    weights: np.ndarray
    docs: np.ndarray
    offsets: np.ndarray
    idf: np.ndarray
    rank: np.ndarray
    verified: bool = False

    @property
    def nonnegative(self) -> bool:
        return bool(self.manifest["min_weight"] >= 0.0)


def open_index(folder: str | os.PathLike[str], verify: bool = True) -> BM25Index:
    """Open and validate an index folder, in this order: the manifest (schema, counts, its
    ``manifest_sha256``; an index without checksums is refused), each ``.npy`` header, dtype and size,
    ``ids.json`` and ``terms.json`` (bounded), every file's sha256 when ``verify``, then the values.
    Bounded work per byte read; nothing is unpickled."""
    folder = Path(folder).expanduser()
    m = read_manifest(folder)
    require_checksums(folder, m)
    n_docs, n_terms, n_post = m["documents"], m["terms"], m["postings"]
    want = expected_arrays(n_docs, n_terms, n_post)
    heads = {name: check_array_file(folder / f"{name}.npy", shape, dtype, links=False)
             for name, (dtype, shape) in want.items()}
    ids = _read_json(folder, "ids.json", 4096 * n_docs + 2**20)  # counts are bounded by the arrays' sizes
    terms = _read_json(folder, "terms.json", 4096 * n_terms + 2**20)
    if verify:
        for name in FILES:
            bad = _mismatch(folder, m, name)
            if bad is not None:
                raise DataError(f"sha256 {bad[1]}, while {MANIFEST} records {bad[2]}: the file was changed or "
                                f"swapped after the build (`harness index verify {folder}` checks every file; "
                                f"bm25:index=...,verify=false skips this check)", bad[0])
    for name, values, count in (("ids.json", ids, n_docs), ("terms.json", terms, n_terms)):
        if not isinstance(values, list) or len(values) != count or not all(isinstance(v, str) for v in values):
            raise DataError(f"is not a list of {count} strings", folder / name)
    if len(set(terms)) != n_terms or ids_digest(ids) != m["ids_sha256"]:
        raise _bad(folder, "terms repeat, or the ids do not match the manifest's digest")
    arrays = {name: _map(folder / f"{name}.npy", dtype, shape, heads[name]) for name, (dtype, shape) in want.items()}
    _check_arrays(folder, m, arrays)
    return BM25Index(folder, m, ids, terms, **arrays, verified=verify)


def verify_index(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """Check an index folder whole (``harness index verify``): the manifest's schema (an error when
    malformed or without checksums), the manifest's fields against its ``manifest_sha256`` and every
    file's sha256 against the one the build recorded; when all match, every other check of
    :func:`open_index`. Returns ``{"folder", "kind", "files", "checksums": "sha256", "mismatches":
    [{"file", "sha256", "recorded"}, ...]}``."""
    folder = Path(folder).expanduser()
    m = read_manifest(folder, check_digest=False)
    require_checksums(folder, m)
    mismatches = []
    got = manifest_digest(m)
    if got != m[MANIFEST_DIGEST]:
        mismatches.append({"file": str(folder / MANIFEST), "sha256": got, "recorded": m[MANIFEST_DIGEST]})
    for name in FILES:
        bad = _mismatch(folder, m, name)
        if bad is not None:
            mismatches.append({"file": str(bad[0]), "sha256": bad[1], "recorded": bad[2]})
    if not mismatches:
        open_index(folder, verify=False)
    return {"folder": str(folder), "kind": KIND, "files": [MANIFEST, *FILES], "checksums": CHECKSUM,
            "mismatches": mismatches}


def _check_arrays(folder: Path, m: Mapping[str, Any], a: Mapping[str, np.ndarray]) -> None:
    """Values within range: offsets from 0 to postings and non-decreasing, documents and ranks
    within the corpus, weights finite and not below the manifest's ``min_weight``."""
    off, docs, rank, n_docs = a["offsets"], a["docs"], a["rank"], m["documents"]
    if off[0] != 0 or off[-1] != m["postings"] or (off.size > 1 and bool((np.diff(off) < 0).any())):
        raise _bad(folder, "offsets.npy is not a non-decreasing range from 0 to the postings")
    if docs.size and (int(docs.min()) < 0 or int(docs.max()) >= n_docs):
        raise _bad(folder, "docs.npy holds a document number outside the corpus")
    if np.bincount(rank.clip(0, n_docs), minlength=n_docs + 1)[:n_docs].min() != 1:
        raise _bad(folder, "rank.npy is not a permutation of the documents")
    for name in ("weights", "idf"):
        arr = a[name]
        if arr.size and not bool(np.isfinite(arr).all()):
            raise _bad(folder, f"{name}.npy holds a value that is not finite")
    if a["weights"].size and float(a["weights"].min()) < m["min_weight"]:
        raise _bad(folder, "weights.npy holds a weight below the manifest's min_weight")
