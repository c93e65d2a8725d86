"""Every ``lazy("module:attr")`` target resolves: the module imports and ``attr`` is callable.

Two ways in, so that no target escapes: the components registered by the built-ins and by each
in-repo plugin (``plugins/*``, registered from its folder the way its entry point names it), and the
``lazy("...")`` string literals in the source of ``harness/`` and ``plugins/`` (a ``lazy()`` no
registration reaches). A target whose module needs a missing optional extra fails with a
``ModuleNotFoundError`` for the extra's module, which the repository's conftest reports as a skip
naming the extra (outside CI).
"""

from __future__ import annotations

import ast
import importlib
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from harness.components.lazy import lazy
from harness.components.registry import Registry
from harness.plugins.host import PluginHost

REPO = Path(__file__).resolve().parent.parent
_NOT_SOURCE = frozenset({"tests", "build", "dist", "__pycache__"})


@contextmanager
def _on_path(folder: Path | None) -> Iterator[None]:
    """``folder`` (an in-repo plugin's root) first on ``sys.path`` for the block."""
    if folder is None:
        yield
        return
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path.remove(str(folder))


def in_repo_plugins(root: Path = REPO) -> list[tuple[Path, str, str, str]]:
    """``(folder, distribution, entry-point name, module)`` of each plugin under ``root/plugins``,
    read from its pyproject's ``[project.entry-points.harness]``."""
    out = []
    for pyproject in sorted((root / "plugins").glob("*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        for name, value in project.get("entry-points", {}).get("harness", {}).items():
            out.append((pyproject.parent, project["name"], name, value))
    return out


def registered_targets(registry: Registry) -> dict[str, str]:
    """``target -> "kind name (source)"`` (the first) for each component whose factory is a ``lazy()``."""
    out: dict[str, str] = {}
    for kind in registry.components:
        for comp in registry.all(kind):
            target = getattr(comp.factory, "target", None)
            if target is not None:
                out.setdefault(target, f"{comp.kind} {comp.name} ({comp.source})")
    return out


def _registrations() -> dict[str, tuple[str, Path | None]]:
    """The built-ins' and the in-repo plugins' lazy targets: ``target -> (who, plugin folder or None)``."""
    host = PluginHost(load_entry_points=False, environ={})
    out = {t: (who, None) for t, who in registered_targets(host.registry).items()}
    for folder, dist, name, value in in_repo_plugins():
        module_name, _, attr = value.partition(":")
        with _on_path(folder):
            module = importlib.import_module(module_name)
            plugin = getattr(module, attr) if attr else module
            if not host.pm.is_registered(plugin):
                host.register_plugin(plugin, name, dist)
        for target, who in registered_targets(host.registry).items():
            out.setdefault(target, (who, folder))
    return out


def literal_targets(root: Path = REPO) -> dict[str, tuple[str, Path | None]]:
    """``target -> (file:line, plugin folder or None)`` for each ``lazy("...")`` / ``x.lazy("...")`` call
    with a string literal in the shipped source under ``root`` (``harness/``, ``plugins/*/`` without tests)."""
    out: dict[str, tuple[str, Path | None]] = {}
    files = [(p, None) for p in sorted((root / "harness").rglob("*.py"))]
    for plugin in sorted(p for p in (root / "plugins").iterdir() if p.is_dir()):
        files += [(p, plugin) for p in sorted(plugin.rglob("*.py"))
                  if not _NOT_SOURCE & set(p.relative_to(plugin).parts[:-1])]
    for path, folder in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                    and (getattr(node.func, "id", None) == "lazy" or getattr(node.func, "attr", None) == "lazy")):
                out.setdefault(node.args[0].value, (f"{path.relative_to(root)}:{node.lineno}", folder))
    return out


def check(target: str, folder: Path | None = None) -> Any:
    """Resolve ``target`` as its ``lazy()`` factory would, without calling it: raises what the import
    or the attribute lookup raises, and ``TypeError`` when the attribute is not callable."""
    with _on_path(folder):
        obj = lazy(target).resolve()
    if not callable(obj):
        raise TypeError(f"lazy({target!r}) resolves to a {type(obj).__name__}, not a callable")
    return obj


REGISTERED = _registrations()
LITERALS = literal_targets()


def test_the_targets_are_found():
    """Both ways in reach the built-ins and the plugins (the lists below are not empty by accident)."""
    assert "harness.retrievers.bm25:BM25Retriever" in REGISTERED
    assert "harness.llm.providers.openai:OpenAIProvider" in REGISTERED
    assert "harness_birco.data:load_birco" in REGISTERED and REGISTERED["harness_birco.data:load_birco"][1]
    assert set(REGISTERED) <= set(LITERALS), "registered targets that are not literals: scan them too"
    assert len(LITERALS) >= 40


@pytest.mark.parametrize("target", sorted(set(REGISTERED) | set(LITERALS)))
def test_target_resolves(target):
    where, folder = REGISTERED.get(target) or LITERALS[target]
    assert check(target, folder), where


def test_a_wrong_target_is_reported(tmp_path):
    """The checker fails on a missing module, a missing attribute and a non-callable, and both ways
    in find a wrong target planted in a plugin."""
    with pytest.raises(ModuleNotFoundError, match="harness.nope"):
        check("harness.nope:X")
    with pytest.raises(AttributeError, match="Nope"):
        check("harness.retrievers.bm25:Nope")
    with pytest.raises(TypeError, match="not a callable"):
        check("harness.components.kinds:KINDS")

    source = ("from harness import hookimpl, lazy\n\n@hookimpl\ndef register_retrievers(register):\n"
              "    register('nope', lazy('harness.nope:X'), 'planted')\n")
    plugin = tmp_path / "plugins" / "harness-planted"
    (plugin / "harness_planted").mkdir(parents=True)
    (plugin / "harness_planted" / "__init__.py").write_text(source, encoding="utf-8")
    (tmp_path / "harness").mkdir()
    assert literal_targets(tmp_path) == {"harness.nope:X": ("plugins/harness-planted/harness_planted/__init__.py:5",
                                                            plugin)}
    host = PluginHost(load_entry_points=False, environ={})
    with _on_path(plugin):
        host.register_plugin(importlib.import_module("harness_planted"), "planted")
    sys.modules.pop("harness_planted", None)
    assert registered_targets(host.registry)["harness.nope:X"] == "retriever nope (local)"
    with pytest.raises(ModuleNotFoundError):
        check("harness.nope:X", plugin)
