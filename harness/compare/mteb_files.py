"""MTEB result files as systems of ``harness compare`` / ``harness report`` (``docs/mteb.md``).

A ``<TaskName>.json`` written by mteb (``TaskResult.to_disk``) or ``harness export mteb``, or a folder of them,
becomes a *leaderboard* system: its scores are mapped back to harness metric names through the ``mteb`` block
of the registered task a compared run corresponds to, where the run's ``results.json`` agrees with that task's
pins, or, for a ``--dataset mteb:`` run, of the known MTEB task whose published dataset its identity records
(``harness.mteb.identity``; the block results.json carries decides nothing). It has no per-query
scores, so no paired test is claimed for it. The files are untrusted: bounded size, types checked, one message."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from harness.concepts.component_context import ComponentContext
from harness.concepts.errors import HarnessError
from harness.concepts.mteb_block import defaults
from harness.context import Context
from harness.formats import bounded as files_in
from harness.mteb.identity import decide
from harness.results.layout import RESULTS
from harness.results.store import StoredResults

#: the largest MTEB result file read (the largest in embeddings-benchmark/results are well under 1 MiB)
MAX_MTEB_FILE = 8 * 2**20
#: the most ``<TaskName>.json`` files read from one folder
MAX_MTEB_FILES = 2000
LABEL = "MTEB result file (no per-query scores: not tested)"


def is_mteb_path(path: str | Path) -> bool:
    """A ``*.json`` file other than ``results.json``, or a folder without ``results.json`` holding ``*.json``."""
    p = Path(path)
    if p.is_file():
        return p.suffix == ".json" and p.name != RESULTS
    return p.is_dir() and not (p / RESULTS).exists() and any(
        f.suffix == ".json" and f.name != "model_meta.json" for f in p.iterdir())


def _files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = sorted(f for f in path.iterdir() if f.suffix == ".json" and f.name != "model_meta.json")
    if len(files) > MAX_MTEB_FILES:
        raise HarnessError(f"{path}: more than {MAX_MTEB_FILES} MTEB result files; name the ones to compare")
    return files


def _read(f: Path) -> dict[str, Any]:
    root = f.parent
    data = files_in.loads(files_in.read_bytes(root, f, str(f), "MTEB result file", MAX_MTEB_FILE), str(f))
    if not isinstance(data, dict) or not isinstance(data.get("task_name"), str):
        raise HarnessError(f"{f}: not an MTEB result file (a JSON object with task_name, dataset_revision, scores)")
    if "mteb_dataset_name" in data:
        raise HarnessError(f"{f}: an MTEB result file from before mteb 1.11 (mteb_dataset_name); load and save it "
                           "with mteb's TaskResult.from_disk / to_disk first")
    if not isinstance(data.get("dataset_revision"), str):
        raise HarnessError(f"{f}: dataset_revision must be text")
    scores = data.get("scores")
    if not isinstance(scores, dict) or not all(isinstance(v, list) for v in scores.values()):
        raise HarnessError(f"{f}: scores must be an object of split -> list of score objects")
    return data


def _entry(f: Path, data: dict[str, Any], block: dict[str, Any]) -> dict[str, Any]:
    split, subset = block["split"], block["hf_subset"]
    rows = data["scores"].get(split)
    if not rows:
        raise HarnessError(f"{f}: no scores for split {split!r} (MTEB's {block['task_name']} is scored on it)")
    for row in rows:
        if not isinstance(row, dict):
            raise HarnessError(f"{f}: scores[{split!r}] holds {type(row).__name__}, not score objects")
        if row.get("hf_subset") == subset:
            return row
    raise HarnessError(f"{f}: no scores for hf_subset {subset!r} in split {split!r}")


def _number(f: Path, where: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise HarnessError(f"{f}: {where} is not a number: {value!r:.60}")
    return float(value)


def metrics_of(f: Path, data: dict[str, Any], block: dict[str, Any]) -> dict[str, float | None]:
    """The harness metrics an MTEB file's scores give, through ``block["metrics"]``."""
    row = _entry(f, data, block)
    out: dict[str, float | None] = {}
    for name, target in block["metrics"].items():
        if isinstance(target, dict):
            (section, key), = target.items()
            sub = row.get(section)
            if sub is not None and not isinstance(sub, dict):
                raise HarnessError(f"{f}: {section!r} must be an object of scores")
            value = (sub or {}).get(key)
            where = f"{section}.{key}"
        else:
            value, where = row.get(target), target
        if value is not None:
            out[name] = _number(f, where, value)
    if not out:
        raise HarnessError(f"{f}: none of the scores {sorted(map(str, block['metrics'].values()))} is in the file")
    return out


def blocks_of(runs: list[Any], context: ComponentContext | None = None) -> dict[str, tuple[str, dict[str, Any]]]:
    """MTEB task name -> (harness task, its mteb block), from each run's registered task where the run's
    results.json agrees with it, or from a ``--dataset mteb:`` run's dataset identity and the table of MTEB tasks
    (``harness.mteb.identity.decide``); a run whose record disagrees (a block no registered task backs,
    another MTEB task or revision, other data, an identity that disagrees with its spec) is one error naming
    results.json."""
    out: dict[str, tuple[str, dict[str, Any]]] = {}
    ctx = Context.of(context) if runs else None
    for system in runs:
        for task, tr in system.tasks.items():
            block, why = decide(tr.stored, ctx)
            if why is not None:
                raise HarnessError(why)
            if block:
                out.setdefault(block["task_name"], (task, defaults(block)))
    return out


def load_mteb_tasks(path: str | Path, blocks: dict[str, tuple[str, dict[str, Any]]]) -> tuple[str, dict[str, Any]]:
    """An MTEB result file or a folder of them: the default system name (its model folder, in the
    ``<org>__<model>/<revision>/`` layout) and harness task -> a :class:`StoredResults` of the mapped metrics."""
    p = Path(path)
    model_dir = p.resolve().parent.parent if p.is_file() else p.resolve().parent
    tasks: dict[str, Any] = {}
    for f in _files(p):
        data = _read(f)
        if data["task_name"] not in blocks:
            raise HarnessError(f"{f}: MTEB task {data['task_name']!r} is none of the tasks of the runs compared "
                               f"({', '.join(sorted(blocks)) or 'none has an mteb block'}; docs/mteb.md)")
        task, block = blocks[data["task_name"]]
        if block.get("differs"):
            raise HarnessError(f"{f}: the harness task {task} differs from MTEB's {block['task_name']}, so its "
                               f"scores are not comparable: {block['differs']}")
        if data["dataset_revision"] != block["dataset_revision"]:
            raise HarnessError(f"{f}: dataset_revision {data['dataset_revision']!r:.60} is not the revision the task "
                               f"{task} corresponds to ({block['dataset_revision']})")
        tasks[task] = StoredResults(f, {"task": {"name": task}, "metrics": metrics_of(f, data, block),
                                        "uncertainty": {}, "metric_details": {}}, 2)
    return model_dir.name or p.stem, tasks
