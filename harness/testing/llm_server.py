"""A loopback LLM server for tests (the project's and plugin authors'): speaks OpenAI Chat
Completions (``POST /v1/chat/completions``, logprobs included when asked) and Anthropic Messages
(``POST /v1/messages``), with scripted replies, latency, fault injection and request counters.

    with TestServer(reply=lambda req: "[2] > [1]", rate_429=0.2) as srv:
        client = harness.llm.get_client(srv.spec("my-model"), cache_dir=tmp)
        ...
        assert srv.requests_total == ...

``reply`` is None (echo the last user message), a string (always that), a dict (last user message ->
reply; others are echoed), a list (replies handed out in order, then echo), or a callable
``(request_json) -> str | (text, logprobs) | ScriptedReply``. ``logprobs`` entries are
``(token, logprob)`` or ``(token, logprob, [(alt, alt_logprob), ...])``; when a request asks for
logprobs and the script gives none, they are synthesised from the text.

Batch APIs (:mod:`harness.testing.llm_batches` holds their state and rules): OpenAI's Batch API (``POST
/v1/files``, ``GET /v1/files/{id}[/content]``, ``DELETE /v1/files/{id}``, ``POST /v1/batches``, ``GET
/v1/batches[/{id}]``, ``POST /v1/batches/{id}/cancel``) and Anthropic's Message Batches API (``POST
/v1/messages/batches``, ``GET /v1/messages/batches[/{id}[/results]]``, ``POST
/v1/messages/batches/{id}/cancel``, ``DELETE /v1/messages/batches/{id}``), enough for the official SDKs.
Every request of a batch gets exactly the body the direct endpoint would send for it (same script, token
counts, logprobs, stops); fault rates, latency and script delays do not apply, ``hang``/``malformed``
scripts become 500 errors of that request. Batches are evaluated lazily when read: ``batch_delay``
seconds after creation a batch is processed and ends (the delay is read at each poll, so a test can hold
batches with a large one and release them by setting ``srv.batch_delay = 0``). ``batch_expire`` (a set
of 1-based submission ordinals, counted per server over both APIs and never reset, or a callable
``(ordinal, custom_ids) -> bool``) picks batches that expire instead, with only their first
``batch_expire_keep`` requests answered; a cancelled batch has its first ``batch_cancel_keep`` requests
answered. ``on_batch_create(batch_json)`` runs after a batch is stored and before the reply is sent (if
it raises, the connection is closed with no reply: the batch exists but the client never hears of it).
``batch_hold(record) -> bool``, asked at each look at a batch due to end, keeps it in progress while it
returns True (a test can order when batches end without timing them).
Result lines come in a seeded shuffle.

Untrusted replies (docs/untrusted.md, "Served models' replies"): ``api_tamper`` (a name of
:data:`harness.testing.api_routes.HOSTILE`, or a callable ``(request body, honest JSON, number of the
request on its route) -> JSON or RawReply``) changes every successful reply of the embeddings and rerank
routes; ``trickle_s`` sends every reply (status line, headers and body; every route) one byte at a time,
``trickle_s`` seconds apart (``trickled`` counts the bytes sent so).

Command line: ``python -m harness.testing.llm_server --port 0 --echo [--latency 0.2] [--rate-429 0.1]``
prints ``listening on http://127.0.0.1:PORT`` and serves until interrupted; ``GET /_stats`` returns
the counters as JSON.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import socket
import sys
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from types import MappingProxyType
from typing import Any
from urllib.parse import parse_qs

from harness.testing.api_routes import HOSTILE, RawReply, api_tokenizer, embeddings_reply, rerank_reply
from harness.testing.llm_batches import AcknowledgementLost, BatchError, BatchRecord, BatchStore, ExpireRule

_TOKEN_RE = re.compile(r"\s?\w+|\s?[^\w\s]|\s+")


@dataclass
class ScriptedReply:
    """Full control over one reply. ``status >= 400`` sends an error with ``error`` as its message;
    ``malformed`` sends a truncated JSON body; ``hang`` sends nothing until the client gives up;
    ``body`` sends exactly these bytes with ``status`` and ``content_type`` (an HTML error page from a
    proxy, say); ``empty_choices`` sends a well-formed completion with no choices (OpenAI API).
    ``reasoning``: what the model thought before answering, sent apart from the answer (OpenAI protocol:
    ``message.reasoning_content``, or the field ``reasoning_field`` names; Anthropic: a ``thinking`` block
    before the text); its tokens (``reasoning_tokens``, default: counted from the text) are part of the
    output tokens, as the providers count them (OpenAI ``completion_tokens_details.reasoning_tokens``,
    Anthropic ``output_tokens_details.thinking_tokens``). ``think_in_content``: the reasoning is sent inside
    the content as ``<think>...</think>`` (a server that runs no reasoning parser)."""

    text: str = ""
    logprobs: Sequence[Any] | None = None
    finish_reason: str = "stop"
    status: int = 200
    error: str | None = None
    headers: Mapping[str, str] | None = None
    delay: float = 0.0
    malformed: bool = False
    hang: bool = False
    no_logprobs: bool = False  # act like a server that cannot return logprobs
    body: bytes | None = None
    content_type: str = "application/json"
    empty_choices: bool = False
    reasoning: str | None = None
    reasoning_tokens: int | None = None
    reasoning_field: str = "reasoning_content"
    think_in_content: bool = False


ReplyScript = None | str | Mapping[str, str] | Sequence[Any] | Callable[[dict], Any]


def last_user_text(request: Mapping[str, Any]) -> str:
    """The text of the last user turn of an OpenAI or Anthropic request body."""
    for m in reversed(request.get("messages") or []):
        if m.get("role") == "user":
            content = m.get("content")
            if isinstance(content, list):
                return "".join(b.get("text", "") for b in content if isinstance(b, dict))
            return str(content or "")
    return ""


def tokenize(text: str) -> list[str]:
    """A rough BPE-like split (words with their leading space, punctuation alone)."""
    return _TOKEN_RE.findall(text)


def request_hash(request: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(request, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


class TestServer:
    """See the module docstring. Counters: ``requests_total``, ``counts`` (request hash -> number
    received), ``unique_requests``, ``faults`` (kind -> number injected), ``max_in_flight``,
    ``requests`` (bodies, when ``record``), ``api_keys`` (keys seen, so tests can check which key
    was sent); these count direct requests only. ``slots=N`` answers ``GET /props`` and ``/slots`` as
    llama.cpp's ``llama-server`` does (``slot_polls`` counts the latter). The embeddings route counts tokens
    as OpenAI's API does where it can (``api_tokenizer``: ``cl100k_base``, else ``words``; ``count_tokens``),
    refuses an input over 8,192 tokens with the API's 400 (``embeddings_over_limit`` counts them) and, when
    ``record``, lists every input it gave a vector (``embedded_inputs``). Batch counters:
    ``batch_submissions`` (batches created, both APIs), ``batch_requests`` (custom_id -> times submitted
    in any batch), ``batch_requests_total``, ``batch_bytes_uploaded`` (batch input files and Anthropic
    create bodies), ``batch_polls`` (GETs of one batch; Anthropic's ``results()`` makes one too), ``batch_lists`` (list
    pages), ``batch_cancels``, ``files`` (uploads), ``file_deletes``, ``batch_deletes``; ``stored_files``
    lists the files held now. :meth:`batch_status` and :meth:`batch_object` read a
    batch as the API would report it now; ``batches`` lists the records (newest last). Batch options
    (``batch_delay``, ``batch_expire``, ``batch_expire_keep``, ``batch_cancel_keep``,
    ``on_batch_create``, ``batch_hold``): see the module docstring."""

    __test__ = False  # not a pytest test class

    def __init__(
        self,
        reply: ReplyScript = None,
        *,
        latency: float = 0.0,
        rate_429: float = 0.0,
        rate_500: float = 0.0,
        rate_hang: float = 0.0,
        rate_malformed: float = 0.0,
        retry_after: str | None = "0",
        hang_s: float = 30.0,
        fail_first: int = 0,
        fail_status: int = 500,
        seed: int = 0,
        host: str = "127.0.0.1",
        port: int = 0,
        record: bool = True,
        batch_delay: float = 0.0,
        batch_expire: ExpireRule = None,
        batch_expire_keep: int = 0,
        batch_cancel_keep: int = 0,
        on_batch_create: Callable[[dict], None] | None = None,
        batch_hold: Callable[[BatchRecord], bool] | None = None,
        slots: int | None = None,
        rerank_limit: int = 1000,
        fail_texts: Callable[[str], bool] | None = None,
        auth_key: str | None = None,
        api_tamper: str | Callable[[dict, Any, int], Any] | None = None,
        trickle_s: float = 0.0,
    ) -> None:
        self.reply, self.latency = reply, float(latency)
        #: the embeddings and rerank routes (:mod:`harness.testing.api_routes`): documents per rerank request;
        #: texts whose requests always fail (500); the only API key accepted (None: any), else 401
        self.rerank_limit, self.fail_texts, self.auth_key = int(rerank_limit), fail_texts, auth_key
        if isinstance(api_tamper, str):
            api_tamper = HOSTILE[api_tamper]
        #: hostile replies of the embeddings and rerank routes; replies sent a byte at a time (module docstring)
        self.api_tamper, self.trickle_s = api_tamper, float(trickle_s)
        self.slots = slots  # set: answer GET /props and /slots as llama.cpp's llama-server does
        #: how the embeddings route counts tokens: ``cl100k_base`` (as OpenAI's API) or ``words``
        self.api_tokenizer, self.count_tokens = api_tokenizer()
        self.rates = {"429": rate_429, "500": rate_500, "hang": rate_hang, "malformed": rate_malformed}
        if sum(self.rates.values()) > 1:
            raise ValueError("fault rates add up to more than 1")
        self.retry_after, self.hang_s = retry_after, float(hang_s)
        self.fail_first, self.fail_status = int(fail_first), int(fail_status)
        self.host, self.port, self.record = host, int(port), record
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._queue: deque[Any] | None = (
            deque(reply) if isinstance(reply, Sequence) and not isinstance(reply, str) else None
        )
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._batches = BatchStore(self._batch_reply, delay=batch_delay, expire=batch_expire,
                                   expire_keep=batch_expire_keep, cancel_keep=batch_cancel_keep,
                                   on_create=on_batch_create, seed=seed, hold=batch_hold)
        self.reset_counters()

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> TestServer:
        self._httpd = _Server((self.host, self.port), _Handler)
        self._httpd.owner = self
        self.port = self._httpd.server_address[1]
        self._batches.base_url = self.url
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True,
            name="llm-testserver",
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> TestServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses -------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        return self.url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url

    def spec(self, model: str = "test-model", provider: str = "openai-compatible") -> str:
        """An LLM spec pointing at this server (``openai``, ``openai-compatible`` or ``anthropic``)."""
        base = self.anthropic_base_url if provider == "anthropic" else self.openai_base_url
        return f"{provider}:{model}:base_url={base}"

    # -- counters --------------------------------------------------------------------------
    def reset_counters(self) -> None:
        with self._lock:
            self.requests_total = 0
            self.counts: Counter[str] = Counter()
            self.faults: Counter[str] = Counter()
            self.requests: list[dict] = []
            self.api_keys: set[str] = set()
            self.slot_polls = 0
            self.embedding_requests: list[tuple[int, int]] = []  # (inputs, tokens) of each embeddings request
            #: the inputs the embeddings route gave a vector (when ``record``); requests refused as over the limit
            self.embedded_inputs: list[str] = []
            self.embeddings_over_limit = 0
            self.rerank_requests: list[tuple[str, int]] = []  # (path, documents) of each rerank request
            self.trickled = 0  # bytes sent one at a time (trickle_s)
            self.in_flight = getattr(self, "in_flight", 0)  # requests being answered stay counted
            self.max_in_flight = self.in_flight
        self._batches.reset_counters()

    @property
    def unique_requests(self) -> int:
        return len(self.counts)

    def count_for(self, user_text: str) -> int:
        """How many requests had ``user_text`` as their last user turn (needs ``record``)."""
        with self._lock:
            return sum(1 for r in self.requests if last_user_text(r) == user_text)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            out = {"requests_total": self.requests_total, "unique_requests": len(self.counts),
                   "faults": dict(self.faults), "max_in_flight": self.max_in_flight}
        return out | self._batches.stats()

    # -- batches -----------------------------------------------------------------------------
    @property
    def batch_delay(self) -> float:
        """Seconds from a batch's creation to its end; read at each poll, so it can be changed."""
        return self._batches.delay

    @batch_delay.setter
    def batch_delay(self, seconds: float) -> None:
        self._batches.delay = float(seconds)

    @property
    def batches(self) -> list[BatchRecord]:
        """The batch records of both APIs, oldest first."""
        return self._batches.all()

    def batch_status(self, batch_id: str) -> str:
        """A batch's status now: OpenAI ``status`` or Anthropic ``processing_status`` (KeyError if unknown)."""
        try:
            return self._batches.status(batch_id)
        except BatchError as exc:
            raise KeyError(batch_id) from exc

    def batch_object(self, batch_id: str) -> dict:
        """A batch's JSON as its API would return it now, without counting a poll (KeyError if unknown)."""
        try:
            return self._batches.object(batch_id)
        except BatchError as exc:
            raise KeyError(batch_id) from exc

    @property
    def batch_submissions(self) -> int:
        return self._batches.batch_submissions

    @property
    def batch_requests(self) -> Counter[str]:
        return self._batches.batch_requests

    @property
    def batch_requests_total(self) -> int:
        return self._batches.batch_requests_total

    @property
    def batch_bytes_uploaded(self) -> int:
        return self._batches.batch_bytes_uploaded

    @property
    def batch_polls(self) -> int:
        return self._batches.batch_polls

    @property
    def batch_lists(self) -> int:
        return self._batches.batch_lists

    @property
    def batch_cancels(self) -> int:
        return self._batches.batch_cancels

    @property
    def files(self) -> int:
        """Files uploaded (``POST /v1/files``)."""
        return self._batches.file_uploads

    @property
    def file_deletes(self) -> int:
        """Files deleted (``DELETE /v1/files/{id}``)."""
        return self._batches.file_deletes

    @property
    def batch_deletes(self) -> int:
        """Message batches deleted (``DELETE /v1/messages/batches/{id}``)."""
        return self._batches.batch_deletes

    @property
    def stored_files(self) -> list[str]:
        """The ids of the files the server holds now (uploads and batch result files)."""
        with self._batches._lock:
            return list(self._batches.files)

    # -- request handling (called from handler threads) ------------------------------------
    def _note(self, body: dict, key: str | None) -> int:
        h = request_hash(body)
        with self._lock:
            self.requests_total += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.counts[h] += 1
            if self.record:
                self.requests.append(body)
            if key:
                self.api_keys.add(key)
            return self.counts[h]

    def _done(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _note_key(self, key: str | None) -> None:
        if key:
            with self._lock:
                self.api_keys.add(key)

    def _batch_reply(self, api: str, body: dict) -> tuple[int, dict]:
        """The direct endpoint's answer to ``body`` as (status, JSON), for a request of a batch: no
        latency, faults or script delays; a hang or a malformed body becomes a 500."""
        if api == "embeddings":
            status, obj = self._api_reply(api, "/v1/embeddings", body)
            if not isinstance(obj, RawReply):
                return status, obj
            return 500, error_body("openai", 500, "server error (scripted raw reply)")
        try:
            script = self._script(body)
        except Exception as exc:
            return 500, error_body(api, 500, f"reply script failed: {type(exc).__name__}: {exc}")
        if script.hang:
            return 500, error_body(api, 500, "server error (scripted hang)")
        if script.body is not None:
            return _raw_reply(api, script)
        if script.status >= 400:
            return script.status, error_body(api, script.status, script.error or f"scripted error {script.status}")
        if script.malformed:
            return 500, error_body(api, 500, "server error (scripted malformed reply)")
        return 200, reply_body(api, body, script)

    def _api_reply(self, api: str, path: str, body: dict) -> tuple[int, Any]:
        """(status, JSON) of an embeddings or rerank request (:mod:`harness.testing.api_routes`), counted."""
        if api == "embeddings":
            inputs = body.get("input")
            inputs = [inputs] if isinstance(inputs, str) else inputs if isinstance(inputs, list) else []
            with self._lock:
                self.embedding_requests.append((len(inputs), sum(self.count_tokens(str(t)) for t in inputs)))
                nth = len(self.embedding_requests)
            if self.fail_texts is not None and any(self.fail_texts(str(t)) for t in inputs):
                return 500, error_body("openai", 500, "server error (scripted for this text)")
            status, obj = embeddings_reply(body, self.count_tokens)
            with self._lock:
                if status == 200 and self.record:
                    self.embedded_inputs.extend(str(t) for t in inputs)
                elif status == 400 and "maximum context length" in str(obj):
                    self.embeddings_over_limit += 1
            return self._tampered(body, status, obj, nth)
        docs = body.get("texts") if "texts" in body else body.get("documents")
        with self._lock:
            self.rerank_requests.append((path, len(docs) if isinstance(docs, list) else 0))
            nth = len(self.rerank_requests)
        if self.fail_texts is not None and isinstance(docs, list) and any(self.fail_texts(str(d)) for d in docs):
            return 500, {"message": "server error (scripted for this document)"}
        return self._tampered(body, *rerank_reply(body, self.rerank_limit), nth)

    def _tampered(self, body: dict, status: int, obj: Any, nth: int) -> tuple[int, Any]:
        """A successful reply changed by ``api_tamper`` (the module docstring)."""
        if status != 200 or self.api_tamper is None:
            return status, obj
        return status, self.api_tamper(body, obj, nth)

    def _draw_fault(self, nth: int) -> str | None:
        if nth <= self.fail_first:
            kind = "429" if self.fail_status == 429 else "500"
            with self._lock:
                self.faults[kind] += 1
            return kind
        with self._lock:
            x = self._rng.random()
            acc = 0.0
            for kind, rate in self.rates.items():
                acc += rate
                if rate and x < acc:
                    self.faults[kind] += 1
                    return kind
        return None

    def _script(self, body: dict) -> ScriptedReply:
        r = self.reply
        if self._queue is not None:
            with self._lock:
                r = self._queue.popleft() if self._queue else None
        elif isinstance(r, Mapping):
            r = r.get(last_user_text(body))
        elif callable(r):
            r = r(body)
        if r is None:
            return ScriptedReply(last_user_text(body))
        if isinstance(r, ScriptedReply):
            return r
        if isinstance(r, str):
            return ScriptedReply(r)
        if isinstance(r, tuple) and len(r) == 2:
            return ScriptedReply(r[0], r[1])
        raise TypeError(
            f"reply script returned {type(r).__name__}; expected str, (text, logprobs) or ScriptedReply"
        )

    def _wait(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while not self._stopping.is_set():
            left = end - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(left, 0.05))


class _Server(ThreadingHTTPServer):
    request_queue_size = 1024
    daemon_threads = True
    allow_reuse_address = True
    owner: TestServer

    def server_bind(self) -> None:  # skip HTTPServer's getfqdn (a slow reverse DNS lookup)
        TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


def _logprob_entries(script: ScriptedReply, text: str, top_k: int) -> list[dict]:
    if script.logprobs is not None:
        entries = []
        for item in script.logprobs:
            if isinstance(item, Mapping):
                entries.append(dict(item))
                continue
            token, lp, *rest = item
            alts = list(rest[0]) if rest else [(token, lp)]
            top = [{"token": t, "logprob": float(a), "bytes": None} for t, a in alts]
            entries.append({"token": token, "logprob": float(lp), "top_logprobs": top})
        for e in entries:
            e.setdefault("bytes", None)
            e["top_logprobs"] = (e.get("top_logprobs") or [])[:top_k]
        return entries
    out = []
    for tok in tokenize(text):
        alts = [{"token": tok, "logprob": -0.01, "bytes": None}]
        alts += [{"token": f"{tok}~{j}", "logprob": -2.0 - j, "bytes": None} for j in range(1, top_k)]
        out.append({"token": tok, "logprob": -0.01, "bytes": None, "top_logprobs": alts[:top_k]})
    return out


_ANTHROPIC_STOP = MappingProxyType({"stop": "end_turn", "length": "max_tokens", "refusal": "refusal",
                                    "content_filter": "refusal"})
_ANTHROPIC_ERR = MappingProxyType({400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                                   404: "not_found_error", 429: "rate_limit_error", 529: "overloaded_error"})


def error_body(api: str, status: int, message: str, etype: str | None = None,
               param: str | None = None) -> dict:
    """The JSON error body an endpoint of ``api`` sends with ``status``."""
    if api == "anthropic":
        etype = etype or _ANTHROPIC_ERR.get(status, "api_error")
        return {"type": "error", "error": {"type": etype, "message": message}}
    error: dict[str, Any] = {"message": message, "type": etype or "test_error", "code": status}
    if param is not None:
        error["param"] = param
    return {"error": error}


def _raw_reply(api: str, script: ScriptedReply) -> tuple[int, dict]:
    """A ``body`` script inside a batch: its JSON object as is, anything else an error."""
    try:
        obj = json.loads(script.body or b"")
    except ValueError:
        obj = None
    if isinstance(obj, dict):
        return script.status, obj
    status = script.status if script.status >= 400 else 500
    return status, error_body(api, status, f"scripted non-JSON body ({script.content_type})")


def _reply_text(api: str, body: dict, script: ScriptedReply) -> tuple[str, list[str], str]:
    """The reply's text after stop sequences and max_tokens, its tokens, and its finish reason."""
    text, finish = script.text, script.finish_reason
    if not text and script.logprobs:
        text = "".join(e["token"] if isinstance(e, Mapping) else e[0] for e in script.logprobs)
    stops = body.get("stop") if api == "openai" else body.get("stop_sequences")
    if isinstance(stops, str):
        stops = [stops]
    for s in stops or ():
        if s and s in text:
            text = text[: text.index(s)]
    limit = body.get("max_tokens") or body.get("max_completion_tokens")
    tokens = tokenize(text)
    if limit and len(tokens) > int(limit):
        tokens, finish = tokens[: int(limit)], "length"
        text = "".join(tokens)
    return text, tokens, finish


def input_tokens(body: Mapping[str, Any]) -> int:
    """The input tokens the server counts for a request body: a quarter of the characters of its messages'
    contents (and Anthropic's ``system``), plus one."""
    prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages") or [])
    prompt_chars += len(str(body.get("system", "")))
    return prompt_chars // 4 + 1


def _reasoning_tokens(script: ScriptedReply) -> int:
    if script.reasoning is None:
        return 0
    return len(tokenize(script.reasoning)) if script.reasoning_tokens is None else int(script.reasoning_tokens)


def reply_body(api: str, body: dict, script: ScriptedReply) -> dict:
    """The JSON a successful ``/v1/chat/completions`` (``api`` "openai") or ``/v1/messages``
    ("anthropic") reply to ``body`` carries, given its script; the direct routes and batches share it."""
    text, tokens, finish = _reply_text(api, body, script)
    n_in, n_reason = input_tokens(body), _reasoning_tokens(script)
    n_out = len(tokens) + n_reason  # the reasoning is output, as both providers bill it
    model = body.get("model", "test-model")
    if api == "anthropic":
        thinking = [] if script.reasoning is None else [{"type": "thinking", "thinking": script.reasoning,
                                                          "signature": "sig-test"}]
        usage: dict[str, Any] = {"input_tokens": n_in, "output_tokens": n_out}
        if script.reasoning is not None:
            usage["output_tokens_details"] = {"thinking_tokens": n_reason}
        return {
            "id": "msg_test", "type": "message", "role": "assistant", "model": model,
            "content": thinking + ([{"type": "text", "text": text}] if text or finish != "refusal" else []),
            "stop_reason": _ANTHROPIC_STOP.get(finish, finish), "stop_sequence": None,
            "usage": usage,
        }
    limit = body.get("max_tokens") or body.get("max_completion_tokens")
    logprobs = None
    if body.get("logprobs") and not script.no_logprobs:
        content = _logprob_entries(script, text, int(body.get("top_logprobs") or 0))
        if script.logprobs is None and limit:
            content = content[: int(limit)]
        logprobs = {"content": content, "refusal": None}
    message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None}
    if script.reasoning is not None and script.think_in_content:
        message["content"] = f"<think>{script.reasoning}</think>{text}"
    elif script.reasoning is not None:
        message[script.reasoning_field] = script.reasoning
    if finish == "refusal":
        message = {"role": "assistant", "content": None, "refusal": text or "I can't help with that."}
    choices = [] if script.empty_choices else [{"index": 0, "message": message, "logprobs": logprobs,
                                                 "finish_reason": "stop" if finish == "refusal" else finish}]
    usage = {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out}
    if script.reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": n_reason}
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": choices, "usage": usage,
    }


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, payload: bytes, headers: Mapping[str, str] | None = None,
              content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self._headers_buffer.append(b"\r\n" + payload)  # one write: headers and body together
        self._release()
        if self.server.owner.trickle_s:
            self._trickle()
            return
        try:
            self.flush_headers()
        except OSError:
            self.close_connection = True

    def _trickle(self) -> None:
        """What is buffered (status line, headers, body) sent a byte at a time, ``trickle_s`` apart,
        until it is all sent, the client goes away or the server stops."""
        owner = self.server.owner
        data, self._headers_buffer = b"".join(self._headers_buffer), []
        for i in range(len(data)):
            if owner._stopping.is_set():
                break
            try:
                self.connection.sendall(data[i:i + 1])
            except OSError:
                break
            with owner._lock:
                owner.trickled += 1
            owner._wait(owner.trickle_s)
        self.close_connection = True

    def _send_raw(self, raw: RawReply) -> None:
        """A :class:`RawReply`: its bytes as the body; a longer ``declared`` length cuts the connection."""
        if raw.declared is None:
            self._send(200, raw.body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(raw.declared))
        self._headers_buffer.append(b"\r\n" + raw.body)
        self._release()
        try:
            self.flush_headers()
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.close_connection = True

    def _json(self, status: int, obj: Any, headers: Mapping[str, str] | None = None) -> None:
        self._send(status, json.dumps(obj).encode(), headers)

    def _error(self, api: str, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        self._json(status, error_body(api, status, message), headers)

    def _api_key(self) -> str | None:
        auth = self.headers.get("Authorization", "")
        return auth[7:] if auth.startswith("Bearer ") else self.headers.get("x-api-key")

    def _batch_route(self, method: str, raw: bytes = b"") -> bool:
        """Answers a Files / Batches / Message Batches route; False when the path is none of them."""
        path, _, query = self.path.partition("?")
        route = _match_batch_route(path.rstrip("/"))
        if route is None:
            return False
        owner = self.server.owner
        owner._note_key(self._api_key())
        call = _BatchCall(owner._batches, method, route, raw, parse_qs(query), self.headers.get("Content-Type", ""))
        api = "anthropic" if route[0] == "anthropic" else "openai"
        try:
            result = call.run()
        except AcknowledgementLost:  # on_batch_create raised: the batch exists, the reply is lost
            self.close_connection = True
            return True
        except BatchError as exc:
            etype = None if api == "anthropic" else "invalid_request_error"
            self._json(exc.status, error_body(api, exc.status, exc.message, etype, exc.param))
            return True
        if isinstance(result, bytes):
            self._send(200, result, content_type="application/x-jsonl" if api == "anthropic"
                       else "application/octet-stream")
        else:
            self._json(200, result)
        return True

    def do_DELETE(self) -> None:
        if not self._batch_route("DELETE"):
            self._json(404, {"error": {"message": f"no route DELETE {self.path}"}})

    def do_GET(self) -> None:
        owner = self.server.owner
        path = self.path.split("?")[0].rstrip("/")
        if self._batch_route("GET"):
            return
        if path.endswith("/_stats"):
            self._json(200, owner.stats())
        elif path.endswith("/models"):
            self._json(200, {"object": "list", "data": [{"id": "test-model", "object": "model"}]})
        elif owner.slots is not None and path == "/props":
            self._json(200, {"total_slots": owner.slots})
        elif owner.slots is not None and path == "/slots":
            with owner._lock:
                owner.slot_polls += 1
                busy = owner.in_flight
            self._json(200, [{"id": i, "is_processing": i < busy} for i in range(owner.slots)])
        else:
            self._json(404, {"error": {"message": f"no route GET {self.path}"}})

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?")[0].rstrip("/")
        if self._batch_route("POST", raw):
            return
        api = ("openai" if path.endswith("/chat/completions")
               else "anthropic" if path.endswith("/messages")
               else "embeddings" if path.endswith("/embeddings") else "rerank" if path.endswith("/rerank") else "")
        if not api:
            self._json(404, {"error": {"message": f"no route POST {self.path}"}})
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._error(api, 400, "request body is not JSON")
            return
        if owner.auth_key is not None and self._api_key() != owner.auth_key:
            # counted before the answer: a client that raises on the 401 may read the counter at once
            owner._note_key(self._api_key())
            with owner._lock:
                owner.requests_total += 1
            self._json(401, {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                                       "param": None, "code": "invalid_api_key"}})
            return
        nth = owner._note(body, self._api_key())
        self._counted = True
        try:
            if api in ("embeddings", "rerank"):
                self._answer_api(owner, api, path, body, nth)
                return
            self._answer(owner, api, body, nth)
        finally:
            self._release()

    def _release(self) -> None:
        """The request stops counting as in flight once its answer is ready (before the write, so
        a client that sends its next request the moment it reads this reply is not overcounted)."""
        if getattr(self, "_counted", False):
            self._counted = False
            self.server.owner._done()

    def _answer_api(self, owner: TestServer, api: str, path: str, body: dict, nth: int) -> None:
        """An embeddings or rerank request: latency and faults as for chat, then the route's answer."""
        if owner.latency:
            owner._wait(owner.latency)
        fault = owner._draw_fault(nth)
        if fault == "429":
            hdrs = {"Retry-After": owner.retry_after} if owner.retry_after is not None else {}
            self._error("openai", 429, "rate limited (injected)", hdrs)
        elif fault in ("500", "malformed"):
            self._error("openai", 500, "server error (injected)")
        elif fault == "hang":
            owner._wait(owner.hang_s)
            self.close_connection = True
        else:
            status, obj = owner._api_reply(api, path, body)
            if isinstance(obj, RawReply):
                self._send_raw(obj)
            else:
                self._json(status, obj)

    def _answer(self, owner: TestServer, api: str, body: dict, nth: int) -> None:
        if owner.latency:
            owner._wait(owner.latency)
        fault = owner._draw_fault(nth)
        if fault == "429":
            hdrs = {"Retry-After": owner.retry_after} if owner.retry_after is not None else {}
            self._error(api, 429, "rate limited (injected)", hdrs)
            return
        if fault == "500":
            self._error(api, 500, "server error (injected)")
            return
        if fault == "hang":
            owner._wait(owner.hang_s)
            self.close_connection = True
            return
        if fault == "malformed":
            self._send(200, b'{"id": "broken", "choices": [{"message": ')
            return
        try:
            script = owner._script(body)
        except Exception as exc:  # a broken script is the test's bug: say so in the reply
            self._error(api, 500, f"reply script failed: {type(exc).__name__}: {exc}")
            return
        if script.delay:
            owner._wait(script.delay)
        if script.hang:
            owner._wait(owner.hang_s)
            self.close_connection = True
            return
        if script.body is not None:
            self._send(script.status, script.body, script.headers, script.content_type)
            return
        if script.status >= 400:
            self._error(api, script.status, script.error or f"scripted error {script.status}", script.headers)
            return
        if script.malformed:
            self._send(200, b'{"id": "broken", "content": [', script.headers)
            return
        self._json(200, reply_body(api, body, script), script.headers)


