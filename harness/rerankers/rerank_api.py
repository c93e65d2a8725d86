"""``rerank-api``: a reranker over a Cohere-style rerank API (:mod:`harness.rerankers.rerank_requests`): Cohere, Jina,
Voyage, TEI, vLLM, llama.cpp's server (``--reranking``) and Infinity, through the LLM layer's endpoint,
retries, failure policy, usage, prices, dry run and reply cache.

Each query's pool (its candidates found in the corpus, each document whole: the provider applies its own
token limit with its own tokenizer, :data:`TRUNCATION` says how; cut to ``max_doc_bytes`` UTF-8 bytes at a
character boundary, and counted, only when the user names that option) is scored in requests of at most
``max_documents`` documents (the provider's documented limit by default). Scores of separate requests are
merged: every provider here scores each (query, document) pair on its own (a cross-encoder; Cohere's and
Voyage's relevance scores are normalised per pair), so they are comparable across requests, and a split
pool ranks as one large request would. Scores are cached per (provider, base URL, model, query, document):
a warm rerun sends nothing. A document whose request failed (after retries) is counted, named, and goes
after the scored ones in its incoming order; the run is INCOMPLETE. A reply that is not a finite number
for each document sent, each once, is such a failure (:func:`harness.rerankers.rerank_requests.parse`); a score
read from the cache is used only if it is the plain decimal text the harness writes (otherwise it is asked for
again, counted in ``cache_refused``). ``--llm-timeout`` and ``--llm-connect-timeout`` apply unless the
spec sets ``timeout``.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from harness.concepts.component_context import ComponentContext
from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.query import Query
from harness.concepts.run import Run, strictly_decreasing
from harness.context import Context
from harness.llm.embedding_client import count_tokens
from harness.rerankers.rerank_requests import PROVIDERS, RerankProvider
from harness.runtime.redact import redact_url
from harness.served.endpoint import guarded_call
from harness.served.pool import bounded_map
from harness.served.reply_cache import key_of
from harness.served.request_errors import LLMError
from harness.served.types import Reply, TokenCounts
from harness.served.usage import Usage

NAME = "rerank-api"
MAX_NAMED = 1000
#: what each provider documents it does with a document over its token limit (the harness has none of their
#: tokenizers, so it sends documents whole and the provider counts; results.json's ``stats.truncation``)
TRUNCATION: Mapping[str, str] = MappingProxyType({
    "cohere": "by Cohere: each document cut to max_tokens_per_doc tokens (4,096 by default; docs.cohere.com/"
              "reference/rerank, v2) with its own tokenizer",
    "jina": "by Jina's server, to the model's maximum length (no per-document limit found documented)",
    "voyage": "by Voyage: the query and each document cut to the model's context length (truncation=true, "
              "the default; docs.voyageai.com/reference/reranker-api)",
    "tei": "none: TEI refuses an input over the model's maximum length unless started with --auto-truncate "
           "(the request fails: the run is INCOMPLETE)",
    "compatible": "by the server, as it is configured (vLLM, llama.cpp, Infinity)",
})
#: a score as the cache holds it (``repr`` of a finite float): no ``_``, no ``nan``, no ``inf``
_STORED = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")


def cut(text: str, limit: int) -> tuple[str, bool]:
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= limit:
        return text, False
    return raw[:limit].decode("utf-8", "ignore"), True


class RerankAPIReranker:
    """Options: ``model``, ``provider`` (``cohere``, ``jina``, ``voyage``, ``tei``, ``compatible``),
    ``base_url``, ``api_key_env``, ``max_documents`` (per request), ``max_doc_bytes``, ``max_concurrency``,
    ``timeout``, ``cache``."""

    def __init__(self, model: str = "", provider: str = "cohere", base_url: str | None = None,
                 api_key_env: str | None = None, max_documents: int | None = None,
                 max_doc_bytes: int | None = None, max_concurrency: int | None = None,
                 timeout: float | None = None, cache: bool = True, context: ComponentContext | None = None) -> None:
        if provider != "tei" and not model:
            raise HarnessError(f"{NAME}: name the model, e.g. {NAME}:provider=cohere,model=rerank-english-v2.0")
        for name, value in (("max_documents", max_documents), ("max_doc_bytes", max_doc_bytes)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise HarnessError(f"{NAME}: {name} must be a positive integer, not {value!r}")
        ctx = Context.of(context)
        s = ctx.llm.settings
        self.dry_run = bool(s.dry_run)
        timeouts = {name: value for name, value in (("timeout", s.timeout if timeout is None else timeout),
                                                    ("connect_timeout", s.connect_timeout)) if value is not None}
        try:
            self.provider = RerankProvider(model or "tei", str(provider), base_url, api_key_env, **timeouts,
                                           require_key=not self.dry_run)
        except (TypeError, ValueError) as exc:
            raise HarnessError(f"{NAME}: {exc}") from None
        if s.batch:
            raise HarnessError(f"--llm-batch: {NAME} has no batch API; drop --llm-batch")
        self.max_documents = int(max_documents or PROVIDERS[provider].max_documents)
        self.max_doc_bytes = None if max_doc_bytes is None else int(max_doc_bytes)
        self.truncation = (f"documents cut to their first {self.max_doc_bytes:,} UTF-8 bytes (max_doc_bytes), "
                           if self.max_doc_bytes else "documents sent whole; ") + f"then {TRUNCATION[provider]}"
        conc = int(max_concurrency or s.max_concurrency)
        self.endpoint = ctx.llm.endpoint(self.provider, conc)
        self.retry = s.retry
        self.usage = Usage(ctx.llm.prices(), dry_run=self.dry_run)
        self.cache = ctx.llm.cache() if cache and s.use_cache else None
        self.label = f"{self.provider.name}:{self.provider.model}"
        ctx.llm.add_client(self)
        self.requests = self.scored = self.cache_hits = self.truncated = self.cache_refused = 0
        self.failed: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    def config(self) -> dict[str, Any]:
        shape = self.provider.shape
        return {"api": NAME, "provider": self.provider.name, "model": self.provider.model,
                "base_url": redact_url(self.provider.base_url or ""), "path": shape.path,
                "max_documents": self.max_documents, "max_doc_bytes": self.max_doc_bytes,
                "truncation": self.truncation,
                "usage_unit": shape.usage_unit, "cache": None if self.cache is None else str(self.cache.path)}

    def stats(self) -> dict[str, Any]:
        failed = sorted({d for docs in self.failed.values() for d in docs})
        out: dict[str, Any] = {"requests": self.requests, "scored": self.scored, "cache_hits": self.cache_hits,
                               "truncated": self.truncated, "truncation": self.truncation,
                               "failed_documents": len(failed)}
        if self.cache_refused:
            out["cache_refused"] = self.cache_refused
        if failed:
            out["failed_document_ids"] = failed[:MAX_NAMED]
            out["transport_failures_per_query"] = {q: len(d) for q, d in self.failed.items()}
        return out

    # -- keys and the cache ------------------------------------------------------------------------
    def payload(self, query: str, doc: str) -> dict[str, Any]:
        return {"v": 1, "kind": "rerank", "provider": self.provider.name, "model": self.provider.model,
                "base_url": redact_url(self.provider.base_url or ""), "query": query, "document": doc}

    def _cached(self, query: str, doc: str) -> float | None:
        if self.cache is None:
            return None

        entry = self.cache.get(key_of(self.payload(query, doc)))
        if entry is None:
            return None
        text = (entry.get("reply") or {}).get("text") if isinstance(entry, dict) else None
        if isinstance(text, str) and len(text) <= 40 and _STORED.fullmatch(text) and math.isfinite(float(text)):
            return float(text)
        with self._lock:
            self.cache_refused += 1
        return None

    def _store(self, query: str, doc: str, score: float) -> None:
        if self.cache is not None:
            payload = self.payload(query, doc)
            self.cache.set(key_of(payload), payload, Reply(repr(float(score)), model=self.provider.model,
                                                           provider=self.provider.name))

    # -- scoring -----------------------------------------------------------------------------------
    def scores(self, query: str, docs: list[str]) -> tuple[dict[int, float], dict[int, str]]:
        """Scores of ``docs`` (by position) for ``query``, from the cache where possible; the failures."""
        out: dict[int, float] = {}
        for i, d in enumerate(docs):
            x = self._cached(query, d)
            if x is not None:
                out[i] = x
        with self._lock:
            self.cache_hits += len(out)
        todo = [i for i in range(len(docs)) if i not in out]
        errors: dict[int, str] = {}
        for start in range(0, len(todo), self.max_documents):
            group = todo[start:start + self.max_documents]
            if self.dry_run:
                n = sum(count_tokens(docs[i]) + count_tokens(query) for i in group)
                self.usage.record_call(self.label, Reply("", "dry_run", usage=TokenCounts(n, 0), dry_run=True))
                out.update({i: 0.0 for i in group})
                continue
            try:
                got = self._send(query, [docs[i] for i in group])
            except LLMError as error:
                errors.update({i: f"{type(error).__name__}: {error}" for i in group})
                continue
            for i, x in zip(group, got, strict=True):
                out[i] = x
                self._store(query, docs[i], x)
        return out, errors

    def _send(self, query: str, docs: list[str]) -> list[float]:
        def attempt(left: float | None) -> tuple[list[float], int, str]:
            with self.endpoint.slot():
                with self._lock:
                    self.requests += 1
                return self.provider.rerank(query, docs, timeout=left)

        (scores, units, model), retries = guarded_call(self.endpoint, self.retry, self.usage, self.label, attempt)
        self.usage.record_call(self.label, Reply("", usage=TokenCounts(units, 0), model=model,
                                                 provider=self.provider.name, retries=retries))
        with self._lock:
            self.scored += len(docs)
        return scores

    def rerank(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Run:
        qids = [q for q in run if q in queries]

        def one(qid: str) -> tuple[str, list[tuple[str, float]]]:
            hits = list(dict.fromkeys(d for d, _ in run[qid]))
            known = [d for d in hits if d in corpus]
            texts = []
            for d in known:
                text, was_cut = cut(corpus[d].full_text(), self.max_doc_bytes) if self.max_doc_bytes else (
                    corpus[d].full_text(), False)
                texts.append(text)
                if was_cut:
                    with self._lock:
                        self.truncated += 1
            scores, errors = self.scores(queries[qid].text, texts)
            if errors:
                with self._lock:
                    self.failed[qid] = [known[i] for i in sorted(errors)]
            scored = sorted((i for i in range(len(known)) if i in scores), key=lambda i: -scores[i])
            ranked = [(known[i], scores[i]) for i in scored]
            rest = [known[i] for i in range(len(known)) if i not in scores] + [d for d in hits if d not in corpus]
            floor = ranked[-1][1] if ranked else 0.0
            ranked += [(d, floor - 1.0 - i) for i, d in enumerate(rest)]
            return qid, list(zip([d for d, _ in ranked], strictly_decreasing([x for _, x in ranked]), strict=True))

        out: dict[str, list[tuple[str, float]]] = {q: list(hits) for q, hits in run.items()}
        for qid, ranked in bounded_map(one, qids, max(1, self.endpoint.max_concurrency), progress=f"{NAME}: rerank"):
            out[qid] = ranked
        return Run(out, name=run.name)
