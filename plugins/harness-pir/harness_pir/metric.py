"""p-Recall@k and its companions (PIR, Eq. 1; the authors' evaluation code).

``success(q, k)`` is 1 when *any* gold document of ``q`` is in its top ``k`` (a hit, not the
fraction of golds retrieved). p-Recall@k averages successes over a root's perspective queries, then
over roots (every root weighs the same). A root with one query is scored by ``singleton``:
``"mean"`` (default: its own success), ``"zero"`` (0.0, as the authors' code that produced Table 2)
or ``"drop"`` (left out).

Aggregate keys for ``cutoff=k`` (values in [0, 1]):

- ``p-recall@k``: the metric (``p-recall@k:zero`` / ``p-recall@k:drop`` under those singleton
  policies, so several policies can be reported side by side);
- ``hit@k``: plain hit Recall@k over all perspective queries (the code's "overall");
- ``hit@k/<label>``: hit Recall@k over the queries of one label; ``hit@k/label-macro``: their mean;
- ``root-hit@k``: hit Recall@k of the root queries (one per root; gold = union of its queries');
- ``root-share@k/<label>``: perspective bias (Tables 3 and 10): among root queries that succeed,
  the share whose first gold document in the top k is a gold of a ``<label>`` query (a document
  gold for several labels of its root splits its unit equally). The shares sum to 1.

The ``hit@k/*`` and ``root-share@k/*`` keys appear with ``details=True`` (default). The root keys
need the dataset's ``root`` mode (the PIR loaders add it). Counts (roots, singletons, root
successes) are in the metric's ``config()`` in results.json.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness import HarnessError, MetricInput, MetricResult, Qrels

SINGLETON_POLICIES = ("mean", "zero", "drop")
PERSPECTIVE_MODE = "default"
ROOT_MODE = "root"


def hit(ranking: list[str], gold: set[str], k: int) -> float:
    return float(any(d in gold for d in ranking[:k]))


def p_recall(hits: Mapping[str, float], root_of: Mapping[str, str], singleton: str = "mean") -> float:
    """Mean over roots of the mean hit of the root's queries (``hits``: qid -> 0/1)."""
    if singleton not in SINGLETON_POLICIES:
        raise HarnessError(f"p-recall: singleton must be one of {SINGLETON_POLICIES}, not {singleton!r}")
    groups: dict[str, list[float]] = {}
    for q, h in hits.items():
        groups.setdefault(root_of.get(q, q), []).append(h)
    scores = []
    for values in groups.values():
        if len(values) > 1 or singleton == "mean":
            scores.append(sum(values) / len(values))
        elif singleton == "zero":
            scores.append(0.0)
    return sum(scores) / len(scores) if scores else float("nan")


