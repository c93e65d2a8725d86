"""A small packaged demo dataset (BEIR layout), written for this project; works offline.

40 short documents on six topics (diabetes in plain English, clinical English and Spanish;
photosynthesis for children and for biochemists; sorting in Python; coffee history and brewing;
teenage sleep; volcanoes as distractors) and 10 queries, each with an instruction. Several queries
share the same text and differ only in their instruction ("What is diabetes?" for a layperson, a
physician, a Spanish speaker), so a system that ignores instructions cannot rank all of them well.
Grades in ``qrels/test.tsv``: 2 = on topic and follows the instruction, 1 = on topic but the wrong
style or level, 0 = judged not relevant (wrong language, excluded by the instruction, off topic).
"""

from __future__ import annotations

from pathlib import Path

DEMO_DIR = Path(__file__).resolve().parent


def demo_dir() -> Path:
    """The folder holding ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/test.tsv``."""
    return DEMO_DIR
