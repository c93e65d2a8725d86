"""``harness export mteb``: results folders as MTEB result files (``docs/mteb.md``).

For every run whose registered task has an ``mteb`` block without ``differs``, and whose results.json agrees
with that task's pins (``harness.mteb.identity``: the block results.json carries is a claim, checked,
never what decides), and every ``--dataset mteb:repo=R,revision=C`` run whose dataset identity is the
published dataset of a known MTEB task (``harness.mteb.known_tasks``, ``harness.mteb.dataset_runs``),
writes ``FOLDER/<org>__<model>/<revision>/<TaskName>.json`` in the form of mteb's ``TaskResult.to_disk``
(mteb 2.20.0, ``mteb/results/task_result.py``: keys ``dataset_revision``, ``task_name``, ``mteb_version``,
``scores`` {split: [{metrics..., main_score, hf_subset, languages}]}, ``evaluation_time``,
``kg_co2_emissions``, ``date``; floats rounded to 6 places; mteb 2.26.24's ``TaskResult.from_disk`` reads it)
and ``model_meta.json`` (``ModelMeta.to_dict``'s keys). The runs of one task on several subsets or splits
become one file. A run that cannot be exported is refused with the reason, and nothing is written."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.concepts.component_context import ComponentContext
from harness.concepts.errors import HarnessError
from harness.concepts.mteb_block import defaults
from harness.context import Context
from harness.mteb.identity import NO_COUNTERPART, resolve
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


def _block(stored: StoredResults, context: ComponentContext) -> tuple[dict[str, Any] | None, str | None]:
    """The MTEB block to export with, or why the run is refused (``mteb_identity.resolve``: the registered task,
    or for a ``--dataset mteb:`` run the dataset identity and the table of MTEB tasks, decide; never the block
    results.json carries)."""
    decision = resolve(stored, context)
    if decision.refused is not None:
        return None, decision.refused
    block = decision.block
    if not block:
        return None, decision.unmatched or NO_COUNTERPART
    if block.get("differs"):
        return None, f"the harness task differs from MTEB's {block['task_name']}: {block['differs']}"
    return block, None


def _not_whole(stored: StoredResults) -> str | None:
    """Why the run does not stand for the whole task (INCOMPLETE, ``--limit``), or None."""
    command = stored.data.get("command") or []
    if stored.data.get("status") == "incomplete":
        return "the run is INCOMPLETE (some LLM requests got no usable reply)"
    if isinstance(command, list) and any(isinstance(a, str) and a.split("=")[0] == "--limit" for a in command):
        return "the run evaluated a subset of the queries (--limit)"
    return None


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

    ctx = Context.of(context)
    out: list[tuple[StoredResults, Exported]] = []
    refused: list[str] = []
    for run_dir in run_dirs:
        top = read_results(run_dir)
        for stored in (top.members().values() if top.is_suite else [top]):
            name = stored.task_name
            block = None
            why = _not_whole(stored)
            if why is None:
                block, why = _block(stored, ctx)
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


def merge(items: Sequence[tuple[StoredResults, Exported]]) -> list[Exported]:
    """One :class:`Exported` per MTEB task: the runs of one task on different splits or subsets (a multilingual
    task's subsets, each a ``--dataset mteb:...,subset=S`` run) become one file; two runs of the same task,
    split and subset are an error. ``evaluation_time`` is their sum (null where one has none)."""
    out: dict[str, Exported] = {}
    seen: dict[tuple[str, str, str], Path] = {}
    for stored, e in items:
        name = e.data["task_name"]
        key = (name, e.block["split"], e.block["hf_subset"])
        if key in seen:
            raise HarnessError(f"{seen[key]} and {stored.folder} both give MTEB task {name} (split {key[1]}, "
                               f"subset {key[2]}); export one run per task")
        seen[key] = stored.folder
        if name not in out:
            scores = {split: list(entries) for split, entries in e.data["scores"].items()}
            out[name] = Exported(e.task, e.block, {**e.data, "scores": scores})
            continue
        data = out[name].data
        for split, entries in e.data["scores"].items():
            data["scores"].setdefault(split, []).extend(entries)
        times = (data["evaluation_time"], e.data["evaluation_time"])
        data["evaluation_time"] = None if None in times else times[0] + times[1]
    return list(out.values())


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
    merged = merge(items)
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
        for e in merged:
            path = folder / f"{e.data['task_name']}.json"
            path.write_text(json.dumps(e.data, indent=2) + "\n", encoding="utf-8")
            written.append(path)
        meta = folder / "model_meta.json"
        meta.write_text(json.dumps(model_meta(model, revision), indent=4) + "\n", encoding="utf-8")
    except OSError as exc:
        raise HarnessError(f"cannot write to {folder}: {exc.strerror or exc}") from exc
    return [*written, meta]
