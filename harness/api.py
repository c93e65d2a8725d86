"""The Python API; it mirrors the CLI (``harness eval`` = :func:`evaluate`, ``harness eval --run`` =
:func:`evaluate_runs`, ``harness fuse`` = :func:`fuse_runs`, ``harness score`` = :func:`score`,
``harness list-plugins`` = :func:`list_plugins`). Each function takes an optional
``context`` (:class:`harness.Context`: plugins, data folder, caches, LLM defaults); without one, a
context is built from the environment for that call."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from harness.concepts.dataset import Dataset
from harness.concepts.errors import HarnessError
from harness.concepts.protocols import MetricResult
from harness.concepts.qrels import Qrels
from harness.concepts.run import Run
from harness.concepts.task import Task
from harness.context import Context
from harness.evaluation.external_runs import evaluate_runs, fuse_runs
from harness.evaluation.options import ComponentSpecs, EvalOptions
from harness.evaluation.pipeline import EvalResult, evaluate, prepare
from harness.evaluation.stages import apply_metrics, load_task_dataset, resolve_task
from harness.evaluation.sweep import SweepRun, parse_axis, run_sweep
from harness.formats.trec import read_qrels, read_run
from harness.metrics.resolve import resolve_metrics


def evaluate_sweep(task: str | Task | None = None, *, sweep: Sequence[str], dataset: str | None = None,
                   retriever: Any = None, rerankers: Sequence[Any] = (), judge: Any = None,
                   options: EvalOptions | None = None, context: Context | None = None,
                   **settings: Any) -> list[SweepRun]:
    """``harness eval ... --sweep KEY=V1,V2`` (:mod:`harness.evaluation.sweep`: the grammar): one evaluation
    per combination of the ``sweep`` values, each written to ``options.output``/<its folder> (the output is
    required), the first stage computed once where no combination changes it, one LLM reply cache. The other
    arguments are :func:`evaluate`'s. Returns each combination's :class:`~harness.evaluation.sweep.SweepRun`
    (values, folder, result)."""
    axes = [parse_axis(s) for s in sweep]  # a bad sweep fails before anything is read
    the_task, opts, ctx = prepare(task, dataset, options, context, settings)
    return run_sweep(the_task, ComponentSpecs(retriever, tuple(rerankers), judge), opts, ctx, axes)


def load_task(name: str, context: Context | None = None) -> Task:
    """A registered task (``trec-dl19``, ``scifact``, ``demo``, or one a plugin registers)."""
    ctx = Context.of(context)
    return ctx.registry.create("task", name, ctx)


def load_dataset(spec: str, context: Context | None = None, **args: Any) -> Dataset:
    """A dataset by component spec (``beir:path=/data/scifact``), or the dataset of a task name
    (its files fetched first when missing)."""
    ctx = Context.of(context)
    if spec in ctx.registry.components["task"] and not args:
        return load_task_dataset(ctx, load_task(spec, ctx))
    return ctx.registry.create("dataset", spec, ctx, **args)


def score(
    qrels: Qrels | str | Path, run: Run | str | Path, metrics: Sequence[str] = ("nDCG@10",),
    context: Context | None = None,
) -> MetricResult:
    """Score a run against qrels (objects or TREC files), like trec_eval.

    Unlike trec_eval, a run that shares no query with the qrels (nothing to average over) raises
    :class:`HarnessError`, as does an empty run file. Per-mode metrics only (one run has one mode),
    merged by the same rule as :func:`evaluate`'s (their uncertainty, details and notes included)."""
    q = qrels if isinstance(qrels, Qrels) else read_qrels(qrels)
    r = run if isinstance(run, Run) else read_run(run)
    if not any(qid in q for qid in r):  # every average would be over no query: nan
        run_name = "the run" if isinstance(run, Run) else f"the run {run}"
        qrels_name = "the qrels" if isinstance(qrels, Qrels) else f"the qrels {qrels}"
        raise HarnessError(
            f"no query of {run_name} has judgments in {qrels_name}, so there is nothing to score "
            f"(run queries: {_some(r)}; judged queries: {_some(q)}); check that both use the same query ids"
        )
    per_mode = [m for m in resolve_metrics(Context.of(context).registry, list(metrics)) if m.per_mode]
    return apply_metrics(per_mode, {"default": r}, Dataset.single("score", {}, {}, q))


def _some(ids: Any, n: int = 3) -> str:
    """``'a', 'b', 'c', ... (7 in all)`` for messages; ``none`` when empty."""
    ids = list(ids)
    if not ids:
        return "none"
    shown = ", ".join(repr(i) for i in ids[:n])
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > n else "")


