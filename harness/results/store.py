"""The results contract: reading results folders (their layout, and writing them, is
:mod:`harness.results.layout`).

A folder holds ``results.json``, ``per_query.jsonl``, one TREC run file per mode and
``judgments.jsonl`` when a judge ran (a suite's folder: its ``results.json`` and one such folder
per member). Every reported number can be recomputed from these files.

``results.json`` carries ``"schema_version": 2``. :func:`read_results` is the one reader: it
validates the file and returns a :class:`StoredResults` upgraded to the current schema; a file
without ``schema_version`` is version 1 (written before uncertainty had its own fields) and is
converted on read: names ending in ``:se``, ``:bootstrap``, ``:queries`` become the uncertainty of
the metric they qualify, counts (``_queries``, ``_queries_skipped``, ``_positions_dropped``,
``:triplets``) go to ``metric_details``. See ``docs/architecture.md``, "Results contract"."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness.concepts.errors import HarnessError
from harness.concepts.uncertainty import Uncertainty
from harness.formats import bounded as files_in
from harness.results.layout import PER_QUERY, QUERY_LLM, RESULTS, SCHEMA_VERSION, member_folder

# ---------------------------------------------------------------------------------------------- reading

#: version-1 names that qualify a metric (``NAME:se`` ...): converted into ``uncertainty[NAME]``
V1_UNCERTAINTY_SUFFIXES = MappingProxyType({":se": "se", ":bootstrap": "estimate", ":queries": "n"})
#: version-1 names that are counts, not metrics: moved to ``metric_details``
V1_COUNT_SUFFIXES = ("_queries_skipped", "_positions_dropped", "_queries", ":triplets")
_MODE = re.compile(r"^(.*?)(\[[^\[\]]*\])?$")


def v1_non_metric(name: str) -> str | None:
    """For a version-1 name that is no metric, what it is: ``"se"``, ``"estimate"``, ``"n"`` (an
    uncertainty field of the metric it qualifies) or ``"count"``; None for a metric. A mode suffix
    (``NAME:se[og]``) is allowed."""
    base = _MODE.match(name).group(1)
    for suffix, what in V1_UNCERTAINTY_SUFFIXES.items():
        if base.endswith(suffix) and len(base) > len(suffix):
            return what
    if any(base.endswith(s) and len(base) > len(s) for s in V1_COUNT_SUFFIXES):
        return "count"
    return None


def split_v1_metrics(metrics: dict[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]], dict[str, Any]]:
    """A version-1 ``metrics`` object -> (metrics, uncertainty as dicts, metric_details)."""
    kept: dict[str, Any] = {}
    fields: dict[str, dict[str, Any]] = {}
    details: dict[str, Any] = {}
    for name, value in metrics.items():
        what = v1_non_metric(name)
        if what is None:
            kept[name] = value
            continue
        m = _MODE.match(name)
        base, mode = m.group(1), m.group(2) or ""
        if what == "count":
            details[name] = value
            continue
        suffix = next(s for s, w in V1_UNCERTAINTY_SUFFIXES.items() if w == what)
        target = base[: -len(suffix)] + mode
        if target not in metrics:  # qualifies nothing reported: keep the number as a detail
            details[name] = value
            continue
        if what == "n" and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
            value = int(value)
        fields.setdefault(target, {})[what] = value
    uncertainty = {}
    for name, f in fields.items():
        if "estimate" in f:
            f["method"] = "bootstrap"
        uncertainty[name] = Uncertainty.from_dict(f).to_dict()
    return kept, uncertainty, details


def upgrade(data: dict[str, Any]) -> dict[str, Any]:
    """A results.json object of any known version, in the current schema (a new dict)."""
    version = data.get("schema_version", 1)
    if version == SCHEMA_VERSION:
        return dict(data)
    out = dict(data)
    metrics, uncertainty, details = split_v1_metrics(data.get("metrics") or {})
    out["metrics"] = metrics
    if "tasks" in data and isinstance(data["tasks"], dict):  # a suite: means over members carry no uncertainty
        out["uncertainty"] = {}
        out["metric_details"] = details
        tasks = {}
        for name, entry in data["tasks"].items():
            entry = dict(entry) if isinstance(entry, dict) else entry
            if isinstance(entry, dict):
                entry["metrics"], entry["uncertainty"], entry["metric_details"] = split_v1_metrics(
                    entry.get("metrics") or {})
            tasks[name] = entry
        out["tasks"] = tasks
    else:
        out["uncertainty"], out["metric_details"] = uncertainty, details
    out["schema_version"] = SCHEMA_VERSION
    return out


def _is_number(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))


def _check_numbers(where: str, what: str, value: Any) -> None:
    if not isinstance(value, dict):
        raise HarnessError(f"{where}: {what!r} must be an object of name -> number, not {type(value).__name__}")
    bad = [k for k, v in value.items() if not _is_number(v)]
    if bad:
        raise HarnessError(f"{where}: {what}[{bad[0]!r}] is not a number: {value[bad[0]]!r}")


def _check_uncertainty(where: str, value: Any) -> None:
    if not isinstance(value, dict):
        raise HarnessError(f"{where}: 'uncertainty' must be an object of metric -> uncertainty")
    for name, u in value.items():
        try:
            Uncertainty.from_dict(u)
        except (TypeError, ValueError) as exc:
            raise HarnessError(f"{where}: uncertainty[{name!r}]: {exc}") from None


def _check_text(where: str, field: str, value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise HarnessError(f"{where}: {field} must be text, not {type(value).__name__} {_short(value)}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_components(where: str, comps: Any) -> None:
    """components: role -> an object (or a list of objects, e.g. rerankers) whose spec/name are text."""
    for role, c in (comps or {}).items():
        for i, item in enumerate(c if isinstance(c, list) else [c]):
            field = f"components[{role!r}]" + (f"[{i}]" if isinstance(c, list) else "")
            if item is None:
                continue
            if not isinstance(item, dict):
                raise HarnessError(f"{where}: {field} must be an object, not {type(item).__name__}")
            for key in ("spec", "name"):
                _check_text(where, f"{field}[{key!r}]", item.get(key))
            if item.get("stats") is not None and not isinstance(item["stats"], dict):
                raise HarnessError(f"{where}: {field}['stats'] must be an object")


def _check_files(where: str, value: Any) -> None:
    for key, name in (value or {}).items():
        files_in.relative_name(name, where, f"files[{key!r}]")


def validate(data: Any, where: str = RESULTS) -> None:
    """Check a results.json object (current schema) field by field; :class:`HarnessError` names the
    first problem. File names (``files``, a suite's ``tasks[...]["results"]``) must be relative and
    stay inside the folder (see :mod:`harness.formats.bounded`)."""
    if not isinstance(data, dict):
        raise HarnessError(f"{where}: a results.json holds a JSON object, not {type(data).__name__}")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise HarnessError(f"{where}: schema_version {data.get('schema_version')!r}, expected {SCHEMA_VERSION}")
    _check_numbers(where, "metrics", data.get("metrics", {}))
    _check_uncertainty(where, data.get("uncertainty", {}))
    _check_numbers(where, "metric_details", data.get("metric_details", {}))
    for key in ("task", "components", "files", "usage", "timings", "metric_notes"):
        if key in data and data[key] is not None and not isinstance(data[key], dict):
            raise HarnessError(f"{where}: {key!r} must be an object")
    _check_text(where, "task['name']", (data.get("task") or {}).get("name"))
    _check_components(where, data.get("components"))
    _check_files(where, data.get("files"))
    total = (data.get("usage") or {}).get("total")
    if total is not None and not isinstance(total, dict):
        raise HarnessError(f"{where}: usage['total'] must be an object")
    if "tasks" in data:
        if not isinstance(data["tasks"], dict):
            raise HarnessError(f"{where}: a suite's 'tasks' must be an object of task -> entry")
        for name, entry in data["tasks"].items():
            w = f"{where}: tasks[{name!r}]"
            if not isinstance(entry, dict):
                raise HarnessError(f"{w} must be an object")
            _check_numbers(w, "metrics", entry.get("metrics", {}))
            _check_uncertainty(w, entry.get("uncertainty", {}))
            _check_numbers(w, "metric_details", entry.get("metric_details", {}))
            if entry.get("results") is not None:
                files_in.relative_name(entry["results"], where, f"tasks[{name!r}]['results']")


def _number(v: Any) -> float | None:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    return None


@dataclass
class StoredResults:
    """One results.json as read: ``data`` in the current schema whatever ``source_version`` the
    file was written with; typed views of the fields below."""

    path: Path  # the results.json file
    data: dict[str, Any]
    source_version: int

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def is_suite(self) -> bool:
        return "tasks" in self.data

    @property
    def task_name(self) -> str:
        return (self.data.get("task") or {}).get("name") or self.folder.name

    # the typed views are built once per read (a report looks each metric up, never rebuilds them)
    @cached_property
    def metrics(self) -> dict[str, float | None]:
        return {k: _number(v) for k, v in (self.data.get("metrics") or {}).items()}

    @cached_property
    def uncertainty(self) -> dict[str, Uncertainty]:
        return {k: Uncertainty.from_dict(v) for k, v in (self.data.get("uncertainty") or {}).items()}

    @cached_property
    def metric_details(self) -> dict[str, float | None]:
        return {k: _number(v) for k, v in (self.data.get("metric_details") or {}).items()}

    @property
    def metric_notes(self) -> dict[str, str]:
        """name -> why a metric has no value (absent from files written before notes existed)."""
        return {k: str(v) for k, v in (self.data.get("metric_notes") or {}).items()}

    @property
    def components(self) -> dict[str, Any]:
        return self.data.get("components") or {}

    def run_files(self) -> dict[str, Path]:
        """mode -> run file path (from ``files``)."""
        out: dict[str, Path] = {}
        for key, name in (self.data.get("files") or {}).items():
            if key.startswith("run[") and key.endswith("]"):
                out[key[4:-1]] = self.folder / name
        return out

    def check_files(self) -> None:
        """Every file ``files`` names that exists lies inside the folder, is a regular file and is
        within its size bound (:mod:`harness.formats.bounded`); nothing is opened."""
        for key, name in (self.data.get("files") or {}).items():
            files_in.check_inside(self.folder, self.folder / name, str(self.path), f"files[{key!r}]",
                                  must_exist=False)

    def lines(self, path: Path, field: str) -> Iterator[tuple[int, str]]:
        """The lines of a file of this folder (``path`` from :meth:`run_files`), read inside it."""
        return files_in.iter_lines(self.folder, path, str(self.path), field)

    def read_per_query(self) -> dict[str, dict[str, float | None]]:
        """qid -> name -> value from ``per_query.jsonl`` (a missing file, a row without a query id or
        a query id twice is an error); values that are not numbers read as None, and a version-1
        file's non-metric names are left out."""
        name = (self.data.get("files") or {}).get("per_query", PER_QUERY)
        rows = read_per_query(self.folder / name, self.folder, str(self.path), "files['per_query']")
        if self.source_version < 2:
            rows = {q: {k: v for k, v in row.items() if v1_non_metric(k) is None} for q, row in rows.items()}
        return rows

    def read_query_llm(self) -> dict[str, dict[str, float | None]]:
        """qid -> its LLM calls, tokens, USD and seconds (``per_query.jsonl``'s field ``llm``; each a number
        or None); ``{}`` when the rows carry none (a run without LLM calls, or written before the field)."""
        name = (self.data.get("files") or {}).get("per_query", PER_QUERY)
        return read_query_llm(self.folder / name, self.folder, str(self.path), "files['per_query']")

    def member_paths(self) -> dict[str, Path]:
        """A suite's members: task -> its results.json."""
        out = {}
        for task, entry in (self.data.get("tasks") or {}).items():
            out[task] = self.folder / (entry.get("results") or f"{member_folder(task)}/{RESULTS}")
        return out

    def members(self) -> dict[str, StoredResults]:
        """A suite's members read (each a :class:`StoredResults`); missing ones are an error."""
        out = {}
        for task, path in self.member_paths().items():
            files_in.check_inside(self.folder, path, str(self.path), f"tasks[{task!r}]['results']",
                                  files_in.MAX_RESULTS_JSON)
            out[task] = _read(path, self.folder)
        return out


def read_results(path: str | Path) -> StoredResults:
    """Read and validate a results.json (or the folder holding one), converting older schema versions.

    Raises :class:`HarnessError` when the file is missing, not JSON, invalid, or written by a newer
    schema than this harness knows. The folder is untrusted: ``results.json`` and every file it names
    must lie inside it, be regular files and stay within the size bounds of
    :mod:`harness.formats.bounded`."""
    p = Path(path)
    given_file = p.name.endswith(".json") and not p.is_dir()
    if not given_file:
        p = p / RESULTS
    if not (p.exists() or p.is_symlink()):
        raise HarnessError(f"{path}: no results.json (give a folder written by `harness eval -o`)")
    # a results.json found in a folder must stay inside it; a file the user names is theirs
    return _read(p, p.parent, inside=not given_file)


def _read(p: Path, root: Path, inside: bool = True) -> StoredResults:
    where = str(p)
    if not inside:
        root = Path(os.path.realpath(p)).parent
    data = files_in.loads(files_in.read_bytes(root, p, where, RESULTS, files_in.MAX_RESULTS_JSON), where)
    if not isinstance(data, dict):
        raise HarnessError(f"{p}: a results.json holds a JSON object, not {type(data).__name__}")
    version = data.get("schema_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise HarnessError(f"{p}: schema_version must be a whole number >= 1, not {version!r}")
    if version > SCHEMA_VERSION:
        raise HarnessError(f"{p}: schema_version {version} is newer than this harness reads ({SCHEMA_VERSION}); "
                           "upgrade harness")
    if version < SCHEMA_VERSION:  # check the old file's own types before converting it
        _check_numbers(str(p), "metrics", data.get("metrics", {}))
    try:
        upgraded = upgrade(data)
    except (TypeError, ValueError) as exc:
        raise HarnessError(f"{p}: cannot read schema_version {version}: {exc}") from None
    validate(upgraded, str(p))
    for entry in [upgraded, *(upgraded.get("tasks") or {}).values()]:  # the fields every reader may index
        for key in ("metrics", "uncertainty", "metric_details"):
            if entry.get(key) is None:
                entry[key] = {}
    stored = StoredResults(p, upgraded, version)
    stored.check_files()
    return stored


def read_per_query(path: str | Path, root: str | Path | None = None, where: str | None = None,
                   field: str = PER_QUERY) -> dict[str, dict[str, float | None]]:
    """``per_query.jsonl``: qid -> name -> value (non-numbers read as None), read inside ``root``
    (default: the file's folder) under the rules of :mod:`harness.formats.bounded`. A missing or empty
    file, a row that is not an object with a text ``query_id``, or a query id on two rows is an error
    naming the file and line (``where`` and ``field``: the results.json and field that name it)."""
    p = Path(path)
    where = where or str(p)
    rows: dict[str, dict[str, float | None]] = {}
    first: dict[str, int] = {}
    dec = files_in.decoder()
    for lineno, line in files_in.iter_lines(p.parent if root is None else root, p, where, field):
        if not line.strip():
            continue
        row = files_in.loads(line, f"{p}:{lineno}", dec, nested=False)  # nested values read as None
        qid = row.pop("query_id", None) if isinstance(row, dict) else None
        if isinstance(qid, int) and not isinstance(qid, bool):
            qid = str(qid)
        if not isinstance(qid, str):
            raise HarnessError(f"{p}:{lineno}: a per-query row is an object with a query_id (text), "
                               f"not {_short(qid if isinstance(row, dict) else row)}")
        if qid in first:
            raise HarnessError(f"{p}:{lineno}: query_id {qid!r} appears twice (first on line {first[qid]}); "
                               "each query has one row")
        first[qid] = lineno
        rows[qid] = {k: _number(v) for k, v in row.items() if k != QUERY_LLM}  # "llm": calls and cost, no metric
    if not rows:
        raise HarnessError(f"{p}: holds no per-query row")
    return rows


def read_query_llm(path: str | Path, root: str | Path | None = None, where: str | None = None,
                   field: str = PER_QUERY) -> dict[str, dict[str, float | None]]:
    """The ``llm`` field of each ``per_query.jsonl`` row (:func:`read_per_query`'s rules: inside ``root``,
    bounded): qid -> name -> a number or None (a nested object's fields as ``compute_usd``, ...); a field that
    is not an object is an error naming the line."""
    p = Path(path)
    where = where or str(p)
    out: dict[str, dict[str, float | None]] = {}
    dec = files_in.decoder()
    for lineno, line in files_in.iter_lines(p.parent if root is None else root, p, where, field):
        if not line.strip() or f'"{QUERY_LLM}"' not in line:
            continue
        row = files_in.loads(line, f"{p}:{lineno}", dec)
        if not isinstance(row, dict) or QUERY_LLM not in row:
            continue
        qid, llm = row.get("query_id"), row[QUERY_LLM]
        if isinstance(qid, int) and not isinstance(qid, bool):
            qid = str(qid)
        if not isinstance(qid, str) or not isinstance(llm, dict):
            raise HarnessError(f"{p}:{lineno}: field {QUERY_LLM!r} of a per-query row is an object of counts "
                               "with a text query_id")
        flat = {str(k): _number(v) for k, v in llm.items() if not isinstance(v, dict)}
        for k, v in llm.items():  # "compute": {"usd": ...} -> "compute_usd"
            if isinstance(v, dict):
                flat.update({f"{k}_{kk}": _number(vv) for kk, vv in v.items()})
        out[qid] = flat
    return out
