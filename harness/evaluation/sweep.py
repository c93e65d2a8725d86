"""Sweeps (``harness eval ... --sweep KEY=V1,V2[,...]``, repeatable): one evaluation per combination of the
values, one results folder each under the output folder, sharing the first stage (when no combination changes
it) and the LLM reply cache.

The grammar of a sweep, ``KEY=V1,V2[,...]`` (commas inside brackets or quotes do not split: ``[a,b]``):

- ``llm.NAME``: an argument of the ``--llm`` spec (``llm.reasoning_effort=low,high``,
  ``llm.thinking_budget=1024,4096``, ``llm.max_tokens=64,256``, ``llm.temperature=0,0.7``);
- ``reranker.NAME``: an argument of the reranker's spec (``reranker.window=10,20``, ``reranker.depth=20,100``);
  with several rerankers, ``reranker1.NAME``, ``reranker2.NAME``, ... (1-based, in the chain's order);
- ``retriever.NAME``: an argument of the first stage's spec (``retriever.k1=0.9,1.2``);
- ``judge.NAME``: an argument of the judge's spec;
- ``depth``: the first stage's depth (``depth=20,100``).

Combinations are the product of the sweeps, the first sweep varying slowest. A combination's folder is named
for its values (``llm.reasoning_effort=low+reranker.window=10``; characters other than letters, digits and
``._=+-`` written ``_``; at most :data:`MAX_NAME` characters), and its ``results.json`` names them (``sweep``:
``values``, ``index``, ``of``, ``folder``, ``first_stage``: ``computed``, or the folder whose first stage it
shares). Every folder is checked for writing before any work. A ``retriever.*`` or ``depth`` sweep changes the
first stage, so it is computed once per distinct value; a suite's members are run as ``harness eval`` runs
them (no sharing of the first stage).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.components.component_spec import parse_value, split_top
from harness.concepts.errors import HarnessError
from harness.concepts.task import Task
from harness.context import Context
from harness.evaluation import stages
from harness.evaluation.options import ComponentSpecs, EvalOptions
from harness.evaluation.pipeline import FirstStages, compute
from harness.evaluation.pipeline import run as run_task
from harness.results.layout import ResultsLayout
from harness.results.result import EvalResult

#: the longest folder name of a combination
MAX_NAME = 120
#: the most combinations one sweep runs
MAX_COMBINATIONS = 1000
_KEY = re.compile(r"(llm|retriever|judge|reranker(\d*))\.([A-Za-z_][A-Za-z0-9_-]*)|depth")
_UNSAFE = re.compile(r"[^A-Za-z0-9._=+-]")


@dataclass(frozen=True)
class Axis:
    """One ``--sweep``: its key and values (as typed)."""

    key: str
    values: tuple[str, ...]


@dataclass
class SweepRun:
    """One combination: its ``values`` (key -> value as typed), its results folder and what it produced."""

    values: dict[str, str]
    folder: Path
    result: EvalResult
    first_stage: str = "computed"


def parse_axis(text: str) -> Axis:
    """``KEY=V1,V2[,...]`` (the module docstring); a bad key or an empty value is one message."""
    key, sep, rest = text.partition("=")
    key = key.strip()
    if not sep or not _KEY.fullmatch(key):
        raise HarnessError(f"--sweep {text!r}: expected KEY=V1,V2 with KEY llm.NAME, reranker.NAME (rerankerN.NAME "
                           "with several), retriever.NAME, judge.NAME or depth, e.g. "
                           "--sweep llm.reasoning_effort=low,high")
    values = tuple(v.strip() for v in split_top(rest, ","))
    if not values or any(not v for v in values):
        raise HarnessError(f"--sweep {text!r}: every value must be non-empty (V1,V2,...)")
    if len(set(values)) != len(values):
        raise HarnessError(f"--sweep {text!r}: a value is given twice")
    return Axis(key, values)


def combinations(axes: Sequence[Axis]) -> list[dict[str, str]]:
    """The product of the axes' values (the first axis slowest); a key given twice is refused."""
    keys = [a.key for a in axes]
    if len(set(keys)) != len(keys):
        raise HarnessError(f"--sweep: the key {next(k for k in keys if keys.count(k) > 1)!r} is swept twice; give "
                           "its values in one --sweep")
    combos = [dict(zip(keys, vs)) for vs in itertools.product(*(a.values for a in axes))]
    if len(combos) > MAX_COMBINATIONS:
        raise HarnessError(f"--sweep: {len(combos):,} combinations; at most {MAX_COMBINATIONS:,} are run")
    return combos


def with_arg(spec: str, name: str, value: str) -> str:
    """``spec`` (a component or LLM spec) with its argument ``name`` set to ``value`` (replaced if given)."""
    segments = split_top(spec, ":")
    first = next((i for i, s in enumerate(segments) if "=" in s), len(segments))
    kept = [p for p in split_top(":".join(segments[first:]), ",")
            if p.strip() and p.split("=", 1)[0].strip().replace("-", "_") != name]
    return ":".join(segments[:first]) + ":" + ",".join([*kept, f"{name}={value}"])


