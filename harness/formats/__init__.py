"""Readers (and a TREC run writer) for the benchmark file formats.

Every reader streams its file, reads ``.gz`` transparently and raises
:class:`harness.concepts.errors.DataError` naming the file and, for line-based formats, the line.

- :mod:`.jsonl` -- JSON Lines
- :mod:`.beir` -- BEIR folders (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.tsv``; or Parquet)
- :mod:`.trec` -- TREC qrels and run files
- :mod:`.topics` -- ``qid<TAB>text`` topic files
- :mod:`.rankllm` -- RankGPT / rank_llm candidate JSON
- :mod:`.scifact` -- the AllenAI SciFact CSV release
- :mod:`.noveleval` -- NovelEval-2306
"""
