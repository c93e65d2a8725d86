"""One precedence for every LLM setting: what the user typed beats any default.

Highest first (docs/llm.md, "Precedence of settings"):

1. ``component spec``: an argument typed in the component's spec (``--reranker birco-score:max_tokens=64``);
   ``argument``: a value passed in Python (``RankGPT(max_tokens=64)``, ``get_client(spec, temperature=0)``);
2. ``llm spec``: an argument of the LLM spec (``--llm openai-compatible:gemma:base_url=...,max_tokens=128``);
3. ``cli option`` (``--llm-timeout``), ``settings`` (``LLMSettings(...)`` in Python), ``env``
   (``HARNESS_LLM_TIMEOUT``);
4. ``component default``: the value a component picks when nobody typed one (BIRCO's cap of 1024);
5. ``client default``: the client's or provider's (``ChatOptions``' defaults, Anthropic's 1024 tokens,
   the 60 s read timeout).

``provider rule``: a value the provider's API imposes over a default (temperature 1 with Anthropic's
extended thinking or an OpenAI reasoning effort); a typed value it would override is refused instead.

:func:`resolve` applies it to one setting and says where the value came from; :func:`chat_settings`
to every chat option of a client. ``max_tokens=0`` from any source means "no cap" (None).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness.served.types import ChatOptions

COMPONENT_SPEC = "component spec"
ARGUMENT = "argument"
LLM_SPEC = "llm spec"
CLI_OPTION = "cli option"
SETTINGS = "settings"
ENV = "env"
COMPONENT_DEFAULT = "component default"
CLIENT_DEFAULT = "client default"
#: every source, highest first
SOURCES = (COMPONENT_SPEC, ARGUMENT, LLM_SPEC, CLI_OPTION, SETTINGS, ENV, COMPONENT_DEFAULT, CLIENT_DEFAULT)
#: a value the provider imposes over a default (what it sends), never over a typed one
PROVIDER_RULE = "provider rule"
#: what the user chose: these values reach every request, whatever a component sets per request
TYPED = frozenset(SOURCES[:6])
#: chat options a request may set for itself whatever was typed (the index of a sampled draw)
PER_REQUEST = frozenset({"sample"})

Layer = tuple[str, Mapping[str, Any]]


@dataclass(frozen=True)
class Setting:
    """A setting's value and where it came from (one of :data:`SOURCES`)."""

    value: Any
    source: str

    def as_dict(self) -> dict[str, Any]:
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return {"value": value, "from": self.source}


def resolve(name: str, layers: Sequence[Layer], default: Any = None) -> Setting:
    """The value of ``name`` in the first of ``layers`` (``(source, values)``, highest first) that has
    it, else ``default`` from the client. A layer has a setting when the name is in it (None included:
    ``top_p=null`` sends none); ``max_tokens=0`` is "no cap" (None)."""
    for source, values in layers:
        if name in values:
            value = values[name]
            return Setting(None if name == "max_tokens" and value == 0 else value, source)
    return Setting(default, CLIENT_DEFAULT)


def chat_settings(layers: Sequence[Layer], provider: Any = None) -> tuple[ChatOptions, dict[str, Setting]]:
    """The client's chat options from ``layers`` (highest first), each with its source; what no layer
    sets is the client's default, after the provider's own defaults (``normalize_options``)."""
    unknown = sorted({k for _, values in layers for k in values} - set(ChatOptions.names()))
    if unknown:
        raise TypeError(f"unknown chat option(s) {', '.join(unknown)}; options: {', '.join(ChatOptions.names())}")
    resolved = {name: resolve(name, layers, getattr(ChatOptions(), name)) for name in ChatOptions.names()}
    options = ChatOptions(**{k: s.value for k, s in resolved.items()})
    if provider is not None and hasattr(provider, "normalize_options"):
        filled = provider.normalize_options(options)
        for name, s in resolved.items():
            value = getattr(filled, name)
            if value != s.value and s.source not in TYPED:
                filled_default = s.source == CLIENT_DEFAULT or s.value is None  # the provider's own default
                resolved[name] = Setting(value, CLIENT_DEFAULT if filled_default else PROVIDER_RULE)
    return options, resolved


def typed_options(resolved: Mapping[str, Setting]) -> dict[str, Any]:
    """The chat options the user chose (sources in :data:`TYPED`), which a component's per-request
    options do not override (``sample`` excepted)."""
    return {k: s.value for k, s in resolved.items() if s.source in TYPED and k not in PER_REQUEST}


def apply_typed(options: ChatOptions, typed: Mapping[str, Any]) -> ChatOptions:
    """``options`` (a request's) with the user's chosen values put back; ``extra`` is merged, the
    user's keys winning."""
    if not typed:
        return options
    changes = dict(typed)
    if "extra" in changes:
        changes["extra"] = {**dict(options.extra), **dict(changes["extra"] or {})}
    return options.merged(**changes)


def describe(resolved: Mapping[str, Setting]) -> dict[str, dict[str, Any]]:
    """For results.json: ``{name: {"value": ..., "from": source}}``."""
    return {name: s.as_dict() for name, s in resolved.items()}
