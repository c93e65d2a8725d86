"""An embedding index on disk: a corpus encoded into shards, searched in bounded memory.

Layout of an index folder::

    index.json                 the manifest: model identity and encoder settings, prompt templates,
                               normalisation, dimension, dtype, document count, shard size, the
                               sha256 of the ordered document ids, where the corpus came from
    shards/000000/emb.npy      float32 or float16 [rows, dim], read with mmap_mode="r"
    shards/000000/ids.json     the shard's document ids, in order (JSON: never pickle)
    shards/000000/shard.json   its range in the corpus order, row count, dimension, ids sha256, and
                               the sha256 of its emb.npy and ids.json

Shards are contiguous ranges of the corpus order (the dataset's own, which also breaks score ties),
so shard *i* always holds the same documents: a rerun skips complete shards and a dead worker costs
one shard. Each shard is written into a temporary folder and renamed into place, so a crash never
leaves half a shard; a folder ``shards/NNNNNN`` exists only complete.

An index folder is data the harness may not have written: opening one checks the manifest, every
``shard.json``, every ``emb.npy`` header and the ids against each other
(:mod:`harness.retrievers.dense.index_files`), and a search checks each shard's sha256 before it
scores it (``verify=False`` skips that; :func:`verify_index` checks them all).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness.concepts.errors import DataError, HarnessError
from harness.retrievers.dense.index_files import (
    CHECKSUM,
    CHECKSUM_FILES,
    DTYPES,
    FORMAT,
    KIND,
    MAX_ID_BYTES,
    MAX_JSON_BYTES,
    MAX_SHARDS,
    HashingWriter,
    check_ids,
    check_manifest,
    check_npy,
    check_shard_meta,
    file_sha256,
    read_json,
)
from harness.retrievers.dense.search import CHUNK_ROWS, NonFiniteScore, row_blocks, top_k_blocks

__all__ = ["DEFAULT_SHARD_SIZE", "DTYPES", "FORMAT", "KIND", "MANIFEST", "SHARDS", "EmbeddingIndex", "Shard",
           "ShardPlan", "add_checksums", "ids_digest", "plan_shards", "read_manifest", "shard_complete", "verify_index",
           "write_manifest", "write_shard"]

MANIFEST = "index.json"
SHARDS = "shards"
#: documents per shard unless told otherwise (146 MiB of 384-d float32)
DEFAULT_SHARD_SIZE = 100_000


def ids_digest(ids: Sequence[str]) -> str:
    """sha256 of the ordered document ids (JSON, so no id can be confused with a separator)."""
    return hashlib.sha256(json.dumps(list(ids), ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class ShardPlan:
    """Shard ``number`` holds the documents at positions ``start`` (included) to ``end`` (excluded)."""

    number: int
    start: int
    end: int

    @property
    def name(self) -> str:
        return f"{self.number:06d}"


def plan_shards(count: int, shard_size: int) -> list[ShardPlan]:
    if shard_size < 1:
        raise HarnessError(f"shard size must be >= 1, got {shard_size}")
    if -(-count // shard_size) > MAX_SHARDS:
        raise HarnessError(f"{count} documents in shards of {shard_size} make more than {MAX_SHARDS} shards; "
                           f"choose a larger shard size")
    return [ShardPlan(i, s, min(s + shard_size, count)) for i, s in enumerate(range(0, count, shard_size))]


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def write_manifest(folder: Path, manifest: Mapping[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    _write_json(folder / MANIFEST, dict(manifest))


def read_manifest(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """The manifest of the index at ``folder``, checked against the schema (one :class:`DataError`
    naming the file otherwise)."""
    folder = Path(folder)
    path = folder / MANIFEST
    if not path.exists():
        raise HarnessError(f"{folder}: not an index ({MANIFEST} is missing)")
    return check_manifest(read_json(path, "manifest"), path)


def shard_dir(folder: Path, plan: ShardPlan) -> Path:
    return folder / SHARDS / plan.name


def read_shard_meta(folder: Path, plan: ShardPlan, dtype: str, dimension: int | None = None,
                    checksums: bool = False) -> dict[str, Any]:
    """A shard's ``shard.json`` and ``emb.npy`` header, checked against the plan and the manifest."""
    path = shard_dir(folder, plan)
    meta = check_shard_meta(read_json(path / "shard.json", "shard.json"), path / "shard.json", number=plan.number,
                            start=plan.start, end=plan.end, dtype=dtype, dimension=dimension, checksums=checksums)
    check_npy(path / "emb.npy", meta["rows"], meta["dimension"], dtype)
    return meta


