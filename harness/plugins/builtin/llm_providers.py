"""Built-in LLM providers. No SDK is imported until a provider is created and called."""

from __future__ import annotations

from harness.plugins.hookspecs import hookimpl
from harness.plugins.lazy import lazy


@hookimpl
def register_llm_providers(register):
    register("openai", lazy("harness.llm.providers.openai:OpenAIProvider"),
             "OpenAI Chat Completions (official SDK); OPENAI_API_KEY, OPENAI_BASE_URL; logprobs")
    register("anthropic", lazy("harness.llm.providers.anthropic:AnthropicProvider"),
             "Anthropic Messages (official SDK); ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL; no logprobs")
    register("openai-compatible", lazy("harness.llm.providers.openai:OpenAICompatibleProvider"),
             "Any OpenAI-compatible server by base_url (vLLM, llama.cpp, Ollama, SGLang); "
             "aliases vllm:, ollama:, llamacpp:, sglang:")
    register("local", lazy("harness.llm.providers.local:LocalProvider"),
             "llama.cpp in this process (llama-cpp-python): the packaged Gemma 3 270M, or local:path=FILE.gguf; "
             "no key, no network")
