"""Which MTEB task a stored run is: decided from the registered task and the dataset identity, never from the
``mteb`` block its ``results.json`` carries (``docs/mteb.md``; ``docs/untrusted.md``, "MTEB export and compare").

``results.json`` is a record anyone can edit. What decides is what this machine holds: the task registered
under the run's task name (looked up by that exact name, never parsed as a spec) and its definition's ``mteb``
block, with the pins of that definition (:class:`Pins`: the dataset and its arguments, the sha256 of every file
it pins, the Hub repository and revision its block names). The record must agree with them field by field: the
block it claims, if any, names the same MTEB task, dataset, revision, split and subset (and differs or not as
the registered one does); it read the same dataset with the same arguments; every pinned file is in its dataset
identity with the pinned digest; a repository or revision in its identity is the block's. Where one disagrees
the run is refused with one message naming ``results.json`` and the fields. A block that no registered task
backs (a task name nothing registers, or a registered task without an MTEB counterpart) is refused too.

What this cannot tell: a record forged consistently in every field (identity, digests, metrics) is a lie the
harness cannot see without running the task again; the check makes the exported task the one the registered
definition names and the record agree with its pins, so a mislabelled or edited run never passes for another.

A run of ``--dataset mteb:repo=R,revision=C`` (MTEB's own files, read by the ``mteb`` dataset) is MTEB's task
when its dataset identity (repository, revision, split and subset the loader recorded, with the sha256 of each
file it read) equals the published dataset of a task in the table of known MTEB tasks
(``harness.mteb.known_tasks``); the identity must agree with the ``--dataset`` spec it records and list
files read from that repository at that revision. A task whose figures MTEB computes otherwise than a run on
its files does (its own loading or scoring code, ``ignore_identical_ids`` with the query's own document
ranked, a candidates task ranked over the whole corpus) gets a block with ``differs``, which the export
refuses and ``harness compare`` will not put next to MTEB's file; data of no known task has no counterpart,
with the reason (:class:`Decision`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from harness.components.registry import accepts_context
from harness.concepts.component_context import ComponentContext
from harness.concepts.errors import DataError, HarnessError, UnknownComponentError
from harness.concepts.mteb_block import block_disagreements, check_mteb_block
from harness.concepts.task import Task
from harness.context import Context
from harness.mteb.dataset_runs import Decision, by_dataset, mteb_spec
from harness.results.store import StoredResults


@dataclass(frozen=True)
class Pins:
    """What a registered task says its data is: ``task`` (its name), ``block`` (its mteb block), ``dataset``
    and ``dataset_args`` (as results.json records them), ``files`` (path -> sha256 of each file it pins) and
    ``hub`` (whether it reads the block's Hub repository itself, so its identity must name repo and revision).
    A dataset identity is compared with pins, never with a claim: a run under a dataset spec (MTEB's own files
    at the pinned revision) can be matched the same way to the registered task whose pins its identity equals."""

    task: str
    block: dict[str, Any]
    dataset: str
    dataset_args: Any
    files: dict[str, str]
    hub: bool

    @classmethod
    def of(cls, task: Task) -> Pins:
        args = _plain(task.dataset_args)
        hub = isinstance(args, dict) and args.get("repo") == task.mteb.get("dataset")
        return cls(task.name, task.mteb, task.dataset, args, {f.path: f.sha256 for f in task.files if f.sha256}, hub)


def _plain(value: Any) -> Any:
    """``value`` as results.json holds it (a JSON round trip: tuples become lists)."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def _show(value: Any) -> str:
    return f"{value!r:.100}"


def registered_task(name: str, context: ComponentContext | None = None) -> Task | None:
    """The task registered under exactly ``name`` (None when nothing registers it)."""
    ctx = Context.of(context)
    try:
        component = ctx.registry.lookup("task", name)
    except UnknownComponentError:
        return None
    factory = component.factory
    task = factory(context=ctx) if accepts_context(factory) else factory()
    if not isinstance(task, Task):
        raise HarnessError(f"task {name!r} ({component.source}) is a {type(task).__name__}, not a Task")
    return task


def claimed_block(stored: StoredResults) -> dict[str, Any] | None:
    """The ``task.mteb`` block results.json claims (checked field by field), or None."""
    task = stored.data.get("task")
    block = task.get("mteb") if isinstance(task, dict) else None
    if block is None:
        return None
    try:
        check_mteb_block(block, f"{stored.path}: task")
    except DataError as exc:
        raise HarnessError(str(exc)) from None
    return block


def _file_disagreements(identity: dict[str, Any], pins: Pins) -> list[str]:
    files = identity.get("files")
    listed: dict[Any, Any] = {}
    if isinstance(files, list):
        listed = {f.get("path"): f.get("sha256") for f in files if isinstance(f, dict)}
    out = []
    for path, sha in pins.files.items():
        if path not in listed:
            out.append(f"dataset.files lists no {path!r}, a file the task pins")
        elif listed[path] != sha:
            out.append(f"dataset.files[{path!r}].sha256 is {_show(listed[path])}, not the pinned {sha!r}")
    return out


def identity_disagreements(stored: StoredResults, pins: Pins) -> list[str]:
    """The fields of the run's record (``task.dataset``, ``task.dataset_args``, ``dataset.files[...]``,
    ``dataset.repo``, ``dataset.revision``) that disagree with ``pins``, each as ``field is X, not Y``."""
    ran = stored.data.get("task") if isinstance(stored.data.get("task"), dict) else {}
    identity = stored.data.get("dataset") if isinstance(stored.data.get("dataset"), dict) else {}
    out = []
    if ran.get("dataset") != pins.dataset:
        out.append(f"task.dataset is {_show(ran.get('dataset'))}, not the task's {pins.dataset!r} (a --dataset "
                   "override or a variant is not MTEB's task)")
    if _plain(ran.get("dataset_args") or {}) != pins.dataset_args:
        out.append(f"task.dataset_args is {_show(ran.get('dataset_args') or {})}, not the task's "
                   f"{_show(pins.dataset_args)}")
    out += _file_disagreements(identity, pins)
    if identity.get("qrels_file"):  # harness eval --qrels: scored against other qrels than MTEB's
        out.append(f"dataset.qrels_file is {_show((identity['qrels_file'] or {}).get('path'))}: the run was scored "
                   "against other qrels (--qrels), not the task's")
    for key, want in (("repo", pins.block["dataset"]), ("revision", pins.block["dataset_revision"])):
        if key in identity and identity[key] != want:
            out.append(f"dataset.{key} is {_show(identity[key])}, not {want!r} (MTEB's {pins.block['task_name']})")
        elif key not in identity and pins.hub:
            out.append(f"dataset.{key} is missing; the task reads {want!r}")
    return out


#: the reason a run without any MTEB counterpart is not exported
NO_COUNTERPART = "the task has no MTEB counterpart (no mteb block: docs/mteb.md)"


def _registered(stored: StoredResults, claim: dict[str, Any] | None, task: Task | None) -> Decision:
    """The registered task decides: its block, where the record agrees with the task's pins."""
    name = stored.task_name
    if task is None or not task.mteb:
        if claim is None:
            return Decision(unmatched=NO_COUNTERPART)
        said = "is not registered here" if task is None else "is registered without an MTEB counterpart"
        return Decision(refused=f"{stored.path}: task.mteb claims MTEB's {claim['task_name']!r}, but task {name!r} "
                                f"{said}: the MTEB task is taken from the registered task, never from results.json")
    fields = block_disagreements(claim, task.mteb, "task.mteb") if claim is not None else []
    fields += identity_disagreements(stored, Pins.of(task))
    if fields:
        return Decision(refused=f"{stored.path} disagrees with the registered task {name!r} (MTEB's "
                                f"{task.mteb['task_name']!r}): " + "; ".join(fields))
    return Decision(task.mteb)


def resolve(stored: StoredResults, context: ComponentContext | None = None) -> Decision:
    """The :class:`Decision` for one stored run: a ``--dataset mteb:`` run (whose task is not registered with
    that very dataset) by its dataset identity and the table of MTEB tasks, any other by its registered task."""
    claim = claimed_block(stored)
    task = registered_task(stored.task_name, context)
    ran = stored.data.get("task") if isinstance(stored.data.get("task"), dict) else {}
    spec = mteb_spec(ran.get("dataset"))
    if spec is not None and not (task is not None and task.mteb and ran.get("dataset") == task.dataset):
        return by_dataset(stored, spec, claim, task)
    return _registered(stored, claim, task)


def decide(stored: StoredResults, context: ComponentContext | None = None) -> tuple[dict[str, Any] | None, str | None]:
    """The ``mteb`` block of the run's MTEB task (None: the task has no MTEB counterpart), or the one message
    refusing a record that disagrees with what decides it (naming results.json and each field)."""
    d = resolve(stored, context)
    return d.block, d.refused


__all__ = ["NO_COUNTERPART", "Decision", "Pins", "claimed_block", "decide", "identity_disagreements", "registered_task",
           "resolve"]
