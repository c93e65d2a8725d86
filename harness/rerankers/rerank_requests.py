"""The rerank request kind of the LLM layer: a Cohere-style rerank API (``POST /rerank``: a query and
documents in, a relevance score per document out) through the LLM layer's endpoints (bound, first-call
gate, breaker, fatal stop), retry policy, usage, prices, dry run and reply cache (one entry per
(provider, base URL, model, query, document)).

Plain HTTP (the standard library's ``urllib`` through :func:`harness.served.transport.post`: a deadline on
the whole reply, a bound on its size; the installed openai SDK no longer brings ``httpx``), not
the ``cohere`` SDK: one POST of a small JSON body serves Cohere v1/v2, Jina, Voyage, TEI, vLLM, llama.cpp
and Infinity alike, which differ only in path, body and reply field names (:data:`PROVIDERS`); the SDK
speaks Cohere's shape only, so it could not serve TEI's ``texts``/``score`` or Voyage's ``top_k``/``data``,
and it would be one more dependency for a single POST.

Replies are untrusted (docs/untrusted.md, "Served models' replies"): :func:`parse` accepts only the
documented shape, an integer index per document sent, each once, and a finite JSON number as its score;
anything else is a :class:`~harness.served.request_errors.MalformedReply` (a failed request, never a score).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from harness.concepts.errors import HarnessError
from harness.llm.providers.base import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_READ_TIMEOUT,
    DUMMY_KEY,
    BaseProvider,
    error_for_status,
    key_source,
    resolve_key,
)
from harness.served.request_errors import ConnectionFailed, LLMError, LLMTimeout, MalformedReply
from harness.served.retry import parse_retry_after
from harness.served.transport import BadReply, HTTPStatusError, ReplyTooLarge, count, number, post, reply_json


@dataclass(frozen=True)
class RerankShape:
    """One provider's rerank protocol: default base URL, path, the documents' and top-n fields of the
    body, where the results are (None: the reply is the list), the score field, how usage is reported,
    the key variable, documents per request by default (their documented limit)."""

    base_url: str | None
    path: str
    docs_field: str = "documents"
    top_field: str | None = "top_n"
    results: str | None = "results"
    score: str = "relevance_score"
    usage: tuple[str, ...] = ("usage", "total_tokens")
    usage_unit: str = "tokens"
    key_env: str | None = None
    max_documents: int = 1000
    sends_model: bool = True


PROVIDERS: Mapping[str, RerankShape] = MappingProxyType({
    # docs.cohere.com/reference/rerank; v1 changelog: len(documents) * max_chunks_per_doc (10) <= 10,000
    "cohere": RerankShape("https://api.cohere.com", "/v2/rerank", usage=("meta", "billed_units", "search_units"),
                          usage_unit="search units", key_env="COHERE_API_KEY", max_documents=1000),
    # api.jina.ai/v1/rerank: Cohere's body and reply, usage in tokens (no per-request limit found documented)
    "jina": RerankShape("https://api.jina.ai", "/v1/rerank", key_env="JINA_API_KEY", max_documents=1000),
    # docs.voyageai.com/reference/reranker-api: "The number of documents cannot exceed 1000"; top_k, data
    "voyage": RerankShape("https://api.voyageai.com", "/v1/rerank", top_field="top_k", results="data",
                          key_env="VOYAGE_API_KEY", max_documents=1000),
    # text-embeddings-inference: POST /rerank {query, texts} -> [{index, score}]; --max-client-batch-size 32
    "tei": RerankShape(None, "/rerank", docs_field="texts", top_field=None, results=None, score="score",
                       usage=(), usage_unit="none reported", max_documents=32, sends_model=False),
    # vLLM, llama.cpp's server (--reranking), Infinity: Cohere/Jina's shape at /v1/rerank
    "compatible": RerankShape(None, "/v1/rerank", max_documents=1000),
})


class RerankProvider(BaseProvider):
    """One rerank endpoint: ``rerank(query, documents, timeout) -> (scores, usage units, model)``."""

    name = "rerank"

    def __init__(self, model: str, provider: str = "cohere", base_url: str | None = None,
                 api_key_env: str | None = None, timeout: float = DEFAULT_READ_TIMEOUT,
                 connect_timeout: float = DEFAULT_CONNECT_TIMEOUT, require_key: bool = True) -> None:
        if provider not in PROVIDERS:
            raise HarnessError(f"rerank-api: provider must be one of {', '.join(PROVIDERS)}, not {provider!r}")
        self.shape = PROVIDERS[provider]
        url = base_url or self.shape.base_url
        if not url:
            raise HarnessError(f"rerank-api: provider={provider} needs base_url=URL (the server's root, e.g. "
                               f"http://127.0.0.1:8080)")
        super().__init__(model, url, timeout, connect_timeout)
        self.name = f"rerank-{provider}"
        env = api_key_env or self.shape.key_env
        if provider == "cohere" and not api_key_env and not os.environ.get(env or "") and os.environ.get("CO_API_KEY"):
            env = "CO_API_KEY"  # the cohere SDK's other variable
        if env:
            self._api_key = resolve_key(self.name, env, self.base_url, require_key=require_key,
                                        explicit_env=api_key_env is not None)
        else:
            self._api_key = DUMMY_KEY  # a self-hosted server: no key unless api_key_env names one
        self.key_source = key_source(env, self._api_key)

    def client(self) -> Any:
        """No SDK: each request is one ``urllib`` POST (this provider keeps no connection)."""
        if self._api_key is None:
            raise LLMError("no API key (dry-run client used for a real call)", provider=self.name)
        return None

    def body(self, query: str, documents: list[str]) -> dict[str, Any]:
        s = self.shape
        out: dict[str, Any] = {"query": query, s.docs_field: list(documents)}
        if s.sends_model:
            out["model"] = self.model
        if s.top_field:
            out[s.top_field] = len(documents)
        return out

    def rerank(self, query: str, documents: list[str], *, timeout: float | None = None
               ) -> tuple[list[float], int, str]:
        """One request: a score per document (input order), the usage units reported, the model. The
        whole reply must come within the timeout (:mod:`harness.served.transport`) and pass :func:`parse`."""
        import http.client
        import json


        self.client()
        headers = {"Content-Type": "application/json"}
        if self._api_key not in (None, "EMPTY"):
            headers["Authorization"] = f"Bearer {self._api_key}"
        read = self.timeout if timeout is None else max(0.001, min(float(timeout), self.timeout))
        data = json.dumps(self.body(query, documents)).encode()
        try:
            raw = post(str(self.base_url) + self.shape.path, data, headers, read)
        except HTTPStatusError as exc:
            raise error_for_status(self, exc.status, _message(exc.body), parse_retry_after(exc.headers)) from None
        except TimeoutError as exc:
            raise self.error(LLMTimeout, f"no reply within {read:g} s (a timeout on the whole reply)") from exc
        except ReplyTooLarge as exc:
            raise self.error(MalformedReply, f"unexpected rerank reply: {exc}") from None
        except (OSError, http.client.HTTPException) as exc:  # URLError is an OSError; a cut reply an HTTPException
            raise self.error(ConnectionFailed, f"connection to {self.public_url} failed: "
                             f"{type(exc).__name__}: {exc}") from exc
        try:
            return parse(self.shape, raw, len(documents), self.model)
        except BadReply as exc:
            raise self.error(MalformedReply, f"unexpected rerank reply: {exc}") from None


def parse(shape: RerankShape, raw: bytes, n: int, model: str) -> tuple[list[float], int, str]:
    """``(scores by document position, usage units, model)`` of a reply body for ``n`` documents, checked:
    bounded JSON (:func:`harness.formats.bounded.loads`: depth, integer digits, no repeated key), the
    shape's fields of their types, every index an integer of a document sent, each document given exactly
    once, every score a finite number. Anything else raises :class:`~harness.served.transport.BadReply`."""
    obj = reply_json(raw)
    items = obj if shape.results is None else obj.get(shape.results) if isinstance(obj, dict) else None
    if not isinstance(items, list):
        where = "the reply" if shape.results is None else f"the reply's {shape.results!r}"
        raise BadReply(f"{where} is not a list")
    scores: list[float | None] = [None] * n
    for k, item in enumerate(items):
        if not isinstance(item, dict):
            raise BadReply(f"result {k} is not an object")
        i = item.get("index")
        if isinstance(i, bool) or not isinstance(i, int):
            raise BadReply(f"the index of result {k} is not an integer ({str(i)[:40]!r})")
        if not 0 <= i < n:
            raise BadReply(f"result {k}: index {i} is not one of the {n} documents")
        if scores[i] is not None:
            raise BadReply(f"result {k}: document {i} is given twice")
        scores[i] = number(item.get(shape.score), f"the score of result {k}")
    missing = sum(x is None for x in scores)
    if missing:
        raise BadReply(f"{missing} of {n} documents have no score")
    units: Any = obj if shape.usage else None
    for part in shape.usage:
        units = units.get(part) if isinstance(units, dict) else None
    named = obj.get("model") if isinstance(obj, dict) else None
    named = named[:200] if isinstance(named, str) and named else model
    return [float(x) for x in scores], count(units, "the usage"), named


def _message(raw: bytes) -> str:
    import json

    try:
        body = json.loads(raw)
    except ValueError:
        return raw[:300].decode("utf-8", "replace")
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            return str(err.get("message") or err)[:300]
        return str(err or body.get("message") or body.get("detail") or body)[:300]
    return str(body)[:300]
