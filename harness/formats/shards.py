"""A table split over several files (a Hub dataset's shards): rows merged by key, a key given twice.

Within one file, each reader refuses a key given twice (a document id, a query id, a judged
(query, document) pair), naming both lines. Across the files of one table, a row given again with the
same content changes no figure: it is kept once and counted (:attr:`Merged.identical`); with other
content (another text, another grade) it is one :class:`DataError` naming both places, since which one
a reader keeps would decide the figures.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from harness.concepts.errors import DataError
from harness.concepts.qrels import Qrels

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


@dataclass
class Table(Generic[K, V]):
    """One file's rows by key, with where each was: ``places[key]`` is its line (``unit="line"``) or
    Parquet row (``unit="row"``)."""

    path: Path
    unit: str
    rows: dict[K, V]
    places: dict[K, int]

    def place(self, key: K) -> str:
        return f"{self.path}, {self.unit} {self.places[key]}"


@dataclass
class Merged(Generic[K, V]):
    """The rows of several files; ``identical``: rows given again, with the same content, in a later file."""

    rows: dict[K, V]
    identical: int = 0


def merge_tables(tables: Iterable[Table[K, V]], what: Callable[[K], str], content: str) -> Merged[K, V]:
    """The rows of ``tables`` in order. A key already given by an earlier table: the same value is
    counted, another is a :class:`DataError` naming both places (``what(key)`` names the row,
    ``content`` what differs)."""
    rows: dict[K, V] = {}
    origin: dict[K, Table[K, V]] = {}
    identical = 0
    for table in tables:
        for key, value in table.rows.items():
            first = origin.get(key)
            if first is None:
                origin[key] = table
                rows[key] = value
            elif rows[key] == value:
                identical += 1
            else:
                raise DataError(f"{what(key)} is given twice with different {content}: {first.place(key)} and "
                                f"{table.place(key)} (which one holds is not for the harness to guess)")
    return Merged(rows, identical)


_NAMES: MappingProxyType[str, tuple[Callable[[Any], str], str]] = MappingProxyType({
    "corpus": (lambda k: f"document {k!r}", "content (title or text)"),
    "queries": (lambda k: f"query {k!r}", "content (text, instruction or fields)"),
    "qrels": (lambda k: f"the judgment of document {k[1]!r} for query {k[0]!r}", "grades"),
})


def merge_shards(table: str, tables: Iterable[Table[Any, Any]]) -> tuple[Any, int]:
    """The tables of one kind (``corpus``, ``queries`` or ``qrels``, one per file) merged by
    :func:`merge_tables` as ``(rows, identical)``; qrels become :class:`Qrels`."""
    what, content = _NAMES[table]
    merged = merge_tables(tables, what, content)
    rows = qrels_from_rows(merged.rows) if table == "qrels" else merged.rows
    return rows, merged.identical


def qrels_from_rows(rows: dict[tuple[str, str], float]) -> Qrels:
    """:class:`Qrels` from ``{(qid, docid): grade}``, in order."""
    qrels = Qrels()
    for (qid, docid), grade in rows.items():
        qrels.add(qid, docid, grade)
    return qrels
