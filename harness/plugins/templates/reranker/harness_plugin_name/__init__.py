"""Registers a reranker.

Plugin: harness-plugin-name
Example: harness eval --task demo --reranker plugin-name

Imported by every `harness` command: keep it light (the component's module loads on use)."""

from harness import hookimpl, lazy

__version__ = "0.1.0"
NAME = "plugin-name"


@hookimpl
def register_rerankers(register):
    register(NAME, lazy(f"{__name__}.reranker:OverlapReranker"),
             "Re-orders each candidate list by the share of query words a document contains")
