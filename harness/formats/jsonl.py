"""JSON Lines: one JSON value per line; blank lines are skipped."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

from harness.concepts.errors import DataError
from harness.formats.files import iter_lines


def iter_jsonl(path: str | os.PathLike[str]) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` for each non-blank line; bad JSON raises :class:`DataError`
    naming the file and line."""
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f"invalid JSON: {exc.msg} (column {exc.colno})", path, lineno) from exc
        except ValueError as exc:  # an integer of more than 4300 digits
            raise DataError(f"invalid JSON: {exc}", path, lineno) from exc
        except RecursionError:
            raise DataError("invalid JSON: nested too deeply", path, lineno) from None


def iter_jsonl_objects(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    """Like :func:`iter_jsonl` but each line must be a JSON object."""
    for lineno, obj in iter_jsonl(path):
        if not isinstance(obj, dict):
            raise DataError(f"expected a JSON object, got {type(obj).__name__}", path, lineno)
        yield lineno, obj
