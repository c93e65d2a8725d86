"""Relevance judgments: query id -> document id -> grade (int or float)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping


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
        """``{qid: {docid: int grade}}`` as pytrec_eval takes it (computed once)."""
        if self._int_dict is None:
            if all(type(g) is int for d in self._data.values() for g in d.values()):
                self._int_dict = self._data  # type: ignore[assignment]
            else:
                self._int_dict = {q: {d: int(g) for d, g in docs.items()} for q, docs in self._data.items()}
        return self._int_dict

    def relevant(self, qid: str, min_grade: float = 1) -> set[str]:
        return {d for d, g in self._data.get(qid, {}).items() if g >= min_grade}

    def n_judgments(self) -> int:
        return sum(len(d) for d in self._data.values())

    def restrict(self, qids: set[str]) -> Qrels:
        return Qrels({q: d for q, d in self._data.items() if q in qids})
