"""A FollowIR collection as a two-mode dataset: ``og`` and ``changed``, from either release layout.

MTEB's layout (``jhu-clsp/<x>-instructions-mteb``) keeps both runs in one query set (ids ``<topic>-og`` and
``<topic>-changed``); here each becomes a mode whose queries are keyed by the bare topic, so the two runs of
a topic are compared by id as p-MRR needs. Query text is the topic's ``text``, its instruction the narrative
of that mode (the task joins them as ``text + " " + instruction``, MTEB's
``_combine_queries_with_instruction_text``); each mode's candidates are its ``top_ranked`` pool in the
published order. ``meta["qrel_diff"]``: per topic the documents p-MRR counts. The original layout
(``jhu-clsp/<x>-instructions``, mteb 1.x's data) gives the same dataset: :mod:`harness_followir.original`.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from harness import ComponentContext, Context, DataError, Dataset, Qrels, Query, Run, load_dataset

MODES = ("og", "changed")
SUFFIX = MappingProxyType({"og": "-og", "changed": "-changed"})


def split_id(qid: str) -> tuple[str, str]:
    """``310-og`` -> ``("og", "310")``; ``310-changed`` -> ``("changed", "310")``."""
    for mode, suffix in SUFFIX.items():
        if qid.endswith(suffix) and len(qid) > len(suffix):
            return mode, qid[: -len(suffix)]
    raise DataError(f"FollowIR query id {qid!r} ends neither in -og nor in -changed")


def to_modes(ds: Dataset, name: str) -> Dataset:
    """The single-mode MTEB dataset ``ds`` split into the modes ``og`` and ``changed``."""
    (mode0,) = ds.modes
    queries: dict[str, dict[str, Query]] = {m: {} for m in MODES}
    qrels: dict[str, Qrels] = {m: Qrels() for m in MODES}
    order: dict[str, dict[str, list[str]]] = {m: {} for m in MODES}
    cand = ds.candidates.get(mode0) if ds.candidates else None
    if cand is None:
        raise DataError(f"{name}: the dataset has no top_ranked config: FollowIR reranks the given pools")
    for qid, q in ds.queries[mode0].items():
        mode, topic = split_id(qid)
        queries[mode][topic] = Query(topic, q.text, q.instruction, {**q.meta, "mteb_id": qid})
        for doc, grade in ds.qrels[mode0].get(qid, {}).items():
            qrels[mode].add(topic, doc, grade)
        order[mode][topic] = cand.doc_ids(qid)
    missing = sorted(set(queries["og"]) ^ set(queries["changed"]))
    if missing:
        raise DataError(f"{name}: topics {missing[:5]} have only one of their -og / -changed queries")
    diff = ds.meta.get("qrel_diff")
    if diff is None:
        raise DataError(f"{name}: the dataset has no qrel_diff config (the documents p-MRR counts)")
    return Dataset(
        name=name,
        corpus=ds.corpus,
        queries=queries,
        qrels=qrels,
        candidates={m: Run.from_order(order[m]) for m in MODES},
        identity={**ds.identity, "name": name},
        meta={**{k: v for k, v in ds.meta.items() if k != "unknown_ids"}, "benchmark": "FollowIR",
              "qrel_diff": {t: list(d) for t, d in diff.items()}},
    )


def load_followir_dataset(
    task: str | None = None,
    repo: str | None = None,
    revision: str | None = None,
    name: str | None = None,
    release: str | None = None,
    layout: str = "auto",
    context: ComponentContext | None = None,
    **kwargs: Any,
) -> Dataset:
    """``task=robust04|news21|core17`` (with ``release=mteb``, the default, or ``mteb1``: the pinned release),
    or any FollowIR repository ``repo`` at a full commit ``revision``. ``layout``: ``mteb`` (read with the
    core's ``mteb`` dataset, then split into modes), ``original`` (:mod:`harness_followir.original`) or
    ``auto`` (``original`` for the three ``jhu-clsp/<x>-instructions`` repositories, else ``mteb``)."""
    from .benchmarks import benchmark, release_of

    if task is not None:
        b = benchmark(task)
        rel = release_of(release)
        own_repo, own_revision = b.source(rel)
        repo, revision, label = repo or own_repo, revision or own_revision, name or b.task_name_for(rel)
    else:
        if not repo:
            raise DataError("followir: give task=robust04|news21|core17 (release=mteb|mteb1), or "
                            "repo=OWNER/NAME,revision=COMMIT")
        if release is not None:
            raise DataError("followir: release= picks a pinned release of a task=; with repo= give revision= "
                            "(and layout= when the repository is not one of FollowIR's own)")
        rel, label = "", name or repo
    if _layout(repo, layout) == "original":
        if kwargs:
            raise DataError(f"followir: the original layout takes no {', '.join(sorted(kwargs))} (one split, test)")
        from .original import load_original

        return load_original(repo, revision, label, context, release=rel)
    ds = load_dataset("builtin:mteb", Context.of(context), repo=repo, revision=revision, name=label, task=label,
                      **kwargs)
    out = to_modes(ds, label)
    out.meta["unknown_ids"] = out.validate()
    if rel:
        out.meta["release"] = rel
    return out


def _layout(repo: Any, layout: Any) -> str:
    """``original`` or ``mteb``: ``layout`` when given, else by the repository (:data:`ORIGINAL_REPOS`)."""
    from .benchmarks import ORIGINAL_REPOS

    if layout == "auto":
        return "original" if repo in ORIGINAL_REPOS else "mteb"
    if layout not in ("original", "mteb"):
        raise DataError(f"followir: layout must be auto, original or mteb, not {str(layout)[:80]!r}")
    return str(layout)
