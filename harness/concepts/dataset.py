"""A dataset: a corpus, and per mode a query set, qrels and optional candidate lists."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from harness.concepts.document import Document
from harness.concepts.errors import DataError
from harness.concepts.qrels import Qrels
from harness.concepts.query import Query
from harness.concepts.run import Run

DEFAULT_MODE = "default"


@dataclass
class Dataset:
    """Everything one evaluation reads.

    Benchmarks that compare behaviour across instruction modes (InfoSearch's og / changed /
    reversed, IFIR's query-only vs query+instruction) give one entry per mode in ``queries``,
    ``qrels`` and, for the re-ranking setting, ``candidates``; the same query ids recur across modes.
    A plain dataset has the single mode ``"default"``.

    ``identity`` records where the data came from (files with sha256 and size) so a result can be
    traced to the exact bytes it was computed on.

    ``excluded``: query id -> document ids that must never be ranked for that query, in any mode
    (BRIGHT's ``excluded_ids``). The pipeline drops them from every stage's run, after the first
    stage has retrieved deep enough that ``depth`` documents remain (as if every document were scored,
    the excluded ones removed, and the top ``depth`` kept), and again after each reranker.
    """

    name: str
    corpus: dict[str, Document]
    queries: dict[str, dict[str, Query]]
    qrels: dict[str, Qrels]
    candidates: dict[str, Run] | None = None
    identity: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    excluded: dict[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def single(
        cls,
        name: str,
        corpus: Mapping[str, Document],
        queries: Mapping[str, Query],
        qrels: Qrels,
        candidates: Run | None = None,
        identity: dict[str, Any] | None = None,
    ) -> Dataset:
        return cls(
            name=name,
            corpus=dict(corpus),
            queries={DEFAULT_MODE: dict(queries)},
            qrels={DEFAULT_MODE: qrels},
            candidates={DEFAULT_MODE: candidates} if candidates is not None else None,
            identity=identity or {},
        )

    @property
    def modes(self) -> list[str]:
        return list(self.queries)

    @property
    def carries_candidates(self) -> bool:
        """Whether the data gives candidate lists (``top_ranked``, a pool, a run of candidates) for some
        query: the task as its data defines it ranks those, and a plain ``--dataset`` ranks them by default."""
        return any(hits for run in (self.candidates or {}).values() for hits in run.values())

    def validate(self) -> dict[str, int]:
        """Check consistency; return counts of references to unknown ids (reported, never dropped
        silently). Raises :class:`DataError` for an empty query set."""
        counts: dict[str, int] = {}
        for mode, qs in self.queries.items():
            if not qs:
                raise DataError(f"dataset {self.name!r} has no queries in mode {mode!r}")
            qrels = self.qrels.get(mode, Qrels())
            counts[f"{mode}:qrels_unknown_queries"] = sum(1 for q in qrels if q not in qs)
            if self.corpus:
                counts[f"{mode}:qrels_unknown_docs"] = sum(
                    1 for d in qrels.values() for doc in d if doc not in self.corpus
                )
            if self.candidates and mode in self.candidates:
                cand = self.candidates[mode]
                counts[f"{mode}:candidates_unknown_queries"] = sum(1 for q in cand if q not in qs)
                if self.corpus:
                    counts[f"{mode}:candidates_unknown_docs"] = sum(
                        1 for hits in cand.values() for d, _ in hits if d not in self.corpus
                    )
        return {k: v for k, v in counts.items() if v}

    def limit(self, n: int) -> Dataset:
        """The first ``n`` queries of each mode (same ids across modes), for quick runs."""
        first = self.modes[0]
        keep = list(self.queries[first])[:n]
        keep_set = set(keep)
        return Dataset(
            name=self.name,
            corpus=self.corpus,
            queries={m: {q: qs[q] for q in keep if q in qs} for m, qs in self.queries.items()},
            qrels={m: r.restrict(keep_set) for m, r in self.qrels.items()},
            candidates=(
                {m: Run({q: c[q] for q in keep if q in c}, c.name) for m, c in self.candidates.items()}
                if self.candidates
                else None
            ),
            identity={**self.identity, "limit": n},
            meta=self.meta,
            excluded={q: ex for q, ex in self.excluded.items() if q in keep_set},
        )
