"""PyTerrier's data frames and the harness's objects, both ways (pandas, imported on use).

PyTerrier passes rankings between transformers as a ``pandas.DataFrame`` with one row per (query,
document): ``qid`` and ``docno`` (strings), ``query`` (the query text the transformer uses), ``text``
(the document's text, e.g. from ``pt.text.get_text``), ``score`` and ``rank`` (from 0, as
``pt.model.add_ranks`` numbers it: score descending, ties in row order); other columns travel along.

- :func:`frame_from_ranking`: queries, a run and a corpus as such a frame (the harness's side of
  ``--reranker pyterrier:MODULE:OBJECT``): ``query`` is the task-formed text (:attr:`Query.text`),
  ``text`` the document's text and ``title`` its title (a column only when some document has one);
- :func:`ranking_from_frame`: the queries, the run and the corpus a frame holds (the PyTerrier side
  of ``harness.pyterrier.Reranker``); each query's documents in the frame's ranking: by ``rank`` when
  the frame has it, else by ``score`` descending (ties in row order), else in row order;
- :func:`run_from_frame`: only the run (what a PyTerrier transformer returned);
- :func:`frame_with_ranking`: the input frame re-ranked: its rows (every column kept) in the run's
  order, ``score`` the run's, ``rank`` from 0; rows the run does not hold are left out.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.query import DEFAULT_QUERY_FORMAT, Query, format_query
from harness.concepts.run import Run

FIRST_RANK = 0  # pt.model.FIRST_RANK: "the first rank SHOULD be 0" (TREC)
REQUIRED = ("qid", "docno")


def _pandas() -> Any:
    import pandas as pd  # lazy: pandas only when frames are made or read

    return pd


def frame_from_ranking(queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Any:
    """``run`` as PyTerrier's result frame: qid, query, docno, text, [title,] score, rank (from 0)."""
    rows = []
    titled = any(corpus[d].title for q in run for d in run.doc_ids(q) if d in corpus)
    for qid in run:
        query = queries[qid].text if qid in queries else ""
        for rank, (docno, score) in enumerate(run[qid], FIRST_RANK):
            doc = corpus.get(docno)
            row = {"qid": qid, "query": query, "docno": docno, "text": doc.text if doc else ""}
            if titled:
                row["title"] = doc.title if doc else ""
            rows.append({**row, "score": float(score), "rank": rank})
    columns = ["qid", "query", "docno", "text", *(["title"] if titled else []), "score", "rank"]
    return _pandas().DataFrame(rows, columns=columns)


def _check_frame(frame: Any, what: str, needed: tuple[str, ...] = REQUIRED) -> None:
    pd = _pandas()
    if not isinstance(frame, pd.DataFrame):
        raise HarnessError(f"{what} is a {type(frame).__name__}, not a pandas DataFrame (PyTerrier's frames)")
    lacking = [c for c in needed if c not in frame.columns]
    if lacking:
        raise HarnessError(f"{what} lacks the column(s) {', '.join(lacking)} (it has: "
                           f"{', '.join(map(str, frame.columns)) or 'none'})")


def _ordered(frame: Any) -> list[tuple[str, list[tuple[int, str, float | None]]]]:
    """Per query (in order of first appearance): (row position, docno, score) in the frame's ranking."""
    by_query: dict[str, list[tuple[int, str, float | None]]] = {}
    scores = frame["score"].tolist() if "score" in frame.columns else [None] * len(frame)
    ranks = frame["rank"].tolist() if "rank" in frame.columns else None
    for i, (qid, docno, score) in enumerate(zip(frame["qid"].tolist(), frame["docno"].tolist(), scores, strict=True)):
        if score is not None and not (isinstance(score, numbers.Real) and math.isfinite(score)):
            raise HarnessError(f"row {i}: score {score!r} of document {docno!r} is not a finite number")
        by_query.setdefault(str(qid), []).append((i, str(docno), None if score is None else float(score)))
    for hits in by_query.values():
        if ranks is not None:
            hits.sort(key=lambda h: (ranks[h[0]], h[0]))
        elif "score" in frame.columns:
            hits.sort(key=lambda h: (-(h[2] or 0.0), h[0]))  # pt.model.add_ranks: score descending, ties in row order
    return list(by_query.items())


def run_from_frame(frame: Any, name: str = "pyterrier", what: str = "the frame") -> Run:
    """The ranking a frame holds (see the module docstring); scores as given (their order otherwise)."""
    _check_frame(frame, what)
    out = {}
    for qid, hits in _ordered(frame):
        n = len(hits)
        out[qid] = [(docno, score if score is not None else float(n - j)) for j, (_, docno, score) in enumerate(hits)]
    return Run(out, name=name)


def ranking_from_frame(frame: Any, query_format: str = DEFAULT_QUERY_FORMAT, what: str = "the frame"
                       ) -> tuple[dict[str, Query], Run, dict[str, Document]]:
    """The queries (text formed by ``query_format`` from ``query`` and an ``instruction`` column, the raw
    text in ``meta["query"]``), the run and the corpus (``text``, ``title``) of a PyTerrier frame."""
    _check_frame(frame, what, (*REQUIRED, "query", "text"))
    cols = set(frame.columns)
    queries: dict[str, Query] = {}
    corpus: dict[str, Document] = {}
    records = frame.to_dict(orient="records")
    for row in records:
        qid, docno = str(row["qid"]), str(row["docno"])
        if qid not in queries:
            raw = Query(qid, _text(row["query"]), _text(row.get("instruction")) if "instruction" in cols else "")
            queries[qid] = Query(qid, format_query(raw, query_format), raw.instruction, {"query": raw.text})
        title = _text(row.get("title")) if "title" in cols else ""
        corpus.setdefault(docno, Document(docno, _text(row["text"]), title))
    return queries, run_from_frame(frame, what=what), corpus


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    return value if isinstance(value, str) else str(value)


def frame_with_ranking(frame: Any, run: Run) -> Any:
    """``frame``'s rows re-ranked by ``run``: every column kept, ``score`` and ``rank`` (from 0) the run's,
    rows ordered by query (as they first appear) and rank."""
    pd = _pandas()
    position = {(str(q), str(d)): i for i, (q, d) in enumerate(zip(frame["qid"], frame["docno"], strict=True))}
    picked, scores, ranks = [], [], []
    for qid in dict.fromkeys(str(q) for q in frame["qid"]):
        for rank, (docno, score) in enumerate(run[qid] if qid in run else [], FIRST_RANK):
            if (qid, docno) in position:
                picked.append(position[qid, docno])
                scores.append(float(score))
                ranks.append(rank)
    out = frame.iloc[picked].copy() if picked else frame.iloc[0:0].copy()
    out["score"] = pd.Series(scores, index=out.index, dtype="float64")
    out["rank"] = pd.Series(ranks, index=out.index, dtype="int64")
    return out.reset_index(drop=True)
