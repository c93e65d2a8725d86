"""INSTFOL judge prompt templates: versioned text files, replaceable by the user.

A template file holds optional header lines starting with ``#!`` (provenance; never sent), then a
``[system]`` section and a ``[user]`` section. Only two placeholders are filled, by plain text
replacement (never ``str.format``, so the braces of the example JSON stay as they are; the
released code's AILA templates doubled their braces and sent the placeholders unfilled):

- ``{instruction}``: the text judged against (query + " " + instruction, the level's retrieval text);
- ``{corpus}``: the document (``title + " " + text``, or ``text`` without a title).

Which file a query uses: ``<subset>_l<level>.txt`` for the leveled subsets (fiqa, scifact_open,
aila, pm), ``<subset>.txt`` for nfcorpus, fire and cds, and ``generic.txt`` for queries of other
datasets. ``prompts=DIR`` reads files of those names from DIR first (falling back to the shipped
ones); ``prompt=FILE`` uses one file for every query.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from harness import HarnessError

VERSION = "v1"
LEVELED = ("fiqa", "scifact_open", "aila", "pm")
UNLEVELED = ("nfcorpus", "fire", "cds")
GENERIC = "generic"


@dataclass(frozen=True)
class Template:
    name: str
    system: str
    user: str
    sha256: str
    source: str

    def messages(self, instruction: str, corpus: str) -> list[dict[str, str]]:
        user = self.user.replace("{instruction}", instruction).replace("{corpus}", corpus)
        out = [{"role": "system", "content": self.system}] if self.system else []
        return out + [{"role": "user", "content": user}]


def parse_template(text: str, name: str, source: str) -> Template:
    lines = [ln for ln in text.splitlines() if not ln.startswith("#!")]
    body = "\n".join(lines)
    if "[user]" not in body:
        raise HarnessError(f"instfol prompt {source}: no [user] section")
    head, user = body.split("[user]", 1)
    system = head.split("[system]", 1)[1] if "[system]" in head else ""
    if "{corpus}" not in user or "{instruction}" not in user:
        raise HarnessError(f"instfol prompt {source}: the [user] section needs the placeholders {{instruction}} "
                           "and {corpus}")
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Template(name, system.strip("\n"), user.strip("\n") + "\n", sha, source)


def shipped_names() -> list[str]:
    return [f"{s}_l{lv}" for s in LEVELED for lv in (1, 2, 3)] + list(UNLEVELED) + [GENERIC]


def _shipped(name: str) -> tuple[str, str]:
    res = resources.files("harness_ifir").joinpath("prompts", VERSION, f"{name}.txt")
    return res.read_text(encoding="utf-8"), f"harness_ifir/prompts/{VERSION}/{name}.txt"


def template_name(meta: dict[str, Any]) -> str:
    subset, level = meta.get("ifir_subset"), meta.get("level")
    if subset in LEVELED:
        lv = int(level or 3)
        return f"{subset}_l{min(max(lv, 1), 3)}"
    if subset in UNLEVELED:
        return subset
    return GENERIC


class TemplateSet:
    """The templates in use: shipped ``v1``, overridden per file from ``prompts`` (a folder), or one
    ``prompt`` file for everything."""

    def __init__(self, prompts: str | None = None, prompt: str | None = None):
        self.folder = Path(prompts).expanduser() if prompts else None
        self.single = Path(prompt).expanduser() if prompt else None
        if self.folder is not None and not self.folder.is_dir():
            raise HarnessError(f"instfol: prompts folder not found: {self.folder}")
        if self.single is not None and not self.single.is_file():
            raise HarnessError(f"instfol: prompt file not found: {self.single}")
        self.templates: dict[str, Template] = {}
        if self.single is not None:
            self.templates["*"] = parse_template(self.single.read_text(encoding="utf-8"), "*", str(self.single))
        else:
            for name in shipped_names():
                self.templates[name] = self._load(name)

    def _load(self, name: str) -> Template:
        if self.folder is not None and (self.folder / f"{name}.txt").is_file():
            p = self.folder / f"{name}.txt"
            return parse_template(p.read_text(encoding="utf-8"), name, str(p))
        text, src = _shipped(name)
        return parse_template(text, name, src)

    def for_meta(self, meta: dict[str, Any]) -> Template:
        if self.single is not None:
            return self.templates["*"]
        return self.templates[template_name(meta)]

    def describe(self) -> dict[str, Any]:
        return {
            "version": "custom" if (self.single or self.folder) else VERSION,
            "folder": str(self.folder) if self.folder else None,
            "file": str(self.single) if self.single else None,
            "sha256": {n: t.sha256 for n, t in self.templates.items()},
            "sources": sorted({t.source for t in self.templates.values() if not t.source.startswith("harness_ifir/")}),
        }
