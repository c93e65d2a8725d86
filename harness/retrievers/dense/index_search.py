"""Searching a built index (``dense:index=FOLDER``): the query encoder rebuilt from the manifest, the
corpus and the model checked against it, and the search itself: exact over the shards in bounded
memory (default), FAISS (``faiss=flat`` or ``faiss=hnsw``, with its recall against exact search
reported), or groups of shards in parallel on Ray (``search=ray``)."""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from harness.concepts.errors import HarnessError
from harness.retrievers.dense.index import EmbeddingIndex, ids_digest

log = logging.getLogger("harness.index")
#: options that may differ from the manifest: where the weights are and how queries are encoded,
#: not what an embedding is
RUNTIME_OPTIONS = ("model", "device", "batch_size", "cache", "cache_dir", "local_files_only", "show_progress",
                   "context")
FAISS_KINDS = ("flat", "hnsw")
HNSW_M, HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH = 32, 200, 128


def encoder_options(manifest: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """The encoder's arguments: the manifest's settings, then the runtime options given. A setting
    given that differs from the manifest's is an error (queries must be encoded as the documents were)."""
    settings = dict(manifest["encoder"])
    clash = sorted(k for k, v in given.items() if k not in RUNTIME_OPTIONS and k in settings and v != settings[k])
    unknown = sorted(k for k in given if k not in RUNTIME_OPTIONS and k not in settings)
    if clash or unknown:
        what = [f"{k}={given[k]!r} (the index has {settings[k]!r})" for k in clash] + [f"{k}" for k in unknown]
        raise HarnessError(f"dense:index: {', '.join(what)}: an index fixes how texts are embedded; only "
                           f"{', '.join(o for o in RUNTIME_OPTIONS if o != 'context')} may be given with it")
    return {**settings, **given}


class IndexSearch:
    """An opened index and the way to search it (see the module docstring)."""

    def __init__(self, folder: str, faiss: str | None = None, search: str | None = None) -> None:
        self.index = EmbeddingIndex(folder)
        if faiss is not None and str(faiss) not in FAISS_KINDS:
            raise HarnessError(f"dense:index: faiss must be one of {', '.join(FAISS_KINDS)}, got {faiss!r}")
        if faiss is not None:
            from harness.runtime.extras import require

            require("faiss", "faiss", "FAISS search")
        if faiss is not None and search is not None:
            raise HarnessError("dense:index: give faiss= or search=, not both")
        self.faiss, self.search_on = faiss, search
        self._ray: Any = None
        if search is not None:
            from harness.retrievers.dense.build import make_executor

            self._ray = make_executor(search)
            if self._ray.name != "ray":
                self._ray = None  # search=local: the default
        self._faiss_index: Any = None
        self._stats: dict[str, Any] = {"index_documents": self.index.count, "index_shards": len(self.index.shards)}

    # -- checks --------------------------------------------------------------------------------
    def check_corpus(self, ids: Sequence[str]) -> None:
        m = self.index.manifest
        if len(ids) != self.index.count or ids_digest(ids) != m["ids_sha256"]:
            raise HarnessError(f"dense:index: {self.index.folder} was built from another corpus ({self.index.count} "
                               f"documents, ids sha256 {m['ids_sha256'][:12]}...; this dataset has {len(ids)}, "
                               f"{ids_digest(ids)[:12]}...); build an index of this dataset")

    def check_model(self, encoder: Any) -> None:
        want = (self.index.manifest.get("model") or {}).get("fingerprint")
        got = encoder.identity().get("fingerprint")
        if want and got != want:
            raise HarnessError(f"dense:index: the model {encoder.model_name!r} is not the one the index was built "
                               f"with (weights fingerprint {got} vs {want})")
        if encoder.query_template != self.index.manifest.get("query_template"):
            raise HarnessError(f"dense:index: query template {encoder.query_template!r} differs from the index's "
                               f"{self.index.manifest.get('query_template')!r}")

    # -- search --------------------------------------------------------------------------------
    def search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        k = min(int(k), self.index.count)
        t = time.perf_counter()
        if self.faiss is not None:
            idx, val = self._faiss_search(queries, k)
        elif self._ray is not None:
            idx, val = self._ray.search(self.index, queries, k)
        else:
            idx, val = self.index.search(queries, k)
        self._stats["search_seconds"] = round(self._stats.get("search_seconds", 0.0) + time.perf_counter() - t, 3)
        return idx, val

    def _faiss_search(self, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        import faiss

        if self._faiss_index is None:
            t = time.perf_counter()
            vectors = self.index.load()
            if self.faiss == "flat":
                fi = faiss.IndexFlatIP(vectors.shape[1])
            else:
                fi = faiss.IndexHNSWFlat(vectors.shape[1], HNSW_M, faiss.METRIC_INNER_PRODUCT)
                fi.hnsw.efConstruction = HNSW_EF_CONSTRUCTION
                fi.hnsw.efSearch = HNSW_EF_SEARCH
            fi.add(vectors)
            self._faiss_index = fi
            self._stats["faiss_build_seconds"] = round(time.perf_counter() - t, 3)
        val, idx = self._faiss_index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
        exact_idx, _ = self.index.search(queries, k)  # the recall FAISS is reported with
        hits = sum(len(set(a[a >= 0]) & set(b)) for a, b in zip(idx, exact_idx, strict=True))
        self._stats[f"faiss_recall@{k}"] = round(hits / max(1, exact_idx.size), 6)
        if self._stats[f"faiss_recall@{k}"] < 1.0:
            log.warning("dense:index: FAISS %s found %.4f of the exact top-%d", self.faiss,
                        self._stats[f"faiss_recall@{k}"], k)
        return idx.astype(np.int64), val.astype(np.float32)

    def stats(self) -> dict[str, Any]:
        return dict(self._stats)

    def describe(self) -> dict[str, Any]:
        m = self.index.manifest
        return {"folder": str(self.index.folder), "documents": self.index.count, "shards": len(self.index.shards),
                "dtype": self.index.dtype, "dimension": self.index.dimension, "ids_sha256": m["ids_sha256"],
                "model_fingerprint": (m.get("model") or {}).get("fingerprint"), "source": m.get("source"),
                "search": "faiss-" + self.faiss if self.faiss else ("ray" if self._ray is not None else "exact"),
                **({"faiss": {"M": HNSW_M, "efConstruction": HNSW_EF_CONSTRUCTION, "efSearch": HNSW_EF_SEARCH}}
                   if self.faiss == "hnsw" else {})}
