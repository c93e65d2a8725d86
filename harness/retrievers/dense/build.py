"""Building an embedding index (:mod:`harness.retrievers.dense.embedding_index`): plan contiguous shards of the
corpus order, skip the shards already complete, have an executor encode the rest, write each shard
atomically, then complete the manifest.

Executors encode :class:`ShardJob` s and hand back each shard's vectors: :class:`LocalExecutor`
(in-process, through the encoder's embedding cache) or the Ray executor
(:mod:`harness.retrievers.dense.ray_executor`, the ``ray`` extra). Either way the embedding cache and
the index agree: texts the cache holds are not encoded again, and what is encoded is cached.
"""

from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from harness.components.component_spec import parse_spec
from harness.concepts.errors import HarnessError
from harness.retrievers.dense.embedding_index import (
    CHECKSUM,
    DEFAULT_SHARD_SIZE,
    DTYPES,
    FORMAT,
    KIND,
    MANIFEST,
    SHARDS,
    ShardPlan,
    add_checksums,
    ids_digest,
    plan_shards,
    read_manifest,
    shard_complete,
    write_manifest,
    write_shard,
)
from harness.retrievers.dense.ray_executor import RayExecutor

log = logging.getLogger("harness.index")
#: manifest fields two builds of one index must agree on
MUST_MATCH = ("count", "shard_size", "ids_sha256", "dtype", "doc_template", "normalize")


@dataclass
class ShardJob:
    """One shard to encode: its plan, ids and texts (in corpus order)."""

    plan: ShardPlan
    ids: list[str]
    texts: list[str]


class Executor(Protocol):
    """Encodes shards: calls ``write(job, vectors)`` once per job with its float32 vectors as
    :meth:`DenseEncoder.embed` gives them (normalised when the encoder normalises), in any order."""

    name: str

    def run(self, encoder: Any, jobs: list[ShardJob], write: Callable[[ShardJob, np.ndarray], None]) -> None:
        ...


class LocalExecutor:
    """In this process, one shard after another, through the encoder (and its embedding cache)."""

    name = "local"

    def run(self, encoder: Any, jobs: list[ShardJob], write: Callable[[ShardJob, np.ndarray], None]) -> None:
        for job in jobs:
            write(job, encoder.embed(job.texts, "document"))

    def describe(self) -> dict[str, Any]:
        return {"executor": self.name}


def make_executor(spec: str | None) -> Any:
    """``local`` (default), ``ray`` (a local Ray cluster) or ``ray:address=auto`` (join one); Ray
    options after the colon: ``address``, ``actors``, ``num_gpus``, ``num_cpus``, ``batch_size``."""
    if not spec or spec == "local":
        return LocalExecutor()
    parsed = parse_spec(spec)
    if parsed.name == "local" and not parsed.args:
        return LocalExecutor()
    if parsed.name != "ray":
        raise HarnessError(f"unknown executor {spec!r}; use local, ray or ray:address=auto")

    try:
        return RayExecutor(**parsed.args)
    except TypeError as exc:
        raise HarnessError(f"executor {spec!r}: {exc}") from None


@dataclass
class BuildReport:
    """What a build did: shards planned, found complete, written; texts encoded and cache hits."""

    folder: str
    shards: int = 0
    skipped: int = 0
    written: int = 0
    documents: int = 0
    encoded: int = 0
    cache_hits: int = 0
    seconds: float = 0.0
    executor: dict[str, Any] = field(default_factory=dict)

    def line(self) -> str:
        return (f"{self.folder}: {self.documents} documents in {self.shards} shard(s); {self.skipped} already "
                f"complete, {self.written} written; {self.encoded} texts encoded, {self.cache_hits} from the "
                f"embedding cache; {self.seconds:.1f} s ({self.executor.get('executor', '?')})")


def encoder_manifest(encoder: Any) -> dict[str, Any]:
    """What the manifest says of the encoder: its settings (to rebuild the query encoder), the model
    identity (with the weights fingerprint, computed from the model's files so that a search can check
    them before loading anything), the templates and the normalisation."""
    if hasattr(encoder, "manifest"):  # an API model (openai-embeddings) describes itself: no weights to check
        return encoder.manifest()
    encoder.identity()
    if getattr(encoder, "local_dir", None) is None:
        raise HarnessError(f"{encoder.label}: the files of model {encoder.model_name!r} are not in a folder on "
                           f"this machine, so an index could not check them; pass model=FOLDER")
    return {"encoder": encoder.settings(), "model": encoder.identity(), "query_template": encoder.query_template,
            "doc_template": encoder.doc_template, "normalize": encoder.normalize}


