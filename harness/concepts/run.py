"""A ranking per query: query id -> ordered (doc id, score) pairs, best first."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence


class Run(Mapping[str, list[tuple[str, float]]]):
    """Ranked lists. Order is the ranking; scores are kept for metrics that compare them.

    Stored as one insertion-ordered ``{docid: score}`` dict per query, which is both the ranking
    and the form pytrec_eval takes, so scoring needs no conversion. ``name`` is the TREC run tag.
    """

    def __init__(
        self,
        data: Mapping[str, Iterable[tuple[str, float]]] | None = None,
        name: str = "harness",
    ):
        self.name = name
        self._data: dict[str, dict[str, float]] = {}
        for q, hits in (data or {}).items():
            self[q] = hits

    @classmethod
    def _wrap(cls, data: dict[str, dict[str, float]], name: str = "harness") -> Run:
        run = cls(name=name)
        run._data = data
        return run

    def __getitem__(self, qid: str) -> list[tuple[str, float]]:
        return list(self._data[qid].items())

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, qid: object) -> bool:
        return qid in self._data

    def __setitem__(self, qid: str, hits: Iterable[tuple[str, float]]) -> None:
        ranking: dict[str, float] = {}
        for d, s in hits:
            ranking.setdefault(str(d), float(s))  # a repeated doc keeps its first (best) rank
        self._data[qid] = ranking

    @classmethod
    def from_scores(cls, scores: Mapping[str, Mapping[str, float]], name: str = "harness") -> Run:
        """Build from unordered scores, sorting as trec_eval does: score desc, then doc id desc."""
        return cls._wrap(
            {q: dict(sorted(((str(k), float(v)) for k, v in d.items()), key=lambda x: (x[1], x[0]), reverse=True))
             for q, d in scores.items()},
            name,
        )

    @classmethod
    def from_order(cls, order: Mapping[str, Sequence[str]], name: str = "harness") -> Run:
        """Build from doc ids in ranked order, with strictly decreasing scores n, n-1, ..., 1."""
        return cls({q: [(d, float(len(ds) - i)) for i, d in enumerate(ds)] for q, ds in order.items()}, name)

    def doc_ids(self, qid: str) -> list[str]:
        return list(self._data.get(qid, ()))

    def scores(self, qid: str) -> dict[str, float]:
        """``{docid: score}`` of one query, in rank order (read-only view of the stored dict)."""
        return self._data.get(qid, {})

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {docid: score}}`` as pytrec_eval takes it (the stored dicts; do not modify)."""
        return self._data

    def top(self, k: int) -> Run:
        return Run._wrap({q: dict(list(h.items())[:k]) for q, h in self._data.items()}, self.name)

    def with_strict_scores(self) -> Run:
        """Same order, scores rewritten to be strictly decreasing so no tie-break can reorder it.

        Lists whose scores already decrease strictly are kept as they are; others get n, n-1, ..., 1.
        trec_eval sorts by score, so a reranker's order survives scoring only this way.
        """
        out: dict[str, dict[str, float]] = {}
        for q, h in self._data.items():
            vals = list(h.values())
            if all(a > b for a, b in zip(vals, vals[1:])):
                out[q] = h
            else:
                out[q] = {d: float(len(h) - i) for i, d in enumerate(h)}
        return Run._wrap(out, self.name)

    def is_strictly_decreasing(self) -> bool:
        for h in self._data.values():
            vals = list(h.values())
            if any(a <= b for a, b in zip(vals, vals[1:])):
                return False
        return True
