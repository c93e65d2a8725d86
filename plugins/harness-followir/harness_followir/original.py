"""FollowIR's original release layout (``jhu-clsp/<x>-instructions``, the data mteb 1.x computed its
FollowIR figures on) as a two-mode dataset: ``og`` and ``changed``.

Files read, by these names (the card's ``configs`` name exactly these; the card itself is not read)::

    corpus.jsonl               _id, title, text
    queries.jsonl              _id, text, instruction_og, instruction_changed (keywords, short_query kept in meta)
    qrels_og/test.jsonl        query-id, corpus-id, score (float64 whole numbers; 0 = judged non-relevant)
    qrels_changed/test.jsonl   the same pairs, judged against the changed narrative
    top_ranked.jsonl           qid, pid: one row per (topic, pooled document)

Not read: ``qrels_*/test.tsv`` (the same judgments as TSV), ``empty_scores.json`` (what mteb 1.x handed
cross-encoders as their first stage), ``README.md``, ``.gitattributes``.

As mteb 1.x (``AbsTaskInstructionRetrieval``, tags 1.7.0 to 1.39.7) reads them, with one exception:

- topic ids are bare (no ``-og`` / ``-changed``): both modes have the same ids; a topic is kept when it is
  judged (MTEB drops queries without qrels), and must then be judged in both files and have a pool;
- each mode's query is ``text`` with that mode's narrative as its instruction (1.x:
  ``(text + " " + instruction).strip()``; the task's query format ``{text} {instruction}``);
- the pool is the topic's ``top_ranked`` rows in file order, a repeated document once (1.x tests membership),
  the same in both modes;
- p-MRR counts, per topic, the documents of ``qrels_changed`` whose grade in ``qrels_og`` differs (1.x
  ``create_qrel_diff``); a pair judged in ``qrels_changed`` only is an error (1.x fails on it with a KeyError);
- the exception: the og run is scored against ``qrels_og`` and the changed run against ``qrels_changed``.
  mteb 1.x swapped the two (``HFDataLoaderInstructions.load`` fills its og qrels from ``qrels_changed``), so
  its ``individual.original`` scores are the og run against the changed judgments; p-MRR does not depend on it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harness import ComponentContext, Context, DataError, DataFile, Dataset, Document, Qrels, Query, Run, Task
from harness.formats import as_id, iter_jsonl_objects, read_beir_qrels, read_corpus, read_queries

MODES = ("og", "changed")
#: the files of the layout the harness reads, as the repository names them
FILES = ("corpus.jsonl", "queries.jsonl", "qrels_og/test.jsonl", "qrels_changed/test.jsonl", "top_ranked.jsonl")
HUB_URL = "https://huggingface.co/datasets/{repo}/resolve/{revision}/{path}"
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def check_source(repo: Any, revision: Any) -> tuple[str, str]:
    """``(repo, revision)`` when ``repo`` is ``OWNER/NAME`` and ``revision`` a full 40-hex commit id, else
    one :class:`DataError` saying which is wrong."""
    if not isinstance(repo, str) or not _REPO.match(repo) or ".." in repo:
        raise DataError(f"followir: repo must be OWNER/NAME as the Hub spells it, not {str(repo)[:100]!r}")
    if isinstance(revision, int) and not isinstance(revision, bool) and 0 <= revision < 10**40:
        revision = str(revision).zfill(40)  # an all-digit id, read as a number by the spec parser
    if not isinstance(revision, str) or not _COMMIT.match(revision):
        raise DataError(f"followir:repo={repo}: revision must be a full 40-hex commit id (a result must name the "
                        f"exact bytes it read), not {str(revision or 'main')[:100]!r}")
    return repo, revision


def folder(repo: str, revision: str) -> str:
    """Where the files go in the data folder: the Hub datasets' place, one folder per commit."""
    return f"mteb/{repo}/{revision}"


def original_files(repo: str, revision: str) -> list[DataFile]:
    """The files one original-layout release is read from, at ``revision``. No sha256 is published for
    them (none could be verified from here): ``results.json`` records the sha256 of each file read."""
    repo, revision = check_source(repo, revision)
    return [DataFile(path=f"{folder(repo, revision)}/{p}", url=HUB_URL.format(repo=repo, revision=revision, path=p))
            for p in FILES]


def read_pools(path: Path) -> tuple[dict[str, list[str]], int]:
    """``top_ranked.jsonl``: ``{topic: [doc, ...]}`` in file order (``qid``, ``pid``: one pair per row, or a
    list of ids) and how many rows repeated a document already in its topic's pool (kept once)."""
    pools: dict[str, dict[str, None]] = {}
    repeated = 0
    for line, rec in iter_jsonl_objects(path):
        topic = as_id(rec.get("qid", rec.get("query-id")), "'qid'", path, line)
        pids = rec.get("pid", rec.get("corpus-ids"))
        pool = pools.setdefault(topic, {})
        for pid in pids if isinstance(pids, list) else [pids]:
            doc = as_id(pid, "'pid'", path, line)
            repeated += doc in pool
            pool[doc] = None
    return {t: list(p) for t, p in pools.items()}, repeated


