"""Registers a judge.

Plugin: harness-plugin-name
Example: harness eval --task demo --judge plugin-name

Imported by every `harness` command: keep it light (the component's module loads on use)."""

from harness import hookimpl, lazy

__version__ = "0.1.0"
NAME = "plugin-name"


@hookimpl
def register_judges(register):
    register(NAME, lazy(f"{__name__}.judge:OverlapJudge"),
             "Grades 0-3 by the share of query words in the document (no LLM)")
