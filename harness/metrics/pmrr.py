"""p-MRR (FollowIR, Weller et al. 2024): how far the documents an instruction change made
non-relevant fall between the run with the original instruction and the run with the changed one.

One implementation for every plugin that reports it (FollowIR, InfoSearch). Per counted document d of
a topic: ``R_new / R_og - 1`` if ``R_og >= R_new`` (d rose or stayed), else ``1 - R_og / R_new`` (d fell,
as the changed instruction demands); mean over the topic's documents, then over topics. A document
absent from a ranking ranks ``len(ranking) + 1``. MTEB: ``mteb/_evaluators/retrieval_metrics.py``
(``rank_score``, ``get_rank_from_dict``, ``calculate_pmrr``, embeddings-benchmark/mteb
``a905523d0111f999360b312bd4a601a0a97a0e1c``).

Ranks come from the scores by a tie rule:

- ``trec_eval`` (MTEB's current rule, PR #5241, mteb >= 2.19.5): score descending, ties by document id
  descending, as trec_eval sorts;
- ``release`` (the released FollowIR code, mteb 1.x and < 2.19.5): score descending, a stable sort, so
  tied documents keep the order of the task's candidate pool (``top_ranked``), as that code saw them;
- ``order``: the ranking's own positions (ties already broken by the component that ranked).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

TIE_RULES = ("trec_eval", "release", "order")


def pmrr_doc(r_og: int, r_new: int) -> float:
    """p-MRR of one document from its 1-based ranks: ``R_new/R_og - 1`` if ``R_og >= R_new`` (a
    document that stays scores 0), else ``1 - R_og/R_new``."""
    if r_og >= r_new:
        return r_new / r_og - 1.0
    return 1.0 - r_og / r_new


def tie_ranks(scores: Mapping[str, float], ties: str = "trec_eval",
              pool: Sequence[str] | None = None) -> dict[str, int]:
    """``{doc: 1-based rank}`` of one query's ``{doc: score}`` under the tie rule ``ties``
    (:data:`TIE_RULES`). ``pool``: the candidate order the ``release`` rule keeps ties in (documents
    not in it follow, in ``scores``' order); without it, ``scores``' own order."""
    if ties not in TIE_RULES:
        raise ValueError(f"p-MRR tie rule must be one of {', '.join(TIE_RULES)}, not {ties!r}")
    if ties == "order":
        ordered = list(scores)
    elif ties == "trec_eval":
        ordered = [d for d, _ in sorted(scores.items(), key=lambda x: (x[1], x[0]), reverse=True)]
    else:
        first = [d for d in dict.fromkeys(pool or ()) if d in scores]
        seen = set(first)
        base = first + [d for d in scores if d not in seen]
        ordered = sorted(base, key=lambda d: scores[d], reverse=True)  # stable: ties keep the pool order
    return {d: i for i, d in enumerate(ordered, 1)}


def p_mrr(
    counted: Mapping[str, Iterable[str]],
    og: Mapping[str, Mapping[str, float]],
    changed: Mapping[str, Mapping[str, float]],
    ties: str = "trec_eval",
    og_pool: Mapping[str, Sequence[str]] | None = None,
    changed_pool: Mapping[str, Sequence[str]] | None = None,
) -> tuple[float, dict[str, float]]:
    """``(p-MRR, {topic: its p-MRR})``. ``counted``: per topic the documents whose relevance the
    instruction change altered (FollowIR's ``qrel_diff``); ``og`` / ``changed``: per topic the
    ``{doc: score}`` of each run (in ranking order for ``ties="order"``). A topic missing from either
    run, or with no counted document, is skipped (MTEB warns and skips it); no topic left: ``nan``."""
    per: dict[str, float] = {}
    for topic, docs in counted.items():
        docs = list(docs)
        if topic not in og or topic not in changed or not docs:
            continue
        r_og = tie_ranks(og[topic], ties, (og_pool or {}).get(topic))
        r_new = tie_ranks(changed[topic], ties, (changed_pool or {}).get(topic))
        miss_og, miss_new = len(og[topic]) + 1, len(changed[topic]) + 1
        values = [pmrr_doc(r_og.get(d, miss_og), r_new.get(d, miss_new)) for d in docs]
        per[topic] = sum(values) / len(values)
    return (sum(per.values()) / len(per) if per else math.nan), per


__all__ = ["TIE_RULES", "p_mrr", "pmrr_doc", "tie_ranks"]
