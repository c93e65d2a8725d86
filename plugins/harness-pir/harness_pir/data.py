"""PIR loaders: the authors' demo JSON and the hub release in BEIR format.

Both give a :class:`harness.Dataset` with two modes:

- ``default``: the perspective queries. Query ids are the release's (the demo's list index); the
  text is the full perspective query; ``meta`` holds ``root`` (the root query text), ``root_id``,
  ``perspective`` (the perspective string), ``label`` (support / undermine / left / ...) and
  ``pir_task``. Qrels: the query's gold documents (grade 1).
- ``root`` (unless ``root_queries=False``): one query per root, its text the root query, its gold
  set the union of its perspective queries' golds. A root query's id is the id of the first
  perspective query of that root (``root_id``), so ``--limit N`` keeps the roots of the first N
  perspective queries.

Roots are grouped by the exact root text, as the authors' evaluation does. Queries are keyed by id,
never by text: identical query texts (Perspectrum, AllSides) keep their own gold sets.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness import ComponentContext, Context, DataError, Dataset, Document, Qrels, Query

PERSPECTIVE_MODE = "default"
ROOT_MODE = "root"
TASK_NAMES = ("perspectrum", "agnews", "story", "ambigqa", "allsides", "exfever")
DEMO_FIELDS = ("corpus", "queries", "source_queries", "perspectives", "key_ref", "query_labels")

#: label recovery for the hub release, as the authors' process_hugginface_version.py does it:
#: (default label, {substring of the perspective: label}); the last matching substring wins.
HUB_LABELS: Mapping[str, tuple[str, dict[str, str]]] = MappingProxyType({
    "ambigqa": ("perspective", {"perspective": "perspective"}),
    "story": ("analogy", {"entities": "entity", "analogy": "analogy"}),
    "agnews": ("subtopic", {"relates to": "subtopic", "happened in": "location"}),
    "allsides": ("left", {"left": "left", "right": "right", "center": "center"}),
    "perspectrum": ("support", {"support": "support", "oppose": "undermine", "relates to": "general"}),
    "exfever": ("NOT ENOUGH INFO", {"supports": "SUPPORT", "refutes": "REFUTE", "no information": "NOT ENOUGH INFO"}),
})

_DEMO_CACHE: dict[tuple[str, int, int], dict[str, Any]] = {}


def _read_demo(path: Path) -> dict[str, Any]:
    st = path.stat()
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _DEMO_CACHE:
        try:
            with open(path, encoding="utf-8") as f:
                raw = json.load(f)
        except (OSError, ValueError) as exc:
            raise DataError(f"cannot read the PIR demo JSON: {exc}", path) from exc
        if not isinstance(raw, dict):
            raise DataError("expected a JSON object {task: {...}}", path)
        _DEMO_CACHE.clear()
        _DEMO_CACHE[key] = raw
    return _DEMO_CACHE[key]


def build_dataset(
    name: str,
    task: str,
    corpus: Mapping[str, Document],
    rows: Sequence[dict[str, Any]],
    identity: dict[str, Any],
    root_queries: bool = True,
) -> Dataset:
    """A PIR dataset from rows ``{id, text, root, perspective, label, gold: [doc ids]}`` (in order)."""
    queries: dict[str, Query] = {}
    qrels = Qrels()
    root_of: dict[str, str] = {}  # root text -> root id (first member's id)
    members: dict[str, list[str]] = {}
    for row in rows:
        qid = row["id"]
        if qid in queries:
            raise DataError(f"{name}: query id {qid!r} repeated")
        rid = root_of.setdefault(row["root"], qid)
        members.setdefault(rid, []).append(qid)
        queries[qid] = Query(qid, row["text"], meta={
            "root": row["root"], "root_id": rid, "perspective": row["perspective"], "label": row["label"],
            "pir_task": task})
        for d in row["gold"]:
            qrels.add(qid, d, 1)
    modes = {PERSPECTIVE_MODE: queries}
    all_qrels = {PERSPECTIVE_MODE: qrels}
    if root_queries:
        roots: dict[str, Query] = {}
        root_qrels = Qrels()
        for text, rid in root_of.items():
            roots[rid] = Query(rid, text, meta={"root": text, "root_id": rid, "perspective": "", "label": "",
                                                "pir_task": task, "kind": "root", "members": members[rid]})
            for qid in members[rid]:
                for d in qrels.get(qid, {}):
                    root_qrels.add(rid, d, 1)
        modes[ROOT_MODE] = roots
        all_qrels[ROOT_MODE] = root_qrels
    labels = list(dict.fromkeys(q.meta["label"] for q in queries.values()))
    ds = Dataset(name=name, corpus=dict(corpus), queries=modes, qrels=all_qrels, identity=identity,
                 meta={"pir_task": task, "labels": labels, "roots": len(root_of),
                       "singleton_roots": sum(1 for m in members.values() if len(m) == 1)})
    ds.meta["unknown_ids"] = ds.validate()
    return ds


def _gold_list(value: Any, where: str) -> list[str]:
    if isinstance(value, bool) or value is None:
        raise DataError(f"{where}: bad gold reference {value!r}")
    if isinstance(value, (int, str)):  # the authors' evaluation also accepts a bare index
        return [str(value)]
    return [str(v) for v in value]


def load_demo_dataset(
    task: str,
    path: str | os.PathLike[str] = "pir/demo_pir_dataset.json",
    root_queries: bool = True,
    name: str | None = None,
    context: ComponentContext | None = None,
) -> Dataset:
    """One task of the demo release ``{task: {corpus, queries, source_queries, perspectives, key_ref,
    query_labels}}``: documents and queries are keyed by their list index (``"0"``, ``"1"``, ...),
    ``key_ref[str(i)]`` lists query ``i``'s gold document indices."""
    data = Context.of(context).data
    full = data.resolve(path)
    raw = _read_demo(full)
    if task not in raw:
        raise DataError(f"no task {task!r} in the PIR demo file; it has: {', '.join(raw)}", full)
    part = raw[task]
    missing = [f for f in DEMO_FIELDS if f not in part]
    if missing:
        raise DataError(f"task {task!r} lacks {missing}", full)
    n = len(part["queries"])
    for f in ("source_queries", "perspectives", "query_labels"):
        if len(part[f]) != n:
            raise DataError(f"task {task!r}: {f} has {len(part[f])} entries, queries has {n}", full)
    corpus = {str(i): Document(str(i), text) for i, text in enumerate(part["corpus"])}
    key_ref = part["key_ref"]
    rows = []
    for i in range(n):
        if str(i) not in key_ref:
            raise DataError(f"task {task!r}: key_ref has no entry for query {i}", full)
        rows.append({"id": str(i), "text": part["queries"][i], "root": part["source_queries"][i],
                     "perspective": part["perspectives"][i], "label": part["query_labels"][i],
                     "gold": _gold_list(key_ref[str(i)], f"task {task!r}, query {i}")})
    label = name or f"pir:{task}"
    identity = {"name": label, "files": [data.file_identity(full)], "release": "demo", "task": task}
    return build_dataset(label, task, corpus, rows, identity, root_queries)


