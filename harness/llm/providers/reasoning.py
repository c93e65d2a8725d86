"""The reasoning settings of a chat request (``reasoning_effort``, ``thinking_budget``) as each provider
takes them, and the reasoning of a reply kept apart from its answer (docs/llm.md, "Reasoning models").

- :func:`check_settings` refuses, in one message before any work, a setting the provider has no field for
  and a typed value the provider's API refuses with reasoning on (Anthropic's thinking: temperature 1 only,
  ``top_p`` from 0.95 to 1, no ``top_k``; OpenAI's reasoning models: temperature 1 only).
- :func:`split_think` separates ``<think>...</think>`` from a reply's content (DeepSeek-R1, Qwen3 and
  gpt-oss-style models on a server that runs no reasoning parser): a ranking written while thinking is
  never the answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from harness.concepts.errors import HarnessError
from harness.served.precedence import TYPED

_THINK = re.compile(r"\s*<think>(.*?)(?:</think>|\Z)", re.DOTALL)


def typed(settings: Mapping[str, Any], name: str) -> Any:
    """The value the user chose for ``name`` (a :class:`~harness.served.precedence.Setting` whose source is
    typed), else None."""
    s = settings.get(name)
    return s.value if s is not None and getattr(s, "source", None) in TYPED else None


def value(settings: Mapping[str, Any], name: str) -> Any:
    s = settings.get(name)
    return None if s is None else s.value


def refuse_unsupported(provider: str, settings: Mapping[str, Any], names: Iterable[str], hint: str) -> None:
    """One message when a reasoning setting in ``names`` is set for a provider that has no field for it."""
    for name in names:
        if value(settings, name) is not None:
            raise HarnessError(f"LLM provider {provider!r} takes no {name}; {hint}")


def require_temperature_one(provider: str, settings: Mapping[str, Any], why: str) -> None:
    """A typed temperature other than 1 is refused: ``why`` says which setting imposes 1."""
    t = typed(settings, "temperature")
    if t is not None and float(t) != 1.0:
        raise HarnessError(f"LLM provider {provider!r}: {why} accepts only temperature 1 (the API refuses "
                           f"any other); drop temperature={t} or the reasoning setting")


def split_think(text: str) -> tuple[str, str | None]:
    """``(answer, reasoning)``: a content that opens with ``<think>`` holds its reasoning up to ``</think>``
    (all of it when the tag never closes: a reply cut while thinking has no answer); other text is all
    answer, with no reasoning."""
    m = _THINK.match(text)
    if m is None:
        return text, None
    return text[m.end():].lstrip(), m.group(1).strip()
