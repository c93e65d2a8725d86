"""Which MTEB task a ``--dataset mteb:repo=R,revision=C`` run is: decided from the dataset identity its
``results.json`` records (the repository, revision, split and subset the ``mteb`` loader read, and the sha256
of every file), matched against the table of known MTEB tasks (``harness.mteb.known_tasks``), never from an
``mteb`` block the record carries (``docs/mteb.md``; ``docs/untrusted.md``, "MTEB export and compare").

The identity must agree with the ``--dataset`` spec the record names and list the files it read, each with a
sha256, under that repository's folder at that revision; where not, the run is refused with one message naming
``results.json`` and the fields. A block the record carries, and the block of a registered task the run was
given under, must name the task the identity gives. A record forged consistently in every field is not seen
(as for registered tasks: ``harness.mteb.identity``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from harness.components.component_spec import parse_spec
from harness.concepts.errors import HarnessError
from harness.concepts.mteb_block import block_disagreements
from harness.concepts.task import Task
from harness.mteb.known_tasks import KnownTask, block_of, match, own_code_reason
from harness.results.store import StoredResults

_SHA = re.compile(r"^[0-9a-f]{64}$")
MAX_SPEC = 2000
#: how many of the run's lines ranking a query's own id a message names
SHOWN = 3


@dataclass(frozen=True)
class Decision:
    """Which MTEB task a run is: ``block`` (its mteb block, which may say ``differs``), or ``refused`` (one
    message: the record disagrees with what this machine holds, or with itself), or neither, with
    ``unmatched`` saying why the run has no MTEB counterpart."""

    block: dict[str, Any] | None = None
    refused: str | None = None
    unmatched: str | None = None


def mteb_spec(dataset: Any) -> dict[str, Any] | None:
    """The arguments of a ``mteb:`` dataset spec (the built-in ``mteb`` dataset), or None for any other value."""
    if not isinstance(dataset, str) or len(dataset) > MAX_SPEC or "mteb" not in dataset:
        return None
    try:
        spec = parse_spec(dataset)
    except HarnessError:
        return None
    return dict(spec.args) if spec.name == "mteb" and spec.source in (None, "harness-ir") else None


def _text(value: Any, key: str) -> str:
    if key == "revision" and isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**40:
        return str(value).zfill(40)  # an all-digit revision, read as a number by the spec parser
    return str(value)


def _show(value: Any) -> str:
    return f"{value!r:.100}"


def _identity_problems(spec: dict[str, Any], identity: dict[str, Any]) -> list[str]:
    """Where the dataset identity disagrees with the spec it records, or lacks what the loader records."""
    want = {"repo": spec.get("repo"), "revision": spec.get("revision"), "split": spec.get("split", "test"),
            "subset": spec.get("subset")}
    out = []
    for key, value in want.items():
        got = identity.get(key)
        if key == "subset" and (value is None or _text(value, key) == "default") and got in (None, "default"):
            continue
        if not isinstance(got, str) or got != _text(value, key):
            out.append(f"dataset.{key} is {_show(got)}, not the --dataset spec's {_show(value)}")
    if out:
        return out
    files = identity.get("files")
    if not isinstance(files, list) or not files:
        return ["dataset.files lists no file (the mteb loader records each file it read, with its sha256)"]
    folder = f"mteb/{identity['repo']}/{identity['revision']}/"
    for f in files[:100_000]:
        path = f.get("path") if isinstance(f, dict) else None
        if not isinstance(path, str) or not path.startswith(folder) or ".." in path.split("/"):
            return [f"dataset.files names {_show(path)}, not a file of {folder} (the repository at the revision)"]
        if not isinstance(f.get("sha256"), str) or not _SHA.match(f["sha256"]):
            return [f"dataset.files[{path!r}].sha256 is {_show(f.get('sha256'))}, not a sha256"]
    return []


def _candidates_reason(stored: StoredResults, identity: dict[str, Any]) -> str | None:
    """Why a run on a dataset with candidates (``top_ranked``) is not MTEB's task: another first stage."""
    configs = identity.get("configs")
    if not isinstance(configs, dict) or "top_ranked" not in configs:
        return None
    retriever = stored.components.get("retriever") if isinstance(stored.components, dict) else None
    name = retriever.get("name") if isinstance(retriever, dict) else None
    if name == "candidates":
        return None
    return (f"the dataset gives each query's candidates (top_ranked), which MTEB ranks; the run's first stage was "
            f"{_show(name)}, not the candidates")


def _identical_ids_reason(stored: StoredResults, task: KnownTask) -> str | None:
    """Why a run is not MTEB's figure on a task that ignores a retrieved document whose id is the query's:
    the run ranks such documents (read from its run files, bounded), or its run files cannot be read."""
    if not task.ignore_identical_ids:
        return None
    rule = f"mteb's {task.name} drops a retrieved document whose id is the query's (ignore_identical_ids)"
    found: list[str] = []
    try:
        for mode, path in stored.run_files().items():
            for _, line in stored.lines(path, f"files['run[{mode}]']"):
                parts = line.split()
                if len(parts) >= 3 and parts[0] == parts[2]:
                    found.append(parts[0])
    except HarnessError as exc:
        return f"{rule}, and the run's ranking cannot be checked for such documents: {exc}"
    if not found:
        return None
    shown = ", ".join(repr(q) for q in found[:SHOWN])
    return f"{rule}, and the run ranks the query's own id {len(found):,} times (query {shown})"


def _checked(stored: StoredResults, block: dict[str, Any], claim: dict[str, Any] | None, task: Task | None
             ) -> Decision:
    """``block``, unless the record's own block or the registered task's names another MTEB task."""
    fields = block_disagreements(claim, block, "task.mteb") if claim is not None else []
    if task is not None and task.mteb:
        fields += block_disagreements(task.mteb, block, f"the mteb block of the registered task {task.name!r}:")
    if fields:
        return Decision(refused=f"{stored.path}: its dataset identity is MTEB's {block['task_name']!r} "
                                f"({block['dataset']} at {block['dataset_revision']}), but " + "; ".join(fields))
    return Decision(block)


def by_dataset(stored: StoredResults, spec: dict[str, Any], claim: dict[str, Any] | None, task: Task | None
               ) -> Decision:
    """The :class:`Decision` for a run whose ``task.dataset`` is the ``mteb:`` spec ``spec``."""
    identity = stored.data.get("dataset") if isinstance(stored.data.get("dataset"), dict) else {}
    problems = _identity_problems(spec, identity)
    if problems:
        return Decision(refused=f"{stored.path}: the dataset identity of the mteb: run disagrees with what the "
                                "mteb loader records: " + "; ".join(problems))
    split, subset = identity["split"], identity.get("subset") or "default"
    found = match(identity["repo"], identity["revision"], split, subset)
    metrics = list(stored.metrics)
    if found.task is None:
        if found.other is not None:  # that repository's task, on other data: never next to its figures
            return _checked(stored, block_of(found.other, split, subset, metrics, differs=found.why), claim, task)
        if claim is not None:
            return Decision(refused=f"{stored.path}: task.mteb claims MTEB's {claim['task_name']!r}, but {found.why}")
        return Decision(unmatched=found.why)
    known = found.task
    differs = (own_code_reason(known) or _candidates_reason(stored, identity)
               or _identical_ids_reason(stored, known))
    return _checked(stored, block_of(known, split, subset, metrics, differs), claim, task)


__all__ = ["Decision", "by_dataset", "mteb_spec"]