def shard_complete(folder: Path, plan: ShardPlan, ids: Sequence[str], dtype: str) -> dict[str, Any] | None:
    """The ``shard.json`` of a shard on disk, whole, holding exactly these documents; None when the
    shard is not written yet. A shard on disk that does not match is an error naming its file."""
    if not (shard_dir(folder, plan) / "shard.json").is_file():
        return None
    meta = read_shard_meta(folder, plan, dtype)
    if meta["ids_sha256"] != ids_digest(ids):
        raise DataError("holds other documents than the corpus plans for this shard; delete the shard's folder "
                        "or pass --overwrite", shard_dir(folder, plan) / "shard.json")
    return meta


def add_checksums(folder: Path, plan: ShardPlan, meta: Mapping[str, Any]) -> dict[str, Any]:
    """Record the sha256 of a complete shard's files in its ``shard.json`` (a shard written before
    checksums were recorded, completed by a resumed build)."""
    path = shard_dir(folder, plan)
    meta = {**meta, CHECKSUM: {name: file_sha256(path / name) for name in CHECKSUM_FILES}}
    _write_json(path / "shard.json", meta)
    return meta


def _some(ids: Sequence[str], n: int = 3) -> str:
    shown = ", ".join(repr(i) for i in ids[:n])
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > n else "")


def finite_vectors(plan: ShardPlan, ids: Sequence[str], vectors: np.ndarray, dtype: str) -> np.ndarray:
    """``vectors`` as ``dtype``; non-finite ones (NaN, infinite, or too large for float16) are an error
    naming their documents."""
    with np.errstate(over="ignore", invalid="ignore"):  # reported below, naming the documents
        out = np.ascontiguousarray(vectors, dtype=np.dtype(dtype))
    for arr, why in ((np.asarray(vectors), "the model gave non-finite vectors (NaN or infinite)"),
                     (out, f"vectors do not fit in {dtype} (infinite after conversion)")):
        bad = np.flatnonzero(~np.isfinite(arr).all(axis=1)) if arr.size else np.zeros(0, dtype=np.int64)
        if len(bad):
            raise HarnessError(f"shard {plan.name}: {why} for document(s) {_some([ids[i] for i in bad])}; "
                               f"nothing written")
    return out


