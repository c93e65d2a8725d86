"""Registers an LLM provider: `--llm NAME:MODEL` on the command line.

Plugin: harness-plugin-name
Example: --llm plugin-name:my-model

Imported by every `harness` command: keep it light (an SDK, if you use one, is imported in the
provider's module)."""

from harness import hookimpl, lazy

__version__ = "0.1.0"
NAME = "plugin-name"
# the variables holding the API key and the base URL (or base_url=... in the spec)
KEY_ENV = "PLUGIN_NAME_API_KEY"
URL_ENV = "PLUGIN_NAME_BASE_URL"


@hookimpl
def register_llm_providers(register):
    register(NAME, lazy(f"{__name__}.provider:HttpChatProvider"),
             f"An OpenAI-shaped chat API over plain HTTP (no SDK); ${KEY_ENV}, ${URL_ENV} or base_url=...")
