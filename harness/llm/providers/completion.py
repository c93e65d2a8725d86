"""Raw completions: a prompt sent exactly as written (no chat template), one token generated, the
log-probabilities of named tokens returned. What the true/false rerankers need (``docs/rerankers.md``).

A request asks for it with ``extra={"raw_prompt": True, "score_tokens": ["true", "false"]}``: the
single user message's content is the prompt. Everything else of the LLM layer applies as to a chat
call (the disk cache, retries and the failure policy, usage).

- ``openai``/``openai-compatible``: ``POST /v1/completions`` (vLLM, llama.cpp, llama-cpp-python,
  OpenAI's completions models) with ``max_tokens=1``, ``logprobs=top_logprobs``, and each score
  token given a ``logit_bias`` of +100 where its id is known: ``/tokenize`` (llama.cpp's
  ``llama-server``, vLLM) or ``/extras/tokenize`` (llama-cpp-python) gives it (an equal bias leaves
  the ratio of the two, and so P(true), unchanged). Where no tokenizer endpoint answers (api.openai.com)
  no bias is sent.
- ``local``: in process, the full distribution is at hand: the exact log-probability of every score
  token is added to the top alternatives (no bias needed).

**A fresh prompt** (``extra={"fresh_prompt": True}``, what the true/false rerankers send; honoured on the
chat path too): the reply must not depend on what the server evaluated before. llama.cpp reuses the KV
of the prefix a prompt shares with the previous one, and a quantised model's logits depend on how a
prompt is split into batches (up to 0.117 in P(true) on the packaged Gemma). So:

- every server other than api.openai.com gets ``cache_prompt: false`` in the body (llama.cpp's
  ``llama-server``: the prompt evaluated from scratch; servers that do not know the field ignore it;
  api.openai.com, which rejects unknown fields, never gets it);
- llama-cpp-python's server has no such switch and always keeps at least the BOS token, so each fresh
  request is preceded, under one lock per provider, by two 1-token completions (:func:`isolated`):
  ``""`` (the state becomes ``[BOS]``, evaluated alone) and a neutral prompt holding the prompt's first
  :data:`ALIGN` tokens and one other token (the state becomes those tokens, evaluated in one batch of
  :data:`ALIGN`); the prompt then reuses exactly its first :data:`ALIGN` tokens and is evaluated from
  there. On CPU (llama.cpp multiplies activations in tiles of 4 rows) that is bit-identical to a
  from-scratch evaluation; on any backend it is the same computation whatever came before.
- ``local`` evaluates every prompt from scratch (``llm.reset()``).

``fresh_prompt``, ``raw_prompt`` and ``score_tokens`` are the harness's own keys: part of the request
(and so of its cache key), never sent as body fields.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from harness.llm.providers.probe import get_json, probe_server
from harness.served.request_errors import MalformedReply, ServerError
from harness.served.transport import BadReply, reply_json
from harness.served.types import ChatOptions, Message, Reply, TokenCounts, TokenLogprob, TopLogprob

log = logging.getLogger(__name__)
BIAS = 100.0
FRESH = "fresh_prompt"
#: the harness's own keys of ``ChatOptions.extra``: in the cache key, never in a request body
OWN_KEYS = ("raw_prompt", "score_tokens", FRESH)
#: the prompt prefix llama-cpp-python's server is left holding before a fresh prompt (a multiple of 4)
ALIGN = 4
#: what may follow the prompt's first tokens in the neutral prompt (the first that tokenizes apart is used)
NEUTRAL_TAILS = ("\n\n", " |", "\n", " 0", " zebra", "#")


def is_raw(options: ChatOptions) -> bool:
    return bool(dict(options.extra).get("raw_prompt"))


def raw_prompt(messages: list[Message]) -> str:
    if len(messages) != 1 or messages[0]["role"] != "user":
        raise ValueError("a raw completion takes exactly one user message: the prompt")
    return messages[0]["content"]


def score_tokens(options: ChatOptions) -> list[str]:
    return [str(t) for t in dict(options.extra).get("score_tokens") or ()]


def is_fresh(options: ChatOptions) -> bool:
    return bool(dict(options.extra).get(FRESH))


def sent_extra(options: ChatOptions) -> dict[str, Any]:
    """``options.extra`` without the harness's own keys: the provider-specific body fields."""
    return {k: v for k, v in dict(options.extra).items() if k not in OWN_KEYS}


