"""Component specs: ``[source:]name[:key=value,key=value]``.

Examples: ``bm25``, ``dense:model=all-MiniLM-L6-v2,batch_size=64``, ``plugin:nv-embed``,
``pap:base=dense``, ``pir:perspectrum``. Values are parsed as JSON when they parse (numbers,
booleans, null, lists) and kept as strings otherwise. Brackets outside quotes must balance and
nest at most :data:`MAX_NESTING` deep (quote a value to keep odd brackets in it: ``key='a(b'``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from harness.concepts.errors import HarnessError

MAX_NESTING = 32  # brackets in a spec nest at most this deep
_PAIRS = MappingProxyType({")": "(", "]": "[", "}": "{"})


@dataclass(frozen=True)
class ComponentSpec:
    name: str
    source: str | None = None
    args: dict[str, Any] = field(default_factory=dict)
    text: str = ""

    def __str__(self) -> str:
        return self.text or self.name


def split_top(s: str, sep: str) -> list[str]:
    """Split on ``sep`` outside brackets and quotes."""
    parts, depth, quote, cur = [], 0, "", []
    for ch in s:
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return parts


def _short(text: str, n: int = 60) -> str:
    return repr(text if len(text) <= n else text[:n] + "...")


def check_brackets(text: str, what: str = "component spec") -> None:
    """Raise :class:`HarnessError` when brackets outside quotes do not balance or nest more than
    :data:`MAX_NESTING` deep (which would also make JSON parsing recurse without bound)."""
    stack: list[str] = []
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch in "([{":
            stack.append(ch)
            if len(stack) > MAX_NESTING:
                raise HarnessError(f"{what} {_short(text)}: brackets nest more than {MAX_NESTING} deep")
        elif ch in ")]}":
            if not stack or stack[-1] != _PAIRS[ch]:
                problem = f"does not close {stack[-1]!r}" if stack else "closes nothing open"
                raise HarnessError(f"{what} {_short(text)}: unbalanced brackets: {ch!r} at position {i + 1} "
                                   f"{problem} (quote a value to keep brackets in it: key='a)b')")
            stack.pop()
    if stack:
        raise HarnessError(f"{what} {_short(text)}: unbalanced brackets: {len(stack)} left open "
                           f"(first {stack[0]!r}; quote a value to keep brackets in it: key='a(b')")


def parse_value(raw: str) -> Any:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "\"'":
        return raw[1:-1]
    check_brackets(raw, "component argument value")
    try:
        return json.loads(raw)
    except ValueError:
        low = raw.lower()
        if low in ("true", "false"):
            return low == "true"
        return raw


def parse_args(text: str) -> dict[str, Any]:
    check_brackets(text, "component arguments")
    args: dict[str, Any] = {}
    for part in split_top(text, ","):
        if not part.strip():
            continue
        if "=" not in part:
            raise HarnessError(f"bad component argument {part!r}: expected key=value")
        key, value = part.split("=", 1)
        args[key.strip().replace("-", "_")] = parse_value(value)
    return args


def parse_spec(text: str) -> ComponentSpec:
    text = text.strip()
    if not text:
        raise HarnessError("empty component spec")
    check_brackets(text)
    segments = split_top(text, ":")
    first_arg = next((i for i, s in enumerate(segments) if "=" in s), len(segments))
    path, arg_text = segments[:first_arg], ":".join(segments[first_arg:])
    if not path:
        raise HarnessError(f"component spec {text!r} has arguments but no name")
    source = None
    if len(path) > 1:
        source, path = path[0], path[1:]
    return ComponentSpec(":".join(path), source, parse_args(arg_text), text)
