"""Non-LLM rerankers: BIRCO's random-order baseline and a ranking file in BIRCO's submission format."""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from harness import ComponentContext, Context, DataError, Document, Query, Run


class RandomOrder:
    """Shuffles each query's list, deterministically per (seed, query id)."""

    def __init__(self, seed: int = 42):
        self.seed = int(seed)

    def rerank(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Run:
        order = {}
        for q in run:
            docs = run.doc_ids(q)
            random.Random(f"{self.seed}:{q}").shuffle(docs)
            order[q] = docs
        return Run.from_order(order, run.name)

    def config(self) -> dict[str, Any]:
        return {"method": "random order", "seed": self.seed}


class RankFile:
    """Replaces each query's list by the ranking in a BIRCO rank pickle (``{qid: [cid, ...]}``, read with
    the restricted unpickler). Queries of the run missing from the file are an error; the metrics check
    that each ranking is a permutation of the pool."""

    def __init__(self, path: str, context: ComponentContext | None = None):
        from .data import read_ranks

        data = Context.of(context).data
        self.path = data.resolve(path)
        self.ranks = read_ranks(self.path)
        self.identity = data.file_identity(self.path)

    def rerank(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Run:
        missing = [q for q in run if q not in self.ranks]
        if missing:
            raise DataError(f"{len(missing)} queries have no ranking (e.g. {missing[:3]})", self.path)
        return Run.from_order({q: self.ranks[q] for q in run}, "ranks")

    def config(self) -> dict[str, Any]:
        return {"method": "rank file", "file": self.identity}