def body_extra(provider: Any, options: ChatOptions) -> dict[str, Any]:
    """The body fields ``options.extra`` adds at an OpenAI-compatible endpoint: :func:`sent_extra`, and
    for a fresh prompt ``cache_prompt: false`` on every server but api.openai.com (module docstring)."""
    extra = sent_extra(options)
    if is_fresh(options) and not getattr(provider, "official", True):
        extra.setdefault("cache_prompt", False)
    return extra


def _post(url: str, body: dict[str, Any], timeout: float = 10.0) -> Any:
    """A probe of the server's tokenizer: the JSON reply (bounded), None on any failure."""
    return get_json(url, timeout, post=body)


def _root(provider: Any) -> str:
    base = (provider.base_url or "").rstrip("/")
    return base[:-len("/v1")] if base.endswith("/v1") else base


def server_token_id(root: str, model: str, text: str) -> int | None:
    """The id of ``text`` as one token, from the server's tokenizer endpoint (None: unknown, or
    ``text`` is not one token). A leading BOS (llama-cpp-python adds one) is dropped."""
    for path, body in (("/tokenize", {"content": text, "add_special": False}),
                       ("/tokenize", {"model": model, "prompt": text, "add_special_tokens": False}),
                       ("/extras/tokenize", {"input": text})):
        out = _post(root + path, body)
        tokens = out.get("tokens") if isinstance(out, dict) else None
        if not isinstance(tokens, list):
            continue
        if path == "/extras/tokenize":
            empty = _post(root + path, {"input": ""})
            prefix = empty.get("tokens") if isinstance(empty, dict) else []
            tokens = tokens[len(prefix):] if tokens[:len(prefix)] == prefix else tokens
        ids = [t for t in tokens if isinstance(t, int)]
        return ids[0] if len(ids) == 1 == len(tokens) else None
    return None


def openai_body(provider: Any, prompt: str, options: ChatOptions, ids: dict[str, int | None]) -> dict[str, Any]:
    body: dict[str, Any] = {"model": provider.model, "prompt": prompt, "max_tokens": 1,
                            "temperature": options.temperature, "logprobs": max(1, options.top_logprobs)}
    bias = {str(i): BIAS for i in ids.values() if i is not None}
    if bias:
        body["logit_bias"] = bias
    return {**body, **body_extra(provider, options)}


def parse_openai(provider: Any, data: Any) -> Reply:
    """A ``/v1/completions`` reply (the legacy logprobs shape) as a :class:`Reply`."""
    if not isinstance(data, dict) or not data.get("choices"):
        raise provider.error(MalformedReply, f"completion reply has no choices: {str(data)[:200]!r}")
    choice = data["choices"][0]
    lp = choice.get("logprobs") or {}
    tokens, values, tops = lp.get("tokens") or [], lp.get("token_logprobs") or [], lp.get("top_logprobs") or []
    logprobs = []
    for i, tok in enumerate(tokens):
        top = tops[i] if i < len(tops) and isinstance(tops[i], dict) else {}
        alts = tuple(TopLogprob(str(t), float(v)) for t, v in top.items() if v is not None)
        logprobs.append(TokenLogprob(str(tok), float(values[i]) if i < len(values) and values[i] is not None
                                     else float("-inf"), alts))
    usage = data.get("usage") or {}
    counts = TokenCounts(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0))
    return Reply(str(choice.get("text") or ""), choice.get("finish_reason") or "length", logprobs, counts,
                 str(data.get("model") or provider.model), provider.name)


