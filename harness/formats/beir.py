"""BEIR folders: ``corpus.jsonl`` (``_id, title, text``), ``queries.jsonl`` (``_id, text`` and any
extra fields) and ``qrels/<split>.tsv`` (``query-id corpus-id score`` with a header line).

Each table may instead be gzipped (``corpus.jsonl.gz``) or a Parquet export with the same columns
(``corpus.parquet``, ``queries.parquet``, ``qrels/<split>.parquet``); Parquet needs ``pyarrow``
(``pip install 'harness-ir[parquet]'``), imported only when such a file is read.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness.concepts.document import Document
from harness.concepts.errors import DataError
from harness.concepts.qrels import Qrels
from harness.concepts.query import Query
from harness.formats.files import iter_lines
from harness.formats.grades import grade_from_value
from harness.formats.jsonl import iter_jsonl_objects
from harness.formats.shards import Table, merge_shards, qrels_from_rows
from harness.formats.topics import topics_table
from harness.formats.trec import check_new_judgment, parse_grade
from harness.runtime.extras import require

QUERY_KNOWN_FIELDS = ("_id", "text", "instruction")
_ID_HEADERS = frozenset({"_id", "id", "docid", "doc_id", "pid", "corpus-id"})
_TEXT_HEADERS = frozenset({"text", "contents", "content", "passage", "body"})


def _is_parquet(path: Path) -> bool:
    return path.name.endswith(".parquet")


def _is_tsv(path: Path) -> bool:
    return path.name.endswith((".tsv", ".tsv.gz", ".txt", ".txt.gz"))


def _fail(message: str, path: object, loc: int, unit: str) -> DataError:
    """An error at a JSONL line or at a Parquet row."""
    return DataError(message, path, loc) if unit == "line" else DataError(f"row {loc}: {message}", path)


def as_id(value: Any, what: str, path: object, loc: int, unit: str = "line") -> str:
    """An identifier as a string; JSON integers are accepted (``7`` -> ``"7"``)."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise _fail(f"{what} must be a non-empty string or an integer, got {value!r}", path, loc, unit)


def _text(obj: dict[str, Any], key: str, path: object, loc: int, unit: str, required: bool) -> str:
    value = obj.get(key)
    if value is None:
        if required:
            raise _fail(f"missing field {key!r} (fields: {sorted(obj)})", path, loc, unit)
        return ""
    if not isinstance(value, str):
        raise _fail(f"field {key!r} must be a string, got {type(value).__name__}", path, loc, unit)
    return value


