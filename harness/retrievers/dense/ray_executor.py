"""The Ray executor (``--executor ray``; the ``ray`` extra): encode an index's shards on a Ray cluster
with Ray Data, and search groups of shards in parallel. Ray is imported only here, when used.

Encoding: the driver looks every shard's texts up in the embedding cache; what the cache lacks goes
to a Ray Data pipeline as rows ``(position, text)``, mapped by an actor pool with one model per actor
(``num_gpus=1`` per actor where GPUs are, else CPU actors); results come back in any order and are
placed by position, so a row a restarted worker encodes twice lands once. A shard is written (and its
new vectors cached) as soon as all its rows are back, so a driver killed mid-job loses only the shards
in flight. ``ray`` starts a local cluster (and stops it after); ``ray:address=auto`` joins a running one.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.concepts.errors import HarnessError
from harness.retrievers.dense.embedding_index import EmbeddingIndex
from harness.retrievers.dense.encoder import DenseEncoder
from harness.retrievers.dense.search import merge_top_k
from harness.runtime.extras import require
from harness.runtime.progress import progress

log = logging.getLogger("harness.index")


class _EncodeActor:
    """One model per actor: encodes batches of ``text`` to raw float32 vectors (no cache, no
    normalisation: the driver does both, as the local path does)."""

    def __init__(self, settings: dict[str, Any], batch_size: int, device: str | None, threads: int | None) -> None:
        if threads:
            import torch

            torch.set_num_threads(int(threads))

        self.encoder = DenseEncoder(**settings, batch_size=batch_size, device=device, cache=False,
                                    show_progress=False)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        vectors = self.encoder.encode_raw([str(t) for t in batch["text"]], "document")
        return {"pos": np.asarray(batch["pos"], dtype=np.int64), "emb": vectors}


@dataclass
class _Pending:
    """A shard being assembled from results that arrive in any order."""

    job: Any
    raw: np.ndarray
    found: np.ndarray
    texts_new: list[int] = field(default_factory=list)


@dataclass
class RayExecutor:
    """See the module docstring. ``address``: a cluster to join (None: start a local one);
    ``actors``: actor pool size (default: one per GPU, else one per CPU); ``num_cpus`` /
    ``num_gpus`` per actor; ``batch_size`` texts per model call; ``device`` for the actors' models."""

    address: str | None = None
    actors: int | None = None
    num_cpus: float = 1.0
    num_gpus: float | None = None
    batch_size: int = 64
    device: str | None = None
    name: str = field(default="ray", init=False)
    encoded: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        require("ray", "ray", "the Ray executor")
        if self.actors is not None and int(self.actors) < 1:
            raise HarnessError(f"executor ray: actors must be >= 1, got {self.actors}")

    # -- the cluster -----------------------------------------------------------------------------
    def _connect(self) -> tuple[Any, bool]:
        """``(ray, started)``: the ray module, connected; ``started`` when this call started it."""
        import ray

        logging.getLogger("ray.data").setLevel(logging.WARNING)
        if ray.is_initialized():
            return ray, False
        kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "logging_level": "ERROR"}
        try:
            ray.init(address=self.address, **kwargs)
        except ConnectionError as exc:
            raise HarnessError(f"executor ray: cannot reach the Ray cluster at {self.address!r}: {exc}") from exc
        return ray, True

    def _pool(self, ray: Any) -> tuple[int, float, float]:
        res = ray.cluster_resources()
        gpus = float(res.get("GPU", 0))
        num_gpus = self.num_gpus if self.num_gpus is not None else (1.0 if gpus >= 1 else 0.0)
        per = max(1, int(gpus // num_gpus)) if num_gpus else max(1, int(float(res.get("CPU", 1)) // self.num_cpus))
        return int(self.actors or per), float(self.num_cpus), float(num_gpus)

    def describe(self) -> dict[str, Any]:
        return {"executor": self.name, "address": self.address, "actors": self.actors, "num_cpus": self.num_cpus,
                "num_gpus": self.num_gpus, "batch_size": self.batch_size}

    # -- encoding --------------------------------------------------------------------------------
    def run(self, encoder: Any, jobs: list[Any], write: Callable[[Any, np.ndarray], None]) -> None:
        pending: dict[int, _Pending] = {}
        rows: list[dict[str, Any]] = []
        for job in jobs:
            raw, found = encoder.lookup(job.texts, "document")
            if found.all():  # the cache has the whole shard
                write(job, encoder.finish(raw))
                continue
            if raw.shape[1] == 0:
                raw = np.zeros((len(job.texts), 0), dtype=np.float32)
            pending[job.plan.number] = _Pending(job, raw, found)
            rows += [{"pos": job.plan.start + i, "text": job.texts[i]} for i in np.flatnonzero(~found)]
        if not rows:
            return
        shard_of = {p.job.plan.number: p for p in pending.values()}
        starts = sorted((p.job.plan.start, n) for n, p in shard_of.items())
        ray, started = self._connect()
        try:
            self._encode(ray, encoder, rows, pending, starts, write)
        finally:
            if started:
                ray.shutdown()

    def _encode(self, ray: Any, encoder: Any, rows: list[dict[str, Any]], pending: dict[int, _Pending],
                starts: list[tuple[int, int]], write: Callable[[Any, np.ndarray], None]) -> None:
        import bisect

        import ray.data


        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        size, num_cpus, num_gpus = self._pool(ray)
        threads = int(num_cpus) if not num_gpus and num_cpus >= 1 else None
        ds = ray.data.from_items(rows, override_num_blocks=max(size * 4, len(rows) // 2048 + 1))
        out = ds.map_batches(
            _EncodeActor, fn_constructor_kwargs={"settings": encoder.settings(), "batch_size": self.batch_size,
                                                 "device": self.device, "threads": threads},
            compute=ray.data.ActorPoolStrategy(size=size), batch_size=self.batch_size * 4, num_cpus=num_cpus,
            num_gpus=num_gpus or None)  # Ray Data restarts a dead actor and retries its batches by default
        first = [s for s, _ in starts]
        bar = progress(len(rows), f"{encoder.label}: encoding on Ray ({size} actors)", unit="text",
                       settings=encoder.progress_settings, leave=True)
        try:
            for batch in out.iter_batches(batch_size=None, batch_format="numpy"):
                for pos, vec in zip(batch["pos"], batch["emb"], strict=True):
                    number = starts[bisect.bisect_right(first, int(pos)) - 1][1]
                    shard = pending.get(number)
                    if shard is None:  # written already: a duplicate from a retried batch
                        continue
                    i = int(pos) - shard.job.plan.start
                    if shard.found[i]:
                        continue
                    if shard.raw.shape[1] != len(vec):
                        shard.raw = np.zeros((len(shard.job.texts), len(vec)), dtype=np.float32)
                    shard.raw[i] = vec
                    shard.found[i] = True
                    shard.texts_new.append(i)
                    self.encoded += 1
                    bar.update(1)
                    if shard.found.all():
                        self._finish(encoder, shard, write)
                        del pending[number]
        finally:
            bar.close()
        if pending:
            raise HarnessError(f"executor ray: {len(pending)} shard(s) came back incomplete")

    @staticmethod
    def _finish(encoder: Any, shard: _Pending, write: Callable[[Any, np.ndarray], None]) -> None:
        new = sorted(shard.texts_new)
        encoder.store([shard.job.texts[i] for i in new], "document", shard.raw[new])  # cache and index agree
        write(shard.job, encoder.finish(shard.raw))

    # -- searching -------------------------------------------------------------------------------
    def search(self, index: Any, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact top-k over groups of shards searched in parallel (one task per group), merged."""
        ray, started = self._connect()
        try:
            groups = max(1, min(len(index.shards), self._pool(ray)[0]))
            q = ray.put(np.asarray(queries, dtype=np.float32))
            task = ray.remote(num_cpus=self.num_cpus)(_search_group)
            refs = [task.remote(str(index.folder), list(range(g, len(index.shards), groups)), q, k, index.verify)
                    for g in range(groups)]
            idx = np.empty((len(queries), 0), dtype=np.int64)
            val = np.empty((len(queries), 0), dtype=np.float32)
            for part_idx, part_val in ray.get(refs):
                idx, val = merge_top_k(idx, val, part_idx, part_val, k)
            return idx, val
        finally:
            if started:
                ray.shutdown()


def _search_group(folder: str, numbers: list[int], queries: np.ndarray, k: int, verify: bool = True
                  ) -> tuple[np.ndarray, np.ndarray]:
    """One Ray task: exact top-k over some shards of the index at ``folder`` (a shared file system),
    each checked as :class:`EmbeddingIndex` checks it."""
    index = EmbeddingIndex(folder, verify=verify)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    return index.search(queries, k, numbers)
