"""Reading one InfoSearch dimension in the hub layout into a three-mode :class:`~harness.Dataset`.

Layout (FollowIR family; ``jianqunZ/<Dim>-v1`` on the Hugging Face hub)::

    corpus.jsonl                 _id, title, text
    queries.jsonl                _id, text, instruction_og, instruction_changed, instruction_reversed, ...
    qrels_og/test.jsonl          query-id, corpus-id, score
    qrels_changed/test.jsonl
    qrels_reversed/test.jsonl
    top_ranked.jsonl             qid, pid (a list of doc ids, or one per line)   [optional; not on the hub]

Each table may instead be gzipped JSONL or a Parquet export: ``corpus.parquet``, a ``corpus/``
folder of ``*.parquet`` shards, ``qrels_og/test.parquet`` or ``qrels_og/test-*.parquet``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from harness import ComponentContext, Context, DataError, Dataset, Document, Qrels, Query, Run
from harness.formats import as_id, iter_jsonl_objects, iter_parquet, read_beir_qrels, read_corpus, read_queries

from .layout import MODES, qrels_files, shards

_INSTRUCTION_FIELDS = tuple(f"instruction_{m}" for m in MODES)


def _records(path: Path):
    if path.name.endswith(".parquet"):
        return iter_parquet(path), "row"
    return iter_jsonl_objects(path), "line"


def read_top_ranked(path: Path) -> dict[str, list[str]]:
    """``top_ranked``: ``{"qid": ..., "pid": [...]}`` per query, or one ``(qid, pid)`` pair per record."""
    out: dict[str, list[str]] = {}
    records, unit = _records(path)
    for loc, rec in records:
        qid = as_id(rec.get("qid", rec.get("query-id")), "'qid'", path, loc, unit)
        pids = rec.get("pid", rec.get("corpus-id"))
        pids = pids if isinstance(pids, list) else [pids]
        lst = out.setdefault(qid, [])
        lst.extend(as_id(p, "'pid'", path, loc, unit) for p in pids)
    return out


def load_infosearch_dataset(
    path: str | os.PathLike[str] = "infosearch/Language-v1",
    name: str | None = None,
    split: str = "test",
    context: ComponentContext | None = None,
    repo: str | None = None,
    revision: str | None = None,
) -> Dataset:
    """One InfoSearch dimension: modes ``og``, ``changed``, ``reversed`` over one corpus.

    Each mode's queries keep the core query in ``text`` and that mode's instruction
    (``instruction_og`` / ``_changed`` / ``_reversed``) in ``instruction``; the task's query format
    ``"{text} {instruction}"`` joins them as the official code does. ``meta["group"]`` is the core
    query text (the variants Robustness@10 takes the minimum over). The query set is every query
    that has judgments in any mode (the same ids in every mode). ``top_ranked``, when present,
    becomes every mode's candidate list; without it (the hub's layout) the task retrieves over the
    corpus, as the official code does. ``repo`` and ``revision`` (where the files were fetched from)
    go into the dataset identity beside each file's sha256 and size.
    """
    data = Context.of(context).data
    folder = data.resolve(path)
    if not folder.is_dir():
        raise DataError(f"an InfoSearch dataset is a folder (corpus.jsonl, queries.jsonl, qrels_og/...): {folder}")
    label = name or folder.name
    files: list[Path] = []
    corpus, raw_queries, qrels, sources = _read_tables(folder, split, files)
    queries = _mode_queries(folder, raw_queries, qrels, label, sources)
    candidates = _candidates(folder, queries["og"], files)
    ds = Dataset(
        name=label,
        corpus=corpus,
        queries=queries,
        qrels=qrels,
        candidates=candidates,
        identity={"name": label, "files": [data.file_identity(p) for p in files], "split": split,
                  **({"repo": repo} if repo else {}), **({"revision": revision} if revision else {})},
        meta={"benchmark": "InfoSearch", "folder": str(folder)},
    )
    ds.meta["unknown_ids"] = ds.validate()
    return ds


def _need(folder: Path, found: list[Path], what: str, files: list[Path]) -> list[Path]:
    """The files of a table, added to ``files``; none is an error."""
    if not found:
        raise DataError(f"{folder}: no {what} table (looked for {what}.jsonl, .jsonl.gz, .parquet, "
                        f"{what}/*.parquet)")
    files.extend(found)
    return found


def _read_tables(folder: Path, split: str, files: list[Path]
                 ) -> tuple[dict[str, Document], dict[str, Query], dict[str, Qrels], dict[str, Path]]:
    """The corpus, the raw queries, each mode's qrels of ``split`` and the file each query came from,
    their files added to ``files``."""
    corpus: dict[str, Document] = {}
    for p in _need(folder, shards(folder, "corpus"), "corpus", files):
        corpus.update(read_corpus(p))
    raw_queries: dict[str, Query] = {}
    sources: dict[str, Path] = {}
    for p in _need(folder, shards(folder, "queries"), "queries", files):
        shard = read_queries(p)
        raw_queries.update(shard)
        sources.update(dict.fromkeys(shard, p))
    qrels: dict[str, Qrels] = {}
    for mode in MODES:
        merged = Qrels()
        for p in _need(folder, qrels_files(folder, mode, split), f"qrels_{mode}/{split}", files):
            for q, docs in read_beir_qrels(p).items():
                for d, g in docs.items():
                    merged.add(q, d, g)
        qrels[mode] = merged
    return corpus, raw_queries, qrels, sources


def _mode_queries(folder: Path, raw_queries: dict[str, Query], qrels: dict[str, Qrels], label: str,
                  sources: dict[str, Path]) -> dict[str, dict[str, Query]]:
    """Each mode's queries: the judged ones (all when none is judged), each with that mode's instruction;
    a query lacking an instruction field is an error naming the file it came from (``sources``)."""
    judged = {q for r in qrels.values() for q in r}
    ids = [q for q in raw_queries if q in judged] or list(raw_queries)
    if not ids:
        raise DataError(f"{folder}: the query set is empty")
    queries: dict[str, dict[str, Query]] = {m: {} for m in MODES}
    for qid in ids:
        q = raw_queries[qid]
        missing = [f for f in _INSTRUCTION_FIELDS[1:] if f not in q.meta]
        if missing:
            raise DataError(f"query {qid!r} lacks {', '.join(missing)} (an InfoSearch query has "
                            f"{', '.join(_INSTRUCTION_FIELDS)})", sources[qid])
        meta: dict[str, Any] = {k: v for k, v in q.meta.items() if k not in _INSTRUCTION_FIELDS}
        meta.setdefault("group", q.text)
        meta["dimension"] = label
        for mode in MODES:
            if mode == "og":
                instruction = q.meta.get("instruction_og") or q.instruction
            else:
                instruction = q.meta[f"instruction_{mode}"]
            queries[mode][qid] = Query(qid, q.text, str(instruction or ""), dict(meta))
    return queries


def _candidates(folder: Path, og_queries: dict[str, Query], files: list[Path]) -> dict[str, Run] | None:
    """Every mode's candidate list from ``top_ranked`` (its files added to ``files``), or None without it."""
    top = shards(folder, "top_ranked")
    if not top:
        return None
    files.extend(top)
    order: dict[str, list[str]] = {}
    for p in top:
        for q, pids in read_top_ranked(p).items():
            order.setdefault(q, []).extend(pids)
    cand = Run.from_order({q: v for q, v in order.items() if q in og_queries})
    return {m: Run(dict(cand.items())) for m in MODES}
