"""RankGPT / rank_llm candidate lists with passage text.

Two layouts are read:

- RankGPT (``retrieve_results_*.json`` of ``castorini/rank_llm_data``): a list of
  ``{"query": str, "hits": [{"content", "qid", "docid", "rank", "score"}, ...]}``;
  ``qid`` may be a JSON integer.
- rank_llm requests: a list of ``{"query": {"text", "qid"}, "candidates": [{"docid", "score",
  "doc": {"contents" | "text" | "segment", "title"?}}, ...]}``.

Each entry gives a query, its candidate list (order and scores kept as given) and the passages,
which together form the corpus: a passage listed for several queries must have the same text (and
title) each time.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.concepts.document import Document
from harness.concepts.errors import DataError
from harness.concepts.query import Query
from harness.concepts.run import Run
from harness.formats.files import open_text

_DOC_TEXT_KEYS = ("contents", "content", "text", "segment", "body")


@dataclass
class RankLLMCandidates:
    queries: dict[str, Query]
    corpus: dict[str, Document]
    candidates: Run


def _id(value: Any, what: str, path: object, where: str) -> str:
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise DataError(f"{where}: {what} must be a non-empty string or an integer, got {value!r}", path)


def _score(value: Any, path: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise DataError(f"{where}: 'score' must be a number, got {value!r}", path)
    try:
        score = float(value)
    except OverflowError:  # an integer beyond the float range
        score = float("inf")
    if not math.isfinite(score):
        shown = repr(value) if isinstance(value, float) else f"{str(value)[:20]}... ({len(str(value))} digits)"
        raise DataError(f"{where}: 'score' must be a finite number, got {shown}", path)
    return score


def load_json(path: str | os.PathLike[str]) -> Any:
    """Parse a whole JSON file (gzip transparently); a syntax error names the line."""
    with open_text(path) as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as exc:
            raise DataError(f"invalid JSON: {exc.msg} (column {exc.colno})", path, exc.lineno) from exc
        except UnicodeDecodeError as exc:
            raise DataError(f"not valid UTF-8 ({exc.reason})", path) from exc
        except ValueError as exc:  # an integer of more than 4300 digits
            raise DataError(f"invalid JSON: {exc}", path) from exc
        except RecursionError:
            raise DataError("invalid JSON: nested too deeply", path) from None


def _hit_text(hit: dict[str, Any], path: object, where: str) -> tuple[str, str]:
    doc = hit.get("doc")
    source = doc if isinstance(doc, dict) else hit
    for key in _DOC_TEXT_KEYS:
        value = source.get(key)
        if isinstance(value, str):
            title = source.get("title")
            return value, title if isinstance(title, str) else ""
    raise DataError(f"{where}: no passage text (one of {', '.join(_DOC_TEXT_KEYS)})", path)


def read_rankllm(path: str | os.PathLike[str], name: str | None = None) -> RankLLMCandidates:
    """Read a candidate file; errors name the entry and hit (JSON syntax errors the line).

    The run (named ``name``, default the file name) keeps each list's order and scores; a hit
    without a score gets ``len(list) - position``. A query id appearing in two entries, a document
    twice in one list, a document whose text (or title) differs from its copy in an earlier list (the
    message names both hits), or a score that is not a finite number (``NaN``, ``Infinity``), is an error.
    """
    data = load_json(path)
    if not isinstance(data, list):
        raise DataError(f"expected a JSON list of {{query, hits}} entries, got {type(data).__name__}", path)
    queries: dict[str, Query] = {}
    corpus: dict[str, Document] = {}
    lists: dict[str, list[tuple[str, float]]] = {}
    origin: dict[str, str] = {}
    for i, entry in enumerate(data):
        where = f"entry {i}"
        if not isinstance(entry, dict):
            raise DataError(f"{where}: expected an object, got {type(entry).__name__}", path)
        hits = entry.get("hits", entry.get("candidates"))
        if not isinstance(hits, list):
            raise DataError(f"{where}: missing list 'hits' (or 'candidates')", path)
        qid, text = _entry_query(entry.get("query"), hits, path, where)
        if qid in queries:
            raise DataError(f"{where}: query {qid!r} already given by an earlier entry", path)
        queries[qid] = Query(id=qid, text=text)
        lists[qid] = _entry_hits(hits, corpus, origin, path, f"{where} (query {qid})")
    return RankLLMCandidates(queries, corpus, Run(lists, name=name or Path(path).name))


def _entry_query(raw_query: Any, hits: list[Any], path: object, where: str) -> tuple[str, str]:
    """The query id and text of an entry: ``query`` is a string or a rank_llm ``{text, qid}`` object;
    without a qid there, the hits must all carry the same one."""
    qid: str | None = None
    if isinstance(raw_query, dict):  # rank_llm request layout
        text = raw_query.get("text")
        if raw_query.get("qid") is not None:
            qid = _id(raw_query.get("qid"), "query 'qid'", path, where)
    else:
        text = raw_query
    if not isinstance(text, str):
        raise DataError(f"{where}: 'query' must be a string (or {{text, qid}}), got {text!r}", path)
    if qid is None:
        hit_qids = {_id(h.get("qid"), "'qid'", path, f"{where}, hit {j}")
                    for j, h in enumerate(hits) if isinstance(h, dict)}
        if len(hit_qids) != 1:
            raise DataError(
                f"{where}: cannot tell the query id: hits carry "
                + (f"several qids {sorted(hit_qids)}" if hit_qids else "no qid (empty list)"),
                path,
            )
        qid = hit_qids.pop()
    return qid, text


def _entry_hits(hits: list[Any], corpus: dict[str, Document], origin: dict[str, str], path: object,
                where: str) -> list[tuple[str, float]]:
    """The ranked (docid, score) list of an entry's hits, adding their documents to ``corpus`` (and
    where each was first given to ``origin``); a document whose text differs from its earlier copy is
    an error naming both hits."""
    ranked: list[tuple[str, float]] = []
    seen: set[str] = set()
    for j, hit in enumerate(hits):
        hwhere = f"{where}, hit {j}"
        if not isinstance(hit, dict):
            raise DataError(f"{hwhere}: expected an object, got {type(hit).__name__}", path)
        docid = _id(hit.get("docid"), "'docid'", path, hwhere)
        if docid in seen:
            raise DataError(f"{hwhere}: document {docid!r} listed twice for this query", path)
        seen.add(docid)
        content, title = _hit_text(hit, path, hwhere)
        doc = Document(id=docid, text=content, title=title)
        known = corpus.get(docid)
        if known is None:
            corpus[docid], origin[docid] = doc, hwhere
        elif known != doc:
            raise DataError(f"{hwhere}: document {docid!r} has another text or title than in {origin[docid]} "
                            "(which one holds is not for the harness to guess)", path)
        score = hit.get("score")
        ranked.append((docid, float(len(hits) - j) if score is None else _score(score, path, hwhere)))
    return ranked
