"""The embeddings and rerank routes of the loopback test server (:mod:`harness.testing.llm_server`):
deterministic vectors and scores derived from the texts (so a test recomputes the expected ranking with
:func:`embedding_vector` and :func:`rerank_score`), the APIs' limits enforced with their error bodies.

- ``POST /v1/embeddings`` (OpenAI): ``{model, input, dimensions?, encoding_format?}`` -> ``{"object":
  "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage": {"prompt_tokens",
  "total_tokens"}}``. Limits (OpenAI's): at most 2,048 inputs, 8,192 tokens per input, 300,000 tokens per
  request, no empty input; tokens counted with the server's rough BPE split (:func:`tokenize`).
- ``POST .../rerank`` in each provider's shape, told apart by the body: ``texts`` -> TEI (``[{index,
  score}]``, at most ``rerank_limit`` texts, TEI's 413 body); ``top_k`` -> Voyage (``{"object": "list",
  "data": [{index, relevance_score}], "usage": {"total_tokens"}}``); otherwise Cohere v1/v2, Jina,
  vLLM, llama.cpp (``{"results": [{index, relevance_score}], "meta": {"billed_units": {"search_units"}},
  "usage": {"total_tokens"}}``). More documents than ``rerank_limit`` is a 400 (413 for TEI).
"""

from __future__ import annotations

import base64
import hashlib
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

EMBED_DIM = 64
MAX_INPUTS, MAX_INPUT_TOKENS, MAX_REQUEST_TOKENS = 2048, 8192, 300_000
_WORD = re.compile(r"\w+")
_TOKEN_RE = re.compile(r"\s?\w+|\s?[^\w\s]|\s+")


def tokenize(text: str) -> list[str]:
    return _TOKEN_RE.findall(text)


def _h(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:8], "big")


def embedding_vector(text: str, dim: int = EMBED_DIM) -> np.ndarray:
    """The server's vector of ``text``: hashed word counts plus a small per-text term (no zero vector,
    no ties), not unit length (a served model's vectors need not be)."""
    v = np.zeros(dim, dtype=np.float64)
    for w in _WORD.findall(text.lower()):
        v[_h(w) % dim] += 1.0
    rng = np.random.default_rng(_h("text:" + text) % (2**32))
    v += 0.01 * rng.standard_normal(dim)
    return v.astype(np.float32)


def rerank_score(query: str, document: str) -> float:
    """The server's relevance of ``document`` to ``query``: shared words over the document's length, plus a
    tiny per-pair term (no ties). Pointwise, so comparable across requests."""
    q = set(_WORD.findall(query.lower()))
    d = _WORD.findall(document.lower())
    shared = sum(1 for w in d if w in q)
    return shared / math.sqrt(len(d) + 1) + (_h(query + "\x00" + document) % 1000) * 1e-7


def _err(message: str, etype: str = "invalid_request_error", param: str | None = None, code: Any = None) -> dict:
    return {"error": {"message": message, "type": etype, "param": param, "code": code}}


def embeddings_reply(body: Mapping[str, Any]) -> tuple[int, dict]:
    """(status, JSON) of ``POST /v1/embeddings`` for ``body``."""
    inputs = body.get("input")
    if isinstance(inputs, str):
        inputs = [inputs]
    if not isinstance(inputs, list) or not inputs or not all(isinstance(t, str) for t in inputs):
        return 400, _err("'$.input' is invalid. Please check the API reference: "
                         "https://platform.openai.com/docs/api-reference.", param="input")
    if len(inputs) > MAX_INPUTS:
        return 400, _err(f"'$.input' is invalid: an array of at most {MAX_INPUTS} inputs; got {len(inputs)}",
                         param="input")
    if any(not t for t in inputs):
        return 400, _err("'$.input' is invalid: an input cannot be an empty string", param="input")
    counts = [len(tokenize(t)) for t in inputs]
    if max(counts) > MAX_INPUT_TOKENS:
        n = max(counts)
        return 400, _err(f"This model's maximum context length is {MAX_INPUT_TOKENS} tokens, however you requested "
                         f"{n} tokens ({n} in your prompt; 0 for the completion). Please reduce your prompt; or "
                         f"completion length.", code="context_length_exceeded")
    if sum(counts) > MAX_REQUEST_TOKENS:
        return 400, _err(f"Requested {sum(counts)} tokens, max {MAX_REQUEST_TOKENS} tokens per request",
                         etype="max_tokens_per_request", code="max_tokens_per_request")
    dim = body.get("dimensions")
    if dim is not None and (not isinstance(dim, int) or dim < 1):
        return 400, _err("'$.dimensions' must be a positive integer", param="dimensions")
    dim = int(dim or EMBED_DIM)
    b64 = body.get("encoding_format") == "base64"
    data = []
    for i, t in enumerate(inputs):
        v = embedding_vector(t, dim)
        emb: Any = base64.b64encode(v.astype("<f4").tobytes()).decode() if b64 else [float(x) for x in v]
        data.append({"object": "embedding", "index": i, "embedding": emb})
    n = sum(counts)
    return 200, {"object": "list", "data": data, "model": body.get("model", "test-embedding"),
                 "usage": {"prompt_tokens": n, "total_tokens": n}}


def rerank_reply(body: Mapping[str, Any], limit: int) -> tuple[int, Any]:
    """(status, JSON) of a rerank route for ``body`` (see the module docstring); ``limit``: documents per request."""
    tei = "texts" in body
    docs = body.get("texts") if tei else body.get("documents")
    query = body.get("query")
    if not isinstance(query, str) or not isinstance(docs, list) or not docs:
        if tei:
            return 422, {"error": "query and texts are required", "error_type": "Validation"}
        return 400, {"message": "invalid request: query and documents are required"}
    docs = [d.get("text", "") if isinstance(d, dict) else str(d) for d in docs]
    if len(docs) > limit:
        if tei:
            return 413, {"error": f"batch size {len(docs)} > maximum allowed batch size {limit}",
                         "error_type": "Validation"}
        return 400, {"message": f"invalid request: {len(docs)} documents; at most {limit} are allowed"}
    scores = [rerank_score(query, d) for d in docs]
    order = sorted(range(len(docs)), key=lambda i: -scores[i])
    tokens = sum(len(tokenize(d)) + len(tokenize(query)) for d in docs)
    if tei:
        return 200, [{"index": i, "score": scores[i]} for i in order]
    if "top_k" in body:
        k = int(body.get("top_k") or len(docs))
        return 200, {"object": "list", "data": [{"index": i, "relevance_score": scores[i]} for i in order[:k]],
                     "model": body.get("model"), "usage": {"total_tokens": tokens}}
    k = int(body.get("top_n") or len(docs))
    return 200, {"id": "rerank-test", "results": [{"index": i, "relevance_score": scores[i]} for i in order[:k]],
                 "model": body.get("model"), "meta": {"billed_units": {"search_units": 1 + (len(docs) - 1) // 100}},
                 "usage": {"total_tokens": tokens}}
