"""Make throwaway installed distributions (a real ``*.dist-info`` with ``entry_points.txt``) so
tests exercise the same entry-point discovery a ``pip install`` gives."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest


def make_distribution(root: Path, dist: str, module: str, source: str, version: str = "1.0") -> Path:
    """Write ``module.py`` and ``<dist>-<version>.dist-info`` under ``root``; add ``root`` to the
    path (sys.path or PYTHONPATH) to install it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[harness]\n{dist} = {module}\n", encoding="utf-8")
    return root


#: the test double of an LLM reranker (tests/llm_double.py), as a distribution with an entry point
LLM_DOUBLE = ("harness-llm-double", "harness_llm_double", Path(__file__).with_name("llm_double.py"))


def install_llm_double(root: Path) -> Path:
    """Install the distribution ``harness-llm-double`` (reranker ``llm-double``) under ``root``; returns
    ``root``, for :func:`use_distributions`."""
    dist, module, source = LLM_DOUBLE
    return make_distribution(root, dist, module, source.read_text(encoding="utf-8"))


def use_distributions(monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
    """Make the distributions under ``root`` installed for the rest of the test (or the ``monkeypatch``
    context): ``root`` first on ``sys.path`` and on the ``PYTHONPATH`` that subprocesses inherit."""
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p))


GOOD_PLUGIN = """
from harness.plugins.hookspecs import hookimpl

class EchoRetriever:
    def __init__(self, k_bonus=0):
        self.k_bonus = k_bonus
    def index(self, corpus):
        self.ids = sorted(corpus)
    def search(self, queries, k):
        from harness.concepts.run import Run
        return Run.from_order({q: self.ids[:k] for q in queries})

@hookimpl
def register_retrievers(register):
    register("echo", EchoRetriever, "Returns documents in id order (test plugin)")
    register("bm25", EchoRetriever, "A third-party retriever that clashes with the built-in name")
"""

BROKEN_IMPORT = """
raise RuntimeError("this plugin is broken on purpose")
"""

BROKEN_REGISTER = """
from harness.plugins.hookspecs import hookimpl

@hookimpl
def register_rerankers(register):
    raise ValueError("cannot register: missing config")
"""

EXITS_AT_IMPORT = """
import sys
sys.exit("this plugin exits at import")
"""

EXITS_IN_HOOK = """
from harness.plugins.hookspecs import hookimpl

@hookimpl
def register_retrievers(register):
    raise SystemExit(3)
"""
