"""LLM specs: ``provider:model[:key=value,...]``.

- ``openai:gpt-4o-mini``, ``anthropic:claude-3-5-haiku-latest``
- ``openai:MODEL:base_url=http://127.0.0.1:8000/v1``: any OpenAI-compatible server
- aliases for OpenAI-compatible servers, with their usual local URL as default:
  ``vllm:MODEL``, ``ollama:llama3:8b``, ``llamacpp:MODEL``, ``sglang:MODEL``, ``compat:MODEL:base_url=...``
- a bare model name picks its provider: ``gpt-4o-mini`` -> openai, ``claude-...`` -> anthropic
- ``local`` (the packaged Gemma 3 270M in process), ``local:path=/models/x.gguf``, ``local:NAME:path=...``
- replicas of one OpenAI-compatible model: ``vllm:MODEL:base_url=["http://h1:8000/v1","http://h2:8000/v1"]``
  (a list, quoted or not: :mod:`harness.llm.providers.replicas`)

The model is everything between the provider and the first ``key=value`` segment, so model names may
contain ``:`` (``ollama:llama3:8b``, ``openai:ft:gpt-4o-mini:org::id``). Arguments that are chat
options (``temperature``, ``max_tokens``, ...) beat the components' defaults (``max_tokens=0``: no cap;
:mod:`harness.served.precedence`); ``max_concurrency`` sets
the client's bound; the rest go to the provider (``base_url``, ``api_key_env``, ``timeout``).
An API key never goes in a spec (specs are written to results): use ``api_key_env=VAR``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from harness.components.component_spec import parse_args, split_top
from harness.concepts.errors import HarnessError
from harness.runtime.redact import redact_url
from harness.served.types import ChatOptions

COMPAT = "openai-compatible"
ALIASES: Mapping[str, tuple[str, str | None]] = MappingProxyType({
    "compat": (COMPAT, None),
    "vllm": (COMPAT, "http://127.0.0.1:8000/v1"),
    "sglang": (COMPAT, "http://127.0.0.1:30000/v1"),
    "ollama": (COMPAT, "http://127.0.0.1:11434/v1"),
    "llamacpp": (COMPAT, "http://127.0.0.1:8080/v1"),
    "llama.cpp": (COMPAT, "http://127.0.0.1:8080/v1"),
})
_INFER = (("gpt-", "openai"), ("chatgpt-", "openai"), ("o1", "openai"), ("o3", "openai"),
          ("o4", "openai"), ("claude", "anthropic"))
CLIENT_ARGS = ("max_concurrency",)
LOCAL, LOCAL_DEFAULT = "local", "gemma-3-270m-q4_k_m"


@dataclass(frozen=True)
class LLMSpec:
    """A parsed spec. ``provider`` is the registry name (aliases resolved); ``text`` is what the user
    wrote (safe to record: keys are refused by the parser). ``replicas``: the base URLs of a replica
    set (``base_url=[...]``; ``base_url`` is then None)."""

    provider: str
    model: str
    base_url: str | None = None
    provider_args: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)
    client_args: dict[str, Any] = field(default_factory=dict)
    text: str = ""
    alias: str | None = None
    replicas: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.provider}:{self.model}"

    def __str__(self) -> str:
        return self.text or self.label


def parse_llm_spec(text: str) -> LLMSpec:
    """Parse ``provider:model[:k=v,...]`` (see the module docstring)."""
    text = text.strip()
    if not text:
        raise HarnessError("empty LLM spec; expected provider:model, e.g. openai:gpt-4o-mini")
    segments = split_top(text, ":")
    first_arg = next((i for i, s in enumerate(segments) if "=" in s), len(segments))
    path, args = segments[:first_arg], parse_args(":".join(segments[first_arg:]))
    if "api_key" in args:
        raise HarnessError(
            f"LLM spec {text.split('api_key')[0]}...: do not put an API key in a spec (specs are "
            "recorded in results); set the provider's variable or pass api_key_env=VARIABLE_NAME"
        )
    if not path or not path[0]:
        raise HarnessError(f"LLM spec {text!r} has arguments but no provider:model")
    provider, model = _provider_model(text, path, args)
    alias, default_url = None, None
    if provider in ALIASES:
        alias = provider
        provider, default_url = ALIASES[alias]
    base_url, replicas = args.pop("base_url", None), ()
    if _is_list(base_url):
        base_url, replicas = None, replica_urls(text, provider, base_url)
    elif default_url:
        base_url = base_url or default_url
    options, client_args, provider_args = _sort_args(text, args)
    return LLMSpec(provider, model, base_url, provider_args, options, client_args, text, alias, replicas)


def _provider_model(text: str, path: list[str], args: dict[str, Any]) -> tuple[str, str]:
    """The provider (as written) and model of the ``provider:model`` part; a bare model name of a known
    family infers its provider; ``local`` defaults to the packaged model (or the stem of ``path=``)."""
    if path[0] == LOCAL:  # the embedded model: the packaged one, or a GGUF named by path=
        from pathlib import Path

        model = ":".join(path[1:]) or (Path(str(args["path"])).stem if "path" in args else LOCAL_DEFAULT)
        path = [LOCAL, model]
    if len(path) == 1:
        provider = next((p for prefix, p in _INFER if path[0].startswith(prefix)), None)
        if provider is None:
            raise HarnessError(
                f"LLM spec {text!r}: name the provider, e.g. openai:{path[0]}, anthropic:{path[0]} or "
                f"vllm:{path[0]}:base_url=http://HOST:PORT/v1"
            )
        model = path[0]
    else:
        provider, model = path[0], ":".join(path[1:])
    if not model:
        raise HarnessError(f"LLM spec {text!r} has no model name")
    return provider, model


def _sort_args(text: str, args: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Split the arguments into chat options (validated now), client arguments and provider arguments."""
    option_names = set(ChatOptions.names())
    options = {k: v for k, v in args.items() if k in option_names}
    client_args = {k: v for k, v in args.items() if k in CLIENT_ARGS}
    provider_args = {k: v for k, v in args.items() if k not in option_names and k not in CLIENT_ARGS}
    if options:  # validate early; max_tokens=0 is "no cap" (it lifts the components' caps)
        try:
            ChatOptions().merged(**{**options, **({"max_tokens": None} if options.get("max_tokens") == 0 else {})})
        except (TypeError, ValueError) as exc:
            raise HarnessError(f"LLM spec {redact_url(text)!r}: {exc}") from None
    return options, client_args, provider_args


