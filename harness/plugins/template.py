"""``harness new-plugin NAME``: a plugin skeleton (package, entry point, a retriever, tests)."""

from __future__ import annotations

import re
from pathlib import Path

from harness.concepts.errors import HarnessError

PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.21"]
build-backend = "hatchling.build"

[project]
name = "{dist}"
version = "0.1.0"
description = "{name}: a harness plugin"
requires-python = ">=3.11"
dependencies = ["harness"]

[project.entry-points.harness]
{name} = "{module}"

[tool.hatch.build.targets.wheel]
packages = ["{module}"]
"""

INIT = '''\
"""{name}: registers the `{name}` retriever. Imported by `harness list-plugins`: keep it light."""

from harness.plugins.hookspecs import hookimpl


def _make(**kwargs):
    from .retriever import OverlapRetriever  # heavy imports belong in that module

    return OverlapRetriever(**kwargs)


@hookimpl
def register_retrievers(register):
    register("{name}", _make, "Ranks documents by word overlap with the query (template)")
'''

RETRIEVER = '''\
"""A minimal retriever: the number of query words a document contains. Replace with yours."""

from __future__ import annotations

from collections.abc import Mapping

from harness import Document, Run


class OverlapRetriever:
    def __init__(self, lowercase: bool = True):
        self.lowercase = lowercase
        self.docs: dict[str, set[str]] = {{}}

    def _words(self, text: str) -> set[str]:
        return set((text.lower() if self.lowercase else text).split())

    def index(self, corpus: Mapping[str, Document]) -> None:
        self.docs = {{d: self._words(doc.full_text()) for d, doc in corpus.items()}}

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        scores = {{q: {{d: float(len(self._words(t) & w)) for d, w in self.docs.items()}} for q, t in queries.items()}}
        return Run.from_scores(scores).top(k)

    def config(self) -> dict:
        return {{"lowercase": self.lowercase}}
'''

TEST = '''\
from harness import Document
from harness.plugins.host import PluginHost

import {module}


def test_registers_and_ranks():
    host = PluginHost(load_entry_points=False)
    host.register_plugin({module}, "{name}")
    retriever = host.registry.create("retriever", "{name}")
    retriever.index({{"a": Document("a", "cats purr softly"), "b": Document("b", "dogs bark loudly")}})
    run = retriever.search({{"q": "why do dogs bark"}}, k=2)
    assert run.doc_ids("q")[0] == "b"
'''

README = """\
# {dist}

A [harness](https://github.com/) plugin registering the retriever `{name}`.

    pip install -e .
    harness list-plugins
    harness eval --task demo --retriever plugin:{name}
    python -m pytest
"""


def write_plugin(name: str, parent: str | Path = ".") -> Path:
    """Write ``harness-NAME/`` under ``parent`` and return its path."""
    if not re.fullmatch(r"[a-z][a-z0-9-]*", name):
        raise HarnessError(f"plugin name {name!r}: use lowercase letters, digits and '-' (e.g. my-retriever)")
    dist = f"harness-{name}"
    module = "harness_" + name.replace("-", "_")
    root = Path(parent) / dist
    if root.exists():
        raise HarnessError(f"{root} already exists")
    fields = {"name": name, "dist": dist, "module": module}
    files = {
        "pyproject.toml": PYPROJECT,
        "README.md": README,
        f"{module}/__init__.py": INIT,
        f"{module}/retriever.py": RETRIEVER,
        "tests/test_plugin.py": TEST,
    }
    for rel, template in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template.format(**fields), encoding="utf-8")
    return root