_BATCH_ROUTES = (  # Anthropic's first: "/v1/messages/batches" also ends like OpenAI's "/batches"
    ("anthropic", re.compile(r"/messages/batches(?:/([^/]+))?(?:/(results|cancel))?$")),
    ("files", re.compile(r"/files(?:/([^/]+))?(?:/(content))?$")),
    ("openai", re.compile(r"/batches(?:/([^/]+))?(?:/(cancel))?$")),
)


def _match_batch_route(path: str) -> tuple[str, str | None, str | None] | None:
    """(kind, id, action) of a batch-API path: kind is anthropic, files or openai."""
    for kind, pattern in _BATCH_ROUTES:
        m = pattern.search(path)
        if m:
            return kind, m.group(1), m.group(2)
    return None


def parse_multipart(raw: bytes, content_type: str) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a ``multipart/form-data`` body: name -> (filename or None, bytes)."""
    m = re.search(r'boundary="?([^";]+)"?', content_type)
    if not content_type.startswith("multipart/form-data") or not m:
        raise BatchError(400, "expected a multipart/form-data body")
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in raw.split(b"--" + m.group(1).encode())[1:]:
        if part.startswith(b"--"):
            break
        head, _, data = part.partition(b"\r\n\r\n")
        name = re.search(rb'\bname="([^"]*)"', head)
        filename = re.search(rb'\bfilename="([^"]*)"', head)
        if name:
            fields[name.group(1).decode()] = (filename.group(1).decode() if filename else None,
                                              data[:-2] if data.endswith(b"\r\n") else data)
    return fields


class _BatchCall:
    """One request to a batch route, dispatched to the :class:`BatchStore`."""

    def __init__(self, store: BatchStore, method: str, route: tuple[str, str | None, str | None], raw: bytes,
                 query: dict[str, list[str]], content_type: str) -> None:
        self.store, self.method, self.raw, self.query, self.content_type = store, method, raw, query, content_type
        self.kind, self.id, self.action = route

    def run(self) -> dict | bytes:
        handler = getattr(self, f"_{self.kind}")
        result = handler()
        if result is None:
            raise BatchError(404, f"no route {self.method} for this {self.kind} path")
        return result

    def _q(self, name: str) -> str | None:
        return (self.query.get(name) or [None])[0]

    def _json(self) -> Any:
        try:
            return json.loads(self.raw)
        except ValueError:
            raise BatchError(400, "request body is not JSON") from None

    def _files(self) -> dict | bytes | None:
        if self.method == "POST" and not self.id:
            fields = parse_multipart(self.raw, self.content_type)
            if "file" not in fields or "purpose" not in fields:
                raise BatchError(400, "missing form field 'file' or 'purpose'", "file")
            filename, data = fields["file"]
            return self.store.upload_file(fields["purpose"][1].decode(), filename or "upload", data)
        if self.method == "GET" and self.id:
            return self.store.file_content(self.id) if self.action else self.store.file_object(self.id)
        if self.method == "DELETE" and self.id and not self.action:
            return self.store.delete_file(self.id)
        return None

    def _openai(self) -> dict | None:
        if self.method == "POST" and not self.id:
            return self.store.openai_create(self._json())
        if self.method == "POST" and self.action == "cancel":
            return self.store.openai_cancel(self.id or "")
        if self.method == "GET" and not self.id:
            return self.store.openai_list(self._q("limit"), self._q("after"))
        if self.method == "GET" and not self.action:
            return self.store.openai_get(self.id or "")
        return None

    def _anthropic(self) -> dict | bytes | None:
        batch_id, action = self.id or "", self.action
        if self.method == "POST" and not batch_id:
            return self.store.anthropic_create(self._json(), len(self.raw))
        if self.method == "POST" and action == "cancel":
            return self.store.anthropic_cancel(batch_id)
        if self.method == "DELETE" and batch_id and not action:
            return self.store.anthropic_delete(batch_id)
        if self.method != "GET":
            return None
        if not batch_id:
            return self.store.anthropic_list(self._q("limit"), self._q("after_id"), self._q("before_id"))
        return self.store.anthropic_results(batch_id) if action == "results" else self.store.anthropic_get(batch_id)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m harness.testing.llm_server", description=__doc__.split("\n\n")[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0, help="0 picks a free port (printed)")
    p.add_argument("--echo", action="store_true", help="reply with the last user message (the default)")
    p.add_argument("--reply", help="always reply with this text")
    p.add_argument("--latency", type=float, default=0.0, help="seconds before each reply")
    p.add_argument("--rate-429", type=float, default=0.0)
    p.add_argument("--rate-500", type=float, default=0.0)
    p.add_argument("--rate-hang", type=float, default=0.0)
    p.add_argument("--rate-malformed", type=float, default=0.0)
    p.add_argument("--retry-after", default="0")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--batch-delay", type=float, default=0.0, help="seconds before a batch ends")
    a = p.parse_args(argv)
    srv = TestServer(None if a.echo or a.reply is None else a.reply, latency=a.latency, rate_429=a.rate_429,
                     rate_500=a.rate_500, rate_hang=a.rate_hang, rate_malformed=a.rate_malformed,
                     retry_after=a.retry_after, seed=a.seed, host=a.host, port=a.port, record=False,
                     batch_delay=a.batch_delay)
    srv.start()
    print(f"listening on {srv.url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
        print(json.dumps(srv.stats()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
