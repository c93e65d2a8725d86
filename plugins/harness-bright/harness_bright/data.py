"""Reading one BRIGHT setting (Hub Parquet files) into a :class:`~harness.Dataset`.

Fields (HF ``xlangai/BRIGHT``): ``examples`` and ``*_reason``: ``id``, ``query``, ``reasoning``,
``excluded_ids`` (a list; ``["N/A"]`` means none), ``gold_ids``, ``gold_ids_long``; ``documents`` and
``long_documents``: ``id``, ``content``. As the official ``run.py``: the query is the config's ``query``
field, judgments are ``gold_ids`` (``gold_ids_long`` with the long documents) at grade 1, and a query whose
``excluded_ids`` meet its judged documents is an error.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from harness import ComponentContext, Context, DataError, Dataset, Document, HarnessError, Qrels, Query, Task
from harness.formats import as_id, iter_parquet

from .instructions import instruction
from .tasks import HUB_REPO, REVISION, variant, variant_files

NA = "N/A"  # the sentinel the data uses for "no excluded id"


def _ids(value: Any, field: str, path: Path, row: int) -> list[str]:
    if not isinstance(value, (list, tuple)):
        raise DataError(f"row {row}: {field} must be a list of document ids, not {type(value).__name__}", path)
    return [as_id(v, field, path, row, "row") for v in value]


def read_documents(path: Path) -> dict[str, Document]:
    """``id``, ``content`` per row; a repeated id is an error."""
    corpus: dict[str, Document] = {}
    for row, rec in iter_parquet(path):
        doc_id = as_id(rec.get("id"), "'id'", path, row, "row")
        text = rec.get("content")
        if not isinstance(text, str):
            raise DataError(f"row {row}: 'content' must be text, not {type(text).__name__}", path)
        if doc_id in corpus:
            raise DataError(f"row {row}: document id {doc_id!r} is repeated", path)
        corpus[doc_id] = Document(doc_id, text)
    return corpus


def read_examples(path: Path, gold_field: str) -> tuple[dict[str, Query], Qrels, dict[str, frozenset[str]]]:
    """Queries, judgments (``gold_field`` at grade 1) and excluded ids (the ``N/A`` sentinel dropped)."""
    queries: dict[str, Query] = {}
    qrels = Qrels()
    excluded: dict[str, frozenset[str]] = {}
    for row, rec in iter_parquet(path):
        qid = as_id(rec.get("id"), "'id'", path, row, "row")
        text = rec.get("query")
        if not isinstance(text, str):
            raise DataError(f"row {row}: 'query' must be text, not {type(text).__name__}", path)
        if qid in queries:
            raise DataError(f"row {row}: query id {qid!r} is repeated", path)
        if gold_field not in rec:
            raise DataError(f"row {row}: no {gold_field!r} field (a BRIGHT example has id, query, excluded_ids, "
                            "gold_ids, gold_ids_long)", path)
        gold = _ids(rec[gold_field], gold_field, path, row)
        ex = frozenset(_ids(rec.get("excluded_ids", []), "excluded_ids", path, row)) - {NA}
        both = sorted(ex & set(gold))
        if both:  # run.py asserts this for every query
            raise DataError(f"row {row}: query {qid!r} excludes documents it judges relevant in {gold_field} "
                            f"({', '.join(both[:5])}); the official evaluation refuses such data", path)
        queries[qid] = Query(qid, text)
        for doc in gold:
            qrels.add(qid, doc, 1)
        if ex:
            excluded[qid] = ex
    if not queries:
        raise DataError("no queries", path)
    return queries, qrels, excluded


def _check_parquet() -> None:
    if importlib.util.find_spec("pyarrow") is None:
        raise HarnessError("BRIGHT's files are Parquet, which needs pyarrow: pip install 'harness-ir[parquet]'")


def load_bright_dataset(task: Any = None, query: Any = "examples", documents: Any = "short",
                        instructions: Any = "none", context: ComponentContext | None = None) -> Dataset:
    """One BRIGHT setting: ``task`` (a split), ``query`` (``examples`` or a ``*_reason`` config),
    ``documents`` (``short``, or ``long`` for the 7 StackExchange splits and pony), ``instructions``
    (``none`` or a family whose official instruction is prepended to each query, e.g. ``e5``). Its two
    files are fetched into the data folder first when missing."""
    args = variant(task, query, documents, instructions)
    _check_parquet()  # before any download
    ctx = Context.of(context)
    split, long = args["task"], args["documents"] == "long"
    name = f"bright:{split}"
    examples_path, docs_path = ctx.fetch(Task(name=name, dataset="bright", files=variant_files(args)))
    corpus = read_documents(docs_path)
    raw, qrels, excluded = read_examples(examples_path, "gold_ids_long" if long else "gold_ids")
    prefix = "" if args["instructions"] == "none" else instruction(args["instructions"], split, long=long) or ""
    queries = {qid: Query(qid, prefix + q.text, "", {"bright_query": q.text, "bright_instruction": prefix}
                          if prefix else {})
               for qid, q in raw.items()}
    unknown = sum(1 for ex in excluded.values() for d in ex if d not in corpus)
    ds = Dataset.single(name, corpus, queries, qrels, identity={
        "name": name, "repo": HUB_REPO, "revision": REVISION, "split": split, **args,
        "files": [ctx.data.file_identity(p) for p in (examples_path, docs_path)],
        "excluded": {"queries": len(excluded), "ids": sum(len(v) for v in excluded.values()),
                     "not_in_corpus": unknown}})
    ds.excluded = excluded
    ds.meta.update({"benchmark": "BRIGHT", "unknown_ids": ds.validate()})
    return ds
