"""The retriever: scores each document by how many distinct query words it contains. Replace the
scoring with yours (and the class name with what it does); keep `index`, `search` and `config`."""

from __future__ import annotations

import re
from collections.abc import Mapping

from harness import Document, Run

TOKEN = re.compile(r"\w+")


def tokenize(text: str, lowercase: bool = True) -> list[str]:
    return TOKEN.findall(text.lower() if lowercase else text)


class OverlapRetriever:
    """Retriever protocol: `index(corpus)` once, then `search(queries, k)` -> Run."""

    def __init__(self, lowercase: bool = True):
        self.lowercase = bool(lowercase)
        self.doc_words: dict[str, set[str]] = {}

    def index(self, corpus: Mapping[str, Document]) -> None:
        self.doc_words = {doc_id: set(tokenize(doc.full_text(), self.lowercase)) for doc_id, doc in corpus.items()}

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        scores = {}
        for qid, text in queries.items():
            words = set(tokenize(text, self.lowercase))
            hits = {d: float(len(words & dw)) for d, dw in self.doc_words.items()}
            scores[qid] = {d: s for d, s in hits.items() if s > 0}
        return Run.from_scores(scores).top(k)  # sorted as trec_eval sorts: score, then doc id

    def config(self) -> dict:
        return {"lowercase": self.lowercase}
