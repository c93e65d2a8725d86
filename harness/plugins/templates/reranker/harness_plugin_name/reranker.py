"""The reranker: re-orders each query's candidates by the share of the query's words a document
contains; equal shares keep the incoming order. Replace the scoring with yours."""

from __future__ import annotations

import re
from collections.abc import Mapping

from harness import Document, Query, Run

TOKEN = re.compile(r"\w+")


def words(text: str) -> set[str]:
    return set(TOKEN.findall(text.lower()))


class OverlapReranker:
    """Reranker protocol: `rerank(queries, run, corpus)` -> Run with strictly decreasing scores.

    `queries[qid].text` is the query as the task formed it (query and instruction); the raw query
    is `queries[qid].meta["query"]` and the instruction `queries[qid].instruction`."""

    def __init__(self, depth: int = 100):
        self.depth = int(depth)

    def rerank(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Run:
        order = {}
        for qid in run:
            ids = run.doc_ids(qid)
            head, tail = ids[: self.depth], ids[self.depth :]
            query = words(queries[qid].text) if qid in queries else set()
            share = {d: self.share(query, corpus.get(d)) for d in head}
            # sorted() is stable: equal shares keep the first stage's order; the tail stays below
            order[qid] = sorted(head, key=share.__getitem__, reverse=True) + tail
        return Run.from_order(order)  # scores n, n-1, ..., 1: strictly decreasing

    @staticmethod
    def share(query: set[str], doc: Document | None) -> float:
        """The share of the query's words in the document (0 for a document not in the corpus)."""
        return len(query & words(doc.full_text())) / len(query) if doc is not None and query else 0.0

    def config(self) -> dict:
        return {"depth": self.depth}
