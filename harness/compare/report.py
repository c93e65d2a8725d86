"""``harness report``: one self-contained static HTML file (no network, no CDN): the results' data
embedded as JSON, SVG charts written by the autoescaped templates in ``templates/``."""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any

from harness.compare import compute_chart, svg
from harness.compare.analysis import CompareResult, compare
from harness.compare.rank_charts import across_rank_charts, task_rank_charts
from harness.compare.ranks import lower_is_better  # ranks: bold marks the lowest
from harness.compare.runs import System, TaskResult, common_metrics, common_tasks
from harness.concepts.errors import HarnessError
from harness.concepts.uncertainty import Uncertainty
from harness.metrics.bootstrap import DEFAULT_RESAMPLES
from harness.runtime.extras import require

LEVEL = re.compile(r"-L(\d+)$")
_RANK = re.compile(r"\+?\d{1,9}")  # a run file's rank column
MAX_BAR_METRICS = 6
WORST = 5
RANKING_DEPTH = 10


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def _env():
    require("jinja2", "report", "the HTML report")
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("harness.compare", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True)
    env.filters["num"] = lambda v, d=4: "–" if v is None else f"{v:.{d}f}"
    env.filters["rank"] = lambda v: f"{v:g}"
    env.filters["pval"] = lambda v: "–" if v is None else ("<0.0001" if v < 1e-4 else f"{v:.4f}")
    return env