def _is_list(value: Any) -> bool:
    return isinstance(value, list | tuple) or (isinstance(value, str) and value.strip().startswith("["))


def replica_urls(text: str, provider: str, value: Any) -> tuple[str, ...]:
    """The base URLs of ``base_url=[...]``: a parsed JSON list, or the unquoted ``[URL,URL]``."""
    shown = redact_url(text)
    if provider != COMPAT:
        raise HarnessError(
            f"LLM spec {shown!r}: only OpenAI-compatible servers (openai-compatible:, vllm:, llamacpp:, "
            f"sglang:, ollama:) take a list of base URLs (replicas); {provider} takes one base_url")
    if isinstance(value, str):
        inner = value.strip()
        if not inner.endswith("]"):
            raise HarnessError(f"LLM spec {shown!r}: base_url={redact_url(inner)} opens a list it does not close")
        value = [v.strip().strip("\"'") for v in inner[1:-1].split(",") if v.strip()]
    if not value:
        raise HarnessError(f"LLM spec {shown!r}: base_url=[] names no server; give one or more, e.g. "
                           'base_url=["http://h1:8000/v1","http://h2:8000/v1"]')
    urls: dict[str, str] = {}  # normalised -> as given
    for item in value:
        if not isinstance(item, str) or not _is_http_url(item):
            raise HarnessError(f"LLM spec {shown!r}: replica {redact_url(str(item))!r} is not an http(s) URL "
                               "(expected e.g. http://HOST:8000/v1)")
        url = item.strip().rstrip("/")
        same = urls.get(normalize_url(url))
        if same is not None:
            twice = repr(redact_url(url)) + ("" if same == url else f" (the same server as {redact_url(same)!r})")
            raise HarnessError(f"LLM spec {shown!r}: replica {twice} is listed twice")
        urls[normalize_url(url)] = url
    return tuple(urls.values())


def normalize_url(url: str) -> str:
    """``url`` as a server is compared: scheme and host lower-case, the scheme's default port dropped,
    no trailing slash (``HTTP://H:80/v1/`` is ``http://h/v1``); the path keeps its case."""
    parts = urlsplit(url.strip())
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    port = parts.port
    if ":" in host:  # IPv6
        host = f"[{host}]"
    user = parts.netloc.rpartition("@")[0]
    netloc = (f"{user}@" if user else "") + host
    if port is not None and port != {"http": 80, "https": 443}.get(scheme):
        netloc += f":{port}"
    return urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query, ""))


def _is_http_url(text: str) -> bool:
    try:
        parts = urlsplit(text.strip())
        return parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port or 0) >= 0
    except ValueError:  # a bad port
        return False