def folder_name(values: Mapping[str, str]) -> str:
    """A combination's folder: ``key=value`` joined by ``+``, unsafe characters written ``_``, bounded."""
    name = _UNSAFE.sub("_", "+".join(f"{k}={v}" for k, v in values.items()))[:MAX_NAME]
    return name if name.strip(".") else "_" + name


def _spec_of(given: Any, what: str) -> str:
    if not isinstance(given, str) or not given:
        raise HarnessError(f"--sweep {what}.*: give the {what} as a spec (--{what} NAME[:args]) to sweep its arguments")
    return given


def apply(values: Mapping[str, str], specs: ComponentSpecs, task: Task, llm: str | None, depth: int | None
          ) -> tuple[ComponentSpecs, str | None, int | None]:
    """The components, LLM spec and depth of one combination."""
    retriever, rerankers, judge = specs.retriever, list(specs.rerankers), specs.judge
    for key, raw in values.items():
        m = _KEY.fullmatch(key)
        assert m is not None  # parse_axis checked it
        kind, index, name = m.group(1), m.group(2), m.group(3)
        if key == "depth":
            got = parse_value(raw)
            if isinstance(got, bool) or not isinstance(got, int) or got < 1:
                raise HarnessError(f"--sweep depth: {raw!r} is not a whole number >= 1")
            depth = got
        elif kind == "llm":
            llm = with_arg(_spec_of(llm, "llm"), name, raw)
        elif kind == "retriever":
            retriever = with_arg(_spec_of(retriever or (task.retriever if task.first_stage == "retrieve" else None),
                                          "retriever"), name, raw)
        elif kind == "judge":
            judge = with_arg(_spec_of(judge, "judge"), name, raw)
        else:
            rerankers = _reranker_arg(rerankers, index, name, raw, key)
    return ComponentSpecs(retriever, tuple(rerankers), judge), llm, depth


def _reranker_arg(rerankers: list[Any], index: str, name: str, raw: str, key: str) -> list[Any]:
    if not rerankers:
        raise HarnessError(f"--sweep {key}: no --reranker is given")
    if not index and len(rerankers) > 1:
        raise HarnessError(f"--sweep {key}: {len(rerankers)} rerankers are chained; name one, reranker1.{name} to "
                           f"reranker{len(rerankers)}.{name}")
    i = int(index or 1) - 1
    if not 0 <= i < len(rerankers):
        raise HarnessError(f"--sweep {key}: there are {len(rerankers)} reranker(s)")
    out = list(rerankers)
    out[i] = with_arg(_spec_of(out[i], "reranker"), name, raw)
    return out


def run_sweep(task: Task, specs: ComponentSpecs, options: EvalOptions, context: Context, axes: Sequence[Axis]
              ) -> list[SweepRun]:
    """Every combination of ``axes`` (the module docstring), each in ``options.output``/<its folder>."""
    if not options.output:
        raise HarnessError("--sweep writes one results folder per combination: give --output FOLDER")
    combos = combinations(axes)
    plans = []
    for values in combos:
        cspecs, llm, depth = apply(values, specs, task, context.llm.settings.llm, options.depth)
        folder = Path(options.output) / folder_name(values)
        plans.append((values, cspecs, llm, options.replace(output=str(folder), depth=depth)))
    names = [Path(p[3].output).name for p in plans]
    if len(set(names)) != len(names):
        raise HarnessError("--sweep: two combinations give the same folder name; use values that differ in letters "
                           "or digits")
    for _, _, _, opts in plans:  # every folder writable before any work
        stages.check_output(opts.output, opts.overwrite, [m for m in task.tasks] if task.is_suite else ())
    shared = FirstStages()
    out = []
    for i, (values, cspecs, llm, opts) in enumerate(plans):
        ctx = context.for_evaluation(llm=llm)
        record = {"values": dict(values), "index": i + 1, "of": len(plans), "folder": Path(opts.output).name,
                  "axes": [a.key for a in axes]}
        result, first = _one(task, cspecs, opts, ctx, shared, record)
        out.append(SweepRun(dict(values), Path(opts.output), result, first))
    return out


def _one(task: Task, specs: ComponentSpecs, options: EvalOptions, context: Context, shared: FirstStages,
         record: dict[str, Any]) -> tuple[EvalResult, str]:
    """One combination: :func:`harness.evaluation.pipeline.run`, the first stage shared with an earlier
    combination of the same first stage (retriever spec, depth)."""
    if task.is_suite:  # its members run as harness eval runs them
        return _recorded(run_task(task, specs, options, context), record, "computed", options), "computed"
    earlier = shared.get(task, specs, options)
    how = "computed" if earlier is None else f"shared with {earlier.folder}"
    result = _recorded(compute(task, specs, options, context, shared), record, how, options)
    stages.write_output(options.output, result, context.llm.clients, options.progress)
    return result, how


def _recorded(result: EvalResult, record: dict[str, Any], how: str, options: EvalOptions) -> EvalResult:
    result.sweep = {**record, "first_stage": how}
    if result.members and options.output:  # a suite: the sweep is named in its own results.json, written again
        ResultsLayout(Path(options.output)).write_suite(result)
    return result
