"""A BM25 index on disk: a corpus tokenized and weighted once, searched memory-mapped.

Layout of an index folder::

    index.json    the manifest: kind, format, k1, b, epsilon, tokenizer, stopwords, stemmer, counts
                  (documents, terms, postings), avgdl, average_idf, the sha256 of the ordered ids and
                  of the corpus (ids and texts), where the corpus came from, each array's dtype and shape
    ids.json      document ids, in corpus (score-vector) order
    terms.json    terms, in term-id order
    weights.npy   float64 [postings]: each (term, document) pair's BM25Okapi weight
    docs.npy      int32 [postings]: its document, ascending within a term
    offsets.npy   int64 [terms + 1]: term t's postings are offsets[t]:offsets[t + 1]
    idf.npy       float64 [terms], after the epsilon floor
    rank.npy      int32 [documents]: each document's position in doc-id order (ties)

Every file is written to a temporary name, flushed, fsynced and renamed into place; the manifest is
written last, so a folder holding a manifest holds the whole index. Reading treats every file as
untrusted: the manifest's schema and types, counts within bounds, each ``.npy`` header (no pickles)
against the manifest, offsets and document numbers within range, weights finite; anything else is a
:class:`HarnessError` naming the folder.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from harness.concepts.errors import HarnessError

FORMAT = 1
KIND = "harness-bm25-index"
MANIFEST = "index.json"
#: bounds on what a manifest may declare (checked before anything is read)
MAX_DOCS = 2**31 - 1
MAX_POSTINGS = 2**40
MAX_JSON_BYTES = 2**34
ARRAYS = ("weights", "docs", "offsets", "idf", "rank")
_KEYS: Mapping[str, type | tuple[type, ...]] = MappingProxyType({
    "kind": str, "format": int, "k1": (int, float), "b": (int, float), "epsilon": (int, float),
    "tokenizer": str, "stopwords": (str, list), "stemmer": str, "documents": int, "terms": int,
    "postings": int, "avgdl": (int, float), "average_idf": (int, float), "ids_sha256": str,
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


# -- writing -------------------------------------------------------------------------------------------


def _atomic(path: Path, write: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
    try:
        with open(tmp, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


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
    shapes = {}
    for name in ARRAYS:
        arr = np.ascontiguousarray(arrays[name])
        _atomic(folder / f"{name}.npy", lambda fh, a=arr: np.save(fh, a, allow_pickle=False))
        shapes[name] = {"dtype": str(arr.dtype), "shape": list(arr.shape)}
    _atomic(folder / "ids.json", lambda fh: fh.write(_json_bytes(list(ids))))
    _atomic(folder / "terms.json", lambda fh: fh.write(_json_bytes(list(terms))))
    out = {"kind": KIND, "format": FORMAT, **manifest, "arrays": shapes, "created": round(time.time(), 3),
           "complete": True}
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
    """Whether ``folder``'s manifest says it is a BM25 index (not checked further)."""
    try:
        with open(Path(folder).expanduser() / MANIFEST, "rb") as fh:
            return json.loads(fh.read(2**20)).get("kind") == KIND
    except (OSError, ValueError, AttributeError):
        return False


# -- reading -------------------------------------------------------------------------------------------


def _bad(folder: Path, what: str) -> HarnessError:
    return HarnessError(f"{folder}: not a valid BM25 index ({what}); rebuild it with `harness index build -r bm25`")


def _own_file(folder: Path, name: str) -> Path:
    """``folder/name``, refused when it is a link (a file of the index never leads out of its folder)."""
    path = folder / name
    if path.is_symlink():
        raise _bad(folder, f"{name} is a symbolic link")
    return path


def _read_json(folder: Path, name: str, limit: int) -> Any:
    path = _own_file(folder, name)
    try:
        size = path.stat().st_size
        if size > limit:
            raise _bad(folder, f"{name} is {size} bytes, more than its counts allow")
        return json.loads(path.read_bytes().decode("utf-8", "surrogatepass"))
    except FileNotFoundError:
        raise _bad(folder, f"{name} is missing") from None
    except (OSError, ValueError) as exc:
        raise _bad(folder, f"{name} unreadable: {exc}") from None