def build_index(output: str | Path, *, task: str | None = None, dataset: str | None = None,
                retriever: str = "dense", shard_size: int | None = None, dtype: str = "float32",
                executor: str | None = None, overwrite: bool = False, context: Context | None = None,
                on_shard: Any = None) -> Any:
    """Encode a task's (or a dataset spec's) corpus into an embedding index folder ``output``
    (``harness index build``), with the model of the dense ``retriever`` spec; ``executor``:
    ``local`` (default), ``ray`` or ``ray:address=auto``. Complete shards of a previous build are
    kept. Returns a :class:`~harness.retrievers.dense.build.BuildReport`; search the index with
    ``--retriever dense:index=FOLDER``. ``retriever="bm25"`` (or ``bm25:k1=...``) tokenizes and weights
    the corpus once into a BM25 index instead, searched with ``bm25:index=FOLDER``."""
    ctx = Context.of(context)
    the_task = resolve_task(ctx, task, dataset)
    if the_task.is_suite:
        raise HarnessError(f"{the_task.name} is a suite; build an index per task")
    component, comp, _ = ctx.registry.build("retriever", retriever, ctx)
    from harness.retrievers import bm25  # lazy: numpy and scipy only for the commands that build an index
    from harness.retrievers.dense import build as builder  # lazy: as above
    from harness.retrievers.dense.embedding_index import DEFAULT_SHARD_SIZE  # lazy: as above

    if isinstance(component, bm25.BM25Retriever):  # tokenized and weighted once, in this process
        if shard_size is not None or dtype != "float32" or executor not in (None, "local"):
            raise HarnessError("--shard-size, --dtype and --executor apply to dense indexes; a BM25 index is "
                               "built in this process, in one piece")
        ds = load_task_dataset(ctx, the_task)
        return bm25.build_index(component, ds.corpus, output, overwrite=overwrite, source={
            "task": the_task.name, "dataset": the_task.dataset, "dataset_args": dict(the_task.dataset_args),
            "retriever": retriever, "identity": ds.identity})
    encoder = getattr(component, "encoder", None)
    if getattr(component, "store", None) is not None:
        raise HarnessError(f"retriever {retriever!r} searches an index; give the model to build one with "
                           f"(e.g. dense:model=...)")
    if encoder is None or not hasattr(encoder, "settings"):
        raise HarnessError(f"retriever {retriever!r} ({comp.name}) is not a dense retriever; an index is built "
                           f"with dense:... or a plugin built on it")
    run_with = builder.make_executor(executor)  # a missing extra fails before the data is read
    ds = load_task_dataset(ctx, the_task)
    ids = list(ds.corpus)
    source = {"task": the_task.name, "dataset": the_task.dataset, "dataset_args": dict(the_task.dataset_args),
              "retriever": retriever, "identity": ds.identity}
    return builder.build_index(encoder, ids, [ds.corpus[d].full_text() for d in ids], output,
                               shard_size=shard_size or DEFAULT_SHARD_SIZE, dtype=dtype, executor=run_with,
                               overwrite=overwrite, source=source, on_shard=on_shard)


def index_info(folder: str | Path) -> dict[str, Any]:
    """An index folder's manifest (checked against its schema), with how many of its shards are
    complete and whether they record checksums (``checksums``: ``"sha256"`` or None;
    ``checksums_checked`` is False: :func:`verify_index` checks them) (``harness index info``)."""
    from harness.retrievers import bm25_index  # lazy: numpy only for the index commands
    from harness.retrievers.dense.embedding_index import CHECKSUM, SHARDS, plan_shards, read_manifest  # lazy: as above

    if bm25_index.is_index(folder):  # its manifest's fields checked against their digest; the files not
        manifest = bm25_index.read_manifest(folder)
        return {**manifest, "checksums": manifest.get("checksums"), "checksums_checked": False}
    manifest = read_manifest(folder)
    plans = plan_shards(int(manifest["count"]), int(manifest["shard_size"]))
    done = sum(1 for p in plans if (Path(folder) / SHARDS / p.name / "shard.json").is_file())
    return {**manifest, "shards": len(plans), "shards_complete": done,
            "checksums": CHECKSUM if manifest.get("checksums") == CHECKSUM else None, "checksums_checked": False}


def verify_index(folder: str | Path) -> dict[str, Any]:
    """Check an index folder whole (``harness index verify``): its manifest, every shard's
    ``shard.json``, ``emb.npy`` header and ids (a :class:`DataError` naming the first malformed file),
    then the sha256 of every ``emb.npy`` and ``ids.json`` against what the build recorded. Returns
    ``{"folder", "shards", "checksums": "sha256" or None (none recorded), "mismatches": [{"shard",
    "file", "sha256", "recorded"}, ...]}``. A BM25 index (``harness index build -r bm25``): the
    manifest's fields against their ``manifest_sha256`` and every file's sha256, then every other check
    (an index without checksums is an error); returns ``{"folder", "kind": "harness-bm25-index",
    "files", "checksums": "sha256", "mismatches": [{"file", "sha256", "recorded"}, ...]}``."""
    from harness.retrievers import bm25_index  # lazy: numpy only for the index commands
    from harness.retrievers.dense.embedding_index import verify_index as verify  # lazy: as above

    if bm25_index.is_index(folder):
        return bm25_index.verify_index(folder)
    return verify(folder)


def list_plugins(context: Context | None = None) -> list[dict[str, Any]]:
    """Every plugin (distribution, version, error) with the components it registers by kind."""
    return Context.of(context).host.report()


__all__ = ["evaluate", "evaluate_sweep", "score", "load_task", "load_dataset", "list_plugins", "build_index",
           "index_info", "verify_index", "EvalResult", "evaluate_runs", "fuse_runs"]
