"""NovelEval-2306 (RankGPT paper): ``corpus.tsv`` (docid, content), ``queries.tsv`` (qid, query),
``qrels.txt`` (TREC qrels, grades 0/1/2).

The TSV files were written by a CSV writer with a tab delimiter: a field containing quotes (or
tabs) is enclosed in double quotes with inner quotes doubled, so they are read with :mod:`csv`,
which restores the original text. Each query's candidates are the 20 passages whose ids are
``"<qid>-<i>"``, in file order.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from harness.concepts.document import Document
from harness.concepts.errors import DataError
from harness.concepts.qrels import Qrels
from harness.concepts.query import Query
from harness.concepts.run import Run
from harness.formats.files import open_text
from harness.formats.trec import read_qrels


def iter_quoted_tsv(path: str | os.PathLike[str], what: str = "id") -> Iterator[tuple[int, str, str]]:
    """``(line, id, text)`` rows of a two-column tab-separated file with CSV quoting."""
    with open_text(path) as f:
        reader = csv.reader(f, delimiter="\t", quotechar='"', strict=True)
        start = 1
        try:
            for row in reader:
                if row and any(c.strip() for c in row):
                    if len(row) != 2:
                        raise DataError(f"expected 2 fields ({what}, text), found {len(row)}", path, start)
                    key = row[0].strip()
                    if not key:
                        raise DataError(f"empty {what}", path, start)
                    yield start, key, row[1]
                start = reader.line_num + 1
        except csv.Error as exc:
            raise DataError(f"malformed TSV ({exc})", path, start) from exc
        except UnicodeDecodeError as exc:
            raise DataError(f"not valid UTF-8 ({exc.reason})", path, start) from exc


@dataclass
class NovelEval:
    queries: dict[str, Query]
    corpus: dict[str, Document]
    qrels: Qrels
    candidates: Run
    files: list[Path]


def read_noveleval(folder: str | os.PathLike[str]) -> NovelEval:
    """Read the NovelEval folder; every passage must belong to a listed query."""
    root = Path(folder)
    corpus_path, queries_path, qrels_path = root / "corpus.tsv", root / "queries.tsv", root / "qrels.txt"
    for p in (corpus_path, queries_path, qrels_path):
        if not p.is_file():
            raise DataError(f"NovelEval file missing: {p} (expected corpus.tsv, queries.tsv, qrels.txt)")
    queries: dict[str, Query] = {}
    for line, qid, text in iter_quoted_tsv(queries_path, "qid"):
        if qid in queries:
            raise DataError(f"query {qid!r} repeated", queries_path, line)
        queries[qid] = Query(id=qid, text=text.strip())
    corpus: dict[str, Document] = {}
    order: dict[str, list[str]] = {q: [] for q in queries}
    for line, docid, text in iter_quoted_tsv(corpus_path, "docid"):
        if docid in corpus:
            raise DataError(f"passage {docid!r} repeated", corpus_path, line)
        qid = docid.rsplit("-", 1)[0] if "-" in docid else ""
        if qid not in order:
            raise DataError(f"passage id {docid!r} does not name a query as '<qid>-<i>'", corpus_path, line)
        corpus[docid] = Document(id=docid, text=text)
        order[qid].append(docid)
    return NovelEval(
        queries=queries,
        corpus=corpus,
        qrels=read_qrels(qrels_path),
        candidates=Run.from_order(order, name="noveleval"),
        files=[corpus_path, queries_path, qrels_path],
    )
