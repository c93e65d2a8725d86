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
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import numpy as np

from harness.llm.errors import MalformedReply
from harness.llm.types import ChatOptions, Message, Reply, TokenCounts, TokenLogprob, TopLogprob

BIAS = 100.0


def is_raw(options: ChatOptions) -> bool:
    return bool(dict(options.extra).get("raw_prompt"))


def raw_prompt(messages: list[Message]) -> str:
    if len(messages) != 1 or messages[0]["role"] != "user":
        raise ValueError("a raw completion takes exactly one user message: the prompt")
    return messages[0]["content"]


def score_tokens(options: ChatOptions) -> list[str]:
    return [str(t) for t in dict(options.extra).get("score_tokens") or ()]


def _post(url: str, body: dict[str, Any], timeout: float = 10.0) -> Any:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - the user's own endpoint
            return json.loads(resp.read())
    except (OSError, ValueError):
        return None


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
    extra = {k: v for k, v in dict(options.extra).items() if k not in ("raw_prompt", "score_tokens")}
    return {**body, **extra}


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
    from harness.llm.providers.base import map_sdk_error

    ids = _ids(provider, score_tokens(options))
    client = provider.client()
    try:
        resp = client.post("/completions", body=openai_body(provider, raw_prompt(messages), options, ids),
                           cast_to=object, options={"timeout": provider.sdk_timeout(provider._sdk, timeout)})
    except Exception as exc:
        mapped = map_sdk_error(exc, provider._sdk, provider, timeout)
        if mapped is None:
            raise
        raise mapped from exc
    return parse_openai(provider, resp)


def _ids(provider: Any, words: list[str]) -> dict[str, int | None]:
    """Token ids of ``words`` at this server, asked once per provider."""
    known = provider.__dict__.setdefault("_score_token_ids", {})
    base = (provider.base_url or "").rstrip("/")
    root = base[:-len("/v1")] if base.endswith("/v1") else base
    for w in words:
        if w not in known:
            known[w] = None if "api.openai.com" in root else server_token_id(root, provider.model, w)
    return {w: known[w] for w in words}


def local_complete(provider: Any, llm: Any, prompt: str, options: ChatOptions) -> Reply:
    """One greedy token after ``prompt`` (tokenized as llama-cpp-python's completion endpoint does:
    BOS added, special tokens parsed), with the exact log-probabilities of the score tokens. The prompt
    is evaluated from scratch (llama.cpp's logits depend at about 1e-2 on how a prompt was split
    between a reused cached prefix and new batches)."""
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