def _script_json(data: Any) -> str:
    """JSON safe inside <script type="application/json">: no '<', '>' or '&' left verbatim."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


def _error(value: float | None, u: Uncertainty | None) -> tuple[float, float, str] | None:
    """An error bar for ``value``: the 95% interval when there is one, else ± SE."""
    if u is None or value is None:
        return None
    if u.ci95 is not None:
        return (*u.ci95, "95% interval")
    if u.se is not None:
        return value - u.se, value + u.se, f"± SE {u.se:.4f}"
    return None


def _unc_cell(u: Uncertainty | None) -> dict[str, Any]:
    if u is None:
        return {"se": None, "ci95": None, "n": None, "estimate": None, "method": None}
    return {"se": u.se, "ci95": None if u.ci95 is None else list(u.ci95), "n": u.n, "estimate": u.estimate,
            "method": u.method}


def _metric_table(systems: list[System], task: str, res: CompareResult | None) -> dict[str, Any]:
    # every per-system view is built once: a metric's row looks values up, never rebuilds them
    metrics = [s.tasks[task].metrics for s in systems]
    names = list(dict.fromkeys(m for ms in metrics for m in ms))
    uncertainties = [s.tasks[task].uncertainty for s in systems]
    tested = {r.metric: r for r in res.results if r.task == task} if res else {}
    rows = []
    for m in names:
        mc = tested.get(m)
        comps = {c.system: c for c in mc.comparisons} if mc else {}
        cells = []
        for i, s in enumerate(systems):
            v = _num(metrics[i].get(m))
            c = comps.get(s.name)
            mark = ""
            if c is not None and c.significant:
                mark = "▲" if c.diff > 0 else "▼"
            cells.append({"value": v, "mark": mark, "p": None if c is None else _num(c.p_randomization_holm),
                          "diff": None if c is None else _num(c.diff),
                          **_unc_cell(uncertainties[i].get(m))})
        pick = min if lower_is_better(m) else max
        best = pick((c["value"] for c in cells if c["value"] is not None), default=None)
        for c in cells:
            c["best"] = best is not None and c["value"] == best and len(cells) > 1
        rows.append({"metric": m, "cells": cells, "tested": mc is not None,
                     "n": None if mc is None else mc.n_queries})
    all_details = [s.tasks[task].metric_details for s in systems]
    details = list(dict.fromkeys(k for ds in all_details for k in ds))
    detail_rows = [{"name": k, "values": [_num(ds.get(k)) for ds in all_details]} for k in details]
    return {"task": task, "rows": rows, "details": detail_rows,
            "has_uncertainty": any(c["se"] is not None or c["ci95"] is not None for r in rows for c in r["cells"])}


def _level_bars(systems: list[System], task: str, metrics: list[str]) -> list[dict[str, Any]]:
    qids = systems[0].tasks[task].per_query
    levels = sorted({int(m.group(1)) for q in qids if (m := LEVEL.search(q))})
    if len(levels) < 2:
        return []
    charts = []
    for metric in metrics[:MAX_BAR_METRICS]:
        series, errors = [], []
        for s in systems:
            vals, errs = [], []
            for lv in levels:
                xs = [row[metric] for q, row in s.tasks[task].per_query.items()
                      if (m := LEVEL.search(q)) and int(m.group(1)) == lv and row.get(metric) is not None]
                mean = sum(xs) / len(xs) if xs else None
                vals.append(mean)
                se = _standard_error(xs)
                errs.append(None if se is None or mean is None else
                            (mean - se, mean + se, f"± SE {se:.4f} over {len(xs)} queries"))
            series.append((s.name, vals))
            errors.append(errs)
        charts.append({"title": f"{task}: {metric} per instruction level", "metric": metric, "kind": "level",
                       "chart": svg.bars([f"L{lv}" for lv in levels], series, errors=errors),
                       "errors": "± SE of the level's mean over its queries"})
    return charts


def _standard_error(xs: list[float]) -> float | None:
    """The standard error of the mean of ``xs`` (sample standard deviation / sqrt(n)); None for n < 2."""
    xs = [x for x in xs if x is not None and math.isfinite(x)]
    if len(xs) < 2:
        return None
    mean = sum(xs) / len(xs)
    return math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1) / len(xs))


def _read_rankings(tr: TaskResult, mode: str, path: Path, qids: set[str],
                   depth: int) -> dict[str, list[dict[str, Any]]]:
    """The top ``depth`` of each query in ``qids`` from a run file of the folder (read inside it; every
    line checked: ``qid Q0 docid rank score tag``, a whole rank, a number for the score)."""
    out: dict[str, list[dict[str, Any]]] = {q: [] for q in qids}
    for lineno, line in tr.stored.lines(path, f"files['run[{mode}]']"):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise HarnessError(f"{path}:{lineno}: expected 6 fields 'qid Q0 docid rank score tag', "
                               f"found {len(parts)}")
        if not _RANK.fullmatch(parts[3]):
            raise HarnessError(f"{path}:{lineno}: rank {parts[3][:40]!r} is not a whole number")
        try:
            score = float(parts[4])
        except ValueError:
            raise HarnessError(f"{path}:{lineno}: score {parts[4][:40]!r} is not a number") from None
        if parts[0] in out:
            out[parts[0]].append({"doc": parts[2], "rank": int(parts[3]), "score": _num(score)})
    for q in out:
        out[q] = sorted(out[q], key=lambda r: r["rank"])[:depth]
    return out


def _worst(systems: list[System], task: str, metric: str | None) -> list[dict[str, Any]]:
    if metric is None:
        return []
    out = []
    for s in systems:
        tr = s.tasks[task]
        scored = [(row[metric], q) for q, row in tr.per_query.items() if row.get(metric) is not None]
        worst = sorted(scored)[:WORST]
        qids = {q for _, q in worst}
        runs = {mode: _read_rankings(tr, mode, path, qids, RANKING_DEPTH) for mode, path in tr.run_files().items()}
        out.append({"system": s.name, "metric": metric, "queries": [
            {"query_id": q, "value": v, "others": {o.name: _num(o.tasks[task].per_query.get(q, {}).get(metric))
                                                   for o in systems if o is not s},
             "rankings": [{"mode": mode, "docs": r.get(q, [])} for mode, r in runs.items()]}
            for v, q in worst]})
    return out


def _usage(s: System) -> dict[str, Any]:
    keys = ("calls", "cache_hits", "input_tokens", "output_tokens", "cost_usd")
    tot: dict[str, Any] = {k: 0 for k in keys}
    seconds = 0.0
    any_llm = False
    for tr in s.tasks.values():
        u = (tr.results.get("usage") or {}).get("total") or {}
        if u:
            any_llm = True
        for k in keys:
            v = _num(u.get(k))
            if v is not None:
                tot[k] += v
        seconds += _num((tr.results.get("timings") or {}).get("total")) or 0.0
    comp_stats = {}
    for key, c in (s.results.get("components") or {}).items():
        for item in c if isinstance(c, list) else [c]:
            if isinstance(item, dict) and isinstance(item.get("stats"), dict):
                comp_stats[f"{key}:{item.get('spec', item.get('name', ''))}"] = item["stats"]
    return {"system": s.name, "llm": any_llm, **tot, "seconds": seconds, "component_stats": comp_stats}


def _suite(systems: list[System], tasks: list[str], fill: str, bootstrap: int, seed: int) -> dict[str, Any]:
    """The section across a suite's (or several) tasks: radars, bars per task, suite means, rank charts."""
    # each system's views per task, built once (a metric's chart only looks values up)
    vals = {s.name: {t: s.tasks[t].metrics for t in tasks} for s in systems}
    uncs = {s.name: {t: s.tasks[t].uncertainty for t in tasks} for s in systems}
    shared = [m for m in vals[systems[0].name][tasks[0]]
              if all(_num(vals[s.name][t].get(m)) is not None for s in systems for t in tasks)]
    radars = []
    if len(tasks) >= 3:
        for m in shared:
            series = [(s.name, [_num(vals[s.name][t].get(m)) for t in tasks]) for s in systems]
            radars.append({"metric": m, "chart": svg.radar(tasks, series)})
    bar_charts = []
    for m in shared[:MAX_BAR_METRICS]:
        series = [(s.name, [_num(vals[s.name][t].get(m)) for t in tasks]) for s in systems]
        errors = [[_error(_num(vals[s.name][t].get(m)), uncs[s.name][t].get(m)) for t in tasks]
                  for s in systems]
        chart = svg.bars(svg.short_labels(tasks), series, errors=errors)
        has_errors = any(r["error"] for r in chart["rects"])
        bar_charts.append({"title": f"{m} per task", "metric": m, "kind": "task", "chart": chart,
                           "errors": "the metric's own uncertainty: ± SE, or its 95% interval" if has_errors
                           else ""})
    suite_metrics = [s.results.get("metrics") or {} for s in systems]
    means = [{"metric": m, "values": [_num(sm.get(m)) if s.suite else None
                                       for s, sm in zip(systems, suite_metrics)]} for m in shared]
    return {"tasks": tasks, "radars": radars, "bars": bar_charts, "means": means,
            "has_means": any(s.suite for s in systems),
            "ranks": across_rank_charts(systems, tasks, fill=fill, resamples=bootstrap, seed=seed)}


