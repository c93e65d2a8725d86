"""Bounds on the numbers a user gives (options, spec arguments, environment variables, side files):
finite, in range, whole where a count is meant. A value outside them raises :class:`ValueError`
naming it (the CLI reports it as one message, exit status 2). Light: imports nothing heavy."""

from __future__ import annotations

import math
from typing import Any

#: the longest timeout, time budget or wait in seconds (one day)
MAX_SECONDS = 86_400.0


def finite_number(value: Any, what: str, *, low: float | None = None, high: float | None = None,
                  low_open: bool = False) -> float:
    """``value`` (a number, or its text) as a finite float with ``low <= value <= high`` (``low <
    value`` with ``low_open``); else :class:`ValueError` naming ``what``."""
    try:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise TypeError
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"{what} must be a number, got {_shown(value)}") from None
    below = low is not None and (x <= low if low_open else x < low)
    if not math.isfinite(x) or below or (high is not None and x > high):
        raise ValueError(f"{what} must be a finite number {_range(low, high, low_open)}, got {_shown(value)}")
    return x


def whole_number(value: Any, what: str, *, low: int | None = None, high: int | None = None) -> int:
    """``value`` (an int, or its digits) as an int with ``low <= value <= high``; else
    :class:`ValueError` naming ``what``."""
    n: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        n = value
    elif isinstance(value, str) and 0 < len(value.strip()) <= 20:
        try:
            n = int(value.strip())
        except ValueError:
            n = None
    if n is None:
        raise ValueError(f"{what} must be a whole number {_range(low, high, False)}, got {_shown(value)}")
    if (low is not None and n < low) or (high is not None and n > high):
        raise ValueError(f"{what} must be a whole number {_range(low, high, False)}, got {_shown(value)}")
    return n


def _range(low: float | None, high: float | None, low_open: bool) -> str:
    lo = None if low is None else f"{low:g}" if isinstance(low, float) else f"{low:,}"
    hi = None if high is None else f"{high:g}" if isinstance(high, float) else f"{high:,}"
    if lo is not None and hi is not None:
        return f"{'above' if low_open else 'from'} {lo} {'and up to' if low_open else 'to'} {hi}"
    if lo is not None:
        return f"{'>' if low_open else '>='} {lo}"
    return f"<= {hi}" if hi is not None else ""


def _shown(value: Any) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int beyond Python's digit limit
        text = "a number of more than 4300 digits"
    return text if len(text) <= 40 else text[:37] + "..."
