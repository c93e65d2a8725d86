"""The arrows that must never exist (docs/architecture.md), checked on the source."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "harness"


def _imports(path: Path) -> set[str]:
    """Absolute names of every module a file imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    package = parts if path.name == "__init__.py" else parts[:-1]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.add(mod)
            out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def _files(*patterns: str) -> list[Path]:
    return sorted({p for pat in patterns for p in PKG.glob(pat)})


RULES = [
    ("harness/** never imports plugins", _files("**/*.py"),
     ("harness_nv_embed", "harness_rankgpt", "harness_infosearch", "harness_birco", "harness_ifir", "harness_pir",
      "plugins")),
    ("metrics never import the LLM layer", _files("metrics/*.py"), ("harness.llm",)),
    ("data loaders never import retrieval or the LLM layer",
     _files("io/*.py", "datasets.py", "data.py", "download.py"), ("harness.retrievers", "harness.llm")),
    ("the LLM layer never imports the pipeline, API or CLI", _files("llm/**/*.py"),
     ("harness.pipeline", "harness.api", "harness.cli")),
    ("compare reads results only", _files("compare/*.py"),
     ("harness.pipeline", "harness.retrievers", "harness.llm", "harness.api")),
]


@pytest.mark.parametrize("rule,files,forbidden", RULES, ids=[r[0] for r in RULES])
def test_no_forbidden_imports(rule, files, forbidden):
    assert files, rule
    bad = [
        f"{f.relative_to(PKG.parent)} imports {m}"
        for f in files
        for m in _imports(f)
        if any(m == x or m.startswith(x + ".") for x in forbidden)
    ]
    assert not bad, f"{rule}: " + "; ".join(bad)


def test_cli_is_a_thin_face():
    """The CLI reaches evaluation only through the API."""
    mods = _imports(PKG / "cli.py")
    assert "harness.pipeline" not in mods and not any(m.startswith("harness.retrievers") for m in mods)
