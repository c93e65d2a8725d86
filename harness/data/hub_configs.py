"""The ``configs:`` a Hugging Face dataset card declares (its README's YAML front matter), and which of a
repository's files each config's split names.

The card is untrusted input, read with bounded work before anything is built from it:

- the front matter is at most :data:`MAX_FRONT_MATTER` characters;
- it is read event by event (PyYAML's parser; its composer, which follows aliases, is never used): an
  anchor (``&a``) or an alias (``*a``) anywhere is refused, so nothing can expand ("billion laughs"); the
  header holds at most :data:`MAX_NODES` values, nested at most :data:`MAX_DEPTH` deep, each key or text
  at most :data:`MAX_SCALAR` characters; only YAML's core tags are accepted (no ``!!python/...``, no
  ``!!set``, no merge key ``<<``); one document;
- the ``configs`` entries are walked with a budget of :data:`MAX_VISITS` values; config and split names
  are at most :data:`MAX_NAME` characters, path patterns at most :data:`MAX_PATTERN`;
- patterns are matched segment by segment (``**`` only as a whole segment, as the ``datasets`` library
  reads them), never by a backtracking regex, within :data:`MAX_MATCH_STEPS` steps.

Every problem is one :class:`DataError` naming the card.
"""

from __future__ import annotations

import reprlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.concepts.errors import DataError

MAX_README_BYTES = 4 << 20
MAX_FRONT_MATTER = 256 << 10
MAX_NODES = 100_000  # values (texts, numbers, lists, mappings) in the whole header
MAX_DEPTH = 64  # lists and mappings nested
MAX_SCALAR = 65_536  # characters of one key or value
MAX_NUMBER = 100  # characters of a number
MAX_VISITS = 100_000  # values walked in ``configs``
MAX_NAME = 256  # characters of a config or split name
MAX_PATTERN = 1000  # characters of a data_files pattern
MAX_MATCH_STEPS = 10_000_000  # steps of matching every pattern against the repository's files
DEFAULT_SPLIT = "train"  # the split of a data_files entry that names none (the datasets library's rule)
_CORE = "tag:yaml.org,2002:"
_COLLECTION_TAGS = (None, "!", _CORE + "seq", _CORE + "map")
_SCALAR_TAGS = frozenset(_CORE + t for t in ("str", "int", "float", "bool", "null", "timestamp"))


def _brief_repr() -> reprlib.Repr:
    """A ``repr`` of bounded length for messages (a card's value may be large)."""
    brief = reprlib.Repr()
    brief.maxlevel, brief.maxdict, brief.maxlist, brief.maxstring, brief.maxother = 2, 3, 3, 60, 60
    return brief


_BRIEF = _brief_repr()

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


# -- the header, event by event ----------------------------------------------------------------------------
class _Open:
    """A list or mapping being built: its values, and for a mapping the key waiting for its value."""

    def __init__(self, mapping: bool) -> None:
        self.value: Any = {} if mapping else []
        self.mapping = mapping
        self.key: Any = None
        self.has_key = False

    def add(self, item: Any, where: str, path: object) -> None:
        if not self.mapping:
            self.value.append(item)
        elif self.has_key:
            self.value[self.key] = item  # a key given twice keeps its last value (PyYAML's rule)
            self.has_key = False
        elif isinstance(item, (list, dict)):
            raise _unparsable(f"a list or mapping used as a key {where}", path)
        else:
            self.key, self.has_key = item, True


def _unparsable(why: str, path: object) -> DataError:
    return DataError(f"the dataset card's YAML header does not parse ({why})", path)


def _where(event: Any) -> str:
    mark = getattr(event, "start_mark", None)
    return f"at line {mark.line + 1}" if mark is not None else "in the header"


