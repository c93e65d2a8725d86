"""``--dataset irds:ID``: any dataset of ``ir_datasets`` (the ``irds`` extra), by its id
(``beir/scifact/test``, ``msmarco-passage/trec-dl-2019/judged``, ``disks45/nocr/trec-robust-2004``).

What is read, through ir_datasets' own API and files (``IR_DATASETS_HOME``, default ``~/.ir_datasets``;
its download rules: the URL and md5 it records, its mirror, the data-use messages it prints):

- the corpus (``docs_iter``): ``Document(doc_id, text, title)`` from the fields of those names (a type
  without ``text`` gives its ``default_text()``); ``corpus=candidates`` reads only the scored documents
  through ir_datasets' docstore (for a re-ranking setting over a large collection);
- the queries (``queries_iter``): the ``text`` field (else ``title``, else ``default_text()``) as the
  query text, an ``instruction`` field as the instruction, and every other text field (``title``,
  ``description``, ``narrative``, ...) in the query's fields, so a task's ``query_format`` can use them
  (``"{title} {description}"``); a field named ``id`` or ``query`` is kept as ``irds_<name>``. Every
  query is kept, judged or not, as for any TREC topics file;
- the qrels (``qrels_iter``) with their relevance levels (``qrels_defs``, in the identity); a pair
  judged twice with the same grade is kept once and counted, with two grades it is an error;
- the scored documents (``scoreddocs_iter``), when the dataset has them, as candidate lists (ordered
  as trec_eval orders a run: score descending, ties by document id descending); a dataset whose scored
  documents carry no scores (MS MARCO's top-1000 files: ir_datasets gives 0) says so on stderr.

Before anything is read, the files the dataset needs are looked up (:mod:`harness.datasets.irds_files`):
a file to be placed by hand (a licensed collection) that is missing gives ir_datasets' own instructions
in one message; any other missing file is fetched by ir_datasets, unless ``HARNESS_AUTO_DOWNLOAD=0``,
which gives one message naming the file, the id and ``IR_DATASETS_HOME``. ir_datasets fixes its home
when it is first imported in a process.
"""

from __future__ import annotations

import difflib
import math
import sys
from collections.abc import Iterable
from typing import Any

from harness.concepts.component_context import ComponentContext
from harness.concepts.dataset import Dataset
from harness.concepts.document import Document
from harness.concepts.errors import DataError, HarnessError
from harness.concepts.qrels import Qrels, grade_problem
from harness.concepts.query import Query
from harness.concepts.run import Run
from harness.context import Context
from harness.datasets.irds_files import SourceFile, home, missing_message, source_files
from harness.runtime.extras import require

RESERVED = frozenset({"id", "query"})  # names format_query and the pipeline give their own meaning
CORPUS_CHOICES = ("all", "candidates")


def load_irds_dataset(id: str, corpus: str = "all", name: str | None = None,
                      context: ComponentContext | None = None) -> Dataset:
    """The ``ir_datasets`` dataset ``id`` (see the module docstring); ``corpus``: ``all`` or ``candidates``."""
    require("ir_datasets", "irds", f"dataset irds:{id}", package="ir-datasets")
    if corpus not in CORPUS_CHOICES:
        raise HarnessError(f"irds:{id}: corpus must be one of {', '.join(CORPUS_CHOICES)}, not {corpus!r}")
    ctx = Context.of(context)
    ds = _open(id)
    files = _check_files(id, ds, ctx.data.auto_download)
    with _readable(id, files):
        candidates = _candidates(ds) if ds.has_scoreddocs() else None
        docs = _corpus(ds, candidates if corpus == "candidates" else None)
        queries = _queries(ds)
        qrels, duplicates = _qrels(ds)
    label = name or id
    identity = _identity(id, ds, files, label)
    out = Dataset.single(label, docs, queries, qrels, candidates, identity)
    out.meta.update(queries=len(queries), queries_with_qrels=sum(1 for q in queries if qrels.get(q)),
                    irds_id=id, corpus=corpus)
    if duplicates:
        out.meta["identical_duplicates"] = {"qrels": duplicates}
    out.meta["unknown_ids"] = out.validate()
    return out


load_irds_dataset.spec_tail = "id"  # irds:ID is irds:id=ID


def _open(dataset_id: str) -> Any:
    import ir_datasets

    try:
        return ir_datasets.load(dataset_id)
    except KeyError:
        close = difflib.get_close_matches(dataset_id, list(ir_datasets.registry), n=3, cutoff=0.6)
        hint = f"; did you mean: {', '.join(close)}?" if close else " (the ids: https://ir-datasets.com)"
        raise HarnessError(f"irds:{dataset_id}: ir_datasets {ir_datasets.__version__} has no dataset "
                           f"{dataset_id!r}{hint}") from None


