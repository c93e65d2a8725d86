"""Dense (bi-encoder) retrieval with sentence-transformers.

``DenseRetriever`` embeds ``doc.full_text()`` for every document and searches exactly
(:mod:`harness.retrievers.dense.search`) with the encoder
(:class:`~harness.retrievers.dense.encoder.DenseEncoder`: model resolution, prompts, the embedding
cache). :class:`DenseComponent` holds the model options it shares with the dense reranker
(:mod:`harness.rerankers.dense`); see ``docs/retrievers.md``.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import numpy as np

from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.run import Run
from harness.retrievers.dense.encoder import DenseEncoder
from harness.retrievers.dense.index_search import IndexSearch, encoder_options
from harness.retrievers.dense.search import as_hits, exact_top_k
from harness.runtime.extras import require


class DenseComponent:
    """The model options shared by :class:`DenseRetriever` and the dense reranker: every keyword
    argument of :class:`DenseEncoder` (an unknown one is a TypeError the CLI reports as bad arguments)."""

    default_label = "dense"

    def __init__(self, label: str | None = None, **options: Any):
        require("sentence_transformers", "dense", "dense retrieval")  # before any data is read
        self.encoder = DenseEncoder(label=label or self.default_label, **options)

    # help(), error hints and docs see DenseEncoder's arguments
    __init__.__signature__ = inspect.signature(DenseEncoder.__init__)  # type: ignore[attr-defined]

    def stats(self) -> dict[str, Any]:
        """``{"encoded": n, "cache_hits": m, ...}`` counted since this component was created."""
        return self.encoder.stats()

    def config(self) -> dict[str, Any]:
        """Model identity, prompts, normalisation, pooling and dimension, for results.json."""
        return self.encoder.config()


class DenseRetriever(DenseComponent):
    """Exact dense retrieval over ``doc.full_text()``.

    Options (each a ``dense:key=value`` spec argument): ``model`` (default ``all-MiniLM-L6-v2``,
    packaged weights; any sentence-transformers id or folder), ``preset`` (``minilm``, ``e5``,
    ``e5-instruct``, ``bge``, ``e5-mistral``, ``gritlm``, ``instructor``, or ``none``; detected from
    the model name when omitted; the model defaults to the preset's), ``batch_size``,
    ``normalize``, ``query_prompt``/``doc_prompt`` (a prefix, or a template with ``{text}``),
    ``instruction`` (fills ``{instruction}``), ``device``, ``cache``, ``cache_dir``, ``max_length``,
    ``revision``, ``trust_remote_code``, ``padding_side``, ``dtype``, ``local_files_only``,
    ``show_progress``.

    ``index=FOLDER`` searches an index built by ``harness index build`` instead of encoding the
    corpus: the model's settings come from the index's manifest, checked (``model`` may point at
    another copy of the same weights, and must for weights in a folder; ``trust_remote_code`` is never
    taken from the manifest; the weights' fingerprint must equal the manifest's before anything is
    loaded; ``device``, ``batch_size`` and the cache options apply to the queries), and the search reads
    the shards in bounded memory, each shard's sha256 checked before it is first scored
    (``verify=false`` skips that). ``faiss=flat`` or ``faiss=hnsw`` searches with FAISS instead (the
    ``faiss`` extra), reporting its recall against exact search; ``search=ray`` (or
    ``ray:address=auto``) searches groups of shards in parallel on Ray.
    """

    _doc_ids: list[str] = []  # replaced (never mutated) by index()
    _matrix: np.ndarray | None = None

    def __init__(self, label: str | None = None, index: str | None = None, faiss: str | None = None,
                 search: str | None = None, verify: bool | None = None, **options: Any):
        self.store: Any = None
        self.faiss = self.search_on = None
        if index is None:
            if faiss is not None or search is not None:
                raise HarnessError("dense: faiss= and search= apply to an index (dense:index=FOLDER,...)")
            if verify is not None:
                raise HarnessError("dense: verify= applies to an index (dense:index=FOLDER,...)")
            super().__init__(label, **options)
            return

        self.store = IndexSearch(index, faiss=faiss, search=search, verify=True if verify is None else verify)
        settings = encoder_options(self.store.index.manifest, options, self.store.index.folder / "index.json")
        require("sentence_transformers", "dense", "dense retrieval")  # after the manifest: an API index needs none
        self.encoder = DenseEncoder(label=label or self.default_label, **settings)
        self.store.check_model(self.encoder)  # from the weights' files, before any model is loaded

    def index(self, corpus: Mapping[str, Document]) -> None:
        """Embed every document (``doc.full_text()``), from the cache where possible; with an index,
        check that it was built from this corpus instead."""
        if self.store is not None:
            self.store.check_corpus(list(corpus))
            self._doc_ids = self.store.index.ids
            return
        self._doc_ids = list(corpus)
        self._matrix = self.encoder.embed([corpus[d].full_text() for d in self._doc_ids], "document")

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        """Top ``k`` documents per query by dot product (cosine when normalised); ties: corpus order."""
        if self._matrix is None and self.store is None:
            raise HarnessError(f"{self.encoder.label}: search() called before index()")
        qids = list(queries)
        if not qids or not self._doc_ids or k <= 0:
            return Run({q: [] for q in qids})
        qmat = self.encoder.embed([queries[q] for q in qids], "query")
        if self.store is not None:
            idx, val = self.store.search(qmat, k)
        else:
            idx, val = exact_top_k(qmat, self._matrix, k)
        return Run(dict(zip(qids, as_hits(self._doc_ids, idx, val), strict=True)))

    def stats(self) -> dict[str, Any]:
        out = super().stats()
        if self.store is not None:
            out.update(self.store.stats())
        return out

    def config(self) -> dict[str, Any]:
        out = super().config()
        if self.store is not None:
            out["index"] = self.store.describe()
        return out


def _with_index_options(signature: inspect.Signature) -> inspect.Signature:
    """The encoder's arguments plus ``index``, ``faiss``, ``search`` and ``verify`` (what help and the
    registry see)."""
    params = list(signature.parameters.values())
    extra = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None, annotation="str | None")
             for n in ("index", "faiss", "search")]
    extra.append(inspect.Parameter("verify", inspect.Parameter.KEYWORD_ONLY, default=None, annotation="bool | None"))
    keep = [p for p in params if p.kind != inspect.Parameter.VAR_KEYWORD]
    positional = [p for p in keep if p.kind != inspect.Parameter.KEYWORD_ONLY]
    return signature.replace(parameters=positional + [p for p in keep if p.kind == inspect.Parameter.KEYWORD_ONLY]
                             + extra)


DenseRetriever.__init__.__signature__ = _with_index_options(  # type: ignore[attr-defined]
    inspect.signature(DenseEncoder.__init__))
