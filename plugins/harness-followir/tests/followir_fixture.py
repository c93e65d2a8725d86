"""A tiny FollowIR collection in the layout of ``jhu-clsp/<x>-instructions-mteb`` (configs in the README
YAML, Parquet shards named as ``push_to_hub`` names them), and a reranker that returns fixed scores with
ties, for the tests.

Two topics, 310 and 311, each with an ``-og`` and a ``-changed`` query; pools of five documents.
The scores (``SCORES``) tie exactly where the two p-MRR tie rules part ways (worked out in
``test_followir.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness import Run
from harness.testing import parquet_bytes as _parquet

CARD = """---
configs:
- config_name: corpus
  data_files:
  - split: corpus
    path: corpus/corpus-*
- config_name: default
  data_files:
  - split: test
    path: data/default-*
- config_name: instruction
  data_files:
  - split: instruction
    path: instruction/instruction-*
- config_name: qrel_diff
  data_files:
  - split: qrel_diff
    path: qrel_diff/qrel_diff-*
- config_name: queries
  data_files:
  - split: queries
    path: queries/queries-*
- config_name: top_ranked
  data_files:
  - split: top_ranked
    path: top_ranked/top_ranked-*
dataset_info:
  features:
  - name: query-id
    dtype: string
---
# FollowIR fixture (test data)
"""

DOCS = {f"d{i}": (f"title {i}", f"text of document {i}") for i in range(1, 8)}
TOPICS = {"310": "radio waves and brain cancer", "311": "industrial espionage"}
INSTRUCTIONS = {
    "310-og": "Relevant documents discuss radio waves.",
    "310-changed": "Relevant documents discuss radio waves from cell phones only.",
    "311-og": "Relevant documents discuss espionage.",
    "311-changed": "Relevant documents discuss espionage between firms of one country only.",
}
POOLS = {"310": ["d1", "d2", "d3", "d4", "d5"], "311": ["d6", "d2", "d4", "d1", "d3"]}
QRELS = {  # float64 scores, as the jhu-clsp releases have them
    "310-og": {"d1": 1.0, "d3": 1.0, "d2": 0.0},
    "310-changed": {"d1": 1.0, "d3": 0.0, "d2": 0.0},
    "311-og": {"d6": 2.0, "d4": 1.0, "d1": 0.0},
    "311-changed": {"d6": 0.0, "d4": 0.0, "d1": 0.0},
}
QREL_DIFF = {"310": ["d3"], "311": ["d4", "d6"]}
#: what the reranker under test scores, per MTEB query id (ties on purpose)
SCORES = {
    "310-og": {"d1": 3.0, "d2": 2.0, "d3": 2.0, "d4": 1.0, "d5": 0.0},
    "310-changed": {"d1": 3.0, "d2": 1.0, "d3": 1.0, "d4": 1.0, "d5": 2.0},
    "311-og": {"d6": 5.0, "d2": 4.0, "d4": 3.0, "d1": 2.0, "d3": 1.0},
    "311-changed": {"d6": 1.0, "d2": 1.0, "d4": 1.0, "d1": 2.0, "d3": 0.0},
}

def repository() -> dict[str, bytes]:
    """The repository's files: path -> bytes."""
    shard = "-00000-of-00001.parquet"
    qids = list(INSTRUCTIONS)
    return {
        "README.md": CARD.encode(),
        f"corpus/corpus{shard}": _parquet([{"_id": d, "title": t, "text": x} for d, (t, x) in DOCS.items()]),
        f"queries/queries{shard}": _parquet([{"_id": q, "text": TOPICS[q.split("-")[0]]} for q in qids]),
        f"instruction/instruction{shard}": _parquet([{"query-id": q, "instruction": INSTRUCTIONS[q]} for q in qids]),
        f"data/default{shard}": _parquet([{"query-id": q, "corpus-id": d, "score": s}
                                          for q, docs in QRELS.items() for d, s in docs.items()]),
        f"qrel_diff/qrel_diff{shard}": _parquet([{"query-id": t, "corpus-ids": ds} for t, ds in QREL_DIFF.items()]),
        f"top_ranked/top_ranked{shard}": _parquet([{"query-id": q, "corpus-ids": POOLS[q.split("-")[0]]}
                                                   for q in qids]),
    }


class TableReranker:
    """Scores each candidate from :data:`SCORES` (the query found by its instruction), then sorts by
    score, stably: tied documents keep the order they came in (the pool's)."""

    def rerank(self, queries: Mapping[str, Any], run: Run, corpus: Mapping[str, Any]) -> Run:
        by_instruction = {v: k for k, v in INSTRUCTIONS.items()}
        out = {}
        for qid, q in queries.items():
            table = SCORES[by_instruction[q.instruction]]
            hits = [(d, table[d]) for d in run.doc_ids(qid)]
            out[qid] = sorted(hits, key=lambda x: -x[1])
        return Run(out)

    def config(self) -> dict[str, Any]:
        return {"scores": "fixed table (tests)"}
