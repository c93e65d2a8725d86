"""``harness new-plugin NAME --kind KIND``: a plugin distribution whose own tests pass.

The scaffolds are real files under ``templates/`` (linted by ruff with the rest of the code):
``_shared/`` (``pyproject.toml``, ``README.md``, ``tests/conftest.py``) and one folder per scaffold
kind of :data:`~harness.components.kinds.KIND_TABLE` (the package and its test module; its
``_readme.toml`` fills the README's ``@WHAT@`` and ``@USAGE@``). Rendering replaces the tokens
``plugin-name`` (the component name), ``plugin_name`` (in ``harness_plugin_name``, the package) and
``PLUGIN_NAME`` (an LLM provider's variables), and writes ``_helpers.py`` below its marker in place
of a test module's ``from _helpers import ...`` line.
"""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from harness.components.kinds import KIND_TABLE, Kind, kind_named
from harness.concepts.errors import HarnessError

KINDS: tuple[str, ...] = tuple(k.cli_name for k in KIND_TABLE if k.scaffold)
_TOKENS = re.compile(r"plugin-name|plugin_name|PLUGIN_NAME")
_HELPERS_LINE = re.compile(r"^from _helpers import .*\n", re.MULTILINE)
_HELPERS_MARK = "# -- rendered from here --\n"
_FIELDS = re.compile(r"@[A-Z]+@")
_LAZY = re.compile(r'lazy\(f"\{__name__\}\.(\w+):(\w+)"\)')


def _files(folder: Traversable, prefix: str = "") -> dict[str, str]:
    """``{relative path: text}`` of the files under ``folder`` (byte-code and hidden files left out)."""
    out = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.startswith((".", "__pycache__")) or entry.name.endswith(".pyc"):
            continue
        rel = prefix + entry.name
        out.update(_files(entry, rel + "/") if entry.is_dir() else {rel: entry.read_text(encoding="utf-8")})
    return out


def _scaffold_kind(kind: str) -> Kind:
    found = kind_named(kind)
    if found is None or not found.scaffold:
        raise HarnessError(f"unknown plugin kind {kind!r}; kinds: {', '.join(KINDS)}")
    return found


def plugin_files(name: str, kind: str = "retriever") -> dict[str, str]:
    """``{relative path: text}`` of the plugin ``harness-NAME`` for ``kind`` (``llm-provider`` or
    ``llm_provider``)."""
    spec = _scaffold_kind(kind)
    name = check_name(name)
    root = resources.files(__package__) / "templates"
    files = _files(root / "_shared") | _files(root / spec.name)
    readme = tomllib.loads(files.pop("_readme.toml"))
    impl, cls = _LAZY.search(files["harness_plugin_name/__init__.py"]).groups()
    fields = {"@KIND@": spec.cli_name, "@WHAT@": readme["what"], "@USAGE@": readme["usage"], "@IMPL@": impl,
              "@CLASS@": cls}
    helpers = (root / "_helpers.py").read_text(encoding="utf-8").split(_HELPERS_MARK, 1)[1]
    tokens = {"plugin-name": name, "plugin_name": name.replace("-", "_"), "PLUGIN_NAME": name.replace("-", "_").upper()}
    out = {}
    for rel, text in files.items():
        text = _HELPERS_LINE.sub(lambda _: helpers, text) if rel.startswith("tests/test_") else text
        text = _FIELDS.sub(lambda m: fields.get(m.group(), m.group()), text)
        out[_TOKENS.sub(lambda m: tokens[m.group()], rel)] = _TOKENS.sub(lambda m: tokens[m.group()], text)
    return out


def check_name(name: str) -> str:
    """The component name (``harness-`` prefix dropped); a bad name raises :class:`HarnessError`."""
    name = name.removeprefix("harness-")
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name):
        raise HarnessError(f"plugin name {name!r}: use lowercase letters, digits and single '-' between words "
                           "(e.g. my-retriever)")
    return name


def write_plugin(name: str, parent: str | Path = ".", kind: str = "retriever") -> Path:
    """Write ``harness-NAME/`` under ``parent`` for a component of ``kind`` and return its path."""
    files = plugin_files(name, kind)
    root = Path(parent) / f"harness-{check_name(name)}"
    if root.exists():
        raise HarnessError(f"{root} already exists")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
