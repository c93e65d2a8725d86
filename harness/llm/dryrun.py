"""Dry run: send nothing, estimate calls, tokens and cost.

Input tokens are counted with tiktoken when it is installed and its encoding is available offline,
else as characters / 4. Output tokens are a guess: ``output_tokens`` (default 200) capped at the
request's ``max_tokens``. Cache hits are real replies and count as free.

A dry-run client returns placeholder replies (``reply.dry_run is True``, ``text == ""``, empty
logprobs when asked) so a component's control flow runs: a listwise reranker then sees a no-op reply
and keeps the input order, a judge records a failed parse. Scores from a dry run mean nothing.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from harness.llm.types import ChatOptions, Message, Reply, TokenCounts


@dataclass(frozen=True)
class DryRun:
    output_tokens: int = 200
    text: str = ""


@functools.lru_cache(maxsize=1)
def _encoder() -> Any:
    try:
        import tiktoken

        return tiktoken.get_encoding("o200k_base")
    except Exception:  # not installed, or the encoding cannot be fetched offline
        return None


def count_tokens(text: str) -> int:
    enc = _encoder()
    if enc is not None:
        return len(enc.encode(text, disallowed_special=()))
    return math.ceil(len(text) / 4)


def tokenizer_name() -> str:
    return "tiktoken:o200k_base" if _encoder() is not None else "chars/4"


def estimate_input_tokens(messages: Sequence[Message]) -> int:
    """Content tokens plus ~4 per message of chat framing plus 3 for the reply primer."""
    return sum(count_tokens(m["content"]) + 4 for m in messages) + 3


def placeholder(messages: Sequence[Message], options: ChatOptions, provider: str, model: str,
                dry: DryRun) -> Reply:
    out = dry.output_tokens if options.max_tokens is None else min(dry.output_tokens, options.max_tokens)
    return Reply(
        text=dry.text, finish_reason="dry_run", logprobs=[] if options.logprobs else None,
        usage=TokenCounts(estimate_input_tokens(messages), out), model=model, provider=provider, dry_run=True,
    )
