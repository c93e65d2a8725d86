"""Writing results: ``results.json``, ``per_query.jsonl``, one TREC run file per mode and
``judgments.jsonl`` when a judge ran. Every reported number can be recomputed from these files."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.concepts.errors import HarnessError
from harness.runtime.redact import redact_url

if TYPE_CHECKING:
    from harness.evaluation.pipeline import EvalResult, SuiteResult


def _clean(value: Any) -> Any:
    """JSON has no NaN: write it as null. Credentials a user put in a URL (``http://u:KEY@host``)
    are masked wherever they appear (a spec, the command line, a base URL)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str):
        return redact_url(value)
    if isinstance(value, dict):
        return {(redact_url(k) if isinstance(k, str) else k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def prepare_output(output: str | Path, overwrite: bool = False, members: Sequence[str] = ()) -> Path:
    """Make sure results can be written to ``output`` before any work is done: create the folder,
    write and delete a probe file, and refuse a folder that already holds results (``results.json``,
    or ``<member>/results.json`` for a suite's ``members``) unless ``overwrite``.

    Raises :class:`HarnessError` naming the folder and the reason."""
    out = Path(output)
    try:
        if out.exists() and not out.is_dir():
            raise HarnessError(f"--output {out} exists and is not a folder; give a folder path")
        if not overwrite:
            held = [p for p in (out / "results.json", *(out / m.replace(":", "_") / "results.json" for m in members))
                    if p.is_file()]
            if held:
                raise HarnessError(
                    f"--output {out} already holds results ({held[0]}"
                    + (f" and {len(held) - 1} more" if len(held) > 1 else "")
                    + "); pass --overwrite (overwrite=True in Python) to replace them, or choose another folder"
                )
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise HarnessError(f"cannot create the output folder {out}: {exc.strerror or exc}") from exc
    try:
        fd, probe = tempfile.mkstemp(prefix=".harness-write-probe-", dir=out)
        try:
            os.write(fd, b"probe\n")
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise HarnessError(f"cannot write to the output folder {out}: {exc.strerror or exc}") from exc
    return out


def write_results(result: EvalResult, output: str | Path) -> Path:
    from harness.formats.trec import write_run

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
