"""Where NovelEval's published BM25 row (nDCG@1/5/10 33.33/45.96/55.77, RankGPT Table 3) comes from,
and why harness's own NovelEval figures differ (docs/data.md, "Reference figures")."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.api import score
from harness.concepts.run import Run
from harness.formats.noveleval import read_noveleval

METRICS = ["nDCG@1", "nDCG@5", "nDCG@10"]


def rounded(result) -> list[float]:
    return [round(100 * result.aggregate[m], 2) for m in METRICS]


def test_published_bm25_is_rank_bm25_over_each_querys_own_passages(data_dir: Path) -> None:
    """rank_bm25's BM25Okapi (k1=1.5, b=0.75, epsilon=0.25), the 20 passages of each query as the
    whole collection, text split on whitespace (case kept): exactly the published row."""
    from rank_bm25 import BM25Okapi

    ne = read_noveleval(data_dir / "noveleval")
    scores = {}
    for qid in ne.queries:
        docs = ne.candidates.doc_ids(qid)
        bm25 = BM25Okapi([ne.corpus[d].text.split() for d in docs])
        scores[qid] = dict(zip(docs, map(float, bm25.get_scores(ne.queries[qid].text.split())), strict=True))
    assert rounded(score(ne.qrels, Run.from_scores(scores), METRICS)) == [33.33, 45.96, 55.77]
    # the candidates in file order (the order the passages were collected in) are another system
    assert rounded(score(ne.qrels, ne.candidates, METRICS)) == [64.29, 58.24, 65.03]


@pytest.mark.parametrize("spec,expected", [(None, 0.6503), ("bm25", 0.6769)])
def test_what_harness_reports(data_dir: Path, spec: str | None, expected: float) -> None:
    from harness.api import evaluate
    from harness.context import Context

    res = evaluate("noveleval", retriever=spec, progress=False, context=Context.create(data_dir=data_dir))
    assert round(res.metrics["nDCG@10"], 4) == expected
