"""A ranking per query: query id -> ordered (doc id, score) pairs, best first."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any


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
        self._given: dict[str, dict[str, float]] | None = None  # scores before with_strict_scores
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

    def without(self, excluded: Mapping[str, Collection[str]]) -> Run:
        """The same rankings with each query's ``excluded[qid]`` documents dropped (BRIGHT's
        ``excluded_ids``); the others keep their order and scores (given scores too)."""
        if not excluded:
            return self

        def drop(data: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
            return {q: {d: s for d, s in h.items() if d not in ex} if (ex := excluded.get(q)) else h
                    for q, h in data.items()}

        run = Run._wrap(drop(self._data), self.name)
        run._given = None if self._given is None else drop(self._given)
        return run

    def with_strict_scores(self) -> Run:
        """Same order, with strictly decreasing scores (:func:`strictly_decreasing`, the one rule),
        so no tie-break can reorder it: trec_eval sorts by score, so a reranker's order survives
        scoring only this way."""
        out: dict[str, dict[str, float]] = {}
        for q, h in self._data.items():
            out[q] = dict(zip(h, strictly_decreasing(list(h.values())), strict=True))
        run = Run._wrap(out, self.name)
        run._given = self.given_scores()
        return run

    def given_scores(self) -> dict[str, dict[str, float]]:
        """``{qid: {docid: score}}`` as the component scored it, ties included, in the run's order:
        the scores before :meth:`with_strict_scores` lowered tied ones (the stored scores when none
        were). Metrics that define their own tie rule (FollowIR's p-MRR) read these."""
        return self._given if self._given is not None else self._data

    def is_strictly_decreasing(self) -> bool:
        """True when every list's scores decrease strictly as trec_eval keeps them (32-bit floats)."""
        import numpy as np

        return all(_decreasing32(np.asarray(list(h.values()), dtype=np.float32)) for h in self._data.values())


def strictly_decreasing(scores: Sequence[float]) -> list[float]:
    """The one rule for strictly decreasing scores, as trec_eval sees them: it keeps a score as a
    32-bit float, so two scores equal in 32 bits are a tie it breaks by document id, not by our
    order. A list that already decreases strictly in 32 bits is kept as it is; otherwise each score
    is taken to 32 bits and one that does not fall below its predecessor is lowered to the next
    32-bit float under it (a similarity stays about the same similarity, the ranking is unchanged)."""
    import numpy as np

    f32 = np.asarray(scores, dtype=np.float64).astype(np.float32)
    if _decreasing32(f32):
        return [float(x) for x in scores]
    out = f32.copy()
    for i in range(1, len(out)):
        if not out[i] < out[i - 1]:
            out[i] = np.nextafter(out[i - 1], np.float32(-np.inf), dtype=np.float32)
    return [float(x) for x in out]


def _decreasing32(f32: Any) -> bool:
    return bool((f32[1:] < f32[:-1]).all()) if len(f32) > 1 else True
