"""Writing results: ``results.json``, ``per_query.jsonl``, one TREC run file per mode and
``judgments.jsonl`` when a judge ran. Every reported number can be recomputed from these files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .pipeline import EvalResult, SuiteResult


def _clean(value: Any) -> Any:
    """JSON has no NaN: write it as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def write_results(result: EvalResult, output: str | Path) -> Path:
    from .io.trec import write_run

    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    data = result.to_dict()
    files: dict[str, str] = {}
    for mode, run in result.runs.items():
        name = "run.trec" if len(result.runs) == 1 else f"run.{mode}.trec"
        write_run(run, out / name, tag=run.name)
        files[f"run[{mode}]"] = name
    with open(out / "per_query.jsonl", "w", encoding="utf-8") as fh:
        for qid, values in result.per_query.items():
            fh.write(json.dumps(_clean({"query_id": qid, **values}), ensure_ascii=False) + "\n")
    files["per_query"] = "per_query.jsonl"
    if result.judgments:
        with open(out / "judgments.jsonl", "w", encoding="utf-8") as fh:
            for mode, js in result.judgments.items():
                for j in js.values():
                    row = {"mode": mode, "query_id": j.query_id, "doc_id": j.doc_id, "score": j.score,
                           "details": j.details}
                    fh.write(json.dumps(_clean(row), ensure_ascii=False, default=str) + "\n")
        files["judgments"] = "judgments.jsonl"
    data["files"] = files
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(_clean(data), indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    tmp.replace(out / "results.json")
    return out / "results.json"


def write_suite_results(result: SuiteResult, output: str | Path) -> Path:
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "results.json.tmp"
    tmp.write_text(json.dumps(_clean(result.to_dict()), indent=2, ensure_ascii=False, default=str) + "\n",
                   encoding="utf-8")
    tmp.replace(out / "results.json")
    return out / "results.json"


def load_results(path: str | Path) -> dict[str, Any]:
    """Read a results.json (or the folder holding one)."""
    p = Path(path)
    if p.is_dir():
        p = p / "results.json"
    return json.loads(p.read_text(encoding="utf-8"))
