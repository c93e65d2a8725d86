"""Relevance judgments: query id -> document id -> grade (int or float)."""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator, Mapping

from harness.concepts.errors import DataError

#: the grade range every reader accepts and every pytrec_eval computation is given (TREC uses -2 to 4,
#: MTEB's datasets 0 to 3, DORIS-MAE fractions under 2); beyond it trec_eval sizes its work by the grade
MIN_GRADE = -100
MAX_GRADE = 100
RANGE = f"in the grade range {MIN_GRADE} to {MAX_GRADE}"


def grade_problem(grade: object) -> str:
    """What ``grade`` must be and is not, as a relevance grade (``""`` when nothing is wrong): a number
    (a boolean is not one), finite, from :data:`MIN_GRADE` to :data:`MAX_GRADE`."""
    if isinstance(grade, bool) or not isinstance(grade, numbers.Real):
        return "a number"
    if isinstance(grade, numbers.Integral):
        ok = MIN_GRADE <= int(grade) <= MAX_GRADE
    else:
        value = float(grade)
        if not math.isfinite(value):
            return "a finite number"
        ok = MIN_GRADE <= value <= MAX_GRADE
    return "" if ok else RANGE


def shown_value(value: object) -> str:
    """``repr`` of a value for a message, a long one cut (``'12345678901234567890...' (400 characters)``);
    never converts a huge integer to text (Python refuses beyond 4,300 digits)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"<an integer of about {int(value.bit_length() * 0.30103) + 1:,} digits>"
    text = value if isinstance(value, str) else str(value)
    return repr(value) if len(text) <= 24 else f"{text[:20]!r}... ({len(text):,} characters)"


class Qrels(Mapping[str, dict[str, float]]):
    """Graded relevance. Grades may be integers (TREC) or fractions (DORIS-MAE)."""

    def __init__(self, data: Mapping[str, Mapping[str, float]] | None = None):
        self._data: dict[str, dict[str, float]] = {q: dict(d) for q, d in (data or {}).items()}
        self._int_dict: dict[str, dict[str, int]] | None = None

    def __getitem__(self, qid: str) -> dict[str, float]:
        return self._data[qid]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def add(self, qid: str, docid: str, grade: float) -> None:
        self._data.setdefault(qid, {})[docid] = grade
        self._int_dict = None

    @property
    def is_integer(self) -> bool:
        """True when every grade is a whole number (what trec_eval accepts)."""
        if self._int_dict is None:
            if not all(type(g) is int or float(g).is_integer() for d in self._data.values() for g in d.values()):
                return False
            self.as_int_dict()
        return True

    def as_int_dict(self) -> dict[str, dict[str, int]]:
        """``{qid: {docid: int grade}}`` as pytrec_eval takes it (computed once); a grade outside the
        range (:func:`grade_problem`) raises :class:`DataError` first, so pytrec_eval never sees it."""
        if self._int_dict is None:
            self.check_grades()
            if all(type(g) is int for d in self._data.values() for g in d.values()):
                self._int_dict = self._data  # type: ignore[assignment]
            else:
                self._int_dict = {q: {d: int(g) for d, g in docs.items()} for q, docs in self._data.items()}
        return self._int_dict

    def check_grades(self) -> None:
        """:class:`DataError` naming the first judgment whose grade is not a finite number in range."""
        for qid, docs in self._data.items():
            for docid, grade in docs.items():
                problem = grade_problem(grade)
                if problem:
                    raise DataError(f"qrels: query {qid!r}, document {docid!r}: the grade must be {problem}, "
                                    f"got {shown_value(grade)}")

    def relevant(self, qid: str, min_grade: float = 1) -> set[str]:
        return {d for d, g in self._data.get(qid, {}).items() if g >= min_grade}

    def n_judgments(self) -> int:
        return sum(len(d) for d in self._data.values())

    def restrict(self, qids: set[str]) -> Qrels:
        return Qrels({q: d for q, d in self._data.items() if q in qids})