def _whole_grades(qrels: Qrels, path: Path) -> Qrels:
    """``qrels`` with int grades; a grade that is not a whole number is a :class:`DataError` (MTEB reads
    relevance as an integer)."""
    out = Qrels()
    for q, docs in qrels.items():
        for d, g in docs.items():
            if not float(g).is_integer():
                raise DataError(f"query {q!r}, document {d!r}: score {g!r} is not a whole number (MTEB reads "
                                "relevance as an integer)", path)
            out.add(q, d, int(g))
    return out


def qrel_diff(og: Qrels, changed: Qrels, path: Path) -> dict[str, list[str]]:
    """Per topic of ``changed``, its documents whose grade in ``og`` differs (mteb 1.x ``create_qrel_diff``);
    ``path`` (the changed qrels) is named when a pair is judged in ``changed`` only."""
    diff: dict[str, list[str]] = {}
    for topic, docs in changed.items():
        og_docs = og.get(topic, {})
        for doc in docs:
            if doc not in og_docs:
                raise DataError(f"topic {topic!r}, document {doc!r} is judged here but not in qrels_og (the two "
                                "files judge the same pairs)", path)
        diff[topic] = [d for d, g in docs.items() if og_docs[d] != g]
    return diff


def _instruction(q: Query, mode: str, path: Path) -> str:
    value = q.meta.get(f"instruction_{mode}")
    if not isinstance(value, str):
        shown = "missing" if value is None else f"a {type(value).__name__}"
        raise DataError(f"query {q.id!r}: instruction_{mode} must be a string, it is {shown}", path)
    return value


def _topics(raw: dict[str, Query], qrels: dict[str, Qrels], pools: dict[str, list[str]],
            paths: dict[str, Path]) -> dict[str, dict[str, Query]]:
    """Each mode's queries: every judged topic with that mode's narrative as its instruction."""
    judged = [t for t in raw if t in qrels["og"] or t in qrels["changed"]]
    if not judged:
        raise DataError("no topic of queries.jsonl is judged in qrels_og or qrels_changed (the ids must match)",
                        paths["queries"])
    out: dict[str, dict[str, Query]] = {m: {} for m in MODES}
    for topic in judged:
        for mode in MODES:
            if topic not in qrels[mode]:
                raise DataError(f"topic {topic!r} has no judgment in qrels_{mode} (every judged topic is judged "
                                "under both narratives)", paths[mode])
        if not pools.get(topic):
            raise DataError(f"topic {topic!r} has no pool (FollowIR reranks each topic's given documents)",
                            paths["top_ranked"])
        q = raw[topic]
        meta = {k: v for k, v in q.meta.items() if k not in ("instruction_og", "instruction_changed")}
        for mode in MODES:
            out[mode][topic] = Query(topic, q.text, _instruction(q, mode, paths["queries"]), dict(meta))
    return out


def load_original(repo: str, revision: str, label: str, context: ComponentContext | None = None,
                  release: str = "") -> Dataset:
    """A release in the original layout at the full commit ``revision``, its files fetched into the data
    folder first when missing (the Hub client: ``HF_ENDPOINT``, ``HF_TOKEN``)."""
    repo, revision = check_source(repo, revision)
    ctx = Context.of(context)
    files = ctx.fetch(Task(name=label, dataset="followir", files=original_files(repo, revision)))
    paths = dict(zip(("corpus", "queries", "og", "changed", "top_ranked"), files))
    corpus: dict[str, Document] = read_corpus(paths["corpus"])
    raw = read_queries(paths["queries"])
    qrels = {m: _whole_grades(read_beir_qrels(paths[m]), paths[m]) for m in MODES}
    pools, repeated = read_pools(paths["top_ranked"])
    queries = _topics(raw, qrels, pools, paths)
    topics = list(queries["og"])
    diff = qrel_diff(qrels["og"], qrels["changed"], paths["changed"])
    source = {"repo": repo, "revision": revision, "layout": "original", "split": "test",
              **({"release": release} if release else {})}
    ds = Dataset(
        name=label,
        corpus=corpus,
        queries=queries,
        qrels={m: Qrels({t: qrels[m][t] for t in topics}) for m in MODES},
        candidates={m: Run.from_order({t: pools[t] for t in topics}) for m in MODES},
        identity={"name": label, "files": [ctx.data.file_identity(p) for p in files], **source},
        meta={"benchmark": "FollowIR", **source, "queries": len(topics),
              "qrel_diff": {t: diff.get(t, []) for t in topics},
              "unjudged_topics": len(raw) - len(topics), "repeated_pool_rows": repeated},
    )
    ds.meta["unknown_ids"] = ds.validate()
    return ds
