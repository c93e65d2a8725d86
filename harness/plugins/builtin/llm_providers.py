"""Built-in LLM providers (:data:`harness.llm.providers.BUILTIN_PROVIDERS`, their one table). No SDK is
imported until a provider is created and called."""

from __future__ import annotations

from harness.llm.providers import BUILTIN_PROVIDERS
from harness.plugins.hookspecs import hookimpl


@hookimpl
def register_llm_providers(register):
    for name, (factory, description) in BUILTIN_PROVIDERS.items():
        register(name, factory, description)
