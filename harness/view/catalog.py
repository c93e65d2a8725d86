"""The runs ``harness view`` shows and every payload its page reads, built from results folders.

Each folder given is a results folder (``results.json``) or a folder of them (its sub-folders that
hold one); a suite's members are runs of their own. Every file is read through
:func:`harness.results.store.read_results` and :mod:`harness.formats.bounded` (inside the folder,
regular files, bounded sizes, validated JSON): URLs never name a path, only a run id this module
gave and a query id looked up in the run's own files."""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.compare.runs import System
from harness.concepts.errors import HarnessError
from harness.formats import bounded as files_in
from harness.results.layout import RESULTS, VIEW_FILES, first_stage_name
from harness.results.store import StoredResults, read_results
from harness.results.table import metrics_table
from harness.served.cache_rows import CacheReader, ForeignCacheError
from harness.view import rows as rows_of

#: queries per file of the static bundle's per-query data
CHUNK = 100


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


@dataclass
class RunEntry:
    """One results folder shown as a run (a suite's member included)."""

    id: str
    label: str
    stored: StoredResults
    suite: str | None = None
    _per_query: dict[str, dict[str, float | None]] | None = None
    _rankings: dict[str, tuple[Path, dict[str, list[str]]]] | None = None  # stage/mode -> (file, qid -> lines)
    _extras: dict[str, Any] | None = None  # the optional files, by query id
    _lock: threading.Lock = field(default_factory=threading.Lock)  # per_query.jsonl
    _rank_lock: threading.Lock = field(default_factory=threading.Lock)  # the run files
    _extras_lock: threading.Lock = field(default_factory=threading.Lock)  # the optional files

    @property
    def data(self) -> dict[str, Any]:
        return self.stored.data

    @property
    def folder(self) -> Path:
        return self.stored.folder

    def per_query(self) -> dict[str, dict[str, float | None]]:
        with self._lock:
            if self._per_query is None:
                self._per_query = self.stored.read_per_query()
            return self._per_query


def _is_results_folder(p: Path) -> bool:
    return (p / RESULTS).exists() or (p / RESULTS).is_symlink()


def _inside(root: Path, p: Path) -> bool:
    real_root, real = os.path.realpath(root), os.path.realpath(p)
    return os.path.commonpath([real_root, real]) == real_root


