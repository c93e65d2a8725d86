"""A tiny BRIGHT repository in the Hub's real layout (``<config>/<split>-00000-of-00001.parquet``, the
fields of ``xlangai/BRIGHT``), built with pyarrow.

biology is the worked split: query ``0`` has an excluded document, ``insects/query_copy_1.txt``, whose text
repeats the query (BM25 ranks it first when it is not excluded); query ``1`` marks "none" as ``["N/A"]``;
``long_documents`` and ``gold_ids_long`` give the long setting; ``gpt4_reason`` rewrites the queries. The
other splits hold a few documents each, so the suite runs."""

from __future__ import annotations

from harness.testing import parquet_bytes

LONG = ("biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow", "sustainable_living",
        "pony")
SPLITS = LONG[:7] + ("leetcode", "pony", "aops", "theoremqa_theorems", "theoremqa_questions")

BIO_DOCS = {
    "insects/Phototaxis_1.txt": "Phototaxis: moths and many insects fly toward a light source at night.",
    "insects/Phototaxis_2.txt": "Insects navigate by keeping the moon light at a fixed angle; lamps confuse them.",
    "insects/query_copy_1.txt": "why are moths and insects attracted to light at night why moths light",
    "insects/Lamp_0.txt": "A street lamp emits light; moths gather around lamps at night.",
    "plants/Photosynthesis_0.txt": "Plants turn light into sugar through photosynthesis in leaves.",
    "plants/Photosynthesis_1.txt": "Chlorophyll absorbs red and blue light and reflects green.",
    "cells/Mitochondria_0.txt": "Mitochondria make ATP, the energy currency of the cell.",
    "cells/Mitochondria_1.txt": "The cell respires in mitochondria, using oxygen to burn sugar.",
    "birds/Migration_0.txt": "Birds migrate at night using stars and the magnetic field of the earth.",
    "birds/Migration_1.txt": "Night migrating birds collide with lit towers attracted by the light.",
    "fish/Gills_0.txt": "Fish breathe through gills that take oxygen from water.",
    "fish/Gills_1.txt": "Gills are thin filaments rich in blood vessels.",
}
BIO_LONG = {
    "insects/Phototaxis.txt": BIO_DOCS["insects/Phototaxis_1.txt"] + " " + BIO_DOCS["insects/Phototaxis_2.txt"],
    "insects/query_copy.txt": BIO_DOCS["insects/query_copy_1.txt"],
    "insects/Lamp.txt": BIO_DOCS["insects/Lamp_0.txt"],
    "plants/Photosynthesis.txt": (BIO_DOCS["plants/Photosynthesis_0.txt"] + " "
                                  + BIO_DOCS["plants/Photosynthesis_1.txt"]),
    "cells/Mitochondria.txt": BIO_DOCS["cells/Mitochondria_0.txt"] + " " + BIO_DOCS["cells/Mitochondria_1.txt"],
    "birds/Migration.txt": BIO_DOCS["birds/Migration_0.txt"] + " " + BIO_DOCS["birds/Migration_1.txt"],
    "fish/Gills.txt": BIO_DOCS["fish/Gills_0.txt"] + " " + BIO_DOCS["fish/Gills_1.txt"],
}
BIO_EXAMPLES = [
    {"id": "0", "query": "Why are moths and insects attracted to light at night?",
     "reasoning": "Phototaxis; navigation by celestial light.",
     "excluded_ids": ["insects/query_copy_1.txt"],
     "gold_ids": ["insects/Phototaxis_1.txt", "insects/Phototaxis_2.txt"],
     "gold_ids_long": ["insects/Phototaxis.txt"]},
    {"id": "1", "query": "How do cells get energy from sugar and oxygen?",
     "reasoning": "Cellular respiration in mitochondria.",
     "excluded_ids": ["N/A"],
     "gold_ids": ["cells/Mitochondria_0.txt", "cells/Mitochondria_1.txt"],
     "gold_ids_long": ["cells/Mitochondria.txt"]},
    {"id": "2", "query": "What do green leaves do with light?",
     "reasoning": "Photosynthesis uses chlorophyll to absorb light.",
     "excluded_ids": ["plants/Photosynthesis_1.txt"],
     "gold_ids": ["plants/Photosynthesis_0.txt"],
     "gold_ids_long": ["plants/Photosynthesis.txt"]},
]
#: gpt4_reason: the same ids and judgments, the query replaced by an LLM's reasoning about it
BIO_GPT4 = [dict(e, query=f"{e['query']} {e['reasoning']} Think about fish gills and birds.") for e in BIO_EXAMPLES]


def _other(split: str) -> tuple[dict[str, str], list[dict]]:
    docs = {f"{split}/doc_{i}.txt": f"{split} note {i} about topic{i % 3} and word{i}" for i in range(6)}
    examples = [{"id": f"{split}-q{j}", "query": f"question on topic{j} and word{j + 3}", "reasoning": "",
                 "excluded_ids": [f"{split}/doc_{j + 3}.txt"] if j == 0 else ["N/A"],
                 "gold_ids": [f"{split}/doc_{j}.txt"], "gold_ids_long": [f"{split}/long_{j}.txt"]}
                for j in range(2)]
    return docs, examples

def docs_rows(docs: dict[str, str]) -> list[dict]:
    return [{"id": k, "content": v} for k, v in docs.items()]


def repository(examples: dict[str, list[dict]] | None = None) -> dict[str, bytes]:
    """Every file the plugin can read (plus the README): ``examples``, ``documents`` for each split,
    ``long_documents`` for the long splits, ``gpt4_reason`` and ``grit_reason`` for biology.
    ``examples`` replaces a split's examples (e.g. to plant an exclusion of a judged document)."""
    files: dict[str, bytes] = {"README.md": b"---\nconfigs: []\n---\n# BRIGHT (fixture)\n"}
    for split in SPLITS:
        if split == "biology":
            docs, ex, long = BIO_DOCS, BIO_EXAMPLES, BIO_LONG
        else:
            docs, ex = _other(split)
            long = {f"{split}/long_{j}.txt": f"{split} long document {j} topic{j}" for j in range(3)}
        ex = (examples or {}).get(split, ex)
        files[f"examples/{split}-00000-of-00001.parquet"] = parquet_bytes(ex)
        files[f"documents/{split}-00000-of-00001.parquet"] = parquet_bytes(docs_rows(docs))
        if split in LONG:
            files[f"long_documents/{split}-00000-of-00001.parquet"] = parquet_bytes(docs_rows(long))
    files["gpt4_reason/biology-00000-of-00001.parquet"] = parquet_bytes(BIO_GPT4)
    files["grit_reason/biology-00000-of-00001.parquet"] = parquet_bytes(BIO_EXAMPLES)
    return files