class _Builder:
    """Python values from the parser's events, refusing anchors, aliases, foreign tags and sizes over the
    bounds as each event arrives (so the work is linear in the header's length)."""

    def __init__(self, path: object) -> None:
        from yaml.constructor import SafeConstructor
        from yaml.resolver import Resolver

        self.path, self.nodes, self.documents = path, 0, 0
        self.stack: list[_Open] = []
        self.result: Any = None
        self.constructor, self.resolver = SafeConstructor(), Resolver()

    def feed(self, event: Any) -> None:
        import yaml

        if isinstance(event, yaml.AliasEvent):
            raise DataError(f"the dataset card's YAML header uses an alias (*{str(event.anchor)[:40]}) "
                            f"{_where(event)}: anchors and aliases are refused (they can make a small card "
                            "expand into a huge document)", self.path)
        if getattr(event, "anchor", None) is not None:
            raise DataError(f"the dataset card's YAML header defines an anchor (&{str(event.anchor)[:40]}) "
                            f"{_where(event)}: anchors and aliases are refused (they can make a small card "
                            "expand into a huge document)", self.path)
        if isinstance(event, yaml.DocumentStartEvent):
            self.documents += 1
            if self.documents > 1:
                raise _unparsable(f"a second document {_where(event)}", self.path)
        elif isinstance(event, yaml.ScalarEvent):
            self._count(event)
            self._add(self._scalar(event), event)
        elif isinstance(event, yaml.CollectionStartEvent):
            self._open(event, isinstance(event, yaml.MappingStartEvent))
        elif isinstance(event, yaml.CollectionEndEvent):
            self._add(self.stack.pop().value, event)

    def _count(self, event: Any) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise DataError(f"the dataset card's YAML header holds more than {MAX_NODES:,} values (stopped "
                            f"{_where(event)})", self.path)

    def _open(self, event: Any, mapping: bool) -> None:
        self._count(event)
        if event.tag not in _COLLECTION_TAGS:
            raise _unparsable(f"the tag {str(event.tag)[:80]!r} {_where(event)} is not allowed", self.path)
        if len(self.stack) >= MAX_DEPTH:
            raise DataError(f"the dataset card's YAML header is nested more than {MAX_DEPTH} levels deep "
                            f"{_where(event)}", self.path)
        self.stack.append(_Open(mapping))

    def _scalar(self, event: Any) -> Any:
        import yaml

        if len(event.value) > MAX_SCALAR:
            raise DataError(f"the dataset card's YAML header holds a value of {len(event.value):,} characters "
                            f"{_where(event)} (at most {MAX_SCALAR:,})", self.path)
        tag = event.tag
        if tag is None or tag == "!":
            tag = self.resolver.resolve(yaml.ScalarNode, event.value, event.implicit)
        if tag not in _SCALAR_TAGS:
            shown = "the merge key <<" if tag == _CORE + "merge" else f"the tag {str(tag)[:80]!r}"
            raise _unparsable(f"{shown} {_where(event)} is not allowed", self.path)
        if tag in (_CORE + "int", _CORE + "float") and len(event.value) > MAX_NUMBER:
            raise _unparsable(f"a number of {len(event.value):,} characters {_where(event)}", self.path)
        node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, event.style)
        try:
            return self.constructor.yaml_constructors[tag](self.constructor, node)
        except (yaml.YAMLError, ValueError, OverflowError) as exc:  # 2020-13-45, an int over Python's digit limit
            reason = str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__
            raise _unparsable(f"{reason} {_where(event)}", self.path) from None

    def _add(self, value: Any, event: Any) -> None:
        if self.stack:
            self.stack[-1].add(value, _where(event), self.path)
        else:
            self.result = value


