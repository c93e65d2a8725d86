"""An embedding index on disk: a corpus encoded into shards, searched in bounded memory.

Layout of an index folder::

    index.json                 the manifest: model identity and encoder settings, prompt templates,
                               normalisation, dimension, dtype, document count, shard size, the
                               sha256 of the ordered document ids, where the corpus came from
    shards/000000/emb.npy      float32 or float16 [rows, dim], read with mmap_mode="r"
    shards/000000/ids.json     the shard's document ids, in order (JSON: never pickle)
    shards/000000/shard.json   its range in the corpus order, row count, dimension, ids sha256

Shards are contiguous ranges of the corpus order (the dataset's own, which also breaks score ties),
so shard *i* always holds the same documents: a rerun skips complete shards and a dead worker costs
one shard. Each shard is written into a temporary folder and renamed into place, so a crash never
leaves half a shard; a folder ``shards/NNNNNN`` exists only complete.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from harness.concepts.errors import HarnessError
from harness.retrievers.dense.search import CHUNK_ROWS, row_blocks, top_k_blocks

FORMAT = 1
KIND = "harness-dense-index"
MANIFEST = "index.json"
SHARDS = "shards"
DTYPES = ("float32", "float16")
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
    return [ShardPlan(i, s, min(s + shard_size, count)) for i, s in enumerate(range(0, count, shard_size))]


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HarnessError(f"{path.parent}: not an index ({what} {path.name} is missing)") from None
    except (OSError, ValueError) as exc:
        raise HarnessError(f"{path}: unreadable {what}: {exc}") from None


def write_manifest(folder: Path, manifest: Mapping[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    _write_json(folder / MANIFEST, dict(manifest))


def read_manifest(folder: str | os.PathLike[str]) -> dict[str, Any]:
    folder = Path(folder)
    data = _read_json(folder / MANIFEST, "manifest")
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise HarnessError(f"{folder / MANIFEST}: not a harness dense index manifest")
    if data.get("format") != FORMAT:
        raise HarnessError(f"{folder}: index format {data.get('format')!r}; this harness reads format {FORMAT} "
                           f"(rebuild it with `harness index build`)")
    return data


def shard_dir(folder: Path, plan: ShardPlan) -> Path:
    return folder / SHARDS / plan.name


def shard_complete(folder: Path, plan: ShardPlan, ids: Sequence[str]) -> bool:
    """The shard is on disk, whole, and holds exactly these documents."""
    meta_path = shard_dir(folder, plan) / "shard.json"
    if not meta_path.is_file():
        return False
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (meta.get("start"), meta.get("end"), meta.get("ids_sha256")) == (plan.start, plan.end, ids_digest(ids))


def write_shard(folder: Path, plan: ShardPlan, ids: Sequence[str], vectors: np.ndarray, dtype: str,
                extra: Mapping[str, Any] | None = None) -> bool:
    """Write one shard atomically (a temporary folder renamed into place); False when another writer
    finished it first (its copy is kept)."""
    if len(ids) != plan.end - plan.start or vectors.shape[0] != len(ids):
        raise ValueError(f"shard {plan.name}: {vectors.shape[0]} vectors for {len(ids)} ids, "
                         f"planned {plan.end - plan.start}")
    final = shard_dir(folder, plan)
    tmp = folder / SHARDS / f".{plan.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
    tmp.mkdir(parents=True)
    try:
        with open(tmp / "emb.npy", "wb") as fh:
            np.save(fh, np.ascontiguousarray(vectors, dtype=np.dtype(dtype)))
            fh.flush()
            os.fsync(fh.fileno())
        (tmp / "ids.json").write_text(json.dumps(list(ids), ensure_ascii=False), encoding="utf-8")
        meta = {"number": plan.number, "start": plan.start, "end": plan.end, "rows": len(ids),
                "dimension": int(vectors.shape[1]), "dtype": dtype, "ids_sha256": ids_digest(ids),
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
    """One shard of an opened index; ``vectors`` is a read-only memory map."""

    plan: ShardPlan
    path: Path
    meta: dict[str, Any]

    @property
    def vectors(self) -> np.ndarray:
        return np.load(self.path / "emb.npy", mmap_mode="r", allow_pickle=False)

    @property
    def ids(self) -> list[str]:
        return json.loads((self.path / "ids.json").read_text(encoding="utf-8"))


class EmbeddingIndex:
    """An index folder opened for search (see the module docstring). Raises :class:`HarnessError`
    naming the folder when the manifest or a shard is missing or does not match."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder).expanduser()
        self.manifest = read_manifest(self.folder)
        m = self.manifest
        self.count, self.dimension, self.dtype = int(m["count"]), m.get("dimension"), m["dtype"]
        plans = plan_shards(self.count, int(m["shard_size"]))
        missing = [p.name for p in plans if not (shard_dir(self.folder, p) / "shard.json").is_file()]
        if missing:
            raise HarnessError(f"{self.folder}: index incomplete, {len(missing)} of {len(plans)} shard(s) missing "
                               f"({', '.join(missing[:5])}{'...' if len(missing) > 5 else ''}); run the same "
                               f"`harness index build` again to finish it")
        self.shards = [Shard(p, shard_dir(self.folder, p), json.loads((shard_dir(self.folder, p) / "shard.json")
                                                                        .read_text(encoding="utf-8"))) for p in plans]
        for s in self.shards:
            if (s.meta.get("start"), s.meta.get("end")) != (s.plan.start, s.plan.end) or (
                    self.dimension is not None and s.meta.get("dimension") != self.dimension):
                raise HarnessError(f"{s.path}: shard does not match the manifest (range or dimension)")
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
                raise HarnessError(f"{self.folder}: the shards' document ids do not match the manifest")
            self._ids = ids
        return self._ids

    def blocks(self, rows: int = CHUNK_ROWS) -> Iterator[tuple[int, np.ndarray]]:
        """``(position, rows)`` blocks over every shard, memory-mapped (read as they are scored)."""
        for s in self.shards:
            yield from row_blocks(s.vectors, s.plan.start, rows)

    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact top ``k`` positions and scores per query over every shard, in bounded memory."""
        return top_k_blocks(queries, self.blocks(), min(int(k), self.count))

    def load(self) -> np.ndarray:
        """Every vector in memory as float32 (FAISS, tests)."""
        return np.concatenate([np.asarray(s.vectors, dtype=np.float32) for s in self.shards]) if self.shards \
            else np.zeros((0, self.dimension or 0), dtype=np.float32)
