"""``harness export mteb``: results folders as MTEB result files (``docs/mteb.md``).

For every task whose ``mteb`` block is set and has no ``differs``, writes
``FOLDER/<org>__<model>/<revision>/<TaskName>.json`` in the form of mteb's ``TaskResult.to_disk``
(mteb 2.20.0, ``mteb/results/task_result.py``: keys ``dataset_revision``, ``task_name``, ``mteb_version``,
``scores`` {split: [{metrics..., main_score, hf_subset, languages}]}, ``evaluation_time``,
``kg_co2_emissions``, ``date``; floats rounded to 6 places) and ``model_meta.json`` (``ModelMeta.to_dict``'s
keys). A run that cannot be exported is refused with the reason, and nothing is written."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.concepts.context import ComponentContext
from harness.concepts.errors import DataError, HarnessError
from harness.concepts.mteb_block import check_mteb_block, defaults
from harness.results.store import StoredResults, read_results

#: what ``mteb_version`` holds in an exported file: no mteb version computed these scores
MTEB_VERSION = None
_MODEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}(/[A-Za-z0-9][A-Za-z0-9_.\-]{0,95})?$")
_REVISION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,99}$")


@dataclass
class Exported:
    """One MTEB result file to write: the harness task, its MTEB block and the file's JSON object."""

    task: str
    block: dict[str, Any]
    data: dict[str, Any]


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    return value


def _registered(name: str, context: ComponentContext) -> Any:
    """The task registered under ``name`` (None when no plugin registers it)."""
    from harness.concepts.errors import UnknownComponentError

    try:
        return context.registry.create("task", name, context)
    except UnknownComponentError:
        return None


def _check_identity(stored: StoredResults, task: Any) -> str | None:
    """Why the run's data is not the task's pinned files (None when it is)."""
    ran = stored.data.get("task") or {}
    if ran.get("dataset") != task.dataset or (ran.get("dataset_args") or {}) != task.dataset_args:
        return (f"the run read dataset {ran.get('dataset')!r} with {ran.get('dataset_args') or {}}, not the task's "
                f"{task.dataset!r} with {task.dataset_args} (a --dataset override or a variant is not MTEB's task)")
    files = {f.get("path"): f for f in (stored.data.get("dataset") or {}).get("files") or [] if isinstance(f, dict)}
    for f in task.files:
        if not f.sha256:
            continue
        got = files.get(f.path)
        if got is None:
            return f"the run's dataset identity lists no {f.path}, a file the task pins"
        if got.get("sha256") != f.sha256:
            return f"the run read {f.path} with sha256 {got.get('sha256')}; the task pins {f.sha256}"
    return None


def _block(stored: StoredResults, task: Any) -> tuple[dict[str, Any] | None, str | None]:
    """The MTEB block to export with, or why the run is refused."""
    where = f"{stored.path}: task"
    block = (stored.data.get("task") or {}).get("mteb")
    if block is not None:
        try:
            check_mteb_block(block, where)
        except DataError as exc:
            raise HarnessError(str(exc)) from None
    if task is not None and task.mteb:
        if block is not None and block.get("task_name") != task.mteb.get("task_name"):
            return None, (f"results.json names MTEB task {block.get('task_name')!r}; the registered task "
                          f"names {task.mteb['task_name']!r}")
        block = task.mteb
    if not block:
        return None, "the task has no MTEB counterpart (no mteb block: docs/mteb.md)"
    if block.get("differs"):
        return None, f"the harness task differs from MTEB's {block['task_name']}: {block['differs']}"
    identity = stored.data.get("dataset") or {}
    for key, want in (("repo", "dataset"), ("revision", "dataset_revision")):
        got = identity.get(key)
        if isinstance(got, str) and got != block[want]:
            return None, f"the run read {key} {got!r}; MTEB's {block['task_name']} pins {block[want]!r}"
    return block, None


