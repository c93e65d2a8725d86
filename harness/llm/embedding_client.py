"""The embeddings request kind of the LLM layer: ``POST /embeddings`` through the same provider objects,
endpoints (bound, first-call gate, breaker, fatal stop), retry policy, usage, prices, dry run and Batch
API as chat, with an embedding cache per text (:class:`harness.retrievers.dense.embedding_cache.EmbeddingCache`).

Token counts as the API counts them (:func:`input_rule`). For OpenAI's models (text-embedding-3-*,
ada-002) tokens are counted with the model's own encoding, ``cl100k_base``, its table found offline
(:mod:`harness.served.tokens`); a text is cut, to its first 8,192 tokens, only when it is over the API's
per-input limit of 8,192 tokens, and counted (``truncated``). Where no exact count is available (the table
is not here, or another server's model whose tokenizer is not known here) a text is sent whole, and one
the server rejects as over its maximum context length is shortened by :data:`SHORTEN_RULE` and sent once
more (``rejected_over_limit``, ``shortened_after_rejection``, ``truncated``): a request so rejected is
split in halves until the text it was about is alone. Rejected again, the text fails (the run is
INCOMPLETE). Through the Batch API nothing is sent again: without an exact count, a line the API rejects
as over the limit is a failed text (the warning at the start says so). ``stats()`` names the tokenizer (and
where its table came from) and the rule.

Packing. The texts no cache holds are cut into requests within the OpenAI embeddings API's documented
limits (:data:`OPENAI_LIMITS`: at most 2,048 inputs per request, 8,192 tokens per input, 300,000 tokens
summed over one request's inputs), and at most ``batch_size`` inputs per request; without an exact count,
a text's tokens for packing are its UTF-8 bytes, a strict upper bound (every token of a byte-level BPE is
at least one byte), so a packed request never exceeds the request limit.

Failures follow the LLM layer's policy: a request that got no usable reply after its retries is counted
in usage (the run is INCOMPLETE) and its texts are reported failed; 401/403 and 404 stop at the first
request (the endpoint's first-call gate).

Replies are untrusted (docs/untrusted.md, "Served models' replies"): a reply is read with bounded work
(:func:`harness.served.transport.reply_json`) and every vector checked (:func:`check_vector`: JSON numbers,
not booleans or text, finite, not empty, not all zeros, within float32's range), all of one length: the
requested ``dimensions``, else the run's first vector's, across every request, the embedding cache and
the Batch API's results alike. A reply that fails is a :class:`MalformedReply`: a failed request, never a
vector. Cached vectors that fail are asked for again (``cache_refused``).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import logging
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.concepts.errors import HarnessError
from harness.llm.session import endpoint_identity
from harness.runtime.redact import redact_url
from harness.served.batch.protocol import Pending
from harness.served.batch.runner import BatchRunner
from harness.served.endpoint import guarded_call
from harness.served.pool import bounded_map
from harness.served.reply_cache import key_of
from harness.served.request_errors import BadRequest, LLMError, MalformedReply
from harness.served.tokens import for_model, load
from harness.served.transport import BadReply, count
from harness.served.types import ChatOptions, Reply, TokenCounts
from harness.served.usage import Usage

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


#: float32's range (what the cache and the search keep): a vector whose largest magnitude is outside it
#: would become infinite, or lose its digits, when kept
F32_MAX = float(np.finfo(np.float32).max)
F32_TINY = float(np.finfo(np.float32).tiny)


def parse_embedding_reply(provider: Any, resp: Any, n: int) -> EmbeddingReply:
    """An embeddings response body (``{"data": [{"index", "embedding"}], "usage", "model"}``, parsed)
    checked: exactly ``n`` vectors, each index an integer of an input and given once, each vector checked
    by :func:`check_vector`, all of one length. Anything else is a :class:`MalformedReply` (a failed
    request) naming the input and what is wrong."""
    try:
        if not isinstance(resp, dict) or not isinstance(resp.get("data"), list):
            raise BadReply("no list of vectors ('data')")
        data = resp["data"]
        if len(data) != n:
            raise BadReply(f"{len(data)} vectors for {n} inputs")
        rows: list[np.ndarray | None] = [None] * n
        for k, item in enumerate(data):
            if not isinstance(item, dict):
                raise BadReply(f"item {k} of 'data' is not an object")
            i = item.get("index", k)
            if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n:
                raise BadReply(f"item {k}: index {str(i)[:40]!r} is not one of the {n} inputs")
            if rows[i] is not None:
                raise BadReply(f"item {k}: input {i} is given twice")
            rows[i] = check_vector(item.get("embedding"), f"the vector of input {i}")
        dims = sorted({len(r) for r in rows if r is not None})
        if len(dims) > 1:
            raise BadReply(f"vectors of different lengths ({', '.join(map(str, dims))}) in one reply")
        matrix = np.vstack(rows).astype(np.float32) if n else np.zeros((0, 0), np.float32)
        usage = resp.get("usage") if isinstance(resp.get("usage"), dict) else {}
        tokens = count(usage.get("prompt_tokens", usage.get("total_tokens")), "the usage")
        model = resp.get("model")
        return EmbeddingReply(matrix, tokens, model[:200] if isinstance(model, str) and model else provider.model)
    except BadReply as exc:
        raise provider.error(MalformedReply, f"unexpected embeddings reply: {exc}") from None


def check_vector(emb: Any, what: str) -> np.ndarray:
    """One vector of a reply as float32: a list of JSON numbers (not booleans, not text) or base64 of
    little-endian float32, not empty, finite, not all zeros (a zero vector has no direction: a failure
    for its text), its largest magnitude within float32's range. Else :class:`BadReply`."""
    import binascii


    if isinstance(emb, str):  # encoding_format=base64
        try:
            raw = base64.b64decode(emb, validate=True)
        except (binascii.Error, ValueError):
            raise BadReply(f"{what} is not base64") from None
        if len(raw) % 4:
            raise BadReply(f"{what} is {len(raw)} bytes, not whole float32 values")
        vec = np.frombuffer(raw, dtype="<f4").astype(np.float64)
    elif isinstance(emb, list):
        bad = next((x for x in emb if type(x) is not float and type(x) is not int), None)
        if isinstance(bad, list):
            raise BadReply("one vector per token (the server pools nothing: set a pooling type)")
        if bad is not None:
            shown = repr(bad) if isinstance(bad, str | bool) else type(bad).__name__
            raise BadReply(f"{what}: a value is not a number ({shown[:40]})")
        try:
            vec = np.asarray(emb, dtype=np.float64)
        except OverflowError:  # an integer beyond a float's range (a reply not read with bounded integers)
            raise BadReply(f"{what} is not finite") from None
    else:
        raise BadReply(f"{what} is not a list of numbers ({type(emb).__name__})")
    return _checked_values(vec, what)


