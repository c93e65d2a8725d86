"""``harness compare --qrels FILE`` and ``harness report --qrels FILE``: every system's stored run scored
again under other qrels (LLM-filled ones from ``harness judge fill``, another assessor's) before the tests,
so the comparison is the one those qrels give.

Each system's final run (its results folder's run file, read inside the folder) is scored with the
metrics asked (``--metric``), else with those of its ``per_query.jsonl`` that can be computed from a run
and qrels alone (standard measures and ``Hole@k``; a plugin's metric needs its evaluation and is left out,
said once). The system's per-query values and aggregate metrics become the new ones; the stored
uncertainty and metric details, computed under the old qrels, are dropped; ``qrels_file`` (path, sha256)
is recorded in the system's results as read."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import replace

from harness.compare.runs import System, TaskResult
from harness.concepts.errors import HarnessError
from harness.concepts.qrels import Qrels
from harness.formats.qrels_file import read_qrels_file
from harness.metrics.run_scores import measures, score_run
from harness.results.store import StoredResults
from harness.results.stored_runs import single_run


def computable(names: Sequence[str]) -> list[str]:
    """The names among ``names`` that a run and qrels alone give."""
    out = []
    for name in names:
        try:
            measures([name])
        except HarnessError:
            continue
        out.append(name)
    return out


def _rescored(tr: TaskResult, qrels: Qrels, identity: dict, metrics: Sequence[str] | None) -> TaskResult:
    stored_names = list(dict.fromkeys(k for row in tr.per_query.values() for k in row))
    names = list(metrics) if metrics else computable(stored_names)
    if not names:
        raise HarnessError(f"{tr.path}: none of its metrics can be computed from its run under other qrels; "
                           "name standard measures with --metric (e.g. --metric nDCG@10)")
    left_out = [n for n in stored_names if n not in names]
    if left_out and not metrics:
        print(f"[harness] {tr.path}: not re-scored under --qrels (they need their evaluation): "
              f"{', '.join(left_out[:5])}{', ...' if len(left_out) > 5 else ''}", file=sys.stderr)
    res = score_run(single_run(tr.stored), qrels, names)
    data = {**tr.stored.data, "metrics": res.aggregate, "uncertainty": {}, "metric_details": {},
            "qrels_file": identity}
    stored = StoredResults(tr.stored.path, data, tr.stored.source_version)
    return replace(tr, stored=stored, per_query=res.per_query)


def rescore_systems(systems: list[System], qrels_file: str, metrics: Sequence[str] | None = None) -> list[System]:
    """The systems with every task's values computed again under ``qrels_file`` (module docstring)."""
    qrels, identity = read_qrels_file(qrels_file)
    out = []
    for s in systems:
        if s.leaderboard:
            raise HarnessError(f"{s.name}: an MTEB result file has no run to score under --qrels")
        if s.suite is not None:
            raise HarnessError(f"{s.name}: a suite's results; --qrels replaces one task's qrels, give a member's "
                               "folder")
        tasks = {name: _rescored(tr, qrels, identity, metrics) for name, tr in s.tasks.items()}
        out.append(replace(s, tasks=tasks))
    return out
