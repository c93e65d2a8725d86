"""Runs made elsewhere as systems: ``harness eval --run FILE`` and ``harness fuse``.

:func:`evaluate_runs` evaluates TREC run files on a task, one results folder each, with the run file as
the first stage (the ``run-file`` retriever: :mod:`harness.retrievers.run_file`); rerankers may follow.
:func:`fuse_runs` fuses the final runs of results folders (or run files) with
:func:`harness.retrievers.fusion.fuse` and evaluates the fused run the same way, through the ``fuse``
retriever over ``run-file`` inputs, so ``results.json`` records every input file (path, sha256) and the
fusion's settings, and ``compare``, ``report``, ``view`` and ``export mteb`` read the folder as any other.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.concepts.errors import HarnessError
from harness.context import Context
from harness.evaluation.options import ComponentArg, EvalOptions
from harness.evaluation.pipeline import evaluate
from harness.results.result import EvalResult
from harness.results.store import read_results

_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}")
_PLAIN_VALUE = re.compile(r"[^,:=\[\](){}\"' ]+")


def spec_value(text: str) -> str:
    """``text`` as a component argument value: as it is when plain, else quoted."""
    if _PLAIN_VALUE.fullmatch(text):
        return text
    for quote in ("'", '"'):
        if quote not in text:
            return f"{quote}{text}{quote}"
    raise HarnessError(f"{text!r} holds both kinds of quotes; it cannot be given in a component spec")


def run_file_spec(path: str | Path, name: str | None = None) -> str:
    """The ``run-file`` retriever spec for ``path`` (made absolute), with the system's ``name``."""
    spec = f"run-file:path={spec_value(str(Path(path).expanduser().resolve()))}"
    return spec + (f",name={spec_value(name)}" if name else "")


def fusion_spec(paths: Sequence[str | Path], method: str, k: float | None = None,
                weights: Sequence[float] | None = None, norm: str | None = None) -> str:
    """The ``fuse`` retriever spec over the run files ``paths``."""
    items = ",".join(spec_value(run_file_spec(p)) for p in paths)
    spec = f"fuse:retrievers=[{items}],method={method}"
    if k is not None:
        spec += f",k={k}"
    if weights:
        spec += f",weights=[{','.join(repr(float(w)) for w in weights)}]"
    return spec + (f",norm={norm}" if norm else "")


def system_name(path: str | Path, name: str | None = None) -> str:
    """A run's folder name under ``-o``: ``name``, else the file's name without ``.trec``/``.run``/``.txt``;
    letters, digits and ``._+-`` only, so the folder stays inside ``-o``."""
    label = name or re.sub(r"(\.gz)?$", "", Path(path).name)
    label = re.sub(r"\.(trec|run|txt|tsv)$", "", label)
    if not _SAFE_NAME.fullmatch(label) or label in (".", ".."):
        raise HarnessError(f"system name {label!r}: use letters, digits and ._+- only (at most 100 characters; "
                           f"give one with --name)")
    return label


def evaluate_runs(runs: Sequence[str | Path], names: Sequence[str] = (), task: str | None = None,
                  dataset: str | None = None, rerankers: Sequence[ComponentArg] = (),
                  judge: ComponentArg | None = None, options: EvalOptions | None = None,
                  context: Context | None = None, **settings: Any) -> list[tuple[str, EvalResult]]:
    """Each TREC run file in ``runs`` evaluated on the task as if the harness had produced it (the file as
    the first stage, then ``rerankers`` and a ``judge``). ``names``: the systems' names, in order (default: the files'
    names). With one run, ``options.output`` is its results folder; with several, each goes to
    ``output/NAME``. Returns ``(name, result)`` per run."""
    if not runs:
        raise HarnessError("give at least one run file (--run FILE)")
    if len(names) > len(runs):
        raise HarnessError(f"{len(names)} names (--name) for {len(runs)} run files (--run)")
    labels = [system_name(r, names[i] if i < len(names) else None) for i, r in enumerate(runs)]
    if len(set(labels)) < len(labels):
        raise HarnessError(f"two runs would share a results folder ({', '.join(labels)}); name them with --name")
    opts, ctx = _options(options, settings), Context.of(context)
    out = []
    for path, label in zip(runs, labels, strict=True):
        output = opts.output if len(runs) == 1 or opts.output is None else str(Path(opts.output) / label)
        spec = run_file_spec(path, label)
        result = evaluate(task, dataset=dataset, retriever=spec, rerankers=rerankers, judge=judge,
                          options=opts.replace(output=output), context=ctx)
        out.append((label, result))
    return out


def run_inputs(inputs: Sequence[str | Path]) -> tuple[list[Path], list[str]]:
    """Each input's run file (a results folder's final run, or a TREC run file) and the tasks the folders
    were evaluated on. A folder with several modes or a suite is refused: fusion here takes one run each."""
    paths, tasks = [], []
    for item in inputs:
        p = Path(item).expanduser()
        if not p.is_dir():
            if not p.is_file():
                raise HarnessError(f"{p}: neither a results folder nor a run file")
            paths.append(p)
            continue
        stored = read_results(p)
        if stored.is_suite:
            raise HarnessError(f"{p} holds a suite's results; fuse each member's folder")
        stored.check_files()
        files = stored.run_files()
        if len(files) != 1:
            raise HarnessError(f"{p}: fusion takes one run per input; this folder has {len(files)} "
                               f"({', '.join(sorted(files)) or 'none'})")
        paths.append(next(iter(files.values())))
        tasks.append(stored.task_name)
    return paths, tasks


def fuse_runs(inputs: Sequence[str | Path], method: str = "rrf", k: float | None = None,
              weights: Sequence[float] | None = None, norm: str | None = None, task: str | None = None,
              dataset: str | None = None, rerankers: Sequence[ComponentArg] = (), options: EvalOptions | None = None,
              context: Context | None = None, **settings: Any) -> EvalResult:
    """The fusion of ``inputs`` (results folders or TREC run files) evaluated on their task (``task`` or
    ``dataset`` when the inputs do not say it, or to check they agree): a results folder like any other."""
    paths, tasks = run_inputs(inputs)
    named = sorted(set(tasks))
    ctx = Context.of(context)
    if task is None and dataset is None:
        if len(named) != 1 or named[0] not in ctx.registry.names("task"):
            raise HarnessError("the inputs do not name one registered task (" + (", ".join(named) or "run files only")
                               + "): give --task NAME or --dataset SPEC")
        task = named[0]
    elif task is not None and named and named != [task]:
        raise HarnessError(f"the inputs were evaluated on {', '.join(named)}, not on {task!r}")
    spec = fusion_spec(paths, method, k, weights, norm)
    return evaluate(task, dataset=dataset, retriever=spec, rerankers=rerankers, options=_options(options, settings),
                    context=ctx)


def _options(options: EvalOptions | None, settings: dict[str, Any]) -> EvalOptions:
    """``options`` with the :class:`EvalOptions` fields given as keywords; any other keyword is a TypeError."""
    unknown = sorted(set(settings) - EvalOptions.names())
    if unknown:
        raise TypeError(f"unexpected keyword argument {unknown[0]!r} (options: "
                        f"{', '.join(sorted(EvalOptions.names()))})")
    return (options or EvalOptions()).replace(**settings)