def write_shard(folder: Path, plan: ShardPlan, ids: Sequence[str], vectors: np.ndarray, dtype: str,
                extra: Mapping[str, Any] | None = None) -> bool:
    """Write one shard atomically (a temporary folder renamed into place), with the sha256 of its
    files; False when another writer finished it first (its copy is kept)."""
    if len(ids) != plan.end - plan.start or vectors.shape[0] != len(ids):
        raise ValueError(f"shard {plan.name}: {vectors.shape[0]} vectors for {len(ids)} ids, "
                         f"planned {plan.end - plan.start}")
    array = finite_vectors(plan, ids, vectors, dtype)
    final = shard_dir(folder, plan)
    tmp = folder / SHARDS / f".{plan.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    try:
        with open(tmp / "emb.npy", "wb") as fh:
            writer = HashingWriter(fh)
            np.save(writer, array, allow_pickle=False)
            fh.flush()
            os.fsync(fh.fileno())
        ids_bytes = json.dumps(list(ids), ensure_ascii=False).encode("utf-8")
        (tmp / "ids.json").write_bytes(ids_bytes)
        meta = {"number": plan.number, "start": plan.start, "end": plan.end, "rows": len(ids),
                "dimension": int(array.shape[1]), "dtype": dtype, "ids_sha256": ids_digest(ids),
                CHECKSUM: {"emb.npy": writer.hexdigest(), "ids.json": hashlib.sha256(ids_bytes).hexdigest()},
                "written": round(time.time(), 3), **(extra or {})}
        (tmp / "shard.json").write_text(json.dumps(meta, indent=2), encoding="utf-8")
        try:
            os.rename(tmp, final)
        except OSError:
            if (final / "shard.json").is_file():  # another writer finished this shard first
                return False
            raise
        return True
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class Shard:
    """One shard of an opened index (its ``shard.json`` and ``emb.npy`` header already checked);
    ``vectors`` is a read-only memory map."""

    plan: ShardPlan
    path: Path
    meta: dict[str, Any]
    verified: bool = field(default=False, compare=False)

    @property
    def vectors(self) -> np.ndarray:
        return np.load(self.path / "emb.npy", mmap_mode="r", allow_pickle=False)

    @property
    def ids(self) -> list[str]:
        path = self.path / "ids.json"
        rows = self.plan.end - self.plan.start
        ids = check_ids(read_json(path, "ids.json", MAX_JSON_BYTES + rows * MAX_ID_BYTES), path, rows)
        if ids_digest(ids) != self.meta["ids_sha256"]:
            raise DataError("the document ids do not match the ids_sha256 of shard.json", path)
        return ids

    def mismatches(self) -> list[tuple[Path, str, str]]:
        """``(file, sha256 now, sha256 recorded)`` for each file whose checksum differs."""
        sums = self.meta.get(CHECKSUM) or {}
        out = []
        for name in CHECKSUM_FILES if sums else ():
            got = file_sha256(self.path / name)
            if got != sums[name]:
                out.append((self.path / name, got, sums[name]))
        return out


