"""Judge outputs: (query id, doc id) -> score with details."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Judgment:
    """One judged (query, document) pair.

    ``score`` is None when the judgment failed (unparseable reply, refusal); ``details`` keeps the
    raw reply, probabilities and whether a fallback was used, so every number can be traced.
    """

    query_id: str
    doc_id: str
    score: float | None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.score is None


class Judgments(dict[tuple[str, str], Judgment]):
    """Judgments keyed by (query id, doc id)."""

    def add(self, j: Judgment) -> None:
        self[(j.query_id, j.doc_id)] = j

    def for_query(self, qid: str) -> list[Judgment]:
        return [j for (q, _), j in self.items() if q == qid]

    @property
    def n_failed(self) -> int:
        return sum(1 for j in self.values() if j.failed)