def openai_complete(provider: Any, messages: list[Message], options: ChatOptions, timeout: float | None) -> Reply:
    """One ``POST /completions`` (see the module docstring); the reply read whole within the timeout,
    bounded, and checked."""
    ids = _ids(provider, score_tokens(options))
    prompt = raw_prompt(messages)
    with isolated(provider, options, timeout, prompt) as left:
        raw = provider._post_raw("/completions", openai_body(provider, prompt, options, ids), left)
    try:
        resp = reply_json(raw)
    except BadReply as exc:
        raise provider.error(MalformedReply, f"unexpected completion reply: {exc}") from None
    return parse_openai(provider, resp)


def server_kind(provider: Any) -> str:
    """``llama-server``, ``llama-cpp-python`` or ``""`` (another server, api.openai.com), asked once."""
    if getattr(provider, "official", True):
        return ""
    if hasattr(provider, "server_slots"):
        provider.server_slots()
        return provider._server_kind or ""
    if "_raw_server_kind" not in provider.__dict__:
        provider.__dict__["_raw_server_kind"] = probe_server(_root(provider))[0]
    return provider.__dict__["_raw_server_kind"]


@contextlib.contextmanager
def isolated(provider: Any, options: ChatOptions, timeout: float | None, prompt: str | None = None
             ) -> Iterator[float | None]:
    """Around one request: for a fresh prompt to llama-cpp-python's server, the two neutral completions
    of the module docstring sent first and the lock held until the request is answered (nothing else
    of this provider runs between them). Yields the time left of ``timeout`` for the request itself.
    ``prompt``: a raw prompt (None, a chat request: only the ``""`` completion, so the state is
    ``[BOS]`` whatever came before, without the aligned prefix)."""
    if not is_fresh(options) or server_kind(provider) != "llama-cpp-python":
        yield timeout
        return
    deadline = None if timeout is None else time.monotonic() + timeout

    def left() -> float | None:
        return None if deadline is None else max(0.001, deadline - time.monotonic())

    with provider.__dict__.setdefault("_fresh_lock", threading.Lock()):
        for neutral in ("", None if prompt is None else aligned_prefix(provider, prompt, left())):
            if neutral is not None:
                provider._post_raw("/completions", {"model": provider.model, "prompt": neutral, "max_tokens": 1,
                                                    "temperature": 0.0}, left())
        yield left()


def aligned_prefix(provider: Any, prompt: str, timeout: float | None = None) -> str | None:
    """A prompt whose tokens at this server are ``prompt``'s first :data:`ALIGN` tokens and one other,
    built once per prefix (None: the prompt is too short, or no such prompt was found: warned once).
    Raises :class:`~harness.served.request_errors.ServerError` (a failed attempt, retried) where the server's
    tokenizer does not answer within ``timeout``."""
    root, model = _root(provider), provider.model
    tokens = _server_tokens(provider, prompt, timeout)
    if len(tokens) < ALIGN + 2:
        return None  # too short to split: evaluated from the BOS token on
    known = provider.__dict__.setdefault("_aligned_prefixes", {})
    head = tuple(tokens[:ALIGN + 1])
    found = known.get(head)
    if found is None:
        out = _post(root + "/extras/detokenize", {"model": model, "tokens": list(tokens[1:ALIGN])}, _probe(timeout))
        text = out.get("text") if isinstance(out, dict) else None
        if not isinstance(text, str):
            raise provider.error(ServerError, "llama-cpp-python's server did not detokenize (/extras/detokenize): "
                                 "the prompt cannot be isolated from the previous one")
        found = next((text + t for t in NEUTRAL_TAILS if _neutral(provider, text + t, head, timeout)), None)
        if found is not None and len(known) < 1024:  # one per prompt template, bounded whatever the server says
            known[head] = found
    if found is None and not provider.__dict__.get("_aligned_warned"):
        provider.__dict__["_aligned_warned"] = True
        log.warning("%s: the server's tokenizer gave no neutral prompt sharing exactly %d tokens with a prompt: "
                    "such prompts are evaluated from the BOS token on (the same whatever came before, not "
                    "bit-identical to a from-scratch evaluation)", provider.name, ALIGN)
    return found


