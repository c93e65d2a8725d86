"""The ``configs:`` a Hugging Face dataset card declares (its README's YAML front matter), and which of a
repository's files each config's split names.

The card is untrusted input: the front matter is bounded (:data:`MAX_FRONT_MATTER` characters), parsed
with PyYAML's safe loader (no tags, no code), and only the ``configs`` entries are walked, with a budget
on the number of values visited, so an alias-laden document cannot make the walk explode.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.concepts.errors import DataError

MAX_README_BYTES = 4 << 20
MAX_FRONT_MATTER = 256 << 10
MAX_VISITS = 100_000
DEFAULT_SPLIT = "train"  # the split of a data_files entry that names none (the datasets library's rule)

Configs = dict[str, dict[str, list[str]]]  # config name -> split -> path patterns


def front_matter(text: str) -> str | None:
    """The YAML between a leading ``---`` line and the next ``---`` line, or None when there is none."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    for i, line in enumerate(lines[1:], 1):
        if line.strip() == "---":
            return "\n".join(lines[1:i])
    return None


class _Budget:
    def __init__(self, path: object) -> None:
        self.left, self.path = MAX_VISITS, path

    def take(self, n: int = 1) -> None:
        self.left -= n
        if self.left < 0:
            raise DataError(f"the dataset card's configs are too large to read (more than {MAX_VISITS:,} values)",
                            self.path)


def _strings(value: Any, what: str, budget: _Budget) -> list[str]:
    items = value if isinstance(value, list) else [value]
    budget.take(len(items))
    if not all(isinstance(x, str) and 0 < len(x) <= 1000 for x in items):
        raise DataError(f"the dataset card's {what} must be a path or a list of paths", budget.path)
    return list(items)


def _data_files(value: Any, config: str, budget: _Budget) -> dict[str, list[str]]:
    """``data_files`` in any of the card's forms: a path, a list of paths (split ``train``), a list of
    ``{split, path}`` entries, or a ``{split: path(s)}`` table."""
    what = f"config {config!r}: data_files"
    if isinstance(value, dict):
        budget.take(len(value))
        return {str(split): _strings(p, what, budget) for split, p in value.items()}
    items = value if isinstance(value, list) else [value]
    budget.take(len(items))
    out: dict[str, list[str]] = {}
    for item in items:
        if isinstance(item, dict):
            split = item.get("split", DEFAULT_SPLIT)
            if not isinstance(split, str) or not split or "path" not in item:
                raise DataError(f"the dataset card's {what} entry {str(item)[:80]!r} lacks a split or a path",
                                budget.path)
            out.setdefault(split, []).extend(_strings(item["path"], what, budget))
        else:
            out.setdefault(DEFAULT_SPLIT, []).extend(_strings(item, what, budget))
    return out


def parse_configs(yaml_text: str, path: object = None) -> Configs:
    """The ``configs`` of a card's front matter: ``{config: {split: [patterns]}}`` ({} when none)."""
    import yaml

    if len(yaml_text) > MAX_FRONT_MATTER:
        raise DataError(f"the dataset card's YAML header is over {MAX_FRONT_MATTER:,} characters", path)
    try:
        card = yaml.safe_load(yaml_text)
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"the dataset card's YAML header does not parse ({first})", path) from None
    if not isinstance(card, dict) or card.get("configs") is None:
        return {}
    entries = card["configs"]
    if not isinstance(entries, list):
        raise DataError("the dataset card's configs must be a list", path)
    budget = _Budget(path)
    budget.take(len(entries))
    out: Configs = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("config_name"), str):
            raise DataError(f"a config of the dataset card lacks config_name: {str(entry)[:80]!r}", path)
        name = entry["config_name"]
        if "data_files" in entry:
            out[name] = _data_files(entry["data_files"], name, budget)
    return out


def read_card_configs(readme: Path) -> Configs:
    """The configs the card ``readme`` (a README.md) declares; {} when it has no YAML header."""
    if readme.stat().st_size > MAX_README_BYTES:
        raise DataError(f"the dataset card is over {MAX_README_BYTES:,} bytes", readme)
    try:
        text = readme.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(f"the dataset card is not UTF-8 text ({exc.reason})", readme) from None
    header = front_matter(text)
    return parse_configs(header, readme) if header is not None else {}


def _pattern(glob: str) -> re.Pattern[str]:
    """A Hub ``data_files`` glob as a regex: ``**`` crosses folders, ``*`` and ``?`` do not."""
    out = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out))


def match_files(patterns: Iterable[str], files: Iterable[str]) -> list[str]:
    """The repository paths (of ``files``) that any pattern matches, sorted, each once."""
    regexes = [_pattern(p.removeprefix("./")) for p in patterns]
    return sorted({f for f in files for r in regexes if r.fullmatch(f)})


__all__ = ["Configs", "front_matter", "match_files", "parse_configs", "read_card_configs"]
