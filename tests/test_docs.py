"""Every hook is documented with its exact signature and an example (as datasette does)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from harness import hookspecs

DOCS = Path(__file__).resolve().parent.parent / "docs"
HOOKS = [n for n, f in vars(hookspecs).items() if n.startswith("register_") and callable(f)]


def test_there_are_hooks():
    assert {"register_datasets", "register_retrievers", "register_rerankers", "register_judges",
            "register_metrics", "register_tasks", "register_llm_providers", "register_commands"} <= set(HOOKS)


@pytest.mark.parametrize("hook", HOOKS)
def test_hook_is_documented(hook):
    text = (DOCS / "plugin_hooks.md").read_text(encoding="utf-8")
    params = ", ".join(inspect.signature(getattr(hookspecs, hook)).parameters)
    heading = f"## {hook}({params})"
    assert heading in text, f"docs/plugin_hooks.md lacks the heading {heading!r}"
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    assert re.search(rf"```python\n.*def {hook}\(", section, re.S), f"{hook}: no example in its section"
