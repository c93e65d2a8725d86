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


@dataclass(frozen=True)
class ChatOptions:
    """Generation options. Every field is part of the cache key.

    ``temperature`` defaults to 0 (evaluation wants repeatable calls). ``logprobs``: True, False,
    or ``"optional"`` (return ``logprobs=None`` with ``reply.fallback == "no-logprobs"`` where the
    provider cannot give them, instead of raising). ``top_logprobs > 0`` implies ``logprobs``.
    ``sample`` is the sample index: ask for sample 0, 1, 2... of the same prompt to get distinct
    cached draws at temperature > 0. ``extra``: provider-specific body fields (e.g. ``top_k``).
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
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Reply:
    """A chat reply. ``cached``: served from the disk cache. ``fallback``: ``"no-logprobs"`` when
    logprobs were optional and the provider has none. ``dry_run``: a placeholder (nothing was sent)."""

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

    @property
    def refused(self) -> bool:
        return self.finish_reason in REFUSAL_REASONS

    @property
    def cacheable(self) -> bool:
        """Empty and refused outputs and placeholders are never cached."""
        return bool(self.text.strip()) and not self.refused and not self.dry_run

    def to_dict(self) -> dict[str, Any]:
        """The stored form (no ``cached``/``retries``: those describe one call; ``fallback`` only
        when it describes the reply itself, e.g. ``no-logprobs``)."""
        out = {
            "text": self.text,
            "finish_reason": self.finish_reason,
            "logprobs": None if self.logprobs is None else [t.to_dict() for t in self.logprobs],
            "usage": {"input_tokens": self.usage.input_tokens, "output_tokens": self.usage.output_tokens},
            "model": self.model,
            "provider": self.provider,
        }
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
            usage=TokenCounts(int(u.get("input_tokens", 0)), int(u.get("output_tokens", 0))),
            model=d.get("model", ""),
            provider=d.get("provider", ""),
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
