"""Built-in LLM providers. Each module imports its SDK only when the first call is made.

:data:`BUILTIN_PROVIDERS` is the one table of them: the core's plugin registers each
(:mod:`harness.plugins.builtin.llm_providers`), and a session made outside any context (``get_client``,
``LLMSession(settings)``) looks its providers up there; inside an evaluation a session finds providers
in the context's registry only, plugins' providers included."""

from __future__ import annotations

from types import MappingProxyType

from harness.components.lazy import lazy
from harness.components.registry import Component, Registry
from harness.runtime.about import CORE_DIST

#: name -> (lazy factory, description)
BUILTIN_PROVIDERS = MappingProxyType({
    "openai": (lazy("harness.llm.providers.openai:OpenAIProvider"),
               "OpenAI Chat Completions (official SDK); OPENAI_API_KEY, OPENAI_BASE_URL; logprobs"),
    "anthropic": (lazy("harness.llm.providers.anthropic:AnthropicProvider"),
                  "Anthropic Messages (official SDK); ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL; no logprobs"),
    "openai-compatible": (lazy("harness.llm.providers.openai:OpenAICompatibleProvider"),
                          "Any OpenAI-compatible server by base_url (vLLM, llama.cpp, Ollama, SGLang); "
                          "aliases vllm:, ollama:, llamacpp:, sglang:"),
    "local": (lazy("harness.llm.providers.local:LocalProvider"),
              "llama.cpp in this process (llama-cpp-python): the packaged Gemma 3 270M, or local:path=FILE.gguf; "
              "no key, no network"),
})


def builtin_registry() -> Registry:
    """A registry of :data:`BUILTIN_PROVIDERS` alone, for a session outside any context."""
    registry = Registry()
    for name, (factory, description) in BUILTIN_PROVIDERS.items():
        registry.add(Component("llm_provider", name, factory, description, CORE_DIST))
    return registry
