"""Loading results folders and aligning their per-query values.

A results folder holds ``results.json`` and ``per_query.jsonl`` (one evaluation), or is a suite's
folder whose ``results.json`` lists member ``tasks`` with their own folders. A :class:`System` is
one folder; its :attr:`System.tasks` maps each task name to that task's :class:`TaskResult`
(one entry for a plain result, one per member for a suite). Every file is read through the results
contract's one reader, :func:`harness.results.store.read_results` (older schema versions converted)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.compare import mteb_files
from harness.concepts.component_context import ComponentContext
from harness.concepts.errors import HarnessError
from harness.concepts.uncertainty import Uncertainty
from harness.results.store import StoredResults, read_results

FILL_POLICIES = ("error", "zero", "drop")


@dataclass
class TaskResult:
    task: str
    path: Path
    stored: StoredResults
    per_query: dict[str, dict[str, float | None]]

    @property
    def results(self) -> dict[str, Any]:
        """The results.json contents, in the current schema."""
        return self.stored.data

    @property
    def metrics(self) -> dict[str, float | None]:
        return self.stored.metrics

    @property
    def uncertainty(self) -> dict[str, Uncertainty]:
        return self.stored.uncertainty

    @property
    def metric_details(self) -> dict[str, float | None]:
        return self.stored.metric_details

    def run_files(self) -> dict[str, Path]:
        """mode -> run file path (from ``results.json["files"]``)."""
        return self.stored.run_files()


@dataclass
class System:
    name: str
    path: Path
    stored: StoredResults
    tasks: dict[str, TaskResult] = field(default_factory=dict)
    suite: str | None = None
    leaderboard: bool = False  # an MTEB result file: aggregate scores, no per-query values, never tested
    #: the other folders merged into this system (one explicit name given to folders of different tasks)
    merged: list[Path] = field(default_factory=list)

    @property
    def results(self) -> dict[str, Any]:
        """The folder's results.json contents (a suite's own for a suite), in the current schema."""
        return self.stored.data

    @property
    def label(self) -> str:
        """A short description of the components (retriever + rerankers + judge)."""
        comps = self.results.get("components") or {}
        parts = []
        for key in ("retriever", "rerankers", "reranker", "judge"):
            c = comps.get(key)
            items = c if isinstance(c, list) else [c]
            for item in items:
                if isinstance(item, dict) and item.get("spec"):
                    parts.append(str(item["spec"]))
        return " > ".join(parts)


def _task_result(stored: StoredResults) -> TaskResult:
    return TaskResult(stored.task_name, stored.folder, stored, stored.read_per_query())


def load_system(path: str | Path, name: str | None = None) -> System:
    """Read one results folder (or its ``results.json``)."""
    p = Path(path)
    folder = p.parent if p.is_file() else p
    stored = read_results(folder)
    system = System(name or folder.resolve().name, folder, stored)
    if stored.is_suite:
        system.suite = (stored.data.get("task") or {}).get("name")
        for task, member in stored.members().items():
            tr = _task_result(member)
            tr.task = task
            system.tasks[task] = tr
    else:
        tr = _task_result(stored)
        system.tasks[tr.task] = tr
    return system


def parse_system_arg(arg: str) -> tuple[str | None, str]:
    """``NAME=DIR`` names a system; a plain ``DIR`` is named after its folder."""
    if "=" in arg and not Path(arg).exists():
        name, _, path = arg.partition("=")
        if name and path:
            return name, path
    return None, arg


def _leaderboard(path: str, name: str | None, blocks: dict[str, Any]) -> System:
    """An MTEB result file (or a folder of them) as a system with no per-query values."""
    default, tasks = mteb_files.load_mteb_tasks(path, blocks)
    stored = StoredResults(Path(path), {"components": {"retriever": {"spec": mteb_files.LABEL}}}, 2)
    system = System(name or default, Path(path), stored, leaderboard=True)
    for task, st in tasks.items():
        system.tasks[task] = TaskResult(task, st.path.parent, st, {})
    return system


def load_systems(args: list[str], names: list[str] | None = None,
                 context: ComponentContext | None = None) -> list[System]:
    """Results folders, and MTEB result files (``<TaskName>.json`` or a folder of them) as leaderboard
    systems whose tasks and metrics are mapped through the runs' ``mteb`` blocks (docs/mteb.md)."""
    loaded: list[System | tuple[str | None, str]] = []
    explicit: list[bool] = []
    for i, arg in enumerate(args):
        name, path = parse_system_arg(arg)
        if names and i < len(names):
            name = names[i]
        explicit.append(name is not None)
        loaded.append((name, path) if mteb_files.is_mteb_path(path) else load_system(path, name))
    runs = [s for s in loaded if isinstance(s, System)]
    if len(runs) < len(loaded):
        if not runs:
            raise HarnessError("MTEB result files are compared with results folders: name at least one run")
        blocks = mteb_files.blocks_of(runs, context)
        loaded = [s if isinstance(s, System) else _leaderboard(s[1], s[0], blocks) for s in loaded]
    systems = _merge_named([s for s in loaded if isinstance(s, System)], explicit)
    seen: dict[str, int] = {}
    for s in systems:  # make names unique: bm25, bm25 -> bm25, bm25#2
        seen[s.name] = seen.get(s.name, 0) + 1
        if seen[s.name] > 1:
            s.name = f"{s.name}#{seen[s.name]}"
    return systems


