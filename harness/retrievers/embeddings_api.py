"""``openai-embeddings``: a retriever over any OpenAI-compatible ``/v1/embeddings`` API
(OpenAI's text-embedding-3-small/-large and ada-002; vLLM, TEI's OpenAI route, Infinity, Ollama,
llama.cpp's server by ``base_url``), through the LLM layer (:mod:`harness.llm.embedding_client`): its cache,
endpoints, retries, failure policy, usage and prices, dry run and Batch API.

The dense presets' query and document templates apply; vectors are L2-normalised (cosine, computed in
float64 after dividing by the largest magnitude, so a server's scale never changes a ranking) unless
``normalize=false``; every vector is checked (:mod:`harness.llm.embedding_client`: numbers, finite, not all
zeros, one length across the run); the search is exact, by the same blockwise top-k code as ``dense``. A document that
could not be embedded is left out of the search, counted and named in ``stats()`` (results.json), and
its failed request makes the run INCOMPLETE; a query that could not be embedded gets no ranking.
``index=FOLDER`` searches an index built with ``harness index build -r openai-embeddings:...``: the
manifest records the API model it was built with, and the model the user names must be that one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from harness.concepts.component_context import ComponentContext
from harness.concepts.document import Document
from harness.concepts.errors import DataError, HarnessError
from harness.concepts.run import Run
from harness.context import Context
from harness.llm.embedding_client import make_embedding_client, unit_rows
from harness.llm.spec import COMPAT, LLMSpec, _is_list, replica_urls
from harness.retrievers.dense.embedding_cache import EmbeddingCache
from harness.retrievers.dense.index_search import IndexSearch
from harness.retrievers.dense.presets import get_preset, render
from harness.retrievers.dense.search import as_hits, exact_top_k
from harness.runtime.redact import redact_url

NAME = "openai-embeddings"
OPENAI_URL = "https://api.openai.com/v1"
#: failed documents named in stats() (their number is always given)
MAX_NAMED = 1000


def _llm_spec(model: str, base_url: Any, api_key_env: str | None, timeout: float | None,
              max_concurrency: int | None, provider: str | None = None) -> Any:
    """The LLM spec of the endpoint: ``openai`` for OpenAI's API (no base_url, or api.openai.com),
    ``openai-compatible`` for another server (no key is sent unless ``api_key_env`` names one), a replica
    set for a list of base URLs."""
    args: dict[str, Any] = {}
    if api_key_env:
        args["api_key_env"] = str(api_key_env)
    if timeout is not None:
        args["timeout"] = timeout
    client = {"max_concurrency": int(max_concurrency)} if max_concurrency else {}
    text = f"{NAME}:model={model}" + (f",base_url={base_url}" if base_url else "")
    if _is_list(base_url):
        return LLMSpec(COMPAT, model, None, args, {}, client, text, None, replica_urls(text, COMPAT, base_url))
    if provider not in (None, "openai", COMPAT):
        raise HarnessError(f"{NAME}: provider must be openai or {COMPAT}, not {provider!r}")
    official = not base_url or str(base_url).rstrip("/").startswith(OPENAI_URL)
    if provider == "openai" or (provider is None and official):
        return LLMSpec("openai", model, base_url or None, args, {}, client, text)
    return LLMSpec(COMPAT, model, str(base_url), args, {}, client, text)


def _templates(preset: str | None, query_prompt: str | None, doc_prompt: str | None,
               instruction: str | None) -> tuple[str, str, str, str]:
    """(query template, document template, preset name, instruction), as ``dense`` renders them."""
    p = get_preset(preset) if preset and str(preset).lower() not in ("none", "off") else None
    instr = instruction if instruction is not None else (p.instruction if p else "")
    query, doc = p.templates(instr) if p else ("{text}", "{text}")

    def own(prompt: str) -> str:
        t = prompt if "{text}" in prompt else prompt + "{text}"
        return t.replace("{instruction}", instr)

    if query_prompt is not None:
        query = own(query_prompt)
    if doc_prompt is not None:
        doc = own(doc_prompt)
    return query, doc, p.name if p else "none", instr


class APIEncoder:
    """Texts to vectors through an embeddings API (what ``dense``'s encoder is to a local model): the
    templates, normalisation and an :class:`~harness.llm.embedding_client.EmbeddingClient`."""

    def __init__(self, model: str | None = None, base_url: Any = None, dimensions: int | None = None,
                 preset: str | None = None, query_prompt: str | None = None, doc_prompt: str | None = None,
                 instruction: str | None = None, normalize: bool | None = None, api_key_env: str | None = None,
                 batch_size: int | None = None, max_concurrency: int | None = None, timeout: float | None = None,
                 cache: bool = True, provider: str | None = None, label: str = NAME,
                 context: ComponentContext | None = None) -> None:
        if not model:
            raise HarnessError(f"{NAME}: name the model, e.g. {NAME}:model=text-embedding-3-small")
        for name, value in (("dimensions", dimensions), ("batch_size", batch_size)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise HarnessError(f"{NAME}: {name} must be a positive integer, not {value!r}")
        self.label, self.model_name, self.dimensions = label, str(model), dimensions
        self.query_template, self.doc_template, self.preset, self.instruction = _templates(
            preset, query_prompt, doc_prompt, instruction)
        self._query_prompt, self._doc_prompt = query_prompt, doc_prompt
        self.normalize = True if normalize is None else bool(normalize)
        ctx = Context.of(context)
        self.spec = _llm_spec(self.model_name, base_url, api_key_env, timeout, max_concurrency, provider)

        folder = ctx.cache_dir / "embeddings"
        self.client = make_embedding_client(ctx.llm, self.spec, dimensions=dimensions, batch_size=batch_size,
                                            make_cache=(lambda ident: EmbeddingCache(ident, folder)) if cache else None)
        self.failures: dict[str, str] = {}  # text -> why it has no vector
        self._served: Any = None

    @property
    def encoded(self) -> int:
        return self.client.encoded

    @property
    def cache_hits(self) -> int:
        return self.client.cache_hits

    def template(self, role: str) -> str:
        return self.query_template if role == "query" else self.doc_template

    def vectors(self, texts: list[str], role: str) -> tuple[np.ndarray, np.ndarray]:
        """``(vectors, failed)``: one row per text (normalised when ``normalize``), and which failed."""
        if self._served is None and not self.client.dry_run and texts:
            self._served = self._server_models()
        template = self.template(role)
        result = self.client.embed([render(template, t) for t in texts])
        vecs = result.vectors
        if self.normalize and vecs.shape[1]:
            vecs = unit_rows(vecs)  # in float64, whatever the vectors' scale (1e20 and 1e-30 rank alike)
        for row, why in result.errors.items():
            if result.failed[row]:
                self.failures[texts[row]] = why
        return vecs.astype(np.float32), result.failed

    def embed(self, texts: list[str], role: str) -> np.ndarray:
        """Every vector, or a :class:`HarnessError` naming the texts that got none (an index build)."""
        vecs, failed = self.vectors(list(texts), role)
        if failed.any():
            bad = [texts[i] for i in np.flatnonzero(failed)]
            raise HarnessError(f"{self.label}: {len(bad)} of {len(texts)} texts could not be embedded (first: "
                               f"{self.failures.get(bad[0], '?')}); rerun to retry them (vectors received are "
                               f"cached)")
        return vecs

    def _server_models(self) -> Any:
        """What the server reports at ``/v1/models`` for this model (a model served under a name says
        nothing of its weights), bounded."""
        found = getattr(self.client.provider, "server_models", lambda: None)()
        data = found.get("data") if isinstance(found, dict) else None
        if not isinstance(data, list):
            return {"reported": None}
        mine = [m for m in data if isinstance(m, dict) and m.get("id") == self.model_name]
        keep = mine[:1] or [m for m in data[:20] if isinstance(m, dict)]
        try:
            text = json.dumps(keep, default=str)[:20_000]
        except (ValueError, RecursionError):  # a server's reply nested past the encoder's limit
            return {"reported": None, "listed": len(data), "model_listed": bool(mine)}
        return {"reported": json.loads(text) if len(text) < 20_000 else text, "listed": len(data),
                "model_listed": bool(mine)}

    # -- what an index records -------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        return {"model": self.model_name, "preset": self.preset, "query_prompt": self._query_prompt,
                "doc_prompt": self._doc_prompt, "instruction": self.instruction, "normalize": self.normalize}

    def identity(self) -> dict[str, Any]:
        """The API model, honestly: provider, base-URL class, model name and dimensions; no weights
        fingerprint (an API model's weights cannot be checked) and what the server reported."""
        ident = self.client.identity()
        return {"api": NAME, "model": self.model_name, "provider": ident["provider"], "base_url": ident["base_url"],
                "dimensions": self.dimensions, "truncation": ident["truncation"], "fingerprint": None,
                "served": self._served}

    def manifest(self) -> dict[str, Any]:
        """The encoder part of an index manifest (:func:`harness.retrievers.dense.build.build_index`)."""
        return {"encoder": self.settings(), "model": self.identity(), "query_template": self.query_template,
                "doc_template": self.doc_template, "normalize": self.normalize}

    def config(self) -> dict[str, Any]:
        url = self.spec.base_url or (list(self.spec.replicas) if self.spec.replicas else OPENAI_URL)
        return {"api": NAME, "model": self.model_name, "provider": self.client.provider.name,
                "base_url": redact_url(url) if isinstance(url, str) else [redact_url(u) for u in url],
                "dimensions": self.dimensions, "preset": self.preset, "query_template": self.query_template,
                "doc_template": self.doc_template, "instruction": self.instruction, "normalize": self.normalize,
                "similarity": "cosine" if self.normalize else "dot", "batch_size": self.client.batch_size,
                "limits": vars(self.client.limits),
                "cache": None if self.client.cache is None else str(self.client.cache.path)}

    def stats(self) -> dict[str, Any]:
        return {**self.client.stats(), "server_models": self._served}


class OpenAIEmbeddingsRetriever:
    """Exact retrieval over ``doc.full_text()`` with an embeddings API (module docstring). Options:
    ``model`` (required), ``base_url`` (one URL, or a list: replicas), ``dimensions``, ``preset`` or
    ``query_prompt``/``doc_prompt`` (+ ``instruction``), ``normalize``, ``api_key_env``, ``batch_size``,
    ``max_concurrency``, ``timeout``, ``cache``, ``index`` (a folder built with ``harness index build``)."""

    def __init__(self, model: str | None = None, index: str | None = None, label: str | None = None,
                 context: ComponentContext | None = None, **options: Any) -> None:
        self.encoder = APIEncoder(model, label=label or NAME, context=context, **options)
        self.store: Any = None
        self._ids: list[str] = []
        self._matrix: np.ndarray | None = None
        self.failed_documents: list[str] = []
        self.failed_documents_texts: list[str] = []
        self.failed_queries: dict[str, int] = {}
        if index is not None:
            self.store = IndexSearch(index)
            self._check_index()

    def _check_index(self) -> None:
        """The index was built with this API model, dimensions, templates and normalisation."""
        m = self.store.index.manifest
        path = self.store.index.folder / "index.json"
        model = m.get("model") or {}
        if model.get("api") != NAME:
            raise DataError(f"was not built with {NAME} (a local model's index: search it with dense:index=...)", path)
        e = self.encoder
        for what, have, want in (("model", model.get("model"), e.model_name),
                                 ("dimensions", model.get("dimensions"), e.dimensions),
                                 ("query template", m.get("query_template"), e.query_template),
                                 ("normalize", m.get("normalize"), e.normalize)):
            if have != want:
                raise DataError(f"was built with {what} {have!r}; this retriever has {want!r} (queries must be "
                                f"encoded by the model the documents were: name it with model=, dimensions=, "
                                f"preset= as the index records)", path)

    def config(self) -> dict[str, Any]:
        out = self.encoder.config()
        if self.store is not None:
            out["index"] = self.store.describe()
        return out

    def stats(self) -> dict[str, Any]:
        out = self.encoder.stats()
        out["failed_documents"] = len(self.failed_documents)
        if self.failed_documents:
            out["failed_document_ids"] = self.failed_documents[:MAX_NAMED]
            out["failed_document_errors"] = sorted({self.encoder.failures.get(w, "?") for w in
                                                    self.failed_documents_texts})[:5]
        if self.failed_queries:
            out["transport_failures_per_query"] = dict(self.failed_queries)
        if self.store is not None:
            out.update(self.store.stats())
        return out

    def index(self, corpus: Mapping[str, Document]) -> None:
        if self.store is not None:
            self.store.check_corpus(list(corpus))
            self._ids = self.store.index.ids
            return
        ids = list(corpus)
        texts = [corpus[d].full_text() for d in ids]
        vecs, failed = self.encoder.vectors(texts, "document")
        keep = ~failed
        self.failed_documents = [d for d, f in zip(ids, failed, strict=True) if f]
        self.failed_documents_texts = [t for t, f in zip(texts, failed, strict=True) if f]
        self._ids = [d for d, k in zip(ids, keep, strict=True) if k]
        self._matrix = vecs[keep]

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        qids = list(queries)
        if self._matrix is None and self.store is None:
            raise HarnessError(f"{NAME}: search() called before index()")
        if not qids or not self._ids or k <= 0:
            return Run({q: [] for q in qids})
        qmat, failed = self.encoder.vectors([queries[q] for q in qids], "query")
        ok = [i for i in range(len(qids)) if not failed[i]]
        out: dict[str, list[tuple[str, float]]] = {q: [] for q in qids}
        for i in np.flatnonzero(failed):
            self.failed_queries[qids[i]] = 1
        if ok:
            sub = qmat[ok]
            idx, val = self.store.search(sub, k) if self.store is not None else exact_top_k(sub, self._matrix, k)
            for i, hits in zip(ok, as_hits(self._ids, idx, val), strict=True):
                out[qids[i]] = hits
        return Run(out)
