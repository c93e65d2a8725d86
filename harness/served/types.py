"""Plain data types of the LLM layer: messages, generation options, replies, logprobs.

Everything here is JSON-friendly (``to_dict``/``from_dict``) because replies are cached as JSON and
usage goes into ``results.json``. No SDK is imported.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal, TypedDict

ROLES = ("system", "user", "assistant")
REFUSAL_REASONS = frozenset({"content_filter", "refusal"})


class Message(TypedDict):
    """One chat turn, in the OpenAI shape: ``{"role": "user", "content": "..."}``."""

    role: str
    content: str


def system(text: str) -> Message:
    return {"role": "system", "content": text}


def user(text: str) -> Message:
    return {"role": "user", "content": text}


def assistant(text: str) -> Message:
    return {"role": "assistant", "content": text}


Messages = str | Sequence[Message | Mapping[str, Any] | tuple[str, str]]


def normalize_messages(messages: Messages) -> list[Message]:
    """Accept a string (one user turn), dicts or ``(role, content)`` pairs; check roles and content."""
    if isinstance(messages, str):
        return [user(messages)]
    out: list[Message] = []
    for i, m in enumerate(messages):
        if isinstance(m, tuple):
            role, content = m
        elif isinstance(m, Mapping):
            role, content = m.get("role"), m.get("content")
        else:
            raise TypeError(f"message {i}: expected a dict with role/content, got {type(m).__name__}")
        if role not in ROLES:
            raise ValueError(f"message {i}: role must be one of {', '.join(ROLES)}, got {role!r}")
        if not isinstance(content, str):
            raise TypeError(f"message {i}: content must be a string, got {type(content).__name__}")
        out.append({"role": role, "content": content})
    if not out:
        raise ValueError("no messages")
    if all(m["role"] == "system" for m in out):
        raise ValueError("messages contain only a system prompt; add a user turn")
    return out


LogprobsMode = bool | Literal["optional"]
#: OpenAI's ``reasoning_effort`` values (the openai SDK's ``types/shared/reasoning_effort.py``, 2.x)
REASONING_EFFORTS = ("none", "minimal", "low", "medium", "high", "xhigh", "max")
#: Anthropic's smallest ``thinking.budget_tokens`` (the anthropic SDK's ``ThinkingConfigEnabledParam``)
MIN_THINKING_BUDGET = 1024


@dataclass(frozen=True)
class ChatOptions:
    """Generation options. Every field is part of the cache key.

    ``temperature`` defaults to 0 (evaluation wants repeatable calls). ``logprobs``: True, False,
    or ``"optional"`` (return ``logprobs=None`` with ``reply.fallback == "no-logprobs"`` where the
    provider cannot give them, instead of raising). ``top_logprobs > 0`` implies ``logprobs``.
    ``sample`` is the sample index: ask for sample 0, 1, 2... of the same prompt to get distinct
    cached draws at temperature > 0. ``extra``: provider-specific body fields (e.g. ``top_k``).
    ``reasoning_effort`` (OpenAI's, one of :data:`REASONING_EFFORTS`) and ``thinking_budget``
    (Anthropic's extended thinking, tokens >= :data:`MIN_THINKING_BUDGET`; 0 is off): how much a reasoning model
    thinks before it answers (docs/llm.md, "Reasoning models"); None sends neither, and then neither
    enters the cache key (keys made before they existed stay valid).
    """

    temperature: float = 0.0
    top_p: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] | None = None
    seed: int | None = None
    logprobs: LogprobsMode = False
    top_logprobs: int = 0
    sample: int = 0
    extra: Mapping[str, Any] = field(default_factory=dict)
    reasoning_effort: str | None = None
    thinking_budget: int | None = None

    def __post_init__(self) -> None:
        if self.stop is not None and not isinstance(self.stop, tuple):
            stop = (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)
            object.__setattr__(self, "stop", stop)
        if self.top_logprobs and self.logprobs is False:
            object.__setattr__(self, "logprobs", True)
        if self.logprobs not in (True, False, "optional"):
            raise ValueError(f"logprobs must be True, False or 'optional', got {self.logprobs!r}")
        if not 0 <= self.temperature <= 2:
            raise ValueError(f"temperature must be in [0, 2], got {self.temperature}")
        if self.top_p is not None and not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if not 0 <= self.top_logprobs <= 20:
            raise ValueError(f"top_logprobs must be in [0, 20], got {self.top_logprobs}")
        if self.sample < 0:
            raise ValueError(f"sample must be >= 0, got {self.sample}")
        self._check_reasoning()

    def _check_reasoning(self) -> None:
        if self.thinking_budget == 0 and not isinstance(self.thinking_budget, bool):  # 0: thinking off
            object.__setattr__(self, "thinking_budget", None)
        if self.reasoning_effort is not None and self.reasoning_effort not in REASONING_EFFORTS:
            raise ValueError(f"reasoning_effort must be one of {', '.join(REASONING_EFFORTS)}, "
                             f"got {self.reasoning_effort!r}")
        budget = self.thinking_budget
        if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int)
                                   or budget < MIN_THINKING_BUDGET):
            raise ValueError(f"thinking_budget must be a whole number of tokens >= {MIN_THINKING_BUDGET} "
                             f"(Anthropic's minimum), got {budget!r}")

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    def merged(self, **changes: Any) -> ChatOptions:
        """A copy with ``changes`` applied; unknown names raise TypeError listing the valid ones."""
        bad = sorted(set(changes) - set(self.names()))
        if bad:
            raise TypeError(f"unknown chat option(s) {', '.join(bad)}; options: {', '.join(self.names())}")
        return replace(self, **changes) if changes else self

    def key_dict(self) -> dict[str, Any]:
        """The options as they enter the cache key (``"optional"`` logprobs count as requested)."""
        return {
            "temperature": float(self.temperature),
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "stop": list(self.stop) if self.stop is not None else None,
            "seed": self.seed,
            "logprobs": bool(self.logprobs),
            "top_logprobs": self.top_logprobs if self.logprobs else 0,
            "sample": self.sample,
            "extra": dict(self.extra),
            # only when set: every key made before these settings existed stays the same
            **({"reasoning_effort": self.reasoning_effort} if self.reasoning_effort is not None else {}),
            **({"thinking_budget": self.thinking_budget} if self.thinking_budget is not None else {}),
        }


@dataclass(frozen=True)
class TopLogprob:
    token: str
    logprob: float

    @property
    def prob(self) -> float:
        return math.exp(self.logprob)


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token, its logprob and the top alternatives at that position (incl. itself)."""

    token: str
    logprob: float
    top: tuple[TopLogprob, ...] = ()

    @property
    def prob(self) -> float:
        return math.exp(self.logprob)

    def to_dict(self) -> dict[str, Any]:
        return {"token": self.token, "logprob": self.logprob, "top": [[t.token, t.logprob] for t in self.top]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> TokenLogprob:
        top = tuple(TopLogprob(t, float(lp)) for t, lp in d.get("top", ()))
        return cls(d["token"], float(d["logprob"]), top)


@dataclass(frozen=True)
class TokenCounts:
    """A reply's tokens as the provider counts them. ``output_tokens`` include the reasoning tokens
    (both OpenAI and Anthropic bill reasoning as output); ``reasoning_tokens`` says how many of them were
    reasoning (OpenAI ``completion_tokens_details.reasoning_tokens``, Anthropic
    ``output_tokens_details.thinking_tokens``; 0 where the reply does not say)."""

    input_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        out = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.reasoning_tokens:
            out["reasoning_tokens"] = self.reasoning_tokens
        return out

    @classmethod
    def from_dict(cls, u: Mapping[str, Any]) -> TokenCounts:
        return cls(int(u.get("input_tokens", 0)), int(u.get("output_tokens", 0)), int(u.get("reasoning_tokens", 0)))


@dataclass(frozen=True)
class Reply:
    """A chat reply. ``text`` is the answer alone (the message content; Anthropic: its text blocks), the
    only thing a parser sees; ``reasoning``: what a reasoning model thought before it (vLLM and DeepSeek
    ``message.reasoning_content``, some servers ``message.reasoning``, Anthropic ``thinking`` blocks), kept
    apart and never parsed; None when the reply has none. ``cached``: served from the disk cache.
    ``fallback``: ``"no-logprobs"`` when logprobs were optional and the provider has none. ``dry_run``: a
    placeholder (nothing was sent). ``batch``: the reply came through a provider's batch API. ``latency``:
    the seconds the provider took to make it (its attempts' own time, a retried attempt's included; no
    queue; None when unknown: a batch, a dry run), kept in the cache so a warm rerun still knows what the
    reply cost in time."""

    text: str
    finish_reason: str | None = "stop"
    logprobs: list[TokenLogprob] | None = None
    usage: TokenCounts = TokenCounts()
    model: str = ""
    provider: str = ""
    cached: bool = False
    fallback: str | None = None
    dry_run: bool = False
    retries: int = 0
    reasoning: str | None = None
    batch: bool = False
    latency: float | None = None

    @property
    def refused(self) -> bool:
        return self.finish_reason in REFUSAL_REASONS

    @property
    def cacheable(self) -> bool:
        """Empty and refused outputs and placeholders are never cached."""
        return bool(self.text.strip()) and not self.refused and not self.dry_run

    def to_dict(self) -> dict[str, Any]:
        """The stored form (no ``cached``/``retries``/``batch``: those describe one call; ``fallback``
        only when it describes the reply itself, e.g. ``no-logprobs``; ``reasoning`` when there is some)."""
        out = {
            "text": self.text,
            "finish_reason": self.finish_reason,
            "logprobs": None if self.logprobs is None else [t.to_dict() for t in self.logprobs],
            "usage": self.usage.as_dict(),
            "model": self.model,
            "provider": self.provider,
        }
        if self.reasoning is not None:
            out["reasoning"] = self.reasoning
        if self.latency is not None:
            out["latency_s"] = round(self.latency, 6)
        if self.fallback:
            out["fallback"] = self.fallback
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], **extra: Any) -> Reply:
        lps = d.get("logprobs")
        u = d.get("usage") or {}
        extra.setdefault("fallback", None)
        extra["fallback"] = extra["fallback"] or d.get("fallback")
        return cls(
            text=d["text"],
            finish_reason=d.get("finish_reason"),
            logprobs=None if lps is None else [TokenLogprob.from_dict(t) for t in lps],
            usage=TokenCounts.from_dict(u),
            model=d.get("model", ""),
            provider=d.get("provider", ""),
            reasoning=d.get("reasoning"),
            latency=float(d["latency_s"]) if isinstance(d.get("latency_s"), int | float) else None,
            **extra,
        )


@dataclass(frozen=True)
class ChatRequest:
    """One item for :meth:`Client.map`: messages plus per-request options."""

    messages: Messages
    options: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def coerce(cls, item: ChatRequest | Mapping[str, Any] | Messages) -> ChatRequest:
        """``ChatRequest``, ``{"messages": [...], **options}``, or bare messages."""
        if isinstance(item, ChatRequest):
            return item
        if isinstance(item, Mapping):
            if "messages" not in item:
                raise TypeError("a request dict needs a 'messages' key")
            opts = {k: v for k, v in item.items() if k != "messages"}
            return cls(item["messages"], opts)
        return cls(item)
