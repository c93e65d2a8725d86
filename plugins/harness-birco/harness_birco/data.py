"""BIRCO datasets: the released pickles read through the restricted unpickler.

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

from harness.data import file_identity, resolve
from harness.dataset import Dataset
from harness.document import Document
from harness.errors import DataError
from harness.qrels import Qrels
from harness.query import Query
from harness.run import Run

from . import TASKS
from .objectives import OBJECTIVES
from .unpickler import load, plain


def _grade(v: Any) -> float | int:
    v = plain(v)
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    f = float(v)
    return f


def read_set(path: Any) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, float | int]]]:
    """``(queries, corpus, qrel)`` of one BIRCO pickle, ids as ``str``."""
    raw = load(path)
    if not isinstance(raw, dict) or not {"query", "corpus", "qrel"} <= set(raw):
        raise DataError("not a BIRCO pickle: expected a dict with keys 'query', 'corpus', 'qrel'", path)
    queries = {str(k): str(v) for k, v in raw["query"].items()}
    corpus = {str(k): str(v) for k, v in raw["corpus"].items()}
    qrel = {str(q): {str(d): _grade(g) for d, g in pool.items()} for q, pool in raw["qrel"].items()}
    return queries, corpus, qrel


def read_ranks(path: Any) -> dict[str, list[str]]:
    """A ranking in BIRCO's submission format, ``{qid: [cid, ...]}`` best first."""
    raw = load(path)
    if not isinstance(raw, dict) or not all(isinstance(v, list | tuple) for v in raw.values()):
        raise DataError("not a BIRCO ranking: expected {qid: [cid, ...]}", path)
    out = {str(q): [str(d) for d in docs] for q, docs in raw.items()}
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
               e5: str | None = None) -> Dataset:
    """The BIRCO dataset ``task`` (``arguana``, ``clinical-trial``, ``relic``, ``wtb``, ``doris-mae``),
    ``split`` ``test`` (with the E5 order as candidates) or ``dev``. ``path``/``e5`` override the files
    (relative to the data folder unless absolute)."""
    if task not in TASKS:
        raise DataError(f"unknown BIRCO task {task!r}; choose one of {', '.join(TASKS)}")
    if split not in ("test", "dev"):
        raise DataError(f"BIRCO split must be 'test' or 'dev', not {split!r}")
    set_path = resolve(path or f"birco/{task}/{split}_set.pickle")
    queries, corpus, qrel = read_set(set_path)
    identity: dict[str, Any] = {"files": [file_identity(set_path)], "task": task, "split": split}
    missing = [q for q in queries if q not in qrel]
    if missing:
        raise DataError(f"{len(missing)} queries have no pool in 'qrel' (e.g. {missing[:3]})", set_path)

    if split == "test" or e5:
        e5_path = resolve(e5 or f"birco/{task}/e5_rank.pickle")
        ranks = read_ranks(e5_path)
        identity["files"].append(file_identity(e5_path))
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
