"""``harness judge fill``: the holes in a task's qrels that given runs expose, filled by an LLM judge.

The pairs: the union over the results folders' final runs of each query's top ``depth`` (trec_eval's
order), for the queries the task's qrels judge (a query nobody judged is not scored by the benchmark and is
left out, counted), minus the pairs the qrels already judge; each judged once. The qrels written: every human
judgment of the task's mode unchanged, then the filled pairs; the side file ``QRELS_FILE.provenance.jsonl``
says for each filled pair which judge, model and prompt gave it (and its grade before any mapping; credentials
in a URL masked).

Grades written (``scale``): ``judge`` writes the judge's grade as it is (UMBRELA's 0-3, TREC DL's own
scale); ``binary`` writes 1 for a judge grade >= ``binary_from`` (2: UMBRELA's "has some answer") else 0,
for tasks whose people judged 0/1. A pair the judge gave no grade is not filled (a hole left, counted).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.assessment.judging import JudgedPairs, Pair, judge_pairs
from harness.assessment.task_data import TaskData
from harness.concepts.errors import HarnessError
from harness.concepts.judgment import Judgment
from harness.concepts.run import Run
from harness.context import Context
from harness.formats.qrels_file import write_qrels
from harness.metrics.hole import top_k
from harness.results.layout import clean
from harness.results.store import read_results
from harness.results.stored_runs import stored_runs
from harness.runtime.about import __version__

SCALES = ("judge", "binary")
PROVENANCE_SUFFIX = ".provenance.jsonl"


def default_scale(data: TaskData) -> str:
    """``judge`` when the people graded above 1 somewhere (a graded scale), else ``binary``."""
    return "judge" if any(g > 1 for docs in data.qrels.values() for g in docs.values()) else "binary"


def task_runs(data: TaskData, folders: Sequence[str]) -> dict[str, Run]:
    """Folder -> its final run of the task's mode (read inside the folder); a folder of another task, or
    without a run of that mode, is an error."""
    runs: dict[str, Run] = {}
    for folder in folders:
        stored = read_results(folder)
        if stored.task_name != data.task.name:
            raise HarnessError(f"{folder}: holds results of task {stored.task_name!r}, not {data.task.name!r}")
        by_mode = stored_runs(stored)
        if data.mode not in by_mode:
            raise HarnessError(f"{folder}: holds no run of mode {data.mode!r} (its runs: {', '.join(by_mode)})")
        runs[str(folder)] = by_mode[data.mode]
    return runs


@dataclass
class Holes:
    """The pairs to judge (``pairs``, each once, in the runs' order), which runs hold each, and counts."""

    pairs: list[Pair]
    found_in: dict[Pair, list[str]]
    counts: dict[str, int] = field(default_factory=dict)


def find_holes(data: TaskData, runs: dict[str, Run], depth: int) -> Holes:
    """The unjudged pairs in the union of the runs' top ``depth`` (module docstring)."""
    found_in: dict[Pair, list[str]] = {}
    union: set[Pair] = set()
    skipped: set[str] = set()
    for name, run in runs.items():
        for qid in run:
            judged = data.qrels.get(qid)
            if judged is None:
                skipped.add(qid)
                continue
            for doc in top_k(run.scores(qid), depth):
                union.add((qid, doc))
                if doc not in judged:
                    found_in.setdefault((qid, doc), []).append(name)
    counts = {"runs": len(runs), "depth": depth, "pairs_in_union": len(union),
              "judged_by_people": len(union) - len(found_in), "to_judge": len(found_in),
              "queries_without_qrels": len(skipped)}
    return Holes(list(found_in), found_in, counts)


def written_grade(score: float, scale: str, binary_from: float) -> float:
    """The grade written for a judge's ``score`` on ``scale`` (module docstring)."""
    return (1 if score >= binary_from else 0) if scale == "binary" else score


def _provenance(j: Judgment, grade: float, judged: JudgedPairs, found_in: list[str]) -> dict[str, Any]:
    conf = {k: v for k, v in judged.judge.items() if k in ("template", "template_source", "prompt_sha256",
                                                              "prompt_version", "parser", "method")}
    llm = judged.judge.get("llm") or {}
    return {"query_id": j.query_id, "doc_id": j.doc_id, "grade": grade, "judge_grade": j.score,
            "judge": judged.judge.get("spec"), "model": j.details.get("model") or llm.get("model"),
            "provider": llm.get("provider"), "llm": llm.get("spec"), **conf, "cached": j.details.get("cached"),
            "found_in": found_in, "harness_version": __version__}


def fill_rows(data: TaskData, holes: Holes, judged: JudgedPairs, scale: str,
              binary_from: float) -> tuple[list[tuple[str, str, float]], list[dict[str, Any]]]:
    """The qrels rows (every human judgment unchanged, then the filled pairs) and the provenance rows."""
    rows = [(qid, doc, grade) for qid, docs in data.qrels.items() for doc, grade in docs.items()]
    provenance = []
    for pair in holes.pairs:
        j = judged.judgments.get(pair)
        if j is None or j.score is None:
            continue
        grade = written_grade(j.score, scale, binary_from)
        rows.append((pair[0], pair[1], grade))
        provenance.append(_provenance(j, grade, judged, holes.found_in[pair]))
    return rows, provenance


def fill_qrels(context: Context, data: TaskData, folders: Sequence[str], judge: str, depth: int, output: str,
               scale: str | None = None, binary_from: float = 2.0,
               max_llm_failures: float = 0.0) -> tuple[dict[str, Any], JudgedPairs]:
    """Judge the holes and write the qrels and their provenance (not in a dry run, nor when calls failed
    beyond ``max_llm_failures``: the reply cache keeps what was answered, so running again resumes)."""
    scale = scale or default_scale(data)
    if scale not in SCALES:
        raise HarnessError(f"--scale must be one of {', '.join(SCALES)}, not {scale!r}")
    if depth < 1:
        raise HarnessError(f"--depth must be a whole number >= 1, not {depth}")
    holes = find_holes(data, task_runs(data, folders), depth)
    judged = judge_pairs(context, judge, data, holes.pairs, max_llm_failures)
    rows, provenance = fill_rows(data, holes, judged, scale, binary_from)
    summary: dict[str, Any] = {**holes.counts, "filled": len(provenance),
                               "left_unjudged": len(holes.pairs) - len(provenance), "scale": scale,
                               "written": None}
    if not judged.dry_run and judged.complete:
        target = write_qrels(output, rows)
        side = Path(str(target) + PROVENANCE_SUFFIX)
        side.write_text("".join(json.dumps(clean(r), sort_keys=True) + "\n" for r in provenance), encoding="utf-8")
        summary["written"] = {"qrels": str(target), "provenance": str(side), "judgments": len(rows)}
    return summary, judged