def _checked_values(vec: np.ndarray, what: str) -> np.ndarray:
    if not vec.size:
        raise BadReply(f"{what} is empty")
    if not np.isfinite(vec).all():
        raise BadReply(f"{what} is not finite")
    peak = float(np.abs(vec).max())
    if peak == 0:
        raise BadReply(f"{what} is all zeros")
    if not F32_TINY <= peak <= F32_MAX:
        raise BadReply(f"{what} is outside float32's range (largest magnitude {peak:g})")
    return vec.astype(np.float32)


def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to length 1 (cosine), safely whatever their scale: in float64, each row divided by its
    largest magnitude first (so squaring neither overflows at 1e20 nor underflows at 1e-30); an all-zero
    or non-finite row stays as it is (NaN rows mark failures)."""
    v = np.asarray(vectors, dtype=np.float64)
    if not v.size:
        return v.astype(np.float32)
    peak = np.abs(v).max(axis=1, keepdims=True)
    ok = np.isfinite(peak) & (peak > 0)
    scaled = np.divide(v, peak, out=np.zeros_like(v), where=ok)
    norm = np.linalg.norm(scaled, axis=1, keepdims=True)
    return np.where(ok, scaled / np.where(ok, norm, 1.0), v).astype(np.float32)


def encode_vector(v: np.ndarray) -> str:
    """A vector as text (base64 of little-endian float32): how a batch result is kept in the reply cache."""
    return base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode("ascii")


def reply_of(provider: Any, er: EmbeddingReply) -> Reply:
    """A one-text :class:`EmbeddingReply` as a :class:`Reply` (the batch runner's currency)."""
    return Reply(encode_vector(er.vectors[0]), "stop", None, TokenCounts(er.input_tokens, 0), er.model, provider.name)


def pending_text(messages: Sequence[Any]) -> str:
    return str(messages[0]["content"]) if messages else ""


# -- tokens ----------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4)
def _encoding(name: str = "cl100k_base") -> Any:
    """The :class:`~harness.served.tokens.Tokenizer` of encoding ``name``, or why there is none (a sentence)."""
    return load(name)


def count_tokens(text: str) -> int:
    """``text``'s cl100k_base tokens where the table is here, else its UTF-8 bytes (an upper bound)."""
    enc = _encoding()
    if not isinstance(enc, str):
        return enc.count(text)
    return len(text.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True)
class OverLimit:
    """A request the server rejected as over its maximum context length: the limit it states, the
    input's tokens when it states them, its message."""

    limit: int
    requested: int | None
    message: str


_LIMIT = re.compile(r"maximum context length is (\d{1,9}) tokens", re.IGNORECASE)
_REQUESTED = re.compile(r"(?:requested|resulted in) (\d{1,12}) tokens", re.IGNORECASE)


def over_limit(error: LLMError) -> OverLimit | None:
    """The rejection ``error`` is, when it is a 400 saying the input is over the model's maximum context
    length (OpenAI's and vLLM's wording: "This model's maximum context length is L tokens, however you
    requested R tokens ..."); else None."""
    if not isinstance(error, BadRequest):
        return None
    text = str(getattr(error, "detail", None) or error)[:2000]
    found = _LIMIT.search(text)
    if found is None or int(found.group(1)) < 1:
        return None
    asked = _REQUESTED.search(text, found.end())
    return OverLimit(int(found.group(1)), int(asked.group(1)) if asked else None, text[:300])


@dataclass(frozen=True)
class Shortened:
    """The vector of a text shortened after a rejection (not kept in the embedding cache: a rerun asks
    again, so its counts are the same)."""

    vector: np.ndarray


#: how a text is shortened after the server rejected it as over its maximum context length
SHORTEN_RULE = ("a text the server rejects as over its maximum context length (L tokens; R, the text's tokens, "
                "as the rejection states them) is shortened and sent once more: to its first L tokens where "
                "the model's tokenizer is here, else to its first floor(0.9 * characters * L / R) characters, "
                "else (no R stated) to its first L UTF-8 bytes at a character boundary")


@dataclass(frozen=True)
class InputRule:
    """How a client sizes its inputs. ``tokenizer``: the model's own (None: no exact count here, ``why``);
    ``limit``: the per-input token limit cut to here (with a tokenizer) and documented for the model."""

    tokenizer: Any
    limit: int | None
    why: str = ""

    def prepare(self, text: str) -> tuple[str, int, bool]:
        """``(text to send, its tokens for packing, whether it was cut)``: cut to the first ``limit``
        tokens only when over it (exact count); without a tokenizer, sent whole, its UTF-8 bytes the packing
        count (an upper bound: every token of a byte-level BPE is at least one byte)."""
        if self.tokenizer is None:
            return text, len(text.encode("utf-8", "surrogatepass")), False
        n = self.tokenizer.count(text)
        if self.limit is None or n <= self.limit:
            return text, n, False
        cut = self.tokenizer.head(text, self.limit)
        return cut, self.tokenizer.count(cut), True

    def shorten(self, text: str, over: OverLimit) -> str:
        """``text`` shortened after ``over`` (:data:`SHORTEN_RULE`); never empty, always shorter."""
        if self.tokenizer is not None:
            cut = self.tokenizer.head(text, over.limit)
        elif over.requested and over.requested > over.limit:
            cut = text[:int(0.9 * len(text) * over.limit / over.requested)]
        else:
            cut = text.encode("utf-8", "surrogatepass")[:over.limit].decode("utf-8", "ignore")
        if not cut or len(cut) >= len(text):
            cut = text[:max(1, len(text) // 2)]
        return cut

    def key(self) -> str:
        """The rule as the embedding cache's identity names it."""
        if self.tokenizer is not None and self.limit is not None:
            return f"tiktoken:{self.tokenizer.name}@{self.limit}"
        return "whole;shortened-on-rejection:v1"

    def describe(self) -> str:
        if self.tokenizer is not None and self.limit is not None:
            return (f"texts over {self.limit:,} {self.tokenizer.name} tokens (the model's limit, counted as the API "
                    f"counts) are cut to their first {self.limit:,} tokens; " + SHORTEN_RULE)
        return "texts are sent whole; " + SHORTEN_RULE


def input_rule(model: str, limits: EmbeddingLimits) -> InputRule:
    """The rule for ``model``: its encoding (:data:`harness.served.tokens.MODEL_ENCODINGS`) and the API's
    per-input limit where both are known and the table is here; else no exact count (``why``)."""
    name = for_model(model)
    if name is None:
        return InputRule(None, None, f"the tokenizer of model {model!r} is not known here (the server counts)")
    enc = _encoding(name)
    if isinstance(enc, str):
        return InputRule(None, limits.max_input_tokens, enc)
    return InputRule(enc, limits.max_input_tokens)


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
    embedding cache (None: off); ``batch``: a :class:`~harness.served.batch.runner.BatchRunner`
    over the provider's ``/v1/embeddings`` Batch API (``--llm-batch``), with ``reply_cache`` the LLM
    reply cache its results are collected into."""

    def __init__(self, provider: Any, *, endpoint: Any, retry: Any, usage: Any, cache: Any = None,
                 dimensions: int | None = None, batch_size: int = 2048, limits: EmbeddingLimits = OPENAI_LIMITS,
                 max_concurrency: int = 8, dry_run: bool = False, batch: Any = None, reply_cache: Any = None,
                 progress: Any = None, rule: InputRule | None = None) -> None:
        self.provider, self.endpoint, self.retry, self.usage = provider, endpoint, retry, usage
        self.cache, self.dimensions, self.batch_size, self.limits = cache, dimensions, int(batch_size), limits
        self.max_concurrency, self.dry_run, self.batch, self.reply_cache = max_concurrency, dry_run, batch, reply_cache
        self.progress = progress
        #: how inputs are counted and cut (:func:`input_rule`)
        self.rule = rule if rule is not None else input_rule(provider.model, limits)
        self.label = f"{provider.name}:{provider.model}"
        #: the length of every vector of this run: ``dimensions`` when asked for, else the first vector's
        self.dim: int | None = dimensions
        self.sent_requests = self.encoded = self.cache_hits = self.truncated = self.cache_refused = 0
        self.max_inputs_sent = self.max_tokens_sent = 0
        #: requests the server rejected as over its maximum context length; texts shortened and sent again
        self.rejected_over_limit = self.shortened_after_rejection = 0
        self.models_seen: set[str] = set()
        self._lock = threading.Lock()

    # -- keys ------------------------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        """What decides a vector besides its text: picks the embedding cache's file."""
        url = getattr(self.provider, "base_url", None)
        return {"kind": "embeddings-api", "v": CACHE_VERSION, "provider": self.provider.name,
                "base_url": redact_url(url) if url else None, "model": self.provider.model,
                "dimensions": self.dimensions, "truncation": self.rule.key()}

    def payload(self, text: str) -> dict[str, Any]:
        """The reply-cache key payload of one text (batch mode): the identity and the text as sent."""
        return {**self.identity(), "options": self._options().key_dict(), "text": text}

    def _options(self) -> ChatOptions:
        return ChatOptions(extra={"dimensions": self.dimensions}) if self.dimensions is not None else ChatOptions()

    # -- embedding -------------------------------------------------------------------------------
    def embed(self, texts: Sequence[str]) -> EmbedResult:
        """Vectors for ``texts`` (raw; see :class:`EmbedResult`), from the cache where possible. The cache's
        key is the text as given (the identity names the rule that cuts it)."""
        uniq = list(dict.fromkeys(texts))
        prepared = [self.rule.prepare(t) for t in uniq]
        cut = sum(1 for _, _, c in prepared if c)
        with self._lock:
            self.truncated += cut
        if cut:
            log.info("%s: %d text(s) over %d tokens cut to that length", self.label, cut, self.rule.limit)
        keys = [text_key(t) for t in uniq]
        vectors: dict[int, np.ndarray] = {}
        if self.cache is not None and uniq:
            vectors = self._cached(keys)
        todo = [i for i in range(len(uniq)) if i not in vectors]
        errors: dict[int, str] = {}
        if todo:
            got, errors, shortened = self._fetch([prepared[i][0] for i in todo], [prepared[i][1] for i in todo])
            for j, vec in got.items():
                vectors[todo[j]] = vec
            errors = {todo[j]: msg for j, msg in errors.items()}
            keep = [j for j in got if j not in shortened]  # a shortened text's vector is asked for again (counted)
            if self.cache is not None and keep:
                self.cache.put([keys[todo[j]] for j in keep], np.vstack([got[j] for j in keep]))
        return self._assemble(texts, uniq, vectors, errors)

    def _cached(self, keys: list[bytes]) -> dict[int, np.ndarray]:
        """The vectors the embedding cache holds for ``keys`` (by position): of this run's length (the
        cache's most common one sets it when nothing has yet), checked as a reply's are; a cached vector
        that fails is a miss (asked for again), counted in ``cache_refused``."""
        arr, found = self.cache.lookup(keys, self.dim)
        out: dict[int, np.ndarray] = {}
        refused = 0
        for i in np.flatnonzero(found):
            try:
                vec = _checked_values(np.asarray(arr[i], dtype=np.float64), "a cached vector")
                self._check_dim(len(vec))
            except (BadReply, MalformedReply):
                refused += 1
                continue
            out[int(i)] = vec
        with self._lock:
            self.cache_hits += len(out)
            self.cache_refused += refused
        return out

    def _check_dim(self, dim: int) -> None:
        """Every vector of a run has one length: ``dimensions`` when asked for, else the first one's."""
        with self._lock:
            if self.dim is None:
                self.dim = dim
            want = self.dim
        if dim != want:
            why = f"dimensions={self.dimensions}" if self.dimensions is not None else "the first vectors'"
            raise self.provider.error(MalformedReply, f"unexpected embeddings reply: vectors of {dim} dimensions; "
                                      f"this run's have {want} ({why})")

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

    def _fetch(self, texts: list[str], tokens: list[int]
               ) -> tuple[dict[int, np.ndarray], dict[int, str], set[int]]:
        """Vectors (by position in ``texts``) of texts no embedding cache holds, the failures, and which
        vectors are of texts shortened after a rejection."""
        if self.batch is not None:
            return (*self._fetch_batch(texts), set())
        groups = pack(tokens, self.limits, self.batch_size)
        if self.dry_run:
            for g in groups:
                self.usage.record_call(self.label, Reply("", "dry_run", usage=TokenCounts(sum(tokens[i] for i in g), 0),
                                                         model=self.provider.model, dry_run=True))
            return {}, {}, set()

        def one(group: list[int]) -> list[np.ndarray | Shortened | LLMError]:
            return self._group([texts[i] for i in group], [tokens[i] for i in group])

        results = bounded_map(one, groups, max(1, self.max_concurrency), progress=f"{self.label}: embedding",
                              settings=self.progress)
        got: dict[int, np.ndarray] = {}
        failed: dict[int, str] = {}
        shortened: set[int] = set()
        for group, res in zip(groups, results, strict=True):
            for i, one_res in zip(group, res, strict=True):
                if isinstance(one_res, LLMError):
                    failed[i] = f"{type(one_res).__name__}: {one_res}"
                elif isinstance(one_res, Shortened):
                    got[i] = one_res.vector
                    shortened.add(i)
                else:
                    got[i] = one_res
        return got, failed, shortened

    def _group(self, texts: list[str], tokens: list[int]) -> list[np.ndarray | Shortened | LLMError]:
        """The vector (or failure) of each text of one request. A request the server rejects as over its
        maximum context length is split in halves, each sent again; a single rejected text is shortened
        (:meth:`InputRule.shorten`) and sent once more."""
        try:
            reply = self._send(texts, sum(tokens))
        except LLMError as error:
            return [error] * len(texts)
        if isinstance(reply, EmbeddingReply):
            return list(reply.vectors)
        if len(texts) > 1:
            mid = len(texts) // 2
            return self._group(texts[:mid], tokens[:mid]) + self._group(texts[mid:], tokens[mid:])
        return [self._shortened(texts[0], reply)]

    def _shortened(self, text: str, over: OverLimit) -> Shortened | LLMError:
        """``text`` shortened by the rule and sent once more (counted); rejected again, a failure (the run
        is INCOMPLETE)."""
        short = self.rule.shorten(text, over)
        with self._lock:
            self.truncated += 1
            self.shortened_after_rejection += 1
        log.info("%s: a text over the server's maximum context length (%d tokens) shortened from %d to %d "
                 "characters and sent again", self.label, over.limit, len(text), len(short))
        try:
            reply = self._send([short], self.rule.prepare(short)[1])
        except LLMError as error:
            return error
        if isinstance(reply, EmbeddingReply):
            return Shortened(reply.vectors[0])
        error = self.provider.error(BadRequest, f"over the server's maximum context length even after shortening "
                                    f"by the documented rule: {reply.message}")
        self.usage.record_failure(self.label, error)
        return error

    def _send(self, texts: list[str], tokens: int) -> EmbeddingReply | OverLimit:
        """One request (all its attempts) through the endpoint's gate, bound, breaker and retries; a
        rejection as over the maximum context length is returned (counted), not raised: the caller
        shortens, and it is no failure of the endpoint."""
        def attempt(time_left: float | None) -> EmbeddingReply | OverLimit:
            with self.endpoint.slot():
                with self._lock:
                    self.sent_requests += 1
                    self.max_inputs_sent = max(self.max_inputs_sent, len(texts))
                    self.max_tokens_sent = max(self.max_tokens_sent, tokens)
                try:
                    reply = self.provider.embed(texts, self.dimensions, timeout=time_left)
                except BadRequest as error:
                    over = over_limit(error)
                    if over is None:
                        raise
                    return over
            if reply.vectors.shape[0] != len(texts):
                raise self.provider.error(MalformedReply, "the reply holds another number of vectors than inputs")
            self._check_dim(int(reply.vectors.shape[1]))
            return reply

        reply, retries = guarded_call(self.endpoint, self.retry, self.usage, self.label, attempt)
        if isinstance(reply, OverLimit):
            with self._lock:
                self.rejected_over_limit += 1
            return reply
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
            vec = self._stored(entry) if entry is not None else None
            if vec is not None:
                self.usage.record_hit(self.label, Reply.from_dict(entry["reply"], cached=True))
                for j in where[key]:
                    got[j] = vec
                continue
            pending[key] = Pending(key, payload, [{"role": "user", "content": t}], self._options())
        if self.dry_run:
            self.usage.record_round(self.label)
            for p in pending.values():
                n = self.rule.prepare(pending_text(p.messages))[1]
                self.usage.record_call(self.label, Reply("", "dry_run", usage=TokenCounts(n, 0), dry_run=True),
                                       batch=True)
            return got, {}
        answers = self.batch.resolve(list(pending.values())) if pending else {}
        failed: dict[int, str] = {}
        for key in pending:
            ans = answers.get(key)
            if isinstance(ans, Reply):
                ans = self._collected(ans)
            for j in where[key]:
                if isinstance(ans, np.ndarray):
                    got[j] = ans
                else:
                    failed[j] = f"{type(ans).__name__}: {ans}"
        with self._lock:
            self.encoded += sum(1 for k in pending if where[k][0] in got)
        return got, failed

    def _stored(self, entry: Any) -> np.ndarray | None:
        """The vector a reply-cache entry holds, checked as a reply's (None: a miss, asked for again)."""
        try:
            text = entry["reply"]["text"]
            vec = check_vector(text if isinstance(text, str) else None, "a cached vector")
            self._check_dim(len(vec))
        except (BadReply, MalformedReply, KeyError, TypeError):
            with self._lock:
                self.cache_refused += 1
            return None
        return vec

    def _collected(self, reply: Reply) -> np.ndarray | LLMError:
        """A batch result's vector checked as a direct reply's: the vector, or the failure (counted in usage:
        the run is INCOMPLETE)."""
        try:
            vec = check_vector(reply.text, "the vector")
            self._check_dim(len(vec))
            return vec
        except (BadReply, MalformedReply) as exc:
            error = exc if isinstance(exc, MalformedReply) else self.provider.error(
                MalformedReply, f"unexpected embeddings reply: {exc}")
            self.usage.record_failure(self.label, error)
            return error

    def tokenizer_text(self) -> str:
        tok = self.rule.tokenizer
        return tok.describe() if tok is not None else f"none: {self.rule.why}"

    def stats(self) -> dict[str, Any]:
        out = {"requests": self.sent_requests, "embedded": self.encoded, "cache_hits": self.cache_hits,
               "truncated": self.truncated, "max_inputs_per_request": self.max_inputs_sent,
               "max_tokens_per_request": self.max_tokens_sent, "tokenizer": self.tokenizer_text(),
               "max_input_tokens": self.rule.limit, "truncation": self.rule.describe(),
               "rejected_over_limit": self.rejected_over_limit,
               "shortened_after_rejection": self.shortened_after_rejection,
               "models_reported": sorted(self.models_seen)}
        if self.cache_refused:
            out["cache_refused"] = self.cache_refused  # cached vectors that failed the checks, asked for again
        return out


def text_key(text: str) -> bytes:
    """32-byte key of a text as sent (the embedding cache's key size)."""
    return hashlib.sha256(b"embeddings-api\x00" + text.encode("utf-8", "surrogatepass")).digest()


def make_embedding_client(session: Any, spec: Any, *, dimensions: int | None, batch_size: int | None,
                          make_cache: Callable[[dict[str, Any]], Any] | None = None,
                          on_client: Callable[[Any], None] | None = None) -> EmbeddingClient:
    """An :class:`EmbeddingClient` for an LLM spec (``openai:MODEL[:base_url=...]``, replicas included)
    in ``session`` (an :class:`~harness.llm.session.LLMSession`): its endpoint, retry policy, prices, dry
    run and batch settings; its usage is part of the session's (the failure policy reads it)."""
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
    if client.rule.tokenizer is None and client.rule.limit is not None:
        log.warning("%s: %s; texts are sent whole (%s)", client.label, client.rule.why, SHORTEN_RULE)
    if make_cache is not None and s.use_cache:
        client.cache = make_cache(client.identity())
    if s.batch:
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
