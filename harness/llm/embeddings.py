"""The embeddings request kind of the LLM layer: ``POST /embeddings`` through the same provider objects,
endpoints (bound, first-call gate, breaker, fatal stop), retry policy, usage, prices, dry run and Batch
API as chat, with an embedding cache per text (:class:`harness.retrievers.dense.cache.EmbeddingCache`).

Packing. The texts no cache holds are cut into requests within the OpenAI embeddings API's documented
limits (:data:`OPENAI_LIMITS`: at most 2,048 inputs per request, 8,192 tokens per input, 300,000 tokens
summed over one request's inputs), and at most ``batch_size`` inputs per request. Tokens are counted
with tiktoken's ``cl100k_base`` (the encoding of text-embedding-3-* and ada-002) when tiktoken is
installed and its encoding loads offline; otherwise by the text's UTF-8 byte count, a strict upper bound
(every BPE token of these encodings is at least one byte), so a request packed here never exceeds a
limit. A text over the per-input limit is cut to its first 8,192 tokens (tiktoken) or 8,192 bytes (at a
character boundary) and counted (``truncated``): never sent whole, never dropped.

Failures follow the LLM layer's policy: a request that got no usable reply after its retries is counted
in usage (the run is INCOMPLETE) and its texts are reported failed; 401/403 and 404 stop at the first
request (the endpoint's first-call gate).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.llm.errors import LLMError, MalformedReply
from harness.llm.types import ChatOptions, Reply, TokenCounts

log = logging.getLogger("harness.llm")
CACHE_VERSION = "1"


@dataclass(frozen=True)
class EmbeddingLimits:
    """Per-request limits of an embeddings API."""

    max_inputs: int = 2048
    max_input_tokens: int = 8192
    max_request_tokens: int = 300_000


#: https://platform.openai.com/docs/api-reference/embeddings/create (the ``input`` field)
OPENAI_LIMITS = EmbeddingLimits()


@dataclass(frozen=True)
class EmbeddingReply:
    """One embeddings response: a float32 vector per input (in input order), the tokens billed, the model."""

    vectors: np.ndarray
    input_tokens: int = 0
    model: str = ""


def parse_embedding_reply(provider: Any, resp: Any, n: int) -> EmbeddingReply:
    """An embeddings response body (``{"data": [{"index", "embedding"}], "usage", "model"}``) checked:
    exactly ``n`` finite vectors of one dimension, each index once."""
    try:
        data = resp["data"]
        rows: list[Any] = [None] * n
        for item in data:
            i = int(item.get("index", 0))
            if not 0 <= i < n or rows[i] is not None:
                raise ValueError(f"index {i} out of range or repeated")
            emb = item["embedding"]
            if isinstance(emb, str):  # encoding_format=base64
                rows[i] = np.frombuffer(base64.b64decode(emb), dtype="<f4")
            else:
                if emb and isinstance(emb[0], list):
                    raise ValueError("one vector per token (the server pools nothing: set a pooling type)")
                rows[i] = np.asarray(emb, dtype=np.float32)
        if any(r is None for r in rows):
            raise ValueError(f"{sum(r is None for r in rows)} of {n} inputs have no vector")
        matrix = np.vstack(rows).astype(np.float32) if n else np.zeros((0, 0), np.float32)
        if n and (matrix.ndim != 2 or not np.isfinite(matrix).all()):
            raise ValueError("vectors are not finite or not of one dimension")
        usage = resp.get("usage") or {}
        tokens = int(usage.get("prompt_tokens") or usage.get("total_tokens") or 0)
        return EmbeddingReply(matrix, tokens, str(resp.get("model") or provider.model))
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise provider.error(MalformedReply, f"unexpected embeddings reply ({type(exc).__name__}: {exc})") from exc


def encode_vector(v: np.ndarray) -> str:
    """A vector as text (base64 of little-endian float32): how a batch result is kept in the reply cache."""
    return base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode("ascii")


def decode_vector(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f4").astype(np.float32)


def reply_of(provider: Any, er: EmbeddingReply) -> Reply:
    """A one-text :class:`EmbeddingReply` as a :class:`Reply` (the batch runner's currency)."""
    return Reply(encode_vector(er.vectors[0]), "stop", None, TokenCounts(er.input_tokens, 0), er.model, provider.name)


def pending_text(messages: Sequence[Any]) -> str:
    return str(messages[0]["content"]) if messages else ""


# -- tokens ----------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _encoding() -> Any:
    try:
        import tiktoken

        return tiktoken.get_encoding("cl100k_base")
    except Exception:  # not installed, or its encoding file cannot be fetched offline
        return None


def tokenizer_name() -> str:
    return "tiktoken:cl100k_base" if _encoding() is not None else "utf8-bytes (upper bound)"


def count_tokens(text: str) -> int:
    enc = _encoding()
    if enc is not None:
        return len(enc.encode(text, disallowed_special=()))
    return len(text.encode("utf-8", "surrogatepass"))


def truncate(text: str, limit: int) -> tuple[str, int, bool]:
    """``(text within limit tokens, its token count, whether it was cut)`` (see the module docstring)."""
    n = count_tokens(text)
    if n <= limit:
        return text, n, False
    enc = _encoding()
    if enc is not None:
        cut = enc.decode(enc.encode(text, disallowed_special=())[:limit])
    else:
        cut = text.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")
    return cut, count_tokens(cut), True


def pack(tokens: Sequence[int], limits: EmbeddingLimits, batch_size: int) -> list[list[int]]:
    """Positions grouped into requests, in order: at most ``min(batch_size, max_inputs)`` inputs and
    ``max_request_tokens`` tokens each (every input already within ``max_input_tokens``)."""
    most = max(1, min(int(batch_size), limits.max_inputs))
    groups: list[list[int]] = []
    group: list[int] = []
    size = 0
    for i, n in enumerate(tokens):
        if group and (len(group) >= most or size + n > limits.max_request_tokens):
            groups.append(group)
            group, size = [], 0
        group.append(i)
        size += n
    if group:
        groups.append(group)
    return groups


# -- the client ------------------------------------------------------------------------------------
@dataclass
class EmbedResult:
    """Vectors of the texts asked for (raw, as the server sent them; NaN rows where ``failed``), which
    texts failed and why."""

    vectors: np.ndarray
    failed: np.ndarray
    errors: dict[int, str] = field(default_factory=dict)


class EmbeddingClient:
    """Embeds texts through one provider endpoint (see the module docstring). ``cache``: ``dense``'s
    embedding cache (None: off); ``batch``: a :class:`~harness.llm.batch.runner.BatchRunner`
    over the provider's ``/v1/embeddings`` Batch API (``--llm-batch``), with ``reply_cache`` the LLM
    reply cache its results are collected into."""

    def __init__(self, provider: Any, *, endpoint: Any, retry: Any, usage: Any, cache: Any = None,
                 dimensions: int | None = None, batch_size: int = 2048, limits: EmbeddingLimits = OPENAI_LIMITS,
                 max_concurrency: int = 8, dry_run: bool = False, batch: Any = None, reply_cache: Any = None,
                 progress: Any = None) -> None:
        self.provider, self.endpoint, self.retry, self.usage = provider, endpoint, retry, usage
        self.cache, self.dimensions, self.batch_size, self.limits = cache, dimensions, int(batch_size), limits
        self.max_concurrency, self.dry_run, self.batch, self.reply_cache = max_concurrency, dry_run, batch, reply_cache
        self.progress = progress
        self.label = f"{provider.name}:{provider.model}"
        self.sent_requests = self.encoded = self.cache_hits = self.truncated = 0
        self.max_inputs_sent = self.max_tokens_sent = 0
        self.models_seen: set[str] = set()
        self._lock = threading.Lock()

    # -- keys ------------------------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """What decides a vector besides its text: picks the embedding cache's file."""
        from harness.runtime.redact import redact_url

        url = getattr(self.provider, "base_url", None)
        return {"kind": "embeddings-api", "v": CACHE_VERSION, "provider": self.provider.name,
                "base_url": redact_url(url) if url else None, "model": self.provider.model,
                "dimensions": self.dimensions, "truncation": f"{tokenizer_name()}@{self.limits.max_input_tokens}"}

    def payload(self, text: str) -> dict[str, Any]:
        """The reply-cache key payload of one text (batch mode): the identity and the text as sent."""
        return {**self.identity(), "options": self._options().key_dict(), "text": text}

    def _options(self) -> ChatOptions:
        return ChatOptions(extra={"dimensions": self.dimensions}) if self.dimensions is not None else ChatOptions()

    # -- embedding -------------------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> EmbedResult:
        """Vectors for ``texts`` (raw; see :class:`EmbedResult`), from the cache where possible."""
        uniq = list(dict.fromkeys(texts))
        prepared = [truncate(t, self.limits.max_input_tokens) for t in uniq]
        cut = sum(1 for _, _, c in prepared if c)
        with self._lock:
            self.truncated += cut
        if cut:
            log.info("%s: %d text(s) over %d tokens cut to that length", self.label, cut,
                     self.limits.max_input_tokens)
        keys = [text_key(sent) for sent, _, _ in prepared]
        vectors: dict[int, np.ndarray] = {}
        if self.cache is not None and uniq:
            arr, found = self.cache.lookup(keys)
            for i in np.flatnonzero(found):
                vectors[int(i)] = arr[i]
            with self._lock:
                self.cache_hits += int(found.sum())
        todo = [i for i in range(len(uniq)) if i not in vectors]
        errors: dict[int, str] = {}
        if todo:
            got, errors = self._fetch([prepared[i][0] for i in todo], [prepared[i][1] for i in todo])
            for j, vec in got.items():
                vectors[todo[j]] = vec
            errors = {todo[j]: msg for j, msg in errors.items()}
            if self.cache is not None and got:
                self.cache.put([keys[todo[j]] for j in got], np.vstack([got[j] for j in got]))
        return self._assemble(texts, uniq, vectors, errors)

    def _assemble(self, texts: Sequence[str], uniq: list[str], vectors: dict[int, np.ndarray],
                  errors: dict[int, str]) -> EmbedResult:
        dims = {int(v.shape[0]) for v in vectors.values()}
        if len(dims) > 1:
            raise LLMError(f"{self.label}: vectors of different dimensions {sorted(dims)}", provider=self.provider.name)
        dim = dims.pop() if dims else 1
        pos = {t: i for i, t in enumerate(uniq)}
        out = np.full((len(texts), dim), np.nan, dtype=np.float32)
        failed = np.ones(len(texts), dtype=bool)
        errs: dict[int, str] = {}
        for row, t in enumerate(texts):
            i = pos[t]
            if i in vectors:
                out[row], failed[row] = vectors[i], False
            else:
                errs[row] = errors.get(i, "dry run: nothing was sent" if self.dry_run else "no vector")
        if self.dry_run:
            out[failed], failed[:] = 0.0, False  # a dry run ranks nothing: zero vectors, not failures
        return EmbedResult(out, failed, errs)

    def _fetch(self, texts: list[str], tokens: list[int]) -> tuple[dict[int, np.ndarray], dict[int, str]]:
        """Vectors (by position in ``texts``) of texts no embedding cache holds, and the failures."""
        if self.batch is not None:
            return self._fetch_batch(texts)
        groups = pack(tokens, self.limits, self.batch_size)
        if self.dry_run:
            for g in groups:
                self.usage.record_call(self.label, Reply("", "dry_run", usage=TokenCounts(sum(tokens[i] for i in g), 0),
                                                         model=self.provider.model, dry_run=True))
            return {}, {}
        from harness.llm.pool import bounded_map

        def one(group: list[int]) -> EmbeddingReply | LLMError:
            try:
                return self._send([texts[i] for i in group], sum(tokens[i] for i in group))
            except LLMError as error:
                return error

        results = bounded_map(one, groups, max(1, self.max_concurrency), progress=f"{self.label}: embedding",
                              settings=self.progress)
        got: dict[int, np.ndarray] = {}
        failed: dict[int, str] = {}
        for group, res in zip(groups, results, strict=True):
            for j, i in enumerate(group):
                if isinstance(res, EmbeddingReply):
                    got[i] = res.vectors[j]
                else:
                    failed[i] = f"{type(res).__name__}: {res}"
        return got, failed

    def _send(self, texts: list[str], tokens: int) -> EmbeddingReply:
        """One request (all its attempts) through the endpoint's gate, bound, breaker and retries."""
        from harness.llm.endpoint import guarded_call

        def attempt(time_left: float | None) -> EmbeddingReply:
            with self.endpoint.slot():
                with self._lock:
                    self.sent_requests += 1
                    self.max_inputs_sent = max(self.max_inputs_sent, len(texts))
                    self.max_tokens_sent = max(self.max_tokens_sent, tokens)
                reply = self.provider.embed(texts, self.dimensions, timeout=time_left)
            if reply.vectors.shape[0] != len(texts):
                raise self.provider.error(MalformedReply, "the reply holds another number of vectors than inputs")
            return reply

        reply, retries = guarded_call(self.endpoint, self.retry, self.usage, self.label, attempt)
        self.usage.record_call(self.label, Reply("", "stop", usage=TokenCounts(reply.input_tokens, 0),
                                                 model=reply.model, provider=self.provider.name, retries=retries))
        with self._lock:
            self.encoded += len(texts)
            self.models_seen.add(reply.model)
        return reply

    # -- the Batch API ---------------------------------------------------------------------------
    def _fetch_batch(self, texts: list[str]) -> tuple[dict[int, np.ndarray], dict[int, str]]:
        """One text per batch line, keyed by its reply-cache key; what an earlier (killed) run collected
        is read from the reply cache, what a live batch holds is adopted, the rest submitted."""
        from harness.llm.batch.api import Pending
        from harness.llm.cache import key_of

        got: dict[int, np.ndarray] = {}
        pending: dict[str, Pending] = {}
        where: dict[str, list[int]] = {}
        for i, t in enumerate(texts):
            payload = self.payload(t)
            key = key_of(payload)
            where.setdefault(key, []).append(i)
            if key in pending:
                continue
            entry = self.reply_cache.get(key) if self.reply_cache is not None else None
            if entry is not None:
                reply = Reply.from_dict(entry["reply"], cached=True)
                self.usage.record_hit(self.label, reply)
                for j in where[key]:
                    got[j] = decode_vector(reply.text)
                continue
            pending[key] = Pending(key, payload, [{"role": "user", "content": t}], self._options())
        if self.dry_run:
            self.usage.record_round(self.label)
            for p in pending.values():
                n = count_tokens(pending_text(p.messages))
                self.usage.record_call(self.label, Reply("", "dry_run", usage=TokenCounts(n, 0), dry_run=True),
                                       batch=True)
            return got, {}
        answers = self.batch.resolve(list(pending.values())) if pending else {}
        failed: dict[int, str] = {}
        for key in pending:
            ans = answers.get(key)
            for j in where[key]:
                if isinstance(ans, Reply):
                    got[j] = decode_vector(ans.text)
                else:
                    failed[j] = f"{type(ans).__name__}: {ans}"
        with self._lock:
            self.encoded += sum(1 for k in pending if isinstance(answers.get(k), Reply))
        return got, failed

    def stats(self) -> dict[str, Any]:
        return {"requests": self.sent_requests, "embedded": self.encoded, "cache_hits": self.cache_hits,
                "truncated": self.truncated, "max_inputs_per_request": self.max_inputs_sent,
                "max_tokens_per_request": self.max_tokens_sent, "tokenizer": tokenizer_name(),
                "models_reported": sorted(self.models_seen)}


def text_key(text: str) -> bytes:
    """32-byte key of a text as sent (the embedding cache's key size)."""
    return hashlib.sha256(b"embeddings-api\x00" + text.encode("utf-8", "surrogatepass")).digest()


def make_embedding_client(session: Any, spec: Any, *, dimensions: int | None, batch_size: int | None,
                          make_cache: Callable[[dict[str, Any]], Any] | None = None,
                          on_client: Callable[[Any], None] | None = None) -> EmbeddingClient:
    """An :class:`EmbeddingClient` for an LLM spec (``openai:MODEL[:base_url=...]``, replicas included)
    in ``session`` (an :class:`~harness.llm.session.LLMSession`): its endpoint, retry policy, prices, dry
    run and batch settings; its usage is part of the session's (the failure policy reads it)."""
    from harness.llm.usage import Usage

    s = session.settings
    dry = bool(s.dry_run)
    conc = int(spec.client_args.get("max_concurrency") or s.max_concurrency)
    if spec.replicas:
        provider, endpoint = session.replica_set(spec, conc, require_key=not dry)
    else:
        provider = session.resolve_provider(spec, require_key=not dry)
        endpoint = session.endpoint(provider, conc)
    official = spec.provider == "openai" and getattr(provider, "official", False)
    default_batch = OPENAI_LIMITS.max_inputs if official else 32
    client = EmbeddingClient(provider, endpoint=endpoint, retry=s.retry, usage=Usage(session.prices(), dry_run=dry),
                             dimensions=dimensions, batch_size=int(batch_size or default_batch),
                             max_concurrency=endpoint.max_concurrency, dry_run=dry, progress=session.progress)
    if make_cache is not None and s.use_cache:
        client.cache = make_cache(client.identity())
    if s.batch:
        from harness.concepts.errors import HarnessError

        api = getattr(provider, "embeddings_batch_api", lambda: None)()
        if api is None:
            raise HarnessError(f"--llm-batch: {client.label} has no Batch API (OpenAI's has one; an "
                               "OpenAI-compatible server has none); drop --llm-batch")
        if not s.use_cache:
            raise HarnessError("--llm-batch needs the LLM reply cache (batch results are collected into it); "
                               "drop --no-llm-cache")
        client.reply_cache = session.cache()
        if dry:
            client.batch = True
        else:
            from harness.llm.batch.runner import BatchRunner
            from harness.llm.session import endpoint_identity

            ident = endpoint_identity(provider)
            ident["endpoint"] = "embeddings:" + ident["endpoint"]
            client.batch = BatchRunner(api, session.journal(client.reply_cache), client.reply_cache, client.usage,
                                       client.label, ident, retry=client.retry, wait=s.batch_wait, poll=s.batch_poll,
                                       resend=s.batch_retry if s.batch_retry != "direct" else "batch",
                                       max_requests=s.batch_size, progress=session.progress, stop=session.stop)
    session.add_client(client)
    if on_client is not None:
        on_client(client)
    return client