def _handlers(ds: Any) -> list[Any]:
    parts = ("docs", "queries", "qrels", "scoreddocs")
    return [getattr(ds, f"{p}_handler")() for p in parts if getattr(ds, f"has_{p}")()]


def _check_files(dataset_id: str, ds: Any, auto_download: bool) -> list[SourceFile]:
    """The dataset's files; a missing one that must be placed by hand, or any with downloads off, fails now."""
    files = source_files(_handlers(ds))
    missing = [f for f in files if not f.present]
    if missing and (not auto_download or any(f.instructions for f in missing)):
        raise DataError(missing_message(dataset_id, missing, auto_download))
    return files


class _readable:
    """Errors from ir_datasets while it reads (a download that failed, a file it cannot parse) as one
    :class:`DataError` naming the id, the home and what was missing."""

    def __init__(self, dataset_id: str, files: list[SourceFile]) -> None:
        self.dataset_id, self.files = dataset_id, files

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: Any, exc: BaseException | None, tb: Any) -> bool:
        if exc is None or isinstance(exc, HarnessError) or not isinstance(exc, Exception):
            return False
        missing = [f for f in self.files if not f.present]
        where = missing_message(self.dataset_id, missing, True) if missing else f"irds:{self.dataset_id}"
        raise DataError(f"{where}: {type(exc).__name__}: {' '.join(str(exc).split())[:500]}") from exc


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else str(value)


def _document(doc: Any) -> Document:
    fields = doc._fields
    text = _text(doc.text) if "text" in fields else _text(doc.default_text())
    return Document(str(doc.doc_id), text, _text(doc.title) if "title" in fields else "")


def _corpus(ds: Any, candidates: Run | None) -> dict[str, Document]:
    if not ds.has_docs():
        return {}
    if candidates is None:
        return {d.id: d for d in map(_document, ds.docs_iter())}
    wanted = {d for q in candidates for d in candidates.doc_ids(q)}
    found = ds.docs_store().get_many(wanted)
    return {str(k): _document(v) for k, v in found.items()}


def _query(q: Any) -> Query:
    fields = q._fields
    text_field = "text" if "text" in fields else "title" if "title" in fields else None
    text = _text(getattr(q, text_field)) if text_field else _text(q.default_text())
    instruction = _text(q.instruction) if "instruction" in fields else ""
    meta = {}
    for f in fields:  # the text field too, unless it is "text": TREC topics' title stays "{title}"
        if f in ("query_id", "text", "instruction"):
            continue
        value = getattr(q, f)
        if isinstance(value, str):
            meta[f"irds_{f}" if f in RESERVED else f] = value
    return Query(str(q.query_id), text, instruction, meta)


def _queries(ds: Any) -> dict[str, Query]:
    if not ds.has_queries():
        raise DataError("this ir_datasets dataset has no queries: it cannot be evaluated")
    out = {}
    for q in map(_query, ds.queries_iter()):
        out.setdefault(q.id, q)
    return out


def _qrels(ds: Any) -> tuple[Qrels, int]:
    """The qrels, each grade checked; identical repeats counted, conflicting ones refused."""
    qrels, duplicates = Qrels(), 0
    if not ds.has_qrels():
        return qrels, 0
    for row in ds.qrels_iter():
        qid, did, grade = str(row.query_id), str(row.doc_id), row.relevance
        problem = grade_problem(grade)
        if problem:
            raise DataError(f"query {qid!r}, document {did!r}: relevance {grade!r} is not {problem}")
        seen = qrels.get(qid, {}).get(did)
        if seen is not None:
            if seen != grade:
                raise DataError(f"document {did!r} judged twice for query {qid!r}, {seen} and {grade}")
            duplicates += 1
        qrels.add(qid, did, grade)
    return qrels, duplicates


def _candidates(ds: Any) -> Run:
    scores: dict[str, dict[str, float]] = {}
    for row in ds.scoreddocs_iter():
        score = float(row.score)
        if not math.isfinite(score):
            raise DataError(f"scored document {row.doc_id!r} of query {row.query_id!r}: score {score} is not finite")
        scores.setdefault(str(row.query_id), {}).setdefault(str(row.doc_id), score)
    if scores and len({s for d in scores.values() for s in d.values()}) == 1:
        print("[harness] irds: the dataset's scored documents carry no scores (all equal): its candidate lists "
              "are in document-id order (trec_eval's tie rule), not a ranking to score as given", file=sys.stderr)
    return Run.from_scores(scores, name="irds-scoreddocs")


def _identity(dataset_id: str, ds: Any, files: Iterable[SourceFile], label: str) -> dict[str, Any]:
    import ir_datasets

    root = home()
    levels = {str(k): str(v) for k, v in (ds.qrels_defs() or {}).items()} if ds.has_qrels() else {}
    return {"name": label, "irds": {"id": dataset_id, "ir_datasets_version": ir_datasets.__version__,
                                    "home": str(root), "relevance_levels": levels},
            "files": [f.identity(root) for f in files]}