class Catalog:
    """The runs found under ``paths`` and their payloads (plain JSON-ready data)."""

    def __init__(self, paths: list[str | Path], cache_dir: str | Path | None = None) -> None:
        if not paths:
            raise HarnessError("harness view needs at least one results folder")
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._readers: dict[str, tuple[Any, str | None]] = {}  # a cache folder's real path -> (reader, note)
        self._readers_lock = threading.Lock()
        self.runs: dict[str, RunEntry] = {}
        for given in paths:
            p = Path(given)
            if not p.is_dir():
                raise HarnessError(f"{given}: not a folder (give results folders written by `harness eval -o`, "
                                   "or a folder of them)")
            if _is_results_folder(p):
                self._add(p, p.resolve().name or str(p))
                continue
            found = [c for c in sorted(p.iterdir()) if c.is_dir() and _is_results_folder(c) and _inside(p, c)]
            if not found:
                raise HarnessError(f"{given}: holds no results.json, nor a sub-folder with one")
            for c in found:
                self._add(c, c.name)

    def _add(self, folder: Path, label: str) -> None:
        stored = read_results(folder)
        rows_of.check_results(stored.data, str(stored.path))
        rid = f"r{len(self.runs) + 1}"
        if stored.is_suite:
            suite_id = rid
            self.runs[rid] = RunEntry(rid, label, stored)
            for i, (task, member) in enumerate(stored.members().items(), start=1):
                rows_of.check_results(member.data, str(member.path))
                mid = f"{suite_id}-{i}"
                self.runs[mid] = RunEntry(mid, f"{label} / {task}", member, suite=suite_id)
        else:
            self.runs[rid] = RunEntry(rid, label, stored)

    def get(self, rid: str) -> RunEntry:
        if rid not in self.runs:
            raise KeyError(rid)
        return self.runs[rid]

    # -- payloads -----------------------------------------------------------------------------
    def runs_payload(self) -> dict[str, Any]:
        return {"runs": [self._summary(r) for r in self.runs.values()]}

    def _summary(self, r: RunEntry) -> dict[str, Any]:
        d = r.data
        task = d.get("task") or {}
        metrics = r.stored.metrics
        declared = [m for m in (task.get("metrics") or []) if isinstance(m, str) and m in metrics]
        main = declared[0] if declared else next(iter(metrics), None)
        unc = r.stored.uncertainty.get(main) if main else None
        total = (d.get("usage") or {}).get("total") or {}
        status = d.get("status")
        failures = d.get("llm_failures") or {}
        incomplete = status == "incomplete" or (isinstance(failures, dict) and failures.get("complete") is False)
        return {
            "id": r.id, "label": r.label, "task": r.stored.task_name if not r.suite else _member_task(r),
            "components": System(r.label, r.folder, r.stored).label,
            "status": "INCOMPLETE" if incomplete else "complete",
            "suite": r.suite, "is_suite": r.stored.is_suite,
            "members": [m.id for m in self.runs.values() if m.suite == r.id],
            "main_metric": main, "main_value": _num(metrics.get(main)) if main else None,
            "main_uncertainty": unc.format(metrics.get(main)) if unc is not None and main else None,
            "metrics": {k: v for k, v in metrics.items()},
            "cost_usd": _num(total.get("cost_usd")), "llm_calls": _num(total.get("calls")),
            "created": d.get("created") if isinstance(d.get("created"), str) else None,
        }

    def run_payload(self, rid: str) -> dict[str, Any]:
        r = self.get(rid)
        d = r.data
        s = r.stored
        out: dict[str, Any] = {"run": self._summary(r),
                               "table": metrics_table(s.metrics, uncertainty=s.uncertainty,
                                                      details=s.metric_details, notes=s.metric_notes),
                               "usage": d.get("usage") or {}, "llm_failures": d.get("llm_failures") or {},
                               "counts": d.get("counts") or {}, "timings": d.get("timings") or {},
                               "command": d.get("command"), "task": d.get("task") or {},
                               "components": d.get("components") or {}}
        if s.is_suite:
            out["per_query"] = None
            return out
        rows = r.per_query()
        qids = list(rows)
        names: dict[str, None] = {}
        for row in rows.values():
            names.update(dict.fromkeys(row))
        fail = (d.get("llm_failures") or {}).get("per_query") or {}
        out["per_query"] = {
            "qids": qids, "metrics": list(names), "texts": self._texts(r, qids),
            "columns": [[rows[q].get(m) for q in qids] for m in names],
            "failures": [int(fail.get(q, 0)) if isinstance(fail.get(q, 0), int) else 0 for q in qids],
            "chunk": CHUNK,
        }
        return out

    def _texts(self, r: RunEntry, qids: list[str]) -> list[str] | None:
        """Each query's text (its first mode's, with the instruction) from ``queries.jsonl``, or None."""
        p = self._optional(r, "queries")
        if p is None:
            return None
        texts: dict[str, str] = {}
        for row in _jsonl(r, p, "queries"):
            q = row.get("query_id")
            if isinstance(q, str) and q not in texts:
                texts[q] = " ".join(str(row.get(k) or "") for k in ("text", "instruction")).strip()
        return [texts.get(q, "") for q in qids]

    # -- one query ----------------------------------------------------------------------------
    def _optional(self, r: RunEntry, key: str) -> Path | None:
        """An optional per-query file of the folder (named in ``files`` or by its default name), checked
        inside the folder; None when absent."""
        name = (r.data.get("files") or {}).get(key) or VIEW_FILES[key]
        files_in.relative_name(name, str(r.stored.path), f"files[{key!r}]")
        path = r.folder / name
        return path if files_in.check_inside(r.folder, path, str(r.stored.path), f"files[{key!r}]",
                                             must_exist=False) else None

    def _stage_files(self, r: RunEntry) -> dict[str, Path]:
        """stage/mode label -> run file: the final runs (``final[MODE]``) and, when the folder holds them,
        the first stage's (``files["first_stage[MODE]"]`` or ``run.first_stage[.MODE].trec``)."""
        files = r.data.get("files") or {}
        modes = r.stored.run_files()
        out: dict[str, Path] = {}
        for mode in modes:
            key = f"first_stage[{mode}]"
            name = files.get(key) or first_stage_name(mode, len(modes))
            p = r.folder / files_in.relative_name(name, str(r.stored.path), f"files[{key!r}]")
            if files_in.check_inside(r.folder, p, str(r.stored.path), f"files[{key!r}]", must_exist=False):
                out[f"first_stage[{mode}]"] = p
        for mode, p in modes.items():
            out[f"final[{mode}]"] = p
        return out

    def rankings(self, r: RunEntry) -> dict[str, tuple[Path, dict[str, list[str]]]]:
        """stage/mode -> (run file, qid -> its lines): each file read once, a query's lines parsed
        when it is shown (:func:`_parse_hits`)."""
        with r._rank_lock:
            if r._rankings is None:
                r._rankings = {label: (p, _group_run(r, label, p)) for label, p in self._stage_files(r).items()}
            return r._rankings

    def warm(self, rid: str) -> None:
        """Read a run's run files and optional files ahead of its first query page (a thread started
        when the run page is served); a problem is left for the query page to report."""
        r = self.runs.get(rid)
        if r is None or r.stored.is_suite:
            return
        try:
            self.rankings(r)
            self._extras(r)
        except Exception:  # noqa: BLE001  (the query page reads them again and reports the problem)
            return

    def query_payload(self, rid: str, qid: str) -> dict[str, Any]:
        r = self.get(rid)
        rows = r.per_query()
        ranks = self.rankings(r)
        if qid not in rows and not any(qid in v for _, v in ranks.values()):
            raise KeyError(qid)
        return self._query(r, qid, rows, ranks, self._extras(r))

    def query_chunk(self, rid: str, start: int) -> dict[str, Any]:
        """The payloads of the queries ``start .. start + CHUNK`` of the per-query table (the bundle)."""
        r = self.get(rid)
        rows = r.per_query()
        qids = list(rows)[start:start + CHUNK]
        ranks = self.rankings(r)
        extras = self._extras(r)
        return {q: self._query(r, q, rows, ranks, extras) for q in qids}

    def _query(self, r: RunEntry, qid: str, rows: dict[str, Any], ranks: dict[str, Any],
               extras: dict[str, Any]) -> dict[str, Any]:
        first = [k for k in ranks if k.startswith("first_stage[")]
        return {
            "run": r.id, "label": r.label, "task": _member_task(r) if r.suite else r.stored.task_name,
            "query_id": qid, "metrics": rows.get(qid, {}),
            "rankings": {label: _parse_hits(r, label, p, v.get(qid, [])) for label, (p, v) in ranks.items()},
            "first_stage": bool(first),
            "queries": extras["queries"].get(qid), "qrels": extras["qrels"].get(qid),
            "judgments": extras["judgments"].get(qid, []),
            "llm_calls": self._calls(extras, qid), "llm_note": extras["llm_note"],
            "has": {k: bool(extras[k]) for k in ("queries", "qrels")},
        }

    def _calls(self, extras: dict[str, Any], qid: str) -> list[dict[str, Any]] | None:
        rows = extras["llm_calls"].get(qid)
        return None if rows is None else [_with_entry(row, extras["cache"]) for row in rows]

    def _extras(self, r: RunEntry) -> dict[str, Any]:
        with r._extras_lock:
            if r._extras is None:
                r._extras = self._read_extras(r)
            return r._extras

    def _read_extras(self, r: RunEntry) -> dict[str, Any]:
        """Query texts, gold grades, judgments and LLM calls by query id, from the folder's optional files."""
        out: dict[str, Any] = {"queries": {}, "qrels": {}, "judgments": {}, "llm_calls": {}, "llm_note": None,
                               "cache": None}
        for key in ("queries", "qrels"):
            p = self._optional(r, key)
            if p is None:
                continue
            for row in _jsonl(r, p, key):
                q = row.get("query_id")
                mode = str(row.get("mode", "default"))
                if key == "queries":
                    out["queries"].setdefault(q, {})[mode] = {k: v for k, v in row.items()
                                                              if k not in ("query_id", "mode")}
                else:
                    out["qrels"].setdefault(q, {}).setdefault(mode, {})[str(row.get("doc_id"))] = _num(row.get("grade"))
        jname = (r.data.get("files") or {}).get("judgments")
        if jname:
            for row in _jsonl(r, r.folder / jname, "judgments"):
                out["judgments"].setdefault(row.get("query_id"), []).append(row)
        p = self._optional(r, "llm_calls")
        if p is None:
            out["llm_note"] = "this results folder records no LLM calls per query (no llm_calls.jsonl)"
            return out
        calls: dict[str, list[dict[str, Any]]] = {}
        for row in _jsonl(r, p, "llm_calls"):
            calls.setdefault(row.get("query_id"), []).append(row)
        named = next((row["cache"] for rows in calls.values() for row in rows
                      if isinstance(row.get("cache"), str)), None)
        out["cache"], out["llm_note"] = self._cache_for(named, r)
        out["llm_calls"] = calls
        return out

    def _cache_for(self, named: str | None, r: RunEntry) -> tuple[Any, str | None]:
        """The LLM cache holding the calls' prompts and replies, opened read-only: ``--cache DIR`` if
        given, else the cache the results folder holds whose path ends like the one ``llm_calls.jsonl``
        names (a name to match inside the folder, never a place to go); None (and why) otherwise."""
        if self.cache_dir is not None:
            return self._reader(_llm_folder(self.cache_dir))
        if named is None:
            return None, "the results name no LLM cache; give one with --cache DIR to see prompts and replies"
        held = _held_cache(self.runs[r.suite].folder if r.suite else r.folder, named)
        if held is None:
            return None, (f"the calls were cached in {named[:300]!r}, which this results folder does not hold; a "
                          "cache elsewhere is opened only when named: harness view --cache DIR shows the prompts "
                          "and replies")
        return self._reader(held)

    def _reader(self, folder: Path) -> tuple[Any, str | None]:
        """One read-only reader per cache folder (:class:`harness.served.cache_rows.CacheReader`: nothing is
        created or changed there), or the note saying why none."""
        real = os.path.realpath(folder)
        with self._readers_lock:
            if real not in self._readers:
                if not (folder / "cache.db").is_file():
                    found: tuple[Any, str | None] = (None, f"no LLM cache in {folder} (no cache.db); prompts and "
                                                           "replies are not shown")
                else:
                    try:
                        found = (CacheReader(folder), None)
                    except ForeignCacheError as exc:
                        found = (None, f"{exc}; prompts and replies are not shown")
                self._readers[real] = found
            return self._readers[real]