def read_manifest(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest, its schema, types and counts checked."""
    folder = Path(folder).expanduser()
    if not (folder / MANIFEST).is_file():
        raise HarnessError(f"{folder}: not an index (no {MANIFEST}); build one with `harness index build -r bm25`")
    m = _read_json(folder, MANIFEST, 2**20)
    if not isinstance(m, dict) or m.get("kind") != KIND:
        raise _bad(folder, f"{MANIFEST} is not a BM25 index manifest")
    if m.get("format") != FORMAT:
        raise HarnessError(f"{folder}: BM25 index format {m.get('format')!r}; this harness reads format {FORMAT} "
                           f"(rebuild it with `harness index build -r bm25`)")
    for key, kind in _KEYS.items():
        value = m.get(key)
        if not isinstance(value, kind) or isinstance(value, bool) is not (kind is bool):
            raise _bad(folder, f"manifest field {key!r} is {value!r}")
    for key in ("k1", "b", "epsilon", "avgdl", "average_idf"):
        if not math.isfinite(m[key]):
            raise _bad(folder, f"manifest field {key!r} is {m[key]!r}")
    if not m["complete"]:
        raise _bad(folder, "the build did not finish")
    if not (1 <= m["documents"] <= MAX_DOCS and 1 <= m["terms"] <= MAX_POSTINGS
            and m["terms"] <= m["postings"] <= MAX_POSTINGS):
        raise _bad(folder, f"counts out of bounds: {m['documents']} documents, {m['terms']} terms, "
                           f"{m['postings']} postings")
    if isinstance(m["stopwords"], list) and not all(isinstance(w, str) for w in m["stopwords"]):
        raise _bad(folder, "manifest field 'stopwords' holds a non-string")
    return m


def _load_array(folder: Path, name: str, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    path = _own_file(folder, f"{name}.npy")
    try:
        with open(path, "rb") as fh:  # the header first: a pickled array is never unpickled
            version = np.lib.format.read_magic(fh)
            if version == (1, 0):
                head = np.lib.format.read_array_header_1_0(fh)
            elif version == (2, 0):
                head = np.lib.format.read_array_header_2_0(fh)
            else:
                raise ValueError(f"npy version {version}")
        if head != (shape, False, np.dtype(dtype)):
            raise ValueError(f"header says {head[1] and 'Fortran ' or ''}{head[2]} {head[0]}, "
                             f"the manifest {dtype} {shape}")
        arr = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise _bad(folder, f"{name}.npy is missing") from None
    except (OSError, ValueError, TypeError) as exc:
        raise _bad(folder, f"{name}.npy: {exc}") from None
    if arr.shape != shape or arr.dtype != np.dtype(dtype):
        raise _bad(folder, f"{name}.npy holds {arr.dtype} {arr.shape}, not {dtype} {shape}")
    return arr


@dataclass
class BM25Index:
    """An index folder opened for search: arrays memory-mapped, ids and terms in memory."""

    folder: Path
    manifest: dict[str, Any]
    ids: list[str]
    terms: list[str]
    weights: np.ndarray
    docs: np.ndarray
    offsets: np.ndarray
    idf: np.ndarray
    rank: np.ndarray

    @property
    def nonnegative(self) -> bool:
        return bool(self.manifest.get("min_weight", -1.0) >= 0.0)


def open_index(folder: str | os.PathLike[str]) -> BM25Index:
    """Open and validate an index folder (bounded work per byte read; nothing is unpickled)."""
    folder = Path(folder).expanduser()
    m = read_manifest(folder)
    n_docs, n_terms, n_post = m["documents"], m["terms"], m["postings"]
    want = expected_arrays(n_docs, n_terms, n_post)
    arrays = {name: _load_array(folder, name, dtype, shape) for name, (dtype, shape) in want.items()}
    ids = _read_json(folder, "ids.json", 4096 * n_docs + 2**20)  # counts are bounded by the arrays' sizes
    terms = _read_json(folder, "terms.json", 4096 * n_terms + 2**20)
    for name, values, count in (("ids.json", ids, n_docs), ("terms.json", terms, n_terms)):
        if not isinstance(values, list) or len(values) != count or not all(isinstance(v, str) for v in values):
            raise _bad(folder, f"{name} is not a list of {count} strings")
    if len(set(terms)) != n_terms or ids_digest(ids) != m["ids_sha256"]:
        raise _bad(folder, "terms repeat, or the ids do not match the manifest's digest")
    _check_arrays(folder, m, arrays)
    return BM25Index(folder, m, ids, terms, **arrays)


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
    low = m.get("min_weight")
    if not isinstance(low, int | float) or isinstance(low, bool) or not math.isfinite(low):
        raise _bad(folder, f"manifest field 'min_weight' is {low!r}")
    for name in ("weights", "idf"):
        arr = a[name]
        if arr.size and not bool(np.isfinite(arr).all()):
            raise _bad(folder, f"{name}.npy holds a value that is not finite")
    if a["weights"].size and float(a["weights"].min()) < low:
        raise _bad(folder, "weights.npy holds a weight below the manifest's min_weight")

