"""Numbers in data files, read strictly: relevance grades, run scores and ranks.

Python's ``int()`` and ``float()`` accept more than a file should hold: ``1_00`` is 100, ``١`` (an
Arabic-Indic digit) is 1, and surrounding whitespace, ``nan`` and ``infinity`` are numbers. Here a number
is ASCII digits with an optional sign, decimal point and exponent, at most :data:`MAX_NUMBER_CHARS`
characters (a longer one is refused before ``int()`` sees it); a grade must also be finite and within
:data:`~harness.concepts.qrels.MIN_GRADE` to :data:`~harness.concepts.qrels.MAX_GRADE`.
"""

from __future__ import annotations

import math
import re
from typing import Any

from harness.concepts.errors import DataError
from harness.concepts.qrels import RANGE, grade_problem
from harness.concepts.qrels import shown_value as shown

#: the longest number text converted
MAX_NUMBER_CHARS = 64
_INT = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_NON_FINITE = frozenset({"nan", "inf", "infinity"})
_WRITTEN = "a number (ASCII digits with an optional sign, decimal point and exponent)"


def strict_number(text: str) -> int | float | None:
    """``text`` as an ``int`` (digits with an optional sign) or a ``float`` (a decimal point or an
    exponent; ``1e999`` is ``inf``); ``None`` when it is not written that way or is too long."""
    if not isinstance(text, str) or len(text) > MAX_NUMBER_CHARS:
        return None
    if _INT.fullmatch(text):
        return int(text)
    if _DECIMAL.fullmatch(text):
        return float(text)
    return None


def _fail(message: str, path: object, loc: int | None, unit: str) -> DataError:
    return DataError(message, path, loc) if unit == "line" else DataError(f"{unit} {loc}: {message}", path)


def _unreadable(text: str, too_long: str) -> str:
    """What a text :func:`strict_number` refused must be."""
    if text.lstrip("+-").lower() in _NON_FINITE:
        return "a finite number"
    return too_long if _INT.fullmatch(text) else _WRITTEN


def grade_from_text(text: str, path: object, loc: int | None, unit: str = "line",
                    what: str = "relevance grade") -> int | float:
    """A grade written in a text file: an ``int`` when written as one, else a ``float``; a
    :class:`DataError` naming the place unless a finite number in the grade range."""
    value = strict_number(text)
    problem = _unreadable(text, RANGE) if value is None else grade_problem(value)
    if problem:
        raise _fail(f"{what} {shown(text)} is not {problem}", path, loc, unit)
    return value  # type: ignore[return-value]


def grade_from_value(raw: Any, path: object, loc: int | None, unit: str = "line",
                     what: str = "'score'") -> int | float:
    """A grade from a JSON or Parquet value: a number (not a boolean) or a string written as one
    (:func:`strict_number`), finite and in the grade range; whole numbers become ``int``."""
    value = strict_number(raw) if isinstance(raw, str) else raw
    problem = _unreadable(raw, RANGE) if value is None and isinstance(raw, str) else grade_problem(value)
    if problem:
        raise _fail(f"{what} must be {problem}, got {shown(raw)}", path, loc, unit)
    return int(value) if isinstance(value, float) and value.is_integer() else value


def score_from_text(text: str, path: object, loc: int | None, what: str = "score") -> float:
    """A run score written in a text file: a finite number, strictly written."""
    value = strict_number(text)
    if value is None:
        problem = _unreadable(text, "a finite number")
        raise _fail(f"{what} {shown(text)} is not {problem}", path, loc, "line")
    try:
        score = float(value)
    except OverflowError:  # digits beyond the float range
        score = math.inf
    if not math.isfinite(score):
        raise _fail(f"{what} {shown(text)} is not a finite number", path, loc, "line")
    return score


def rank_from_text(text: str, path: object, loc: int | None) -> int:
    """A rank written in a run file: a whole number, strictly written (trec_eval orders by score, so
    the rank is checked, never used)."""
    if len(text) > 19 or not _INT.fullmatch(text):
        raise _fail(f"rank {shown(text)} is not a whole number", path, loc, "line")
    return int(text)