#: the most trailing parts of a cache path named in llm_calls.jsonl that are matched inside a results folder
MAX_CACHE_NAME_PARTS = 32


def _llm_folder(path: Path) -> Path:
    """A cache root's ``llm`` sub-folder when ``path`` is the root, else ``path``."""
    return path / "llm" if path.name != "llm" and (path / "llm").is_dir() else path


def _held_cache(root: Path, named: str) -> Path | None:
    """The cache folder inside ``root`` (symlinks resolved) at the longest trailing part of ``named`` (the
    path ``llm_calls.jsonl`` names: absolute, or from another machine) that holds a ``cache.db``; parts
    ``..`` never match. None when the folder holds no such cache: a cache outside it is never opened."""
    if "\x00" in named:
        return None
    parts = [p for p in named.replace("\\", "/").split("/") if p not in ("", ".")][-MAX_CACHE_NAME_PARTS:]
    for i in range(len(parts)):
        tail = parts[i:]
        if ".." in tail or any(":" in p for p in tail):  # never up, never a drive
            continue
        candidate = _llm_folder(root.joinpath(*tail))
        if (candidate / "cache.db").is_file() and _inside(root, candidate / "cache.db"):
            return candidate
    return None


def _member_task(r: RunEntry) -> str:
    return r.label.rsplit(" / ", 1)[-1] if r.suite else r.stored.task_name


