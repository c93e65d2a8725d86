"""The files ``harness view`` reads beside a run's results, written by :func:`evaluate` with them:

- ``queries.jsonl``: each evaluated query's text and instruction per mode (``mode``, ``query_id``,
  ``text``, ``instruction``);
- ``qrels.jsonl``: the gold grades of those queries (``mode``, ``query_id``, ``doc_id``, ``grade``);
- ``llm_calls.jsonl``: the LLM calls made for each query (``query_id``, ``component``, ``key``: the
  reply cache's key, ``cached``, ``error``, ``cache``: the cache folder), when a component made its
  calls per query (:meth:`harness.llm.client.Client.run_sequences`). Prompts and replies stay in the
  cache; the view looks them up by key."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

#: the files written (also checked as writable before the run, with the results' own)
VIEW_FILES = ("queries.jsonl", "qrels.jsonl", "llm_calls.jsonl")


def _write(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")


def write_view_files(output: str | Path, ds: Any, runs: Mapping[str, Any], clients: Iterable[Any]) -> None:
    out = Path(output)
    qids = {m: set(r) for m, r in runs.items()}
    _write(out / "queries.jsonl", ({"mode": m, "query_id": q.id, "text": q.text, "instruction": q.instruction}
                                   for m in ds.modes for q in ds.queries.get(m, {}).values()
                                   if q.id in qids.get(m, ())))
    _write(out / "qrels.jsonl", ({"mode": m, "query_id": q, "doc_id": d, "grade": g}
                                 for m in ds.modes for q, docs in (ds.qrels.get(m) or {}).items()
                                 if q in qids.get(m, ()) for d, g in docs.items()))
    calls = [{**row, "component": c.label, "cache": str(c.cache.path) if c.cache is not None else None}
             for c in clients for row in getattr(c, "call_log", [])
             if any(row["query_id"] in q for q in qids.values())]  # a client shared by a suite's members
    if calls:
        _write(out / "llm_calls.jsonl", calls)
    elif (out / "llm_calls.jsonl").is_file():  # an --overwrite of a run that made calls
        (out / "llm_calls.jsonl").unlink()