def iter_parquet(
    path: str | os.PathLike[str], batch_size: int = 8192
) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(row number from 1, record)`` for each row of a Parquet file, read in batches."""
    require("pyarrow", "parquet", "reading Parquet", path=path)
    import pyarrow.parquet as pq
    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises its own error types
        raise DataError(f"not a readable Parquet file ({exc})", path) from exc
    row = 0
    for batch in pf.iter_batches(batch_size=batch_size):
        for rec in batch.to_pylist():
            row += 1
            yield row, rec


def _records(path: Path) -> tuple[Iterator[tuple[int, dict[str, Any]]], str]:
    if _is_parquet(path):
        return iter_parquet(path), "row"
    return iter_jsonl_objects(path), "line"


def read_corpus(path: str | os.PathLike[str]) -> dict[str, Document]:
    """A corpus file: BEIR JSONL (``_id``, ``title``, ``text``), its Parquet export, or a TSV
    (``id<TAB>text`` or ``id<TAB>title<TAB>text``, optional header line). A repeated id is an error."""
    return corpus_table(path).rows


def corpus_table(path: str | os.PathLike[str]) -> Table[str, Document]:
    """:func:`read_corpus` with the line (or Parquet row) of each document."""
    p = Path(path)
    if _is_tsv(p):
        return _corpus_tsv(p)
    records, unit = _records(p)
    corpus: dict[str, Document] = {}
    first: dict[str, int] = {}
    for loc, obj in records:
        docid = as_id(obj.get("_id", obj.get("id")), "'_id'", p, loc, unit)
        if docid in first:
            raise _fail(f"document {docid!r} repeated (first at {unit} {first[docid]})", p, loc, unit)
        first[docid] = loc
        corpus[docid] = Document(
            id=docid,
            text=_text(obj, "text", p, loc, unit, required=True),
            title=_text(obj, "title", p, loc, unit, required=False),
        )
    return Table(p, unit, corpus, first)


def read_corpus_tsv(path: str | os.PathLike[str]) -> dict[str, Document]:
    """``id<TAB>text`` or ``id<TAB>title<TAB>text`` lines; a first line naming the columns
    (``id``/``_id``/``docid``, ``title``, ``text``) is taken as a header. Without a header, a first
    line of two fields means ``id, text``, of three ``id, title, text``; tabs beyond that stay in
    the text."""
    return _corpus_tsv(Path(path)).rows


def _corpus_tsv(path: Path) -> Table[str, Document]:
    corpus: dict[str, Document] = {}
    first: dict[str, int] = {}
    columns: list[str] | None = None
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        parts = line.split("\t") if columns is None else line.split("\t", len(columns) - 1)
        if columns is None:
            names = [c.strip().lower() for c in parts]
            if names[0] in _ID_HEADERS and set(names[1:]) <= _TEXT_HEADERS | {"title"}:
                columns = ["id"] + ["title" if n == "title" else "text" for n in names[1:]]
                if "text" not in columns:
                    raise DataError(f"header names no text column: {line!r}", path, lineno)
                continue
            columns = ["id", "text"] if len(parts) <= 2 else ["id", "title", "text"]
            parts = line.split("\t", len(columns) - 1)
        if len(parts) != len(columns):
            raise DataError(
                f"expected {len(columns)} tab-separated fields ({', '.join(columns)}), found {len(parts)}",
                path,
                lineno,
            )
        row = dict(zip(columns, parts, strict=True))
        docid = row["id"].strip()
        if not docid:
            raise DataError("empty document id", path, lineno)
        if docid in first:
            raise DataError(f"document {docid!r} repeated (first on line {first[docid]})", path, lineno)
        first[docid] = lineno
        corpus[docid] = Document(id=docid, text=row["text"], title=row.get("title", ""))
    return Table(path, "line", corpus, first)


def read_queries(path: str | os.PathLike[str]) -> dict[str, Query]:
    """BEIR queries (JSONL or Parquet): ``_id``, ``text``; ``instruction`` becomes
    :attr:`Query.instruction` and every other field (``instruction_og``, ``metadata``, ...) is kept in
    :attr:`Query.meta`. A ``.tsv`` file is read as ``qid<TAB>text`` topics."""
    return queries_table(path).rows


def queries_table(path: str | os.PathLike[str]) -> Table[str, Query]:
    """:func:`read_queries` with the line (or Parquet row) of each query."""
    p = Path(path)
    if _is_tsv(p):
        return topics_table(p)
    records, unit = _records(p)
    queries: dict[str, Query] = {}
    first: dict[str, int] = {}
    for loc, obj in records:
        qid = as_id(obj.get("_id", obj.get("id")), "'_id'", p, loc, unit)
        if qid in first:
            raise _fail(f"query {qid!r} repeated (first at {unit} {first[qid]})", p, loc, unit)
        first[qid] = loc
        meta = {k: v for k, v in obj.items() if k not in QUERY_KNOWN_FIELDS and k != "id"}
        queries[qid] = Query(
            id=qid,
            text=_text(obj, "text", p, loc, unit, required=True),
            instruction=_text(obj, "instruction", p, loc, unit, required=False),
            meta=meta,
        )
    return Table(p, unit, queries, first)


def read_qrels_tsv(path: str | os.PathLike[str]) -> Qrels:
    """BEIR qrels: ``query-id<TAB>corpus-id<TAB>score`` with an optional header line; int or float
    scores (strictly written, in the grade range). A 4-field line is read as TREC qrels
    (``qid 0 docid grade``). A (query, document) pair judged twice is an error naming both lines."""
    return qrels_from_rows(_qrels_tsv(Path(path)).rows)


def _qrels_tsv(path: Path) -> Table[tuple[str, str], float]:
    rows: dict[tuple[str, str], float] = {}
    seen_at: dict[tuple[str, str], int] = {}
    started = False
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        parts = line.split("\t") if "\t" in line else line.split()
        parts = [x.strip() for x in parts]
        if not started:
            started = True
            if parts[0].lower() in ("query-id", "query_id", "qid"):
                continue
        if len(parts) == 4:
            parts = [parts[0], parts[2], parts[3]]
        if len(parts) != 3:
            raise DataError(
                f"expected 3 fields 'query-id corpus-id score', found {len(parts)}: {line[:80]!r}",
                path,
                lineno,
            )
        qid, docid, score = parts
        if not qid or not docid:
            raise DataError("empty query or document id", path, lineno)
        check_new_judgment(seen_at, qid, docid, path, lineno)
        rows[qid, docid] = parse_grade(score, path, lineno)
    return Table(path, "line", rows, seen_at)


def read_qrels_records(path: str | os.PathLike[str]) -> Qrels:
    """BEIR qrels as records: a Parquet export, or the JSONL form the Hugging Face hub releases use
    (``qrels/test.jsonl``). The one rule for every hub-style qrels file (plugins read theirs here):

    - ids: ``query-id`` and ``corpus-id`` (``query_id``/``corpus_id`` accepted); strings or integers;
    - ``score``: required; a JSON number (not a boolean), or a string holding one written strictly
      (``"1"``; not ``"1_00"``, ``" 1"``, ``"nan"``), finite and in the grade range
      (:data:`harness.concepts.qrels.MIN_GRADE` to ``MAX_GRADE``); whole numbers become ints;
    - a (query, document) pair judged twice is an error naming both lines (or rows)."""
    return qrels_from_rows(_qrels_records(Path(path)).rows)


def _qrels_records(path: Path) -> Table[tuple[str, str], float]:
    rows: dict[tuple[str, str], float] = {}
    seen_at: dict[tuple[str, str], int] = {}
    records, unit = _records(path)
    for row, rec in records:
        qid = as_id(rec.get("query-id", rec.get("query_id")), "'query-id'", path, row, unit)
        docid = as_id(rec.get("corpus-id", rec.get("corpus_id")), "'corpus-id'", path, row, unit)
        check_new_judgment(seen_at, qid, docid, path, row, unit)
        rows[qid, docid] = grade_from_value(rec.get("score"), path, row, unit)
    return Table(path, unit, rows, seen_at)


def read_qrels(path: str | os.PathLike[str]) -> Qrels:
    """BEIR qrels from TSV (or TREC 4-field lines), JSONL records or Parquet."""
    return qrels_from_rows(qrels_table(path).rows)


def qrels_table(path: str | os.PathLike[str]) -> Table[tuple[str, str], float]:
    """:func:`read_qrels` as ``{(qid, docid): grade}`` with the line (or Parquet row) of each judgment."""
    p = Path(path)
    if _is_parquet(p) or p.name.endswith((".jsonl", ".jsonl.gz")):
        return _qrels_records(p)
    return _qrels_tsv(p)


_TABLES = MappingProxyType({"corpus": corpus_table, "queries": queries_table, "qrels": qrels_table})


def read_shards(table: str, paths: Iterable[str | os.PathLike[str]]) -> tuple[Any, int]:
    """Table ``table`` (``corpus``, ``queries`` or ``qrels``) read from several files (a Hub dataset's
    shards: JSONL, gzip, Parquet or TSV) as one: ``({id: Document}`` or ``{id: Query}`` or ``Qrels``,
    ``identical)``. A row given again in another file with the same content is kept once and counted in
    ``identical``; with another text or grade it is a :class:`DataError` naming both files and lines
    (:mod:`harness.formats.shards`)."""
    if table not in _TABLES:
        raise ValueError(f"table must be one of {', '.join(_TABLES)}, not {table!r}")
    return merge_shards(table, (_TABLES[table](p) for p in paths))


def find_table(folder: Path, stem: str) -> Path:
    """The file holding table ``stem`` in a BEIR folder: ``stem.jsonl``, ``.jsonl.gz``, ``.tsv``
    (qrels) or ``.parquet``, first found."""
    for suffix in (".jsonl", ".jsonl.gz", ".tsv", ".tsv.gz", ".parquet"):
        candidate = folder / f"{stem}{suffix}"
        if candidate.is_file():
            return candidate
    raise DataError(
        f"no {stem}.jsonl, {stem}.jsonl.gz, {stem}.tsv or {stem}.parquet in the BEIR folder {folder}"
    )


@dataclass
class BeirData:
    corpus: dict[str, Document]
    queries: dict[str, Query]
    qrels: Qrels
    files: list[Path] = field(default_factory=list)


def read_beir(folder: str | os.PathLike[str], split: str = "test") -> BeirData:
    """Read a BEIR folder: corpus, queries and ``qrels/<split>``."""
    root = Path(folder)
    if not root.is_dir():
        raise DataError(f"not a folder: {root} (a BEIR dataset is a folder with corpus.jsonl, ...)")
    corpus_path = find_table(root, "corpus")
    queries_path = find_table(root, "queries")
    qrels_dir = root / "qrels"
    try:
        qrels_path = find_table(qrels_dir, split)
    except DataError:
        splits = sorted(p.name.split(".")[0] for p in qrels_dir.glob("*")) if qrels_dir.is_dir() else []
        raise DataError(
            f"no qrels for split {split!r} in {qrels_dir}"
            + (f"; splits present: {', '.join(splits)}" if splits else "")
        ) from None
    return BeirData(
        corpus=read_corpus(corpus_path),
        queries=read_queries(queries_path),
        qrels=read_qrels(qrels_path),
        files=[corpus_path, queries_path, qrels_path],
    )


read_beir_qrels = read_qrels  # the name harness.formats exports (TSV, hub JSONL or Parquet)
