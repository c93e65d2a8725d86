"""The stages of one evaluation, each with explicit inputs and outputs (``docs/architecture.md``,
"The stages"); :func:`harness.evaluation.pipeline.evaluate` composes them::

    build_components  (context, task, specs)          -> Components   (before any data is read)
    load              (context, task, limit)          -> Dataset      (counts["unknown_ids"], timings["load"])
    settle_first_stage (Components, task, Dataset, depth) -> depth    (auto: the candidates if any; set aside: said)
    index             (Components, Dataset)           -> None         (the first stage's index; timings["index"])
    per mode: task_queries (Dataset, mode, format)    -> queries
              first_stage  (Components, Dataset, queries, depth) -> Run   (excluded ids dropped)
              rerank       (Components, Dataset, queries, Run)   -> Run   (strictly decreasing, excluded dropped)
              judge        (Components, Dataset, queries, Run)   -> Judgments
    account           (Components, Dataset, runs)     -> None         (component stats, query counts)
    apply_metrics     (metrics, runs, Dataset, judgments) -> MetricResult   (also behind harness.api.score)
    assemble_result   (...)                           -> EvalResult   (usage, LLM failures, timings["total"])
    write_output      (folder, EvalResult, clients)   -> None         (harness view's files, then the results)

Counters and seconds per stage go to a :class:`Ledger`, in the order results.json lists them.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.components.component_spec import parse_spec
from harness.concepts.dataset import Dataset
from harness.concepts.errors import HarnessError
from harness.concepts.judgment import Judgments
from harness.concepts.protocols import (
    CandidateRetriever,
    GivenRanking,
    Judge,
    Metric,
    MetricInput,
    MetricResult,
    QueryObjectRetriever,
    Reranker,
    Retriever,
    counted,
    describe,
)
from harness.concepts.query import Query, format_query
from harness.concepts.run import Run
from harness.concepts.task import Task
from harness.context import Context
from harness.data.download import ensure_task_files
from harness.evaluation.options import ComponentArg, ComponentSpecs, EvalOptions
from harness.evaluation.other_qrels import with_qrels_file
from harness.results.layout import ResultsLayout
from harness.results.result import EvalResult
from harness.served.failure_policy import failure_report, merge_per_query
from harness.served.query_usage import attribute_calls

AUTO_CANDIDATE_DEPTH = 1000  # MTEB's top_k (max of its k_values): how many of a query's candidates it scores


def log(msg: str, progress: bool) -> None:
    if progress:
        print(msg, file=sys.stderr, flush=True)


@dataclass
class Ledger:
    """An evaluation's counters and seconds per stage, in the order results.json lists them."""

    counts: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    started: float = field(default_factory=time.perf_counter)

    @contextmanager
    def timed(self, key: str) -> Iterator[None]:
        """``timings[key]``: the seconds the block took (not recorded when it raises)."""
        t = time.perf_counter()
        yield
        self.timings[key] = time.perf_counter() - t


@dataclass
class Components:
    """The evaluation's components and ``described``, results.json's account of them. ``named``: the
    caller named the first stage (not the task); ``corpus_first``: with a task's ``first_stage = "auto"``,
    its retriever (and account), used in place of the candidates when the dataset carries none."""

    first: Any
    rerankers: list[Any]
    judge: Any | None
    described: dict[str, Any]
    named: bool = False
    corpus_first: tuple[Any, dict[str, Any]] | None = None

    @property
    def labels(self) -> list[str]:
        """The rerankers' specs, as timings and counts name them."""
        return [d["spec"] for d in self.described.get("rerankers", [])]

    def pairs(self) -> list[tuple[dict[str, Any], Any]]:
        pairs = [(self.described["retriever"], self.first), *zip(self.described.get("rerankers", []), self.rerankers)]
        return pairs + ([(self.described["judge"], self.judge)] if self.judge is not None else [])

    def describe_metrics(self, metrics: Sequence[Metric]) -> None:
        for metric in metrics:
            self.described.setdefault("metrics", []).append(describe(metric) | {"names": list(metric.names)})


@dataclass
class Rankings:
    """Per mode: the final ``runs``, the ``first_stage`` ranking (kept when rerankers follow) and the ``judgments``."""

    runs: dict[str, Run] = field(default_factory=dict)
    first_stage: dict[str, Run] = field(default_factory=dict)
    judgments: dict[str, Judgments] = field(default_factory=dict)