def build_report(systems: list[System], *, baseline: str | None = None, permutations: int = 10_000, seed: int = 0,
                 alpha: float = 0.05, fill: str = "error", title: str = "harness report",
                 bootstrap: int = DEFAULT_RESAMPLES) -> str:
    """The report as one HTML string."""
    if not systems:
        raise HarnessError("report needs at least one results folder")
    names = [s.name for s in systems]
    if baseline and baseline not in names:
        raise HarnessError(f"baseline {baseline!r} is not one of the systems: {', '.join(names)}")
    base = baseline or names[0]
    systems = [systems[names.index(base)]] + [s for s in systems if s.name != base]
    tasks = common_tasks(systems)
    if not tasks:
        raise HarnessError("the results share no task")
    res = None
    if len(systems) > 1:
        res = compare(systems, baseline=base, permutations=permutations, seed=seed, alpha=alpha, fill=fill,
                      tukey=False)
    sections = []
    for task in tasks:
        metrics = common_metrics(systems, task)
        sections.append({"task": task, "table": _metric_table(systems, task, res),
                         "levels": _level_bars(systems, task, metrics),
                         "worst": _worst(systems, task, metrics[0] if metrics else None),
                         "ranks": task_rank_charts(systems, task, metrics, fill=fill, resamples=bootstrap, seed=seed),
                         "compute": compute_chart.for_systems(systems, task, metrics)})
    suite = _suite(systems, tasks, fill, bootstrap, seed) if len(tasks) > 1 else None
    data = {
        "generated": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "baseline": base,
        "systems": [{"name": s.name, "path": str(s.path), "components": s.label, "suite": s.suite,
                     "color": svg.color(i)} for i, s in enumerate(systems)],
        "metrics": {s.name: {t: s.tasks[t].metrics for t in tasks} for s in systems},
        "uncertainty": {s.name: {t: {m: u.to_dict() for m, u in s.tasks[t].uncertainty.items()} for t in tasks}
                        for s in systems},
        "metric_details": {s.name: {t: s.tasks[t].metric_details for t in tasks} for s in systems},
        "comparison": None if res is None else res.as_dict(),
        "ranks": [{"task": c["task"], "metric": c["metric"], "systems": c["rows"]}
                  for c in [*(c for sec in sections for c in sec["ranks"]), *(suite or {}).get("ranks", [])]],
        "usage": [_usage(s) for s in systems],
    }
    data = _clean(data)
    html = _env().get_template("report.html.j2").render(
        title=title, data=data, data_json=_script_json(data), sections=sections, suite=suite,
        settings=None if res is None else res.settings, alpha=alpha)
    return html


def write_report(systems: list[System], output: str | Path, **kwargs: Any) -> Path:
    out = Path(output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(build_report(systems, **kwargs), encoding="utf-8")
    return out
