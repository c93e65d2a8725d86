"""Topic files: ``qid<TAB>text`` per line (Anserini's TSV topics), plain or gzipped."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from harness.concepts.errors import DataError
from harness.concepts.query import Query
from harness.formats.files import iter_lines
from harness.formats.shards import Table


def iter_tsv_pairs(path: str | os.PathLike[str], what: str = "id") -> Iterator[tuple[int, str, str]]:
    """``(line number, id, text)`` for each non-blank ``id<TAB>text`` line.

    The text is everything after the first tab (tabs inside it are kept). A line without a tab
    or with an empty id raises :class:`DataError` naming the line.
    """
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        if "\t" not in line:
            raise DataError(f"expected '{what}<TAB>text', found no tab: {line[:80]!r}", path, lineno)
        key, text = line.split("\t", 1)
        key = key.strip()
        if not key:
            raise DataError(f"empty {what}", path, lineno)
        yield lineno, key, text.strip()


def read_topics(path: str | os.PathLike[str]) -> dict[str, Query]:
    """``qid<TAB>text`` lines -> ``{qid: Query}`` in file order; a repeated qid is an error."""
    return topics_table(path).rows


def topics_table(path: str | os.PathLike[str]) -> Table[str, Query]:
    """:func:`read_topics` with the line of each query."""
    queries: dict[str, Query] = {}
    first: dict[str, int] = {}
    for lineno, qid, text in iter_tsv_pairs(path, "qid"):
        if qid in first:
            raise DataError(f"query {qid!r} repeated (first on line {first[qid]})", path, lineno)
        first[qid] = lineno
        queries[qid] = Query(id=qid, text=text)
    return Table(Path(path), "line", queries, first)