def _check_existing(folder: Path, manifest: Mapping[str, Any], overwrite: bool) -> None:
    if not (folder / MANIFEST).exists():
        if folder.exists() and any(folder.iterdir()):
            raise HarnessError(f"{folder} exists and is not an index; choose an empty or new folder")
        return
    old = read_manifest(folder)
    diff = [k for k in MUST_MATCH if old.get(k) != manifest.get(k)]
    if (old.get("model") or {}).get("fingerprint") != manifest["model"].get("fingerprint"):
        diff.append("model (weights fingerprint)")
    if not diff:
        return
    if not overwrite:
        raise HarnessError(f"{folder} holds an index that differs in {', '.join(diff)}; pass --overwrite to "
                           f"replace it, or choose another folder")
    shutil.rmtree(folder / SHARDS, ignore_errors=True)
    (folder / MANIFEST).unlink(missing_ok=True)


def build_index(encoder: Any, ids: Sequence[str], texts: Sequence[str], folder: str | Path, *,
                shard_size: int = DEFAULT_SHARD_SIZE, dtype: str = "float32", executor: Any = None,
                overwrite: bool = False, source: Mapping[str, Any] | None = None,
                on_shard: Callable[[str], None] | None = None) -> BuildReport:
    """Encode ``texts`` (documents ``ids``, in corpus order) into the index ``folder``. A folder
    holding part of the same index is completed (complete shards are skipped); one holding another
    index is an error unless ``overwrite``. ``on_shard`` gets a line per shard written."""
    if dtype not in DTYPES:
        raise HarnessError(f"index dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if len(ids) != len(texts):
        raise ValueError("ids and texts differ in length")
    if len(set(ids)) != len(ids):
        raise HarnessError("the corpus repeats a document id; an index needs unique ids")
    folder = Path(folder).expanduser()
    executor = executor or LocalExecutor()
    t0 = time.perf_counter()
    manifest = {"kind": KIND, "format": FORMAT, **encoder_manifest(encoder), "dimension": None, "dtype": dtype,
                "count": len(ids), "shard_size": int(shard_size), "ids_sha256": ids_digest(ids),
                "source": dict(source or {}), "created": round(time.time(), 3), "complete": False}
    _check_existing(folder, manifest, overwrite)
    if (folder / MANIFEST).exists():  # resuming: the settings are this build's, checked equal above
        manifest["created"] = read_manifest(folder).get("created", manifest["created"])
    plans = plan_shards(len(ids), int(shard_size))
    jobs = [ShardJob(p, list(ids[p.start:p.end]), list(texts[p.start:p.end])) for p in plans]
    done = {j.plan.number: shard_complete(folder, j.plan, j.ids, dtype) for j in jobs}
    for j in jobs:  # shards written before checksums were recorded get theirs now
        if done[j.plan.number] is not None and not done[j.plan.number].get(CHECKSUM):
            done[j.plan.number] = add_checksums(folder, j.plan, done[j.plan.number])
    manifest["checksums"] = CHECKSUM
    write_manifest(folder, manifest)
    todo = [j for j in jobs if done[j.plan.number] is None]
    report = BuildReport(str(folder), shards=len(plans), skipped=len(plans) - len(todo), documents=len(ids),
                         executor=executor.describe())
    before = (encoder.encoded, encoder.cache_hits)
    dims: set[int] = set()

    def write(job: ShardJob, vectors: np.ndarray) -> None:
        vectors = np.asarray(vectors)
        if write_shard(folder, job.plan, job.ids, vectors, dtype):
            report.written += 1
        dims.add(int(vectors.shape[1]))
        if on_shard is not None:
            on_shard(f"shard {job.plan.name}: {len(job.ids)} documents ({report.written + report.skipped}/"
                     f"{len(plans)} shards)")

    executor.run(encoder, todo, write)
    report.encoded, report.cache_hits = encoder.encoded - before[0], encoder.cache_hits - before[1]
    report.encoded += getattr(executor, "encoded", 0)
    if len(dims) > 1:
        raise HarnessError(f"{folder}: shards of different dimensions {sorted(dims)}")
    dim = dims.pop() if dims else next((m["dimension"] for m in done.values() if m), None)
    write_manifest(folder, {**manifest, "dimension": dim, "complete": True, "completed": round(time.time(), 3)})
    report.seconds = time.perf_counter() - t0
    return report

