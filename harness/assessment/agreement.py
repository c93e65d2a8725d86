"""``harness judge agreement``: how well an LLM judge agrees with the task's human assessors, on the
(query, document) pairs people judged (all of them, or a sample stratified by grade).

Pairs: every judgment of the task's qrels (in the chosen mode) whose query is among the task's queries and
whose document text is in the corpus (a judged document the data does not carry cannot be shown to a
judge: counted in ``pairs_without_text``). Sample (``--sample N``, ``--seed S``): proportional stratified
sampling by human grade: grade g gets ``N * n_g / total`` pairs, rounded down, the remainder going to the
grades with the largest fractional parts (ties: the lower grade first); within a grade, a seeded
``random.Random(S).sample`` of its pairs sorted by (query id, document id).

Figures, on the pairs the judge graded (a reply without a grade and a failed call are left out and
counted): ``kappa`` (Cohen's kappa on the grades), ``kappa_binary`` (both binarised: human grade >=
``threshold``, the task's relevance threshold; LLM grade >= ``llm_threshold``, the same unless given),
``kappa_quadratic`` (quadratic weights), ``confusion`` (rows: human grade, columns: LLM grade) and each
grade's precision and recall (the LLM's grade against the human one).
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.assessment import kappa
from harness.assessment.judging import JudgedPairs, Pair, judge_pairs
from harness.assessment.task_data import TaskData
from harness.concepts.errors import HarnessError
from harness.context import Context
from harness.results.layout import clean

AGREEMENT = "agreement.json"
AGREEMENT_PAIRS = "agreement_pairs.jsonl"


def human_pairs(data: TaskData) -> tuple[dict[int, list[Pair]], int]:
    """Human grade -> the judged pairs that can be shown to a judge (sorted), and how many judged pairs
    lack their document's text. A grade that is not a whole number is an error (the scale is TREC's)."""
    by_grade: dict[int, list[Pair]] = {}
    without_text = 0
    for qid, docs in data.qrels.items():
        if qid not in data.queries:
            continue
        for doc, grade in docs.items():
            if not float(grade).is_integer():
                raise HarnessError(f"task {data.task.name!r}: query {qid!r}, document {doc!r} has grade {grade}; "
                                   "agreement is measured on whole-number grades")
            if doc not in data.corpus:
                without_text += 1
                continue
            by_grade.setdefault(int(grade), []).append((qid, doc))
    return {g: sorted(p) for g, p in sorted(by_grade.items())}, without_text


def allocate(counts: Mapping[int, int], n: int) -> dict[int, int]:
    """Proportional allocation of ``n`` over the strata (largest remainder; ties to the lower grade)."""
    total = sum(counts.values())
    if n >= total:
        return dict(counts)
    exact = {g: n * c / total for g, c in counts.items()}
    out = {g: int(x) for g, x in exact.items()}
    for g in sorted(counts, key=lambda g: (-(exact[g] - out[g]), g))[: n - sum(out.values())]:
        out[g] += 1
    return out


def stratified_sample(by_grade: Mapping[int, Sequence[Pair]], n: int | None, seed: int) -> list[Pair]:
    """Every pair (``n`` None), or ``n`` drawn by grade as the module docstring says, sorted."""
    if n is None:
        return sorted(p for pairs in by_grade.values() for p in pairs)
    rng = random.Random(seed)
    sizes = allocate({g: len(p) for g, p in by_grade.items()}, n)
    return sorted(p for g, pairs in by_grade.items() for p in rng.sample(list(pairs), sizes[g]))


def graded(judged: JudgedPairs, pairs: Sequence[Pair]) -> tuple[list[Pair], dict[str, int]]:
    """The pairs the judge gave a whole-number grade, and why the others have none."""
    kept: list[Pair] = []
    left = {"no_grade": 0, "call_failed": 0, "dry_run": 0, "not_whole": 0}
    for pair in pairs:
        j = judged.judgments.get(pair)
        if j is not None and j.score is not None and float(j.score).is_integer():
            kept.append(pair)
            continue
        error = str((j.details if j is not None else {}).get("error", ""))
        left["call_failed" if "LLM call failed" in error else "dry_run" if "dry run" in error
             else "not_whole" if j is not None and j.score is not None else "no_grade"] += 1
    return kept, left


def figures(human: Sequence[int], llm: Sequence[int], threshold: float, llm_threshold: float) -> dict[str, Any]:
    """kappa, binary kappa, quadratic kappa, the confusion matrix and the per-grade figures."""
    labels = kappa.labels_of(human, llm)
    return {"kappa": kappa.cohen_kappa(human, llm, labels),
            "kappa_binary": kappa.cohen_kappa(kappa.binary(human, threshold), kappa.binary(llm, llm_threshold),
                                              [0, 1]),
            "kappa_quadratic": kappa.cohen_kappa(human, llm, labels, weights="quadratic"),
            "confusion": {"labels": labels, "rows": "human grade", "columns": "LLM grade",
                          "matrix": kappa.confusion(human, llm, labels)},
            "per_grade": kappa.per_grade(human, llm, labels)}


def measure_agreement(context: Context, data: TaskData, judge: str, sample: int | None = None, seed: int = 0,
                      llm_threshold: float | None = None, max_llm_failures: float = 0.0) -> tuple[dict[str, Any],
                                                                                                  JudgedPairs]:
    """Judge the chosen pairs and compare the judge's grades with the human ones (module docstring)."""
    if sample is not None and sample < 1:
        raise HarnessError(f"--sample must be a whole number >= 1, not {sample}")
    by_grade, without_text = human_pairs(data)
    if not by_grade:
        raise HarnessError(f"task {data.task.name!r}: no human-judged pair has its document's text in the corpus")
    pairs = stratified_sample(by_grade, sample, seed)
    judged = judge_pairs(context, judge, data, pairs, max_llm_failures)
    kept, left = graded(judged, pairs)
    human = [int(data.qrels[q][d]) for q, d in kept]
    llm = [int(judged.judgments[(q, d)].score) for q, d in kept]
    out: dict[str, Any] = {"status": "complete" if judged.complete else "incomplete", "n": len(kept),
                           "n_pairs": len(pairs), "without_grade": left, "threshold": data.threshold,
                           "llm_threshold": data.threshold if llm_threshold is None else float(llm_threshold),
                           "task": data.describe(), "pairs_available": sum(map(len, by_grade.values())),
                           "pairs_without_text": without_text,
                           "sample": {"size": sample, "seed": seed if sample is not None else None,
                                      "strata": {str(g): sum(1 for q, d in pairs if data.qrels[q][d] == g)
                                                 for g in by_grade},
                                      "rule": "all human-judged pairs" if sample is None else
                                      "proportional stratified by human grade, largest remainder"}}
    out.update(figures(human, llm, out["threshold"], out["llm_threshold"]) if kept else {"kappa": None})
    out.update(judge=judged.judge, usage=judged.usage, llm_failures=judged.failures)
    return out, judged


def write_agreement(folder: str | Path, result: Mapping[str, Any], judged: JudgedPairs, data: TaskData) -> Path:
    """``DIR/agreement.json`` (the figures, the judge, the usage) and ``DIR/agreement_pairs.jsonl`` (each
    pair's human and LLM grade, the reply's pattern and whether it came from the cache)."""
    out = Path(folder).expanduser()
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for (qid, doc), j in judged.judgments.items():
        rows.append(json.dumps({"query_id": qid, "doc_id": doc, "human": data.qrels[qid][doc], "llm": j.score,
                                "pattern": j.details.get("pattern"), "cached": j.details.get("cached"),
                                "error": j.details.get("error")}, sort_keys=True))
    (out / AGREEMENT_PAIRS).write_text("".join(r + "\n" for r in rows), encoding="utf-8")
    target = out / AGREEMENT
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(clean(result), indent=2) + "\n", encoding="utf-8")
    tmp.replace(target)
    return target