class EmbeddingIndex:
    """An index folder opened for search (see the module docstring). Opening it checks the manifest,
    every ``shard.json`` and every ``emb.npy`` header; ``verify`` (default): each shard's sha256 is
    checked before its vectors are first used. Raises :class:`HarnessError` naming the file when
    something is missing or does not match."""

    def __init__(self, folder: str | os.PathLike[str], verify: bool = True) -> None:
        self.folder = Path(folder).expanduser()
        self.manifest = read_manifest(self.folder)
        m = self.manifest
        self.count, self.dimension, self.dtype = m["count"], m.get("dimension"), m["dtype"]
        self.verify = bool(verify)
        plans = plan_shards(self.count, m["shard_size"])
        missing = [p.name for p in plans if not (shard_dir(self.folder, p) / "shard.json").is_file()]
        if missing:
            raise HarnessError(f"{self.folder}: index incomplete, {len(missing)} of {len(plans)} shard(s) missing "
                               f"({', '.join(missing[:5])}{'...' if len(missing) > 5 else ''}); run the same "
                               f"`harness index build` again to finish it")
        self.shards: list[Shard] = []
        for p in plans:
            meta = read_shard_meta(self.folder, p, self.dtype, self.dimension, m.get("checksums") == CHECKSUM)
            self.dimension = self.dimension or meta["dimension"]
            self.shards.append(Shard(p, shard_dir(self.folder, p), meta))
        have = [s for s in self.shards if s.meta.get(CHECKSUM)]
        if have and len(have) < len(self.shards):
            lacking = next(s for s in self.shards if not s.meta.get(CHECKSUM))
            raise DataError(f"records no {CHECKSUM} checksums, while other shards do", lacking.path / "shard.json")
        self.checksums: str | None = CHECKSUM if have or m.get("checksums") == CHECKSUM else None
        self._ids: list[str] | None = None

    def __repr__(self) -> str:
        return (f"EmbeddingIndex({str(self.folder)!r}, count={self.count}, shards={len(self.shards)}, "
                f"dtype={self.dtype})")

    @property
    def ids(self) -> list[str]:
        """Every document id, in index order (read once from the shards, checked against the manifest)."""
        if self._ids is None:
            ids = [d for s in self.shards for d in s.ids]
            if len(ids) != self.count or ids_digest(ids) != self.manifest["ids_sha256"]:
                raise DataError("the shards' document ids do not match the manifest's count and ids_sha256",
                                self.folder / MANIFEST)
            self._ids = ids
        return self._ids

    def shard_vectors(self, shard: Shard) -> np.ndarray:
        """A shard's vectors (memory-mapped), its checksums checked first when ``verify`` (once)."""
        if self.verify and not shard.verified:
            for path, got, want in shard.mismatches():
                raise DataError(f"sha256 {got}, while shard.json records {want}: the file was changed or "
                                f"swapped after the build (`harness index verify {self.folder}` checks every "
                                f"shard; dense:index=...,verify=false skips this check)", path)
            shard.verified = True
        return shard.vectors

    def blocks(self, rows: int = CHUNK_ROWS, numbers: Sequence[int] | None = None
               ) -> Iterator[tuple[int, np.ndarray]]:
        """``(position, rows)`` blocks over every shard (or the shards ``numbers``), memory-mapped
        (read as they are scored)."""
        for s in self.shards if numbers is None else [self.shards[n] for n in numbers]:
            yield from row_blocks(self.shard_vectors(s), s.plan.start, rows)

    def search(self, queries: np.ndarray, k: int, numbers: Sequence[int] | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
        """Exact top ``k`` positions and scores per query over every shard (or the shards ``numbers``),
        in bounded memory; a non-finite score is an error naming the shard."""
        try:
            return top_k_blocks(queries, self.blocks(numbers=numbers), min(int(k), self.count))
        except NonFiniteScore as exc:
            raise self._non_finite(exc.position) from None

    def _non_finite(self, position: int | None) -> HarnessError:
        if position is None:
            return HarnessError(f"dense:index {self.folder}: the query vectors are not finite (NaN or infinite)")
        shard = next(s for s in self.shards if s.plan.start <= position < s.plan.end)
        return DataError(f"row {position - shard.plan.start} is not a finite vector (its scores are NaN or "
                         f"infinite); the index is damaged", shard.path / "emb.npy")

    def load(self) -> np.ndarray:
        """Every vector in memory as float32 (FAISS, tests); non-finite ones are an error."""
        parts = []
        for s in self.shards:
            v = np.asarray(self.shard_vectors(s), dtype=np.float32)
            bad = np.flatnonzero(~np.isfinite(v).all(axis=1))
            if len(bad):
                raise self._non_finite(s.plan.start + int(bad[0]))
            parts.append(v)
        return np.concatenate(parts) if parts else np.zeros((0, self.dimension or 0), dtype=np.float32)


def verify_index(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """Check an index folder whole (``harness index verify``): the manifest, every ``shard.json``,
    ``emb.npy`` header and ``ids.json`` (an error at the first malformed one), then every file's sha256
    against what its shard recorded. Returns ``{"folder", "shards", "checksums": "sha256" or None
    (none recorded), "mismatches": [{"shard", "file", "sha256", "recorded"}, ...]}``."""
    index = EmbeddingIndex(folder, verify=False)
    _ = index.ids
    mismatches = [{"shard": s.plan.name, "file": str(path), "sha256": got, "recorded": want}
                  for s in index.shards for path, got, want in s.mismatches()]
    return {"folder": str(index.folder), "shards": len(index.shards), "checksums": index.checksums,
            "mismatches": mismatches}
