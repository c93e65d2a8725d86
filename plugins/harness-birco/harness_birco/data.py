"""BIRCO datasets: the released pickles read through :mod:`harness_birco.unpickler` (no code runs).

A pickle is ``{"query": {qid: text}, "corpus": {cid: text}, "qrel": {qid: {cid: relevance}}}``; a
query's candidate pool is the keys of ``qrel[qid]`` (zeros included). Relevance is binary (ArguAna, WTB,
RELIC), 0/1/2 (Clinical-Trial) or fractional (DORIS-MAE) and is kept as given.

Each query carries its task's objective (App. B, :mod:`harness_birco.objectives`) in ``instruction``
(tasks form the query text as ``{text}``, so only the +O protocols see it) and in ``meta["objective"]``;
the dataset's ``meta`` holds it too. ``candidates`` is the authors' E5-large-v2 order of each pool
(``e5_rank.pickle``, test sets), checked to be a permutation of the pool; dev sets have no E5 ranking,
so their candidates are the pool in file order.
"""

from __future__ import annotations

from typing import Any

from harness import ComponentContext, Context, DataError, Dataset, Document, Qrels, Query, Run

from . import TASKS
from .objectives import OBJECTIVES
from .unpickler import load


def _id(v: Any, what: str, path: Any) -> str:
    """A query or document id (``str``, or an ``int`` written as ``str``)."""
    if type(v) is str:
        return v
    if type(v) is int:
        return str(v)
    raise DataError(f"{what}: expected a str (or int) id, got {type(v).__name__}", path)


def _grade(v: Any, where: str, path: Any) -> float | int:
    """A relevance grade: an ``int`` (``bool`` as 0/1) or ``float``, kept as given."""
    if type(v) is bool:
        return int(v)
    if type(v) in (int, float):
        return v
    raise DataError(f"{where}: expected a number as relevance, got {type(v).__name__}", path)


def _mapping(v: Any, where: str, expected: str, path: Any) -> dict:
    if not isinstance(v, dict):
        raise DataError(f"{where}: expected a dict {expected}, got {type(v).__name__}", path)
    return v


def _texts(raw: dict, key: str, path: Any) -> dict[str, str]:
    out = {}
    for k, v in _mapping(raw[key], repr(key), "{id: text}", path).items():
        i = _id(k, f"{key!r} key", path)
        if type(v) is not str:
            raise DataError(f"{key!r}[{i!r}]: expected a str text, got {type(v).__name__}", path)
        out[i] = v
    return out


def read_set(path: Any) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, float | int]]]:
    """``(queries, corpus, qrel)`` of one BIRCO pickle, ids as ``str``; a wrong shape is a :class:`DataError`."""
    raw = load(path)
    if not isinstance(raw, dict) or not {"query", "corpus", "qrel"} <= set(raw):
        got = (f"a dict without {sorted({'query', 'corpus', 'qrel'} - set(raw))}" if isinstance(raw, dict)
               else f"a {type(raw).__name__}")
        raise DataError(f"not a BIRCO pickle: expected a dict with keys 'query', 'corpus', 'qrel', got {got}", path)
    queries = _texts(raw, "query", path)
    corpus = _texts(raw, "corpus", path)
    qrel: dict[str, dict[str, float | int]] = {}
    for q, pool in _mapping(raw["qrel"], "'qrel'", "{qid: {cid: relevance}}", path).items():
        qid = _id(q, "'qrel' key", path)
        where = f"'qrel'[{qid!r}]"
        qrel[qid] = {_id(d, f"{where} key", path): _grade(g, f"{where}[{d!r}]", path)
                     for d, g in _mapping(pool, where, "{cid: relevance}", path).items()}
    return queries, corpus, qrel