def _merge_named(systems: list[System], explicit: list[bool]) -> list[System]:
    """Folders given the same explicit name (``NAME=DIR`` or ``--name``) whose tasks differ are one system
    evaluated on several tasks (one folder per task); a folder repeating a task of its name stays apart."""
    out: list[System] = []
    first: dict[str, System] = {}
    for s, named in zip(systems, explicit):
        into = first.get(s.name) if named and not s.leaderboard else None
        if into is not None and not set(into.tasks) & set(s.tasks):
            into.tasks.update(s.tasks)
            into.merged.append(s.path)
            continue
        if named and not s.leaderboard:
            first.setdefault(s.name, s)
        out.append(s)
    return out


def common_tasks(systems: list[System]) -> list[str]:
    """Tasks every system reports, in the first system's order."""
    return [t for t in systems[0].tasks if all(t in s.tasks for s in systems[1:])]


def common_metrics(systems: list[System], task: str) -> list[str]:
    """Metrics with per-query values in every system's results for ``task``, in first-seen order."""
    order: dict[str, None] = {}  # first-seen order, with constant-time membership
    sets = []
    for s in systems:
        keys: set[str] = set()
        for row in s.tasks[task].per_query.values():
            for k, v in row.items():
                if v is not None:
                    keys.add(k)
                    order.setdefault(k)
        sets.append(keys)
    shared = set.intersection(*sets) if sets else set()
    return [k for k in order if k in shared]


@dataclass
class Aligned:
    """Per-query values of one metric on one task, one column per system."""

    task: str
    metric: str
    systems: list[str]
    query_ids: list[str]
    values: list[list[float]]  # values[q][s]
    fill: str
    filled: dict[str, int]  # system -> number of queries filled (policy "zero")
    dropped: list[str]  # queries dropped (policy "drop", or undefined for every system)

    def column(self, i: int) -> list[float]:
        return [row[i] for row in self.values]

    def note(self) -> str:
        parts = []
        if self.fill == "zero" and any(self.filled.values()):
            parts.append("missing values filled with 0: " + ", ".join(f"{s} {n}" for s, n in self.filled.items() if n))
        if self.dropped:
            parts.append(f"{len(self.dropped)} queries dropped")
        return "; ".join(parts)


def align(systems: list[System], task: str, metric: str, fill: str = "error") -> Aligned:
    """Line the systems' per-query ``metric`` values up by query id.

    A query whose value is missing (absent from per_query.jsonl, or null) for some systems but not
    all is an error under ``fill="error"``; ``"zero"`` counts it as 0 for those systems, ``"drop"``
    leaves the query out. A query undefined for every system (e.g. not a scored query of a
    cross-mode metric) is left out and listed in ``dropped``."""
    if fill not in FILL_POLICIES:
        raise HarnessError(f"unknown fill policy {fill!r}: choose one of {', '.join(FILL_POLICIES)}")
    tables = [s.tasks[task].per_query for s in systems]
    rows, kept, dropped = [], [], []
    filled = {s.name: 0 for s in systems}
    missing: dict[str, list[str]] = {s.name: [] for s in systems}
    for q in _query_ids(tables):
        vals = [_value(t, q, metric) for t in tables]
        if all(v is None for v in vals):
            dropped.append(q)
            continue
        absent = [s.name for s, v in zip(systems, vals) if v is None]
        for name in absent:
            missing[name].append(q)
        if absent and fill == "drop":
            dropped.append(q)
            continue
        if absent and fill == "zero":
            for name in absent:
                filled[name] += 1
            vals = [0.0 if v is None else v for v in vals]
        rows.append(vals)
        kept.append(q)
    if fill == "error" and any(missing.values()):
        raise _missing_error(task, metric, missing)
    return Aligned(task, metric, [s.name for s in systems], kept, rows, fill, filled, dropped)


def _query_ids(tables: list[dict[str, dict[str, float | None]]]) -> list[str]:
    """Every query id of the tables, once each, in first-seen order."""
    qids: list[str] = []
    seen: set[str] = set()
    for t in tables:
        for q in t:
            if q not in seen:
                seen.add(q)
                qids.append(q)
    return qids


def _value(t: dict[str, dict[str, float | None]], q: str, metric: str) -> float | None:
    """The finite value of ``metric`` for query ``q`` in a per-query table, or None."""
    v = t.get(q, {}).get(metric)
    return None if v is None or not math.isfinite(v) else v


def _missing_error(task: str, metric: str, missing: dict[str, list[str]]) -> HarnessError:
    """The error naming, per system, the queries it lacks."""
    detail = "; ".join(f"{name} lacks {len(qs)} ({', '.join(qs[:3])}{', ...' if len(qs) > 3 else ''})"
                       for name, qs in missing.items() if qs)
    return HarnessError(f"{task} / {metric}: queries missing from some runs: {detail}. "
                        "Choose how to handle them with --fill zero (count as 0) or --fill drop (leave out)")
