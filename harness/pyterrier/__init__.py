"""PyTerrier and the harness (public: see docs/api.md; the ``pyterrier`` extra): :class:`Reranker`, any
harness reranker as a PyTerrier transformer (``bm25 >> harness.pyterrier.Reranker("rankgpt", llm=...) % 10``).
The other way, a PyTerrier transformer evaluated in the harness, is the reranker
``pyterrier:MODULE:OBJECT`` (docs/coming_from.md)."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from harness.runtime.exports import lazy_exports

_EXPORTS = MappingProxyType({
    "Reranker": "harness.pyterrier.transformer",
})

if TYPE_CHECKING:  # pragma: no cover
    from harness.pyterrier.transformer import Reranker  # noqa: F401

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__all__ = sorted(_EXPORTS)