def read_ranks(path: Any) -> dict[str, list[str]]:
    """A ranking in BIRCO's submission format, ``{qid: [cid, ...]}`` best first."""
    raw = load(path)
    if not isinstance(raw, dict):
        raise DataError(f"not a BIRCO ranking: expected a dict {{qid: [cid, ...]}}, got {type(raw).__name__}", path)
    out = {}
    for q, docs in raw.items():
        qid = _id(q, "ranking key", path)
        if not isinstance(docs, list | tuple):
            raise DataError(f"ranking of query {qid!r}: expected a list of document ids, got {type(docs).__name__}",
                            path)
        out[qid] = [_id(d, f"ranking of query {qid!r}", path) for d in docs]
    for q, docs in out.items():
        if len(set(docs)) != len(docs):
            raise DataError(f"ranking of query {q!r} has {len(docs) - len(set(docs))} repeated document ids "
                            "(a ranking must be a permutation of the pool)", path)
    return out


def check_permutation(qid: str, ranking: list[str], pool: dict[str, Any], where: object = None) -> None:
    """A ranking must hold every pool document exactly once (BIRCO's requirement)."""
    if len(ranking) != len(pool) or set(ranking) != set(pool):
        missing = [d for d in pool if d not in set(ranking)]
        extra = [d for d in dict.fromkeys(ranking) if d not in pool]
        dup = len(ranking) - len(set(ranking))
        raise DataError(f"ranking of query {qid!r} is not a permutation of its pool of {len(pool)}: "
                        f"{len(missing)} missing (e.g. {missing[:3]}), {len(extra)} not in the pool "
                        f"(e.g. {extra[:3]}), {dup} repeated", where)


def load_birco(task: str = "arguana", split: str = "test", path: str | None = None,
               e5: str | None = None, context: ComponentContext | None = None) -> Dataset:
    """The BIRCO dataset ``task`` (``arguana``, ``clinical-trial``, ``relic``, ``wtb``, ``doris-mae``),
    ``split`` ``test`` (with the E5 order as candidates) or ``dev``. ``path``/``e5`` override the files
    (relative to the data folder unless absolute)."""
    if task not in TASKS:
        raise DataError(f"unknown BIRCO task {task!r}; choose one of {', '.join(TASKS)}")
    if split not in ("test", "dev"):
        raise DataError(f"BIRCO split must be 'test' or 'dev', not {split!r}")
    data = Context.of(context).data
    set_path = data.resolve(path or f"birco/{task}/{split}_set.pickle")
    queries, corpus, qrel = read_set(set_path)
    identity: dict[str, Any] = {"files": [data.file_identity(set_path)], "task": task, "split": split}
    missing = [q for q in queries if q not in qrel]
    if missing:
        raise DataError(f"{len(missing)} queries have no pool in 'qrel' (e.g. {missing[:3]})", set_path)

    if split == "test" or e5:
        e5_path = data.resolve(e5 or f"birco/{task}/e5_rank.pickle")
        ranks = read_ranks(e5_path)
        identity["files"].append(data.file_identity(e5_path))
        order = {}
        for q in queries:
            if q not in ranks:
                raise DataError(f"query {q!r} has no E5 ranking", e5_path)
            check_permutation(q, ranks[q], qrel[q], e5_path)
            order[q] = ranks[q]
        identity["initial_order"] = "e5-large-v2 (authors' e5_rank.pickle)"
    else:
        order = {q: list(qrel[q]) for q in queries}
        identity["initial_order"] = "pool order of the file (no E5 ranking for dev sets)"

    objective = OBJECTIVES[task]
    qs = {q: Query(q, text, instruction=objective, meta={"task": task, "objective": objective,
                                                          "pool_size": len(qrel[q])})
          for q, text in queries.items()}
    docs = {d: Document(d, text) for d, text in corpus.items()}
    unknown = sorted({d for pool in qrel.values() for d in pool if d not in docs})
    if unknown:
        raise DataError(f"{len(unknown)} pool documents are not in the corpus (e.g. {unknown[:3]})", set_path)
    ds = Dataset.single(f"birco:{task}" + ("" if split == "test" else f":{split}"), docs, qs, Qrels(qrel),
                        candidates=Run.from_order(order, name="e5" if split == "test" else "pool"),
                        identity=identity)
    ds.meta = {"task": task, "split": split, "objective": objective,
               "relevance": "fractional" if task == "doris-mae" else ("0/1/2" if task == "clinical-trial"
                                                                      else "binary")}
    return ds