def hub_label(task: str | None, perspective: str) -> str:
    """The label the authors' hub conversion script derives from a perspective string."""
    if task not in HUB_LABELS:
        return "none"
    label, rules = HUB_LABELS[task]
    for key, value in rules.items():
        if key in perspective:
            label = value
    return label


def _hub_meta(query: Query, path: Path) -> dict[str, Any]:
    meta = query.meta.get("meta", {})
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except ValueError as exc:
            raise DataError(f"query {query.id!r}: 'meta' is not JSON ({exc})", path) from exc
    if not isinstance(meta, dict) or "src_query" not in meta or "perspective" not in meta:
        raise DataError(f"query {query.id!r}: 'meta' must hold src_query and perspective, got {meta!r}", path)
    return meta


def load_beir_dataset(
    path: str | os.PathLike[str],
    task: str | None = None,
    split: str = "test",
    root_queries: bool = True,
    name: str | None = None,
    context: ComponentContext | None = None,
) -> Dataset:
    """The hub release (``trumancai/perspective-information-retrieval-<task>``) as a BEIR folder:
    ``corpus.jsonl``, ``queries.jsonl`` (``meta``: JSON with ``src_query`` and ``perspective``) and
    ``qrels/<split>.jsonl`` (or ``.tsv``); relevant means score >= 1. ``task`` (guessed from the
    folder name when omitted) picks the label rules of the authors' conversion script."""
    from harness.formats import find_table, read_beir_qrels, read_corpus, read_queries

    data = Context.of(context).data
    folder = data.resolve(path)
    if task is None:
        task = next((t for t in TASK_NAMES if t in folder.name.lower()), None)
    corpus_path, queries_path = find_table(folder, "corpus"), find_table(folder, "queries")
    qrels_path = find_table(folder / "qrels", split)
    corpus = read_corpus(corpus_path)
    raw_queries = read_queries(queries_path)
    qrels = read_beir_qrels(qrels_path)
    rows = []
    for qid, q in raw_queries.items():
        gold = sorted(qrels.relevant(qid), key=lambda d: (len(d), d))
        if not gold:
            continue
        meta = _hub_meta(q, queries_path)
        rows.append({"id": qid, "text": q.text, "root": str(meta["src_query"]),
                     "perspective": str(meta["perspective"]), "label": hub_label(task, str(meta["perspective"])),
                     "gold": gold})
    if not rows:
        raise DataError(f"no query of {queries_path} has relevant documents in {qrels_path}")
    label = name or f"pir-beir:{task or folder.name}"
    identity = {"name": label, "files": [data.file_identity(p) for p in (corpus_path, queries_path, qrels_path)],
                "release": "hub", "task": task, "split": split}
    return build_dataset(label, task or "", corpus, rows, identity, root_queries)
