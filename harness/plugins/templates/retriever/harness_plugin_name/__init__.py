"""Registers a retriever.

Plugin: harness-plugin-name
Example: harness eval --task demo --retriever plugin-name

Imported by every `harness` command: keep it light (the component's module loads on use)."""

from harness import hookimpl, lazy

__version__ = "0.1.0"
NAME = "plugin-name"


@hookimpl
def register_retrievers(register):
    register(NAME, lazy(f"{__name__}.retriever:OverlapRetriever"),
             "Ranks documents by the number of query words they contain")
