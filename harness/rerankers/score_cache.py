"""On-disk score cache of the model rerankers: one score per (model identity, settings, query text,
document text), in the embedding cache's SQLite format (a score is a 1-dimensional float32 vector;
never a pickle). The identity (model, revision or weight fingerprint, every setting that changes a
score) picks the file, so a changed setting never reads another setting's scores.

Location: ``cache_dir`` if given, else ``<context cache>/scores``, else ``$HARNESS_CACHE_DIR/scores``
(``~/.cache/harness/scores``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.concepts.component_context import ComponentContext
from harness.retrievers.dense.embedding_cache import EmbeddingCache, text_key
from harness.runtime.cachedir import default_cache_dir


def default_scores_dir(context: ComponentContext | None = None) -> Path:
    """``scores/`` under the evaluation's cache folder, else under the default cache root."""
    if context is not None and getattr(context, "cache_dir", None):
        return Path(context.cache_dir) / "scores"

    return default_cache_dir() / "scores"


def pair_key(query: str, document: str) -> bytes:
    """32-byte key of one (query, document) pair (the query's length keeps the split unambiguous)."""
    return text_key("pair", str(len(query)), query + document)


class ScoreCache:
    """Scores of one model identity. ``lookup`` gives ``(scores, found)``; ``put`` stores float32."""

    def __init__(self, identity: Mapping[str, Any], cache_dir: str | Path):
        self._store = EmbeddingCache({"kind": "reranker-scores", **identity}, cache_dir)

    @property
    def path(self) -> Path:
        return self._store.path

    def lookup(self, pairs: Sequence[tuple[str, str]]) -> tuple[np.ndarray, np.ndarray]:
        vecs, found = self._store.lookup([pair_key(q, d) for q, d in pairs], 1)
        return (vecs[:, 0] if vecs.shape[1] else np.zeros(len(pairs), dtype=np.float32)), found

    def put(self, pairs: Sequence[tuple[str, str]], scores: np.ndarray) -> None:
        if len(pairs):
            self._store.put([pair_key(q, d) for q, d in pairs],
                            np.asarray(scores, dtype=np.float32).reshape(-1, 1))

    def stats(self) -> dict[str, Any]:
        return self._store.stats()


__all__ = ["ScoreCache", "default_scores_dir", "pair_key"]
