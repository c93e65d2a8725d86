"""Dense (bi-encoder) retrieval with sentence-transformers (public: see docs/api.md): the encoder
base embedding plugins build on (:class:`DenseEncoder`: model resolution, prompt templates, the
embedding cache, batching), the components, and the presets (query/document templates)."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from harness.runtime.exports import lazy_exports

_EXPORTS = MappingProxyType({
    # components
    "DenseRetriever": "harness.retrievers.dense.retriever",
    "DenseReranker": "harness.rerankers.dense",  # documented here; lives with the rerankers
    # the encoder base
    "DenseEncoder": "harness.retrievers.dense.encoder",
    "DEFAULT_MODEL": "harness.retrievers.dense.model",
    # indexes on disk
    "EmbeddingIndex": "harness.retrievers.dense.embedding_index",
    "top_k_blocks": "harness.retrievers.dense.search",
    # presets
    "Preset": "harness.retrievers.dense.presets",
    "PRESETS": "harness.retrievers.dense.presets",
    "get_preset": "harness.retrievers.dense.presets",
    "render": "harness.retrievers.dense.presets",
})

if TYPE_CHECKING:  # pragma: no cover
    from harness.retrievers.dense.embedding_index import EmbeddingIndex  # noqa: F401
    from harness.retrievers.dense.encoder import DenseEncoder  # noqa: F401
    from harness.retrievers.dense.model import DEFAULT_MODEL  # noqa: F401
    from harness.retrievers.dense.presets import PRESETS, Preset, get_preset, render  # noqa: F401
    from harness.retrievers.dense.retriever import DenseRetriever  # noqa: F401
    from harness.retrievers.dense.search import top_k_blocks  # noqa: F401

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__all__ = sorted(_EXPORTS)