# -- the task ----------------------------------------------------------------------------------------------
def resolve_task(context: Context, task: str | Task | None, dataset: str | None) -> Task:
    """The task named or given; a plain dataset spec makes a task whose first stage is ``auto`` (the
    dataset's candidates when it carries them, as its benchmark defines it; else BM25 over the corpus)."""
    if isinstance(task, Task):
        return task
    if task:
        return context.registry.create("task", task, context)
    if dataset:
        spec = parse_spec(dataset)
        return Task(name=spec.name, dataset=dataset, first_stage="auto", metrics=["nDCG@10"])
    raise HarnessError("give a task (--task NAME) or a dataset (--dataset SPEC); `harness list-plugins` lists them")


# -- components ------------------------------------------------------------------------------------------
def _create(context: Context, kind: str, spec: ComponentArg, protocol: type) -> tuple[Any, dict[str, Any]]:
    """A component from a spec string (through the registry) or an object given as it is; either
    way checked against its protocol."""
    if isinstance(spec, str):
        obj, comp, parsed = context.registry.build(kind, spec, context)
        desc = {"spec": spec, "name": comp.name, "source": comp.source, "args": parsed.args}
    else:
        obj = spec
        name = type(obj).__name__
        desc = {"spec": f"object:{name}", "name": name, "source": f"object ({type(obj).__module__})", "args": {}}
    if not isinstance(obj, protocol):
        raise HarnessError(f"{kind} {desc['spec']!r} is a {type(obj).__name__}, which does not implement the "
                           f"{protocol.__name__} protocol (docs/plugin_hooks.md)")
    return obj, {**desc, **describe(obj)}


def build_components(context: Context, task: Task, specs: ComponentSpecs) -> Components:
    """Every component, created before any data is read: a bad spec or a missing API key fails before
    a download or an index build. With ``first_stage = "auto"`` both first stages are made (the candidates
    and the task's retriever); :func:`settle_first_stage` picks one once the data is read."""
    retriever, judge = specs.retriever, specs.judge
    first_spec = retriever or (task.retriever if task.first_stage == "retrieve" else "candidates")
    first_kinds = Retriever | CandidateRetriever | QueryObjectRetriever
    described: dict[str, Any] = {}
    first, described["retriever"] = _create(context, "retriever", first_spec, first_kinds)
    corpus_first = None
    if not retriever and task.first_stage == "auto":
        corpus_first = _create(context, "retriever", task.retriever, first_kinds)
    objs = []
    for spec in specs.rerankers:
        obj, desc = _create(context, "reranker", spec, Reranker)
        objs.append(obj)
        described.setdefault("rerankers", []).append(desc)
    judge_obj = None
    if judge:
        judge_obj, described["judge"] = _create(context, "judge", judge, Judge)
    return Components(first, objs, judge_obj, described, named=bool(retriever), corpus_first=corpus_first)


# -- data ------------------------------------------------------------------------------------------------
def load_task_dataset(context: Context, task: Task, download: bool = True) -> Dataset:
    """Create the task's dataset, fetching its files into the context's data folder first when they
    are missing."""
    if task.files and download:
        ensure_task_files(task, context.data, context.progress)
    return context.registry.create("dataset", task.dataset, context, **task.dataset_args)


def load(context: Context, task: Task, limit: int | None, ledger: Ledger, progress: bool,
         qrels: str | None = None) -> Dataset:
    """The task's dataset (its first ``limit`` queries), validated: unknown ids are counted. ``qrels``: a
    qrels file scored against instead of the dataset's (:func:`~harness.evaluation.other_qrels.with_qrels_file`)."""
    with ledger.timed("load"):
        ds = load_task_dataset(context, task)
        if qrels is not None:
            ds = with_qrels_file(ds, qrels)
        if limit is not None:
            ds = ds.limit(limit)
        ledger.counts["unknown_ids"] = ds.validate()
        if ds.meta.get("identical_duplicates"):  # rows a sharded dataset gives twice, the same (kept once)
            ledger.counts["identical_duplicates"] = dict(ds.meta["identical_duplicates"])
    log(f"[harness] {task.name}: {len(ds.corpus)} documents, "
        f"{', '.join(f'{m}: {len(q)} queries' for m, q in ds.queries.items())}", progress)
    return ds


def task_queries(dataset: Dataset, mode: str, template: str) -> dict[str, Query]:
    """The mode's queries as components see them: ``text`` formed by the task's template, the raw
    text in ``meta['query']``, the instruction kept in ``instruction``."""
    out = {}
    for qid, q in dataset.queries[mode].items():
        out[qid] = Query(qid, format_query(q, template), q.instruction, {**q.meta, "query": q.text})
    return out