def _scores(stored: StoredResults, block: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """The scores entry of one split (metrics, main_score, hf_subset, languages), or why not."""
    block = defaults(block)
    metrics = stored.metrics
    entry: dict[str, Any] = {}
    for name, target in block["metrics"].items():
        value = metrics.get(name)
        if value is None or not math.isfinite(value):
            continue
        if isinstance(target, dict):
            (section, key), = target.items()
            entry.setdefault(section, {})[key] = value
        else:
            entry[target] = value
    main = block["main_score"]
    section, _, key = main.partition(".") if main not in entry else ("", "", main)
    main_value = (entry.get(section) or {}).get(key) if section else entry.get(main)
    if not isinstance(main_value, float | int):
        return None, f"the run has no value for MTEB's main score {main} (mteb.metrics maps it from a harness metric)"
    entry.update(main_score=main_value, hf_subset=block["hf_subset"], languages=list(block["languages"]))
    return _round(entry), None


def _model_from_components(stored: StoredResults) -> tuple[str | None, str | None]:
    comps = stored.data.get("components") or {}
    retriever = comps.get("retriever") if isinstance(comps.get("retriever"), dict) else {}
    rerankers = comps.get("rerankers") or comps.get("reranker")
    if rerankers:
        return None, None  # a pipeline is no single model: the user names it
    model = retriever.get("model") or (retriever.get("args") or {}).get("model")
    revision = retriever.get("revision") or (retriever.get("args") or {}).get("revision")
    return (model if isinstance(model, str) else None), (revision if isinstance(revision, str) else None)


def collect(run_dirs: Sequence[str | Path], context: ComponentContext | None = None
            ) -> tuple[list[tuple[StoredResults, Exported]], list[str]]:
    """Every task result of ``run_dirs`` (suites: their members) as an :class:`Exported`, and the refusals
    (``"<folder> (<task>): <why>"``)."""
    from harness.context import Context

    ctx = Context.of(context)
    out: list[tuple[StoredResults, Exported]] = []
    refused: list[str] = []
    for run_dir in run_dirs:
        top = read_results(run_dir)
        for stored in (top.members().values() if top.is_suite else [top]):
            name = stored.task_name
            why = None
            command = stored.data.get("command") or []
            if stored.data.get("status") == "incomplete":
                why = "the run is INCOMPLETE (some LLM requests got no usable reply)"
            elif isinstance(command, list) and any(isinstance(a, str) and a.split("=")[0] == "--limit"
                                                   for a in command):
                why = "the run evaluated a subset of the queries (--limit)"
            task = _registered(name, ctx)
            block = None
            if why is None:
                block, why = _block(stored, task)
            if why is None and task is not None:
                why = _check_identity(stored, task)
            entry = None
            if why is None:
                entry, why = _scores(stored, block)
            if why is not None:
                refused.append(f"{stored.folder} ({name}): {why}")
                continue
            full = defaults(block)
            total = (stored.data.get("timings") or {}).get("total")
            data = {
                "dataset_revision": full["dataset_revision"],
                "task_name": full["task_name"],
                "mteb_version": MTEB_VERSION,
                "scores": {full["split"]: [entry]},
                "evaluation_time": float(total) if isinstance(total, (int, float)) and not isinstance(total, bool)
                else None,
                "kg_co2_emissions": None,
                "date": time.time(),
            }
            out.append((stored, Exported(name, full, data)))
    return out, refused


def model_meta(name: str, revision: str, use_instructions: bool | None = None) -> dict[str, Any]:
    """``model_meta.json``: the keys of mteb's ``ModelMeta.to_dict`` (mteb/models/model_meta.py), unknown ones
    null; ``name`` and ``revision`` are what mteb's ``load_results`` reads."""
    return {
        "name": name, "revision": revision, "release_date": None, "languages": None, "n_parameters": None,
        "n_active_parameters_override": None, "n_embedding_parameters": None, "memory_usage_mb": None,
        "max_tokens": None, "embed_dim": None, "license": None, "open_weights": None, "public_training_code": None,
        "public_training_data": None, "framework": [], "reference": None, "similarity_fn_name": None,
        "use_instructions": use_instructions, "training_datasets": None, "adapted_from": None,
        "superseded_by": None, "modalities": ["text"], "model_type": ["dense"], "citation": None, "contacts": None,
        "experiment_kwargs": None, "loader": None, "loader_kwargs": {}, "is_cross_encoder": None,
    }


def export_mteb(run_dirs: Sequence[str | Path], output: str | Path, model: str | None = None,
                revision: str | None = None, context: ComponentContext | None = None) -> list[Path]:
    """Write the MTEB result files of ``run_dirs`` under ``output``; returns the paths written.

    Raises :class:`HarnessError` (nothing written) when a run is refused (its task has no MTEB counterpart,
    differs from it, read other data, or lacks the main score), when two runs give the same MTEB task, or when
    no model name is given and the runs' components name none."""
    if not run_dirs:
        raise HarnessError("name at least one results folder to export")
    items, refused = collect(run_dirs, context)
    if refused:
        raise HarnessError("cannot export to MTEB's format:\n  " + "\n  ".join(refused))
    names = {e.data["task_name"]: s.folder for s, e in items}
    if len(names) < len(items):
        seen: dict[str, Path] = {}
        for s, e in items:
            if e.data["task_name"] in seen:
                raise HarnessError(f"{seen[e.data['task_name']]} and {s.folder} both give MTEB task "
                                   f"{e.data['task_name']}; export one run per task")
            seen[e.data["task_name"]] = s.folder
    if model is None:
        found = {_model_from_components(s) for s, _ in items}
        if len(found) != 1 or next(iter(found))[0] is None:
            raise HarnessError("name the model with --model ORG/NAME (and --revision REV): the runs' components "
                               "name no single model")
        model, found_revision = next(iter(found))
        revision = revision or found_revision
    if not _MODEL.match(model):
        raise HarnessError(f"--model {model!r} is not a model name such as ORG/NAME")
    revision = revision or "no_revision_available"
    if not _REVISION.match(revision):
        raise HarnessError(f"--revision {revision!r} is not a revision (letters, digits, '_', '.', '-')")
    folder = Path(output) / model.replace("/", "__").replace(" ", "_") / revision
    try:
        folder.mkdir(parents=True, exist_ok=True)
        written = []
        for _, e in items:
            path = folder / f"{e.data['task_name']}.json"
            path.write_text(json.dumps(e.data, indent=2) + "\n", encoding="utf-8")
            written.append(path)
        meta = folder / "model_meta.json"
        meta.write_text(json.dumps(model_meta(model, revision), indent=4) + "\n", encoding="utf-8")
    except OSError as exc:
        raise HarnessError(f"cannot write to {folder}: {exc.strerror or exc}") from exc
    return [*written, meta]
