"""Dry run: send nothing, estimate calls, tokens and cost.

Input tokens are counted with tiktoken's ``o200k_base`` when tiktoken is installed and the encoding's
table is here (:mod:`harness.served.tokens`: tiktoken's cache folder, ``TIKTOKEN_CACHE_DIR``; nothing is
downloaded), else as characters / 4. Output tokens are a guess: ``output_tokens`` (default 200) capped at the
request's ``max_tokens``. Cache hits are real replies and count as free. With Anthropic's extended thinking
(``thinking_budget``) the whole budget is counted as reasoning output on top (an upper bound: the model may
think less); a ``reasoning_effort`` has no budget to count, so its reasoning is not estimated (say so when
you budget with it).

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

from harness.served.tokens import load
from harness.served.types import ChatOptions, Message, Reply, TokenCounts


@dataclass(frozen=True)
class DryRun:
    output_tokens: int = 200
    text: str = ""


@functools.lru_cache(maxsize=1)
def _encoder() -> Any:
    """o200k_base's :class:`~harness.served.tokens.Tokenizer`, or None (no tiktoken, or no table here)."""
    found = load("o200k_base")
    return None if isinstance(found, str) else found


def count_tokens(text: str) -> int:
    enc = _encoder()
    if enc is not None:
        return enc.count(text)
    return math.ceil(len(text) / 4)


def tokenizer_name() -> str:
    return "tiktoken:o200k_base" if _encoder() is not None else "chars/4"


def estimate_input_tokens(messages: Sequence[Message]) -> int:
    """Content tokens plus ~4 per message of chat framing plus 3 for the reply primer."""
    return sum(count_tokens(m["content"]) + 4 for m in messages) + 3


def placeholder(messages: Sequence[Message], options: ChatOptions, provider: str, model: str,
                dry: DryRun) -> Reply:
    out = dry.output_tokens if options.max_tokens is None else min(dry.output_tokens, options.max_tokens)
    thinking = options.thinking_budget or 0  # the budget, an upper bound of the thinking
    return Reply(
        text=dry.text, finish_reason="dry_run", logprobs=[] if options.logprobs else None,
        usage=TokenCounts(estimate_input_tokens(messages), out + thinking, thinking), model=model, provider=provider,
        dry_run=True,
    )
