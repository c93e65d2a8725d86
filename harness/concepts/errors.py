"""Error types. Every error a user can cause is a :class:`HarnessError` with a message that says
what was wrong, where (file and line) and what to do about it."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class HarnessError(Exception):
    """Base class for errors the CLI reports as a message, not a traceback."""


class DataError(HarnessError):
    """Bad or missing input data; names the file and, when known, the line."""

    def __init__(self, message: str, path: object | None = None, line: int | None = None):
        self.path = path
        self.line = line
        where = ""
        if path is not None:
            where = f"{path}"
            if line is not None:
                where += f", line {line}"
            where += ": "
        super().__init__(where + message)


class UnknownComponentError(HarnessError):
    """A component name that no plugin registers; lists the close matches."""

    def __init__(self, kind: str, name: str, known: Iterable[str]):
        known = sorted(known)
        self.kind, self.name, self.known = kind, name, known
        close = difflib.get_close_matches(name, known, n=5, cutoff=0.5)
        msg = f"unknown {kind} {name!r}"
        if close:
            msg += f"; did you mean: {', '.join(close)}?"
        elif known:
            msg += f"; known {kind}s: {', '.join(known)}"
        msg += " (`harness list-plugins` shows every component)"
        super().__init__(msg)


class AmbiguousComponentError(HarnessError):
    """Two sources register the same plain name."""

    def __init__(self, kind: str, name: str, sources: Iterable[str]):
        sources = sorted(sources)
        super().__init__(
            f"{kind} {name!r} is registered by several sources: {', '.join(sources)}; "
            f"name one explicitly, e.g. 'plugin:{name}' for the third-party one "
            f"or '<distribution>:{name}'"
        )


class PluginError(HarnessError):
    """A plugin failed to load or register (raised only under HARNESS_STRICT_PLUGINS=1)."""