def _with_entry(row: dict[str, Any], cache: Any) -> dict[str, Any]:
    """A call with its prompt, reply and model from the cache reader ``cache``; an entry the harness did not
    write (or could not be read) is one message in ``missing``, never decoded."""
    out = dict(row)
    key = row.get("key")
    if cache is None or not isinstance(key, str) or len(key) != 64:
        return out
    try:
        entry = cache.get(key)
    except HarnessError as exc:
        out["missing"] = str(exc)
        return out
    if entry is None:
        out["missing"] = "not in the LLM cache"
    else:
        out["messages"] = entry["key"].get("messages")
        out["reply"] = entry["reply"]["text"]
        out["model"] = entry["key"].get("model")
        if out.get("reasoning") is None and isinstance(entry["reply"].get("reasoning"), str):
            out["reasoning"] = entry["reply"]["reasoning"]  # kept apart from the reply: never the answer
    return out


def _jsonl(r: RunEntry, path: Path, field: str) -> list[dict[str, Any]]:
    """The rows of an optional file read inside the folder, each field type-checked (:mod:`harness.view.rows`)."""
    return rows_of.read_rows(r.stored.lines(path, f"files[{field!r}]"), path, field)


def _group_run(r: RunEntry, label: str, path: Path) -> dict[str, list[str]]:
    """qid -> its lines of a run file read inside the folder (each line checked when its query is shown)."""
    out: dict[str, list[str]] = {}
    for _, line in r.stored.lines(path, f"files[{label!r}]"):
        head = line.split(None, 1)
        if head:
            out.setdefault(head[0], []).append(line)
    return out


def _parse_hits(r: RunEntry, label: str, path: Path, lines: list[str]) -> list[list[Any]]:
    """[[doc, rank, score], ...] sorted by rank; every line ``qid Q0 docid rank score tag``
    (:func:`harness.view.rows.parse_hits`)."""

    def locate(bad: str) -> int | None:
        return next((n for n, line in r.stored.lines(path, f"files[{label!r}]") if line == bad), None)

    return rows_of.parse_hits(path, lines, locate)
