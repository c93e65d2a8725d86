"""The dataset's own candidate lists as the first stage (the re-ranking setting)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.concepts.errors import HarnessError
from harness.concepts.run import Run


class CandidatesRetriever:
    """Returns the candidates the dataset gives for each query (BM25 top-100 for TREC DL, the
    20 passages of NovelEval), cut to ``k``. A :class:`harness.concepts.protocols.CandidateRetriever`:
    the pipeline hands it the mode's candidates and never indexes the corpus."""

    def __init__(self) -> None:
        self._candidates: Run | None = None

    def set_candidates(self, candidates: Run | None) -> None:
        self._candidates = candidates

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        if self._candidates is None:
            raise HarnessError(
                "this dataset gives no candidate lists; choose a first-stage retriever "
                "(e.g. --retriever bm25 or --retriever dense)"
            )
        cand = self._candidates
        return Run({q: cand[q][:k] if q in cand else [] for q in queries}, name=cand.name)

    def config(self) -> dict[str, Any]:
        return {"source": "dataset candidates"}