def load_header(yaml_text: str, path: object = None) -> Any:
    """The card's YAML header as Python values (None when empty), read with the bounds of this module."""
    import yaml

    if len(yaml_text) > MAX_FRONT_MATTER:
        raise DataError(f"the dataset card's YAML header is over {MAX_FRONT_MATTER:,} characters", path)
    builder = _Builder(path)
    try:
        for event in yaml.parse(yaml_text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            builder.feed(event)
    except yaml.YAMLError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise _unparsable(first[:200], path) from None
    return builder.result


# -- configs ----------------------------------------------------------------------------------------------
class _Budget:
    def __init__(self, path: object) -> None:
        self.left, self.path = MAX_VISITS, path

    def take(self, n: int = 1) -> None:
        self.left -= n
        if self.left < 0:
            raise DataError(f"the dataset card's configs are too large to read (more than {MAX_VISITS:,} values)",
                            self.path)


def _name(value: Any, what: str, path: object) -> str:
    """A config or split name: text of 1 to :data:`MAX_NAME` characters."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_NAME:
        raise DataError(f"the dataset card's {what} must be a name of 1 to {MAX_NAME} characters, not "
                        f"{_BRIEF.repr(value)}", path)
    return value


def _strings(value: Any, what: str, budget: _Budget) -> list[str]:
    items = value if isinstance(value, list) else [value]
    budget.take(len(items))
    if not all(isinstance(x, str) and 0 < len(x) <= MAX_PATTERN for x in items):
        raise DataError(f"the dataset card's {what} must be a path or a list of paths (each 1 to {MAX_PATTERN} "
                        "characters)", budget.path)
    for x in items:
        if any("**" in part and part != "**" for part in x.split("/")):
            raise DataError(f"the dataset card's {what} pattern {x[:200]!r}: '**' can only be a whole path "
                            "segment", budget.path)
    return list(items)


def _data_files(value: Any, config: str, budget: _Budget) -> dict[str, list[str]]:
    """``data_files`` in any of the card's forms: a path, a list of paths (split ``train``), a list of
    ``{split, path}`` entries, or a ``{split: path(s)}`` table."""
    what = f"config {config!r}: data_files"
    if isinstance(value, dict):
        budget.take(len(value))
        return {_name(str(split), f"{what} split", budget.path): _strings(p, what, budget)
                for split, p in value.items()}
    items = value if isinstance(value, list) else [value]
    budget.take(len(items))
    out: dict[str, list[str]] = {}
    for item in items:
        if isinstance(item, dict):
            split = item.get("split", DEFAULT_SPLIT)
            if not isinstance(split, str) or not split or "path" not in item:
                raise DataError(f"the dataset card's {what} entry {_BRIEF.repr(item)} lacks a split or a path",
                                budget.path)
            out.setdefault(_name(split, f"{what} split", budget.path), []).extend(
                _strings(item["path"], what, budget))
        else:
            out.setdefault(DEFAULT_SPLIT, []).extend(_strings(item, what, budget))
    return out


def parse_configs(yaml_text: str, path: object = None) -> Configs:
    """The ``configs`` of a card's front matter: ``{config: {split: [patterns]}}`` ({} when none)."""
    card = load_header(yaml_text, path)
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
            raise DataError(f"a config of the dataset card lacks config_name: {_BRIEF.repr(entry)}", path)
        name = _name(entry["config_name"], "config_name", path)
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


# -- matching ---------------------------------------------------------------------------------------------
class _Steps:
    def __init__(self, files: int) -> None:
        self.left, self.files = MAX_MATCH_STEPS, files

    def take(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise DataError(f"the dataset card's data_files patterns take more than {MAX_MATCH_STEPS:,} steps to "
                            f"match against the repository's {self.files:,} files; too many or too intricate "
                            "patterns")


def _segment(pattern: str, name: str, steps: _Steps) -> bool:
    """``*`` (any characters) and ``?`` (one) within one path segment; every other character as itself.
    Backtracks to the last ``*`` only: at most ``len(pattern) * len(name)`` steps."""
    p = n = 0
    star, mark = -1, 0
    count = 0
    while n < len(name):
        count += 1
        if p < len(pattern) and pattern[p] == "*":
            star, mark, p = p, n, p + 1
        elif p < len(pattern) and pattern[p] in ("?", name[n]):
            p, n = p + 1, n + 1
        elif star >= 0:
            p, mark = star + 1, mark + 1
            n = mark
        else:
            steps.take(count)
            return False
    steps.take(count)
    return pattern[p:].strip("*") == ""


def _glob(parts: list[str], segments: list[str], steps: _Steps) -> bool:
    """Whether the pattern's ``parts`` match the path's ``segments``: ``**`` is any number of whole segments
    (one or more when it ends the pattern), anything else one segment; a set of reachable positions per part."""
    reach = {0}
    for i, part in enumerate(parts):
        if not reach:
            return False
        if part == "**":
            low = min(reach) + (1 if i == len(parts) - 1 else 0)
            reach = set(range(low, len(segments) + 1))
        else:
            reach = {j + 1 for j in sorted(reach) if j < len(segments) and _segment(part, segments[j], steps)}
        steps.take(len(reach) + 1)
    return len(segments) in reach


def _literal_prefix(pattern: str) -> str:
    cut = min((i for i, c in enumerate(pattern) if c in "*?"), default=len(pattern))
    return pattern[:cut]


def match_files(patterns: Iterable[str], files: Iterable[str]) -> list[str]:
    """The repository paths (of ``files``) that any pattern matches, sorted, each once."""
    names = list(files)
    steps = _Steps(len(names))
    found: set[str] = set()
    present = set(names)
    for raw in patterns:
        pattern = raw.removeprefix("./")
        prefix = _literal_prefix(pattern)
        if prefix == pattern:  # no wildcard: the path itself
            found.update([pattern] if pattern in present else [])
            continue
        parts = pattern.split("/")
        steps.take(len(names))
        for name in names:
            if name.startswith(prefix) and name not in found and _glob(parts, name.split("/"), steps):
                found.add(name)
    return sorted(found)


__all__ = ["Configs", "front_matter", "load_header", "match_files", "parse_configs", "read_card_configs"]