# -- ranking ---------------------------------------------------------------------------------------------
def settle_first_stage(components: Components, task: Task, ds: Dataset, depth: int | None) -> int:
    """The first stage for this data, and its depth (``depth``, else a ranking made elsewhere whole: a run
    file's longest list, :class:`GivenRanking`; else the task's). ``first_stage = "auto"``:
    the candidates when the dataset carries them, each list whole up to MTEB's 1,000 (``AUTO_CANDIDATE_DEPTH``:
    MTEB scores every candidate), else the task's retriever. A first stage that ranks the corpus although
    the dataset carries candidates is recorded (``candidates_set_aside``, ``set_aside_by``); when the
    caller's choice set aside what the task would have ranked, one line on stderr says so."""
    auto, components.corpus_first = components.corpus_first, None
    if auto is not None and not ds.carries_candidates:
        components.first, components.described["retriever"] = auto
    elif auto is not None:
        return depth or max(task.depth, AUTO_CANDIDATE_DEPTH)
    if ds.carries_candidates and not isinstance(components.first, CandidateRetriever):
        _set_aside(components, task)
    return depth or given_depth(components.first) or task.depth


def given_depth(first: Any) -> int | None:
    """How deep a ranking made elsewhere goes (:class:`GivenRanking`: a run file is scored whole), or None."""
    return first.given_depth() if isinstance(first, GivenRanking) else None


def _set_aside(components: Components, task: Task) -> None:
    desc = components.described["retriever"]
    by_caller = components.named and task.first_stage != "retrieve"
    desc.update(candidates_set_aside=True, set_aside_by="caller" if by_caller else "task")
    if by_caller:
        how = "gives its own ranking" if given_depth(components.first) else "ranks the whole corpus"
        print(f"[harness] {task.name}: the dataset's candidate lists (the task's first stage) set aside: "
              f"{desc['spec']} {how}, as asked (recorded in results.json; --retriever candidates "
              "ranks only them)", file=sys.stderr, flush=True)


def index(components: Components, ds: Dataset, ledger: Ledger, progress: bool) -> None:
    """Index the corpus for the first stage (given candidate lists need none, but must exist)."""
    given = isinstance(components.first, CandidateRetriever)
    if given and not ds.candidates:
        raise HarnessError(f"dataset {ds.name!r} gives no candidate lists; pass --retriever bm25 or dense")
    with ledger.timed("index"):
        if not given:
            log(f"[harness] indexing with {components.described['retriever']['spec']}", progress and
                not given_depth(components.first))  # a ranking made elsewhere only checks the ids
            components.first.index(ds.corpus)


def first_stage(components: Components, ds: Dataset, mode: str, queries: dict[str, Query], depth: int,
                ledger: Ledger) -> Run:
    """The first stage's top ``depth`` per query; excluded documents (:attr:`Dataset.excluded`) are
    dropped after retrieving deep enough that ``depth`` remain."""
    first = components.first
    with ledger.timed(f"retrieve[{mode}]"):
        if isinstance(first, CandidateRetriever):
            first.set_candidates(ds.candidates.get(mode) if ds.candidates else None)
        deep = depth + max((len(ds.excluded.get(q, ())) for q in queries), default=0)
        if isinstance(first, QueryObjectRetriever):
            run = first.search_queries(queries, deep)
        else:
            run = first.search({q: v.text for q, v in queries.items()}, deep)
        if ds.excluded:
            run = run.without(ds.excluded).top(depth)
    return run


def kept(run: Run, name: str) -> Run:
    """A stage's ranking in a copy of its own (strict scores, so its order survives trec_eval): later
    stages never touch it."""
    copy = run.with_strict_scores()
    copy.name = name
    return copy


def rerank(components: Components, ds: Dataset, mode: str, queries: dict[str, Query], run: Run,
           ledger: Ledger) -> Run:
    """The rerankers in turn; after each, excluded documents are dropped and scores made strictly
    decreasing (the one rule, counted in ``scores_made_strict``). The result is named ``harness``."""
    for label, reranker in zip(components.labels, components.rerankers):
        with ledger.timed(f"rerank {label}[{mode}]"):
            run = reranker.rerank(queries, run, ds.corpus).without(ds.excluded)
            if not run.is_strictly_decreasing():  # a ranking's order must survive trec_eval's sort
                ledger.counts.setdefault("scores_made_strict", []).append(f"{label}[{mode}]")
                run = run.with_strict_scores()
    run.name = "harness"
    return run


def judge(components: Components, ds: Dataset, mode: str, queries: dict[str, Query], run: Run,
          ledger: Ledger) -> Judgments:
    """The judge's judgments of the final run; its failures counted per mode."""
    with ledger.timed(f"judge[{mode}]"):
        judgments = components.judge.judge(queries, run, ds.corpus)
    ledger.counts.setdefault("judge_failures", {})[mode] = judgments.n_failed
    return judgments