class PRecall:
    """The ``p-recall`` metric family (``p-recall@5`` -> ``cutoff=5``)."""

    per_mode = False

    def __init__(self, cutoff: int = 5, singleton: str = "mean", details: bool = True):
        if isinstance(cutoff, bool) or not isinstance(cutoff, int) or cutoff < 1:
            raise HarnessError(f"p-recall: cutoff must be a positive integer, not {cutoff!r}")
        if singleton not in SINGLETON_POLICIES:
            raise HarnessError(f"p-recall: singleton must be one of {', '.join(SINGLETON_POLICIES)}, "
                               f"not {singleton!r}")
        self.cutoff = cutoff
        self.singleton = singleton
        self.details = bool(details)
        self.key = f"p-recall@{cutoff}" + ("" if singleton == "mean" else f":{singleton}")
        self.names = [self.key, f"hit@{cutoff}", f"root-hit@{cutoff}"]
        self._counts: dict[str, Any] = {}

    def config(self) -> dict[str, Any]:
        return {"cutoff": self.cutoff, "singleton": self.singleton, "details": self.details,
                "success": "any gold document in the top k", **self._counts}

    def compute(self, inp: MetricInput) -> MetricResult:
        k = self.cutoff
        mode = PERSPECTIVE_MODE if PERSPECTIVE_MODE in inp.runs else next(
            (m for m in inp.runs if m != ROOT_MODE), None)
        if mode is None:
            raise HarnessError("p-recall: no run of perspective queries")
        run, qrels = inp.runs[mode], inp.qrels.get(mode) or Qrels()
        queries = inp.dataset.queries.get(mode, {})
        qids = [q for q in queries if qrels.relevant(q)] or [q for q in run if qrels.relevant(q)]
        hits: dict[str, float] = {}
        root_of: dict[str, str] = {}
        label_of: dict[str, str] = {}
        for q in qids:
            hits[q] = hit(run.doc_ids(q), qrels.relevant(q), k)
            meta = queries[q].meta if q in queries else {}
            root_of[q] = str(meta.get("root_id", meta.get("root", q)))
            label_of[q] = str(meta.get("label", ""))
        agg: dict[str, float] = {}
        agg[self.key] = p_recall(hits, root_of, self.singleton)
        agg[f"hit@{k}"] = sum(hits.values()) / len(hits) if hits else float("nan")
        labels = list(dict.fromkeys(label_of[q] for q in qids if label_of[q]))
        if self.details and labels:
            per_label = {}
            for lab in labels:
                vals = [hits[q] for q in qids if label_of[q] == lab]
                per_label[lab] = sum(vals) / len(vals)
                agg[f"hit@{k}/{lab}"] = per_label[lab]
            agg[f"hit@{k}/label-macro"] = sum(per_label.values()) / len(per_label)
        per_query = {q: {f"hit@{k}": h} for q, h in hits.items()}
        groups: dict[str, list[str]] = {}
        for q in qids:
            groups.setdefault(root_of[q], []).append(q)
        self._counts = {"queries": len(qids), "roots": len(groups),
                        "singleton_roots": sum(1 for g in groups.values() if len(g) == 1)}
        if ROOT_MODE in inp.runs:
            self._root_metrics(inp, groups, label_of, labels, qrels, agg, per_query)
        self.names = list(agg)
        return MetricResult(agg, per_query)

    def _root_metrics(self, inp: MetricInput, groups: dict[str, list[str]], label_of: dict[str, str],
                      labels: list[str], qrels: Qrels, agg: dict[str, float],
                      per_query: dict[str, dict[str, float]]) -> None:
        k = self.cutoff
        run, rqrels = inp.runs[ROOT_MODE], inp.qrels.get(ROOT_MODE) or Qrels()
        roots = inp.dataset.queries.get(ROOT_MODE, {})
        rids = [r for r in roots if rqrels.relevant(r)] or [r for r in run if rqrels.relevant(r)]
        shares = dict.fromkeys(labels, 0.0)
        successes = 0
        root_hits = []
        for r in rids:
            gold = rqrels.relevant(r)
            ranking = run.doc_ids(r)[:k]
            first = next((d for d in ranking if d in gold), None)
            root_hits.append(float(first is not None))
            per_query.setdefault(r, {})[f"root-hit@{k}"] = root_hits[-1]
            if first is None:
                continue
            successes += 1
            members = groups.get(r) or (list(roots[r].meta.get("members", ())) if r in roots else [])
            doc_labels = list(dict.fromkeys(label_of[q] for q in members
                                            if q in label_of and first in qrels.relevant(q)))
            if not doc_labels:  # the gold doc's perspective query was not evaluated (e.g. --limit)
                doc_labels = list(dict.fromkeys(label_of[q] for q in label_of if first in qrels.relevant(q)))
            for lab in doc_labels:
                shares[lab] = shares.get(lab, 0.0) + 1.0 / len(doc_labels)
        agg[f"root-hit@{k}"] = sum(root_hits) / len(root_hits) if root_hits else float("nan")
        if self.details:
            for lab, v in shares.items():
                agg[f"root-share@{k}/{lab}"] = v / successes if successes else float("nan")
        self._counts.update({"root_queries": len(rids), "root_successes": successes})
