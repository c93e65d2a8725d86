"""A tiny InstructIR collection in the layout of ``mteb/InstructIR-mteb`` (folders ``corpus/``, ``data/``,
``instruction/``, ``queries/``; configs in the README YAML; Parquet shards named as ``push_to_hub`` names
them; int64 scores), and a retriever with a fixed ranking per query, for the tests.

Two base queries, MS MARCO ids as InstructIR has them: ``1078446`` with three instruction variants
(``1078446_1`` .. ``_3``) and ``839488`` with two. Each variant has its own target passage
(``7865137_<n>``, ``7866009_<n>``, one relevant document per query, as in InstructIR); two plain MS MARCO
passages are distractors. The ``queries`` config holds the base query, ``instruction`` the instruction
(MTEB's split of the authors' ``instruction [SEP] query``).
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
- config_name: queries
  data_files:
  - split: queries
    path: queries/queries-*
dataset_info:
  features:
  - name: query-id
    dtype: string
---
# InstructIR fixture (test data)
"""

BASE = {"1078446": "wine cabinets definition", "839488": "what is the plural of kohlrabies"}
INSTRUCTIONS = {
    "1078446_1": "I am an interior designer planning a kitchen remodel with climate controlled wine storage.",
    "1078446_2": "I am a homeowner choosing a wine cabinet for my dining room and want the types explained.",
    "1078446_3": "I am a sommelier writing a glossary and need a precise dictionary style definition.",
    "839488_1": "I am a gardener labelling seed packets and need the plural form of the vegetable name.",
    "839488_2": "I am an English teacher preparing a lesson on irregular plural nouns of vegetables.",
}
DOCS = {  # worded so that BM25 does not find every target first (the groups' minima then differ)
    "7865137_1": "Wine cabinets: a definition for designers, with storage features and climate control.",
    "7865137_2": "A wine cabinet is a cabinet for wine; homeowners pick one by size and style.",
    "7865137_3": "Wine cabinet, noun: a cabinet for storing bottles of wine, a dictionary definition.",
    "7866009_1": "Kohlrabi, plural kohlrabies: a vegetable whose seeds gardeners sow in spring.",
    "7866009_2": "Kohlrabies is the plural of kohlrabi; the word is a regular plural noun in English.",
    "529990": "A kitchen remodel plan: climate controlled wine storage and a dining room for the homeowner.",
    "1000": "Seed packets and labelling for the gardener: the vegetable name, plural and singular forms.",
}
QRELS = {q: {f"{'7865137' if q.startswith('1078446') else '7866009'}_{q.split('_')[1]}": 1} for q in INSTRUCTIONS}

#: a fixed ranking per query (what :class:`TableRetriever` returns), chosen so the minimum per group
#: differs from the mean: target ranks 1, 3, 2 (1078446) and beyond the top 10 / 1 (839488)
RANKINGS = {
    "1078446_1": ["7865137_1", "7865137_2", "1000"],
    "1078446_2": ["1000", "7865137_1", "7865137_2"],
    "1078446_3": ["7865137_1", "7865137_3", "1000"],
    "839488_1": ["1000", "529990", "7866009_2", "7865137_1", "7865137_2", "7865137_3", "7866009_1"],
    "839488_2": ["7866009_2", "7866009_1"],
}

def repository() -> dict[str, bytes]:
    """The repository's files: path -> bytes."""
    shard = "-00000-of-00001.parquet"
    return {
        "README.md": CARD.encode(),
        f"corpus/corpus{shard}": _parquet([{"_id": d, "title": "", "text": t} for d, t in DOCS.items()]),
        f"queries/queries{shard}": _parquet([{"_id": q, "text": BASE[q.split("_")[0]]} for q in INSTRUCTIONS]),
        f"instruction/instruction{shard}": _parquet([{"query-id": q, "instruction": i}
                                                     for q, i in INSTRUCTIONS.items()]),
        f"data/default{shard}": _parquet([{"query-id": q, "corpus-id": d, "score": s}
                                          for q, docs in QRELS.items() for d, s in docs.items()]),
    }


class TableRetriever:
    """Returns :data:`RANKINGS` for each query (scores ``len - position``, strictly decreasing) and
    records the query texts it was given."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def index(self, corpus: Mapping[str, Any]) -> None:
        self.corpus = set(corpus)

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        self.seen.update(queries)
        return Run({q: [(d, float(len(RANKINGS[q]) - i)) for i, d in enumerate(RANKINGS[q][:k])] for q in queries})

    def config(self) -> dict[str, Any]:
        return {"rankings": "fixed table (tests)"}
