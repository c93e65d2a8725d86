"""Readers (and a TREC run writer) for the benchmark file formats (public: see docs/api.md).

Every reader streams its file, reads ``.gz`` transparently and raises :class:`harness.DataError`
naming the file and, for line-based formats, the line. Modules: ``files`` (opening, lines, sha256),
``jsonl``, ``beir`` (BEIR folders and hub-style qrels; Parquet), ``trec`` (qrels and runs),
``topics``, ``rankllm`` (RankGPT / rank_llm candidate JSON), ``scifact``, ``noveleval``; ``grades``
(numbers read strictly, relevance grades bounded) and ``shards`` (a table over several files: a row given
twice with other content is an error, the same row counted).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from harness.runtime.exports import lazy_exports

_EXPORTS = MappingProxyType({
    # files
    "open_text": "harness.formats.files",
    "iter_lines": "harness.formats.files",
    "sha256_file": "harness.formats.files",
    # JSON Lines
    "iter_jsonl": "harness.formats.jsonl",
    "iter_jsonl_objects": "harness.formats.jsonl",
    # BEIR folders and hub-style files
    "read_beir": "harness.formats.beir",
    "read_corpus": "harness.formats.beir",
    "read_queries": "harness.formats.beir",
    "read_beir_qrels": "harness.formats.beir",
    "find_table": "harness.formats.beir",
    "iter_parquet": "harness.formats.beir",
    "as_id": "harness.formats.beir",
    # TREC
    "read_trec_qrels": "harness.formats.trec",
    "read_trec_run": "harness.formats.trec",
    "write_trec_run": "harness.formats.trec",
    "read_topics": "harness.formats.topics",
    # candidate lists
    "read_rankllm": "harness.formats.rankllm",
})

if TYPE_CHECKING:  # pragma: no cover
    from harness.formats.beir import (  # noqa: F401
        as_id,
        find_table,
        iter_parquet,
        read_beir,
        read_beir_qrels,
        read_corpus,
        read_queries,
    )
    from harness.formats.files import iter_lines, open_text, sha256_file  # noqa: F401
    from harness.formats.jsonl import iter_jsonl, iter_jsonl_objects  # noqa: F401
    from harness.formats.rankllm import read_rankllm  # noqa: F401
    from harness.formats.topics import read_topics  # noqa: F401
    from harness.formats.trec import read_trec_qrels, read_trec_run, write_trec_run  # noqa: F401

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__all__ = sorted(_EXPORTS)