def account(components: Components, ds: Dataset, runs: Mapping[str, Run], ledger: Ledger) -> None:
    """What the components counted (``stats()``, beside their config) and the queries left without
    results or without qrels."""
    for desc, obj in components.pairs():
        stats = counted(obj)
        if stats is not None:
            desc["stats"] = stats
    ledger.counts["queries_without_results"] = {m: sum(1 for h in r.values() if not h) for m, r in runs.items()}
    ledger.counts["queries_without_qrels"] = {
        m: sum(1 for q in r if q not in ds.qrels.get(m, {})) for m, r in runs.items()
    }


# -- metrics ---------------------------------------------------------------------------------------------
def _merge(into: MetricResult, res: MetricResult, suffix: str) -> None:
    into.aggregate.update({f"{n}{suffix}": v for n, v in res.aggregate.items()})
    into.uncertainty.update({f"{n}{suffix}": u for n, u in res.uncertainty.items()})
    into.details.update({f"{n}{suffix}": v for n, v in res.details.items()})
    into.notes.update({f"{n}{suffix}": v for n, v in res.notes.items()})
    for q, vals in res.per_query.items():
        into.per_query.setdefault(q, {}).update({f"{n}{suffix}": v for n, v in vals.items()})


def apply_metrics(metrics: Sequence[Metric], runs: dict[str, Run], ds: Dataset,
                  judgments: dict[str, Judgments] | None = None) -> MetricResult:
    """Every metric's results merged into one: a per-mode metric is computed on each mode's run (its
    names suffixed ``[mode]`` when the dataset has several modes), a cross-mode metric on the runs of
    every mode at once. ``runs`` holds a run for each of ``ds.modes``."""
    judgments = {} if judgments is None else judgments
    out = MetricResult({})
    multi = len(ds.modes) > 1
    for metric in metrics:
        if metric.per_mode:
            for mode in ds.modes:
                res = metric.compute(MetricInput({mode: runs[mode]}, {mode: ds.qrels.get(mode)}, ds,
                                                 {mode: judgments[mode]} if mode in judgments else {}))
                _merge(out, res, f"[{mode}]" if multi else "")
        else:
            _merge(out, metric.compute(MetricInput(runs, dict(ds.qrels), ds, judgments)), "")
    return out


# -- results ---------------------------------------------------------------------------------------------
def _llm_failures(usage: dict[str, Any], components: dict[str, Any], max_share: float) -> dict[str, Any]:
    if not usage:
        return {}

    described = [components.get("retriever", {}), *components.get("rerankers", []), components.get("judge", {})]
    return failure_report(usage, merge_per_query(d.get("stats") or {} for d in described), max_share)


def assemble_result(context: Context, task: Task, ds: Dataset, components: Components, ranked: Rankings,
                    scores: MetricResult, ledger: Ledger, options: EvalOptions) -> EvalResult:
    """The :class:`EvalResult`: ``timings["total"]`` closes the ledger; the LLM session's usage and the
    failure report (INCOMPLETE beyond ``options.max_llm_failures``) are read now."""
    ledger.timings["total"] = time.perf_counter() - ledger.started
    usage = context.llm.report()
    query_llm, usage_per_query = attribute_calls(context.llm.clients, usage.get("total") or {}, scores.per_query)
    if usage_per_query:  # each query's LLM calls, tokens, USD and seconds (harness/served/query_usage.py)
        usage["per_query"] = usage_per_query
    return EvalResult(task, ds, components.described, scores.aggregate, scores.per_query, ranked.runs,
                      ranked.judgments, ledger.counts, ledger.timings, usage=usage,
                      command=list(options.command) if options.command is not None else None,
                      llm_failures=_llm_failures(usage, components.described, options.max_llm_failures),
                      uncertainty=scores.uncertainty, metric_details=scores.details, metric_notes=scores.notes,
                      versions=context.versions(), first_stage_runs=ranked.first_stage, query_llm=query_llm)


def check_output(output: str | Path, overwrite: bool, members: Sequence[str] = ()) -> None:
    """Before any work: the folder (and a suite's member folders) can take every file the run writes."""
    ResultsLayout(Path(output)).prepare(overwrite, members)  # every file the run writes, not only the folder


def write_output(output: str | Path, result: EvalResult, clients: Sequence[Any], progress: bool) -> None:
    """``harness view``'s files, then the results (``results.json`` last)."""
    ResultsLayout(Path(output)).write(result, clients)
    log(f"[harness] results written to {output}", progress)
