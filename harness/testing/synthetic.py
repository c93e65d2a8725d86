"""Small synthetic results folders in the format ``harness eval -o`` writes (for tests, benchmarks
and trying ``harness compare``/``harness report`` without running anything)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.results.layout import PER_QUERY, QUERY_LLM, RESULTS, SCHEMA_VERSION, member_folder, run_name


def _standard_error(vals: list[float]) -> float | None:
    if len(vals) < 2:
        return None
    mean = sum(vals) / len(vals)
    return (sum((v - mean) ** 2 for v in vals) / (len(vals) - 1) / len(vals)) ** 0.5


def write_results_folder(folder: str | Path, task: str, per_query: Mapping[str, Mapping[str, float | None]], *,
                         retriever: str = "synthetic", modes: tuple[str, ...] = ("default",),
                         usage: dict[str, Any] | None = None, rankings: int = 5, se: bool = False,
                         details: Mapping[str, float] | None = None,
                         query_llm: Mapping[str, Mapping[str, Any]] | None = None) -> Path:
    """One evaluation's folder (results.json schema 2): results.json (metrics = means of the per-query
    values), per_query.jsonl and a TREC run file per mode (``rankings`` made-up documents per query).
    ``se=True`` adds each metric's standard error over the queries as its uncertainty; ``details``
    are written as ``metric_details`` (counts that are not metrics); ``query_llm``: each query's LLM
    calls and cost, written as its row's field ``llm``."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    names: list[str] = []
    for row in per_query.values():
        names += [k for k in row if k not in names]
    metrics = {}
    uncertainty = {}
    for n in names:
        vals = [row[n] for row in per_query.values() if row.get(n) is not None]
        metrics[n] = sum(vals) / len(vals) if vals else None
        if se and _standard_error(vals) is not None:
            uncertainty[n] = {"se": _standard_error(vals), "ci95": None, "n": len(vals), "estimate": None,
                              "method": "standard error of the mean over queries"}
    files = {}
    for mode in modes:
        fname = run_name(mode, len(modes))
        with open(out / fname, "w", encoding="utf-8") as fh:
            for q in per_query:
                for r in range(1, rankings + 1):
                    fh.write(f"{q} Q0 {q}-{mode}-d{r} {r} {1.0 / r:.6f} {retriever}\n")
        files[f"run[{mode}]"] = fname
    with open(out / PER_QUERY, "w", encoding="utf-8") as fh:
        for q, row in per_query.items():
            llm = {QUERY_LLM: dict(query_llm[q])} if query_llm and q in query_llm else {}
            fh.write(json.dumps({"query_id": q, **row, **llm}) + "\n")
    files["per_query"] = PER_QUERY
    results = {"schema_version": SCHEMA_VERSION, "harness_version": "synthetic",
               "task": {"name": task, "metrics": names},
               "components": {"retriever": {"spec": retriever, "name": retriever}},
               "dataset": {"name": task, "modes": list(modes), "n_queries": {m: len(per_query) for m in modes}},
               "metrics": metrics, "uncertainty": uncertainty, "metric_details": dict(details or {}),
               "timings": {"total": 1.0}, "usage": usage or {}, "files": files}
    (out / RESULTS).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return out


def write_suite_folder(folder: str | Path, suite: str, members: Mapping[str, Mapping[str, Mapping[str, float | None]]],
                       **kwargs: Any) -> Path:
    """A suite's folder: member folders ``<member with ':' as '_'>/`` and the suite's results.json."""
    out = Path(folder)
    tasks = {}
    member_metrics = []
    for task, per_query in members.items():
        sub = out / member_folder(task)
        write_results_folder(sub, task, per_query, **kwargs)
        written = json.loads((sub / RESULTS).read_text())
        m = written["metrics"]
        member_metrics.append(m)
        tasks[task] = {"metrics": m, "uncertainty": written["uncertainty"], "metric_details": written["metric_details"],
                       "results": f"{member_folder(task)}/{RESULTS}"}
    names: list[str] = []
    for m in member_metrics:
        names += [k for k in m if k not in names]
    means = {}
    for n in names:
        vals = [m[n] for m in member_metrics if m.get(n) is not None]
        means[n] = sum(vals) / len(vals) if vals else None
    results = {"schema_version": SCHEMA_VERSION, "harness_version": "synthetic",
               "task": {"name": suite, "tasks": list(members)},
               "components": {"retriever": {"spec": kwargs.get("retriever", "synthetic")}},
               "tasks": tasks, "metrics": means, "uncertainty": {}, "metric_details": {},
               "aggregation": "unweighted mean over member tasks"}
    (out / RESULTS).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return out


INFOSEARCH_DIMS = ("audience", "keyword", "format", "language", "length", "source")
DEMO_SYSTEMS = ("bm25", "dense", "rankgpt")


def infosearch_like(root: str | Path, n_queries: int = 30, seed: int = 0) -> list[str]:
    """Three systems x six InfoSearch-style dimensions (suites), WISE and p-MRR going negative,
    LLM usage for the 2nd and 3rd system. Returns the three suite folders."""
    import numpy as np

    rng = np.random.default_rng(seed)
    folders = []
    for k, system in enumerate(DEMO_SYSTEMS):
        members = {}
        for d in INFOSEARCH_DIMS:
            members[f"infosearch:{d}"] = {
                f"{d}-q{i}": {"nDCG@10[og]": float(rng.uniform(0.2 + 0.2 * k, 0.6 + 0.2 * k)),
                              "WISE": float(rng.uniform(-0.6 + 0.3 * k, 0.2 + 0.3 * k)),
                              "p-MRR": float(rng.uniform(-0.5, 0.4))}
                for i in range(n_queries)}
        usage = {"total": {"calls": 10 * k, "cache_hits": 3 * k, "input_tokens": 1000 * k, "output_tokens": 50 * k,
                           "cost_usd": 0.01 * k}}
        folders.append(str(write_suite_folder(Path(root) / system, "infosearch", members, retriever=system,
                                              modes=("og", "changed", "reversed"), usage=usage)))
    return folders


def ifir_like(root: str | Path, seed: int = 1) -> list[str]:
    """Two systems on one IFIR-style task whose query ids carry instruction levels ``-L1..-L3``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    folders = []
    for k, system in enumerate(["bm25", "e5"]):
        pq = {f"q{i}-L{lv}": {"nDCG@20": float(rng.uniform(0, 0.5 + 0.1 * k))} for i in range(8) for lv in (1, 2, 3)}
        folders.append(str(write_results_folder(Path(root) / system, "ifir:fiqa", pq, retriever=system)))
    return folders


BIRCO_TASKS = ("birco:arguana", "birco:wtb", "birco:clinical-trial", "birco:relic")


def birco_like(root: str | Path, seed: int = 2, systems: tuple[str, ...] = ("e5", "rerank")) -> list[str]:
    """Suites of four BIRCO-style tasks whose metrics carry an uncertainty (SE over queries), one
    folder per system. Returns the suite folders."""
    import numpy as np

    rng = np.random.default_rng(seed)
    folders = []
    for k, system in enumerate(systems):
        members = {t: {f"q{i}": {"birco-ndcg@10": float(rng.uniform(0.1 + 0.1 * k, 0.6 + 0.1 * k)),
                                 "birco-recall@5": float(rng.uniform(0.0, 0.8))} for i in range(20)}
                   for t in BIRCO_TASKS}
        folders.append(str(write_suite_folder(Path(root) / system, "birco", members, retriever=system, se=True)))
    return folders
