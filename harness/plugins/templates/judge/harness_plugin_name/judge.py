"""The judge: grades each (query, document) pair of a run 0-3 by the share of the query's words
the document contains (0: none ... 3: all). No model, no network: a baseline, and the shape
every judge has.

Judging with an LLM instead: send a prompt per pair through the harness LLM layer (`harness.llm`,
see docs/llm.md in the harness repository), never an SDK directly: it brings the disk cache (a warm
rerun sends nothing), retries, the concurrency bound, cost in results.json and `--dry-run`. Record
the prompt's hash in `config()`, and give a failed call `score=None` (it is counted, not hidden).
The `instfol` judge of the harness-ifir plugin is a complete example.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from harness import Document, Judgment, Judgments, Query, Run

TOKEN = re.compile(r"\w+")
MAX_GRADE = 3


def words(text: str) -> set[str]:
    return set(TOKEN.findall(text.lower()))


class OverlapJudge:
    """Judge protocol: `judge(queries, run, corpus)` -> Judgments, one per judged pair."""

    def __init__(self, depth: int = 10):
        self.depth = int(depth)

    def grade(self, query: str, document: str) -> tuple[int, float]:
        q = words(query)
        share = len(q & words(document)) / len(q) if q else 0.0
        return round(MAX_GRADE * share), share

    def judge(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Judgments:
        out = Judgments()
        for qid in run:
            for doc_id in run.doc_ids(qid)[: self.depth]:
                if qid not in queries or doc_id not in corpus:
                    out.add(Judgment(qid, doc_id, None, {"error": "unknown query or document"}))
                    continue
                grade, share = self.grade(queries[qid].text, corpus[doc_id].full_text())
                out.add(Judgment(qid, doc_id, float(grade), {"overlap": round(share, 4)}))
        return out

    def config(self) -> dict:
        return {"depth": self.depth, "scale": f"0-{MAX_GRADE}"}