def _neutral(provider: Any, text: str, head: tuple[int, ...], timeout: float | None) -> bool:
    """Does ``text`` tokenize as ``head`` but for its last token?"""
    got = _server_tokens(provider, text, timeout)
    return len(got) == len(head) and tuple(got[:-1]) == head[:-1] and got[-1] != head[-1]


def _probe(timeout: float | None) -> float:
    return 10.0 if timeout is None else min(10.0, timeout)


def _server_tokens(provider: Any, text: str, timeout: float | None) -> list[int]:
    """``text``'s tokens as llama-cpp-python's server reads a completion prompt (BOS first); a
    :class:`~harness.served.request_errors.ServerError` where it does not say."""
    out = _post(_root(provider) + "/extras/tokenize", {"model": provider.model, "input": text}, _probe(timeout))
    tokens = out.get("tokens") if isinstance(out, dict) else None
    if not isinstance(tokens, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        raise provider.error(ServerError, "llama-cpp-python's server did not tokenize (/extras/tokenize): the "
                             "prompt cannot be isolated from the previous one")
    return tokens


def _ids(provider: Any, words: list[str]) -> dict[str, int | None]:
    """Token ids of ``words`` at this server, asked once per provider."""
    known = provider.__dict__.setdefault("_score_token_ids", {})
    root = _root(provider)
    for w in words:
        if w not in known:
            known[w] = None if "api.openai.com" in root else server_token_id(root, provider.model, w)
    return {w: known[w] for w in words}


def local_complete(provider: Any, llm: Any, prompt: str, options: ChatOptions) -> Reply:
    """One greedy token after ``prompt`` (tokenized as llama-cpp-python's completion endpoint does:
    BOS added, special tokens parsed), with the exact log-probabilities of the score tokens. The prompt
    is evaluated from scratch (llama.cpp's logits depend on how a prompt was split between a reused
    cached prefix and new batches: up to 0.117 in P(true) on the packaged Gemma)."""
    import llama_cpp

    seen: list[np.ndarray] = []

    def record(input_ids: Any, logits: Any) -> Any:
        if not seen:
            seen.append(np.array(logits, dtype=np.float64))
        return logits

    llm.reset()  # the whole prompt evaluated afresh: the logits never depend on the previous call's cache
    out = llm.create_completion(prompt, max_tokens=1, temperature=0.0,
                                logits_processor=llama_cpp.LogitsProcessorList([record]))
    x = seen[0]
    lse = float(x.max() + np.log(np.exp(x - x.max()).sum()))
    k = min(max(1, options.top_logprobs), len(x))
    idx = list(np.argsort(-x, kind="stable")[:k])
    for word in score_tokens(options):
        ids = llm.tokenize(word.encode("utf-8"), add_bos=False, special=False)
        if len(ids) == 1 and ids[0] not in idx:
            idx.append(ids[0])
    alts = tuple(TopLogprob(llm.detokenize([int(i)]).decode("utf-8", "replace"), float(x[i] - lse)) for i in idx)
    choice = out["choices"][0]
    usage = out.get("usage") or {}
    counts = TokenCounts(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)))
    return Reply(choice.get("text") or "", choice.get("finish_reason") or "length",
                 [TokenLogprob(alts[0].token, alts[0].logprob, alts)], counts, provider.model, provider.name)


__all__ = ["BIAS", "is_raw", "local_complete", "openai_complete", "parse_openai", "raw_prompt", "score_tokens",
           "server_token_id"]
