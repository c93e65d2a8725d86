"""Parsing a permutation reply and the sliding-window arithmetic (no LLM, no SDK)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_BRACKETED = re.compile(r"\[(\d+)\]")


@dataclass(frozen=True)
class Parsed:
    """The window's new order (indices into the incoming window) and what the parser had to fix."""

    order: list[int]
    valid: int  # distinct in-range ids the reply gave
    duplicates: int  # repeated ids dropped (the first occurrence is kept)
    out_of_range: int  # ids outside the window dropped
    missing: int  # ids the reply left out, appended in incoming order

    @property
    def unparseable(self) -> bool:
        return self.valid == 0


def _numbers(text: str, parser: str) -> list[int]:
    if parser == "brackets":
        return [int(m) for m in _BRACKETED.findall(text)]
    if parser != "digits":
        raise ValueError(f"unknown parser {parser!r}: 'digits' (the official code) or 'brackets'")
    # The official clean_response: every non-digit becomes a space. isdecimal() rather than isdigit():
    # the reference's isdigit() lets '²' through and then int('²') raises; here it is a separator.
    cleaned = "".join(c if c.isdecimal() else " " for c in text)
    return [int(x) for x in cleaned.split()]


def parse_permutation(text: str, num: int, *, zero_based: bool = False, parser: str = "digits") -> Parsed:
    """RankGPT's receive_permutation: numbers -> ids (minus 1 unless ``zero_based``), duplicates
    removed keeping the first, ids outside ``[0, num)`` dropped, the missing ids appended in their
    incoming order. The result is always a permutation of ``range(num)``."""
    offset = 0 if zero_based else 1
    seen: set[int] = set()
    order: list[int] = []
    duplicates = out_of_range = 0
    for n in _numbers(text or "", parser):
        i = n - offset
        if i in seen:
            duplicates += 1
            continue
        seen.add(i)
        if 0 <= i < num:
            order.append(i)
        else:
            out_of_range += 1
    valid = len(order)
    order += [i for i in range(num) if i not in seen]
    return Parsed(order, valid, duplicates, out_of_range, num - valid)


def windows(n: int, window: int = 20, step: int = 10) -> list[tuple[int, int]]:
    """The ``[start, end)`` windows of one pass over ``n`` items, back to front.

    The first window is ``[n - window, n)``; each next one moves up by ``step``; the last starts at 0
    (shorter when needed, so every position is covered). For 100/20/10: ``[80,100), [70,90), ...,
    [0,20)`` = 9 windows, as in the official code. The official loop (``while start >= 0``) gives the
    same windows whenever ``n >= window`` and ``(n - window) % step == 0``; otherwise it skips the
    top positions (or, for ``n < window``, every position), which rank_llm's loop (this one) does not.
    """
    if window < 1 or step < 1:
        raise ValueError(f"window and step must be >= 1 (got {window}, {step})")
    if n <= 0:
        return []
    out = []
    end, start = n, n - window
    while True:
        s = max(start, 0)
        out.append((s, end))
        if s == 0:
            return out
        end -= step
        start -= step
