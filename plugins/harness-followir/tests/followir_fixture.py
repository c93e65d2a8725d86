"""A tiny FollowIR collection in both release layouts: ``jhu-clsp/<x>-instructions-mteb`` (configs in the
README YAML, Parquet shards named as ``push_to_hub`` names them; :func:`repository`) and the original
``jhu-clsp/<x>-instructions`` that mteb 1.x read (JSON Lines; :func:`original_repository`), and a reranker
that returns fixed scores with ties, for the tests.

Two topics, 310 and 311, each with an ``-og`` and a ``-changed`` query; pools of five documents.
The scores (``SCORES``) tie exactly where the two p-MRR tie rules part ways (worked out in
``test_followir.py``).
"""

from __future__ import annotations

import json
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


ORIGINAL_REPO = "jhu-clsp/core17-instructions"
#: the commit mteb 1.x's Core17InstructionRetrieval names (tags 1.7.27 to 1.39.7)
ORIGINAL_COMMIT = "e39ff896cf3efbbdeeb950e6bd7c79f266995b07"
#: the files the harness reads, in the order a release lists them
ORIGINAL_READ = ("corpus.jsonl", "queries.jsonl", "qrels_og/test.jsonl", "qrels_changed/test.jsonl", "top_ranked.jsonl")
#: the files the Hub's tree shows stored through LFS/xet in jhu-clsp/core17-instructions
ORIGINAL_LFS = ("corpus.jsonl", "queries.jsonl", "top_ranked.jsonl")
#: the card, as copies of jhu-clsp/core17-instructions' README show it (its bytes could not be verified);
#: the counts are the fixture's
ORIGINAL_CARD = """---
language:
- en
multilinguality:
- monolingual
task_categories:
- text-retrieval
source_datasets:
- core2017
task_ids:
- document-retrieval
config_names:
- corpus
tags:
- text-retrieval
- instruction-retrieval
dataset_info:
- config_name: top_ranked
  features:
  - name: qid
    dtype: string
  - name: pid
    dtype: string
  splits:
  - name: top_ranked
    num_examples: 10
- config_name: qrels_og
  features:
  - name: query-id
    dtype: string
  - name: corpus-id
    dtype: string
  - name: score
    dtype: float64
  splits:
  - name: test
    num_examples: 6
- config_name: qrels_changed
  features:
  - name: query-id
    dtype: string
  - name: corpus-id
    dtype: string
  - name: score
    dtype: float64
  splits:
  - name: test
    num_examples: 6
- config_name: corpus
  features:
  - name: _id
    dtype: string
  - name: title
    dtype: string
  - name: text
    dtype: string
  splits:
  - name: corpus
    num_examples: 7
- config_name: queries
  features:
  - name: _id
    dtype: string
  - name: text
    dtype: string
  - name: instruction_og
    dtype: string
  - name: instruction_changed
    dtype: string
  - name: keywords
    dtype: string
  - name: short_query
    dtype: string
  splits:
  - name: queries
    num_examples: 2
configs:
- config_name: qrels_og
  data_files:
  - split: test
    path: qrels_og/test.jsonl
- config_name: qrels_changed
  data_files:
  - split: test
    path: qrels_changed/test.jsonl
- config_name: corpus
  data_files:
  - split: corpus
    path: corpus.jsonl
- config_name: queries
  data_files:
  - split: queries
    path: queries.jsonl
- config_name: top_ranked
  data_files:
  - split: top_ranked
    path: top_ranked.jsonl
---
"""


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    """Records as pandas' ``to_json(orient="records", lines=True)`` writes them."""
    return "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows).encode()


def _tsv(qrels: Mapping[str, Mapping[str, float]]) -> bytes:
    rows = [f"{q}\t{d}\t{int(s)}" for q, docs in qrels.items() for d, s in docs.items()]
    return ("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n").encode()


def original_repository() -> dict[str, bytes]:
    """The same collection in the original layout (``jhu-clsp/core17-instructions`` at
    :data:`ORIGINAL_COMMIT`): bare topic ids, integer topic ids in the qrels JSON Lines (as the release's
    copies have them), float grades, one ``top_ranked`` row per pooled document, and the files the harness
    does not read (the TSV copies of the qrels, ``empty_scores.json``, the card, ``.gitattributes``)."""
    og = {q.split("-")[0]: docs for q, docs in QRELS.items() if q.endswith("-og")}
    changed = {q.split("-")[0]: docs for q, docs in QRELS.items() if q.endswith("-changed")}

    def qrels(table: Mapping[str, Mapping[str, float]]) -> bytes:
        return _jsonl([{"query-id": int(t), "corpus-id": d, "score": float(s)} for t, docs in table.items()
                       for d, s in docs.items()])

    return {
        ".gitattributes": b"*.jsonl filter=lfs diff=lfs merge=lfs -text\n",
        "README.md": ORIGINAL_CARD.encode(),
        "corpus.jsonl": _jsonl([{"_id": d, "title": t, "text": x} for d, (t, x) in DOCS.items()]),
        "queries.jsonl": _jsonl([{"_id": t, "text": text, "instruction_og": INSTRUCTIONS[f"{t}-og"],
                                  "instruction_changed": INSTRUCTIONS[f"{t}-changed"], "keywords": text.split()[0],
                                  "short_query": text} for t, text in TOPICS.items()]),
        "qrels_og/test.jsonl": qrels(og),
        "qrels_og/test.tsv": _tsv(og),
        "qrels_changed/test.jsonl": qrels(changed),
        "qrels_changed/test.tsv": _tsv(changed),
        "top_ranked.jsonl": _jsonl([{"qid": t, "pid": d} for t, pool in POOLS.items() for d in pool]),
        "empty_scores.json": json.dumps({t: dict.fromkeys(pool, 0) for t, pool in POOLS.items()}).encode(),
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
