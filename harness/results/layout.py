"""The layout of a results folder, in one place: every file's name, and the writing of each.

A folder written by ``harness eval -o`` holds:

- ``results.json`` (written last, through ``results.json.tmp``): the results contract
  (:mod:`harness.results.store` reads it);
- ``run.trec``, or ``run.<mode>.trec`` per mode: the final ranking; ``run.first_stage[.<mode>].trec``:
  the first stage's, when rerankers followed;
- ``per_query.jsonl``: each query's metric values, and its LLM calls, tokens, USD and seconds in the field
  ``llm`` (:mod:`harness.served.query_usage`); ``judgments.jsonl``: the judge's decisions;
- for ``harness view``: ``queries.jsonl`` (each evaluated query's text and instruction per mode),
  ``qrels.jsonl`` (their gold grades) and ``llm_calls.jsonl`` (the LLM calls made per query: the reply
  cache's key; prompts and replies stay in the cache);
- a suite's folder: its own ``results.json`` and one such folder per member, ``<member>/`` with ``:``
  written ``_``.

:class:`ResultsLayout` names them (the pre-check of ``-o``, ``compare``, ``report``, ``view`` and the MTEB
export read the names from it) and writes them (:meth:`ResultsLayout.write`, :meth:`ResultsLayout.write_suite`).
"""

from __future__ import annotations

import json
import math
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol

from harness.concepts.errors import HarnessError
from harness.concepts.judgment import Judgments
from harness.concepts.run import Run
from harness.formats.trec import write_run
from harness.runtime.redact import redact_url

#: the version of results.json written; files without ``schema_version`` are version 1
SCHEMA_VERSION = 2

RESULTS = "results.json"
PER_QUERY = "per_query.jsonl"
JUDGMENTS = "judgments.jsonl"
QUERIES = "queries.jsonl"
QRELS = "qrels.jsonl"
LLM_CALLS = "llm_calls.jsonl"
#: the field of a ``per_query.jsonl`` row holding the query's LLM calls, tokens, USD and seconds (not a metric)
QUERY_LLM = "llm"
#: the optional files ``harness view`` reads beside the results, by their key in ``results.json["files"]``
VIEW_FILES = MappingProxyType({"queries": QUERIES, "qrels": QRELS, "llm_calls": LLM_CALLS})


def run_name(mode: str, n_modes: int) -> str:
    """The final ranking's file: ``run.trec`` for a single mode, else ``run.<mode>.trec``."""
    return "run.trec" if n_modes == 1 else f"run.{mode}.trec"


def first_stage_name(mode: str, n_modes: int) -> str:
    """The first stage's ranking's file: ``run.first_stage.trec`` or ``run.first_stage.<mode>.trec``."""
    return "run.first_stage.trec" if n_modes == 1 else f"run.first_stage.{mode}.trec"


def is_run_name(name: str) -> bool:
    """A TREC run file of the layout (``run.trec``, ``run.<mode>.trec``, ``run.first_stage[...].trec``)."""
    return name.startswith("run.") and name.endswith(".trec")


def member_folder(name: str) -> str:
    """A suite member's folder name: the task name with ``:`` written ``_``."""
    return name.replace(":", "_")


def clean(value: Any) -> Any:
    """JSON has no NaN: write it as null. Credentials a user put in a URL (``http://u:KEY@host``) are
    masked wherever they appear (a spec, the command line, a base URL)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str):
        return redact_url(value)
    if isinstance(value, dict):
        return {(redact_url(k) if isinstance(k, str) else k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


class Written(Protocol):
    """What the layout writes of an evaluation (an :class:`~harness.results.result.EvalResult`)."""

    dataset: Any
    runs: Mapping[str, Run]
    first_stage_runs: Mapping[str, Run]
    per_query: Mapping[str, Mapping[str, Any]]
    judgments: Mapping[str, Judgments]

    def to_dict(self) -> dict[str, Any]: ...


def _write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]], scrub: bool = True) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(clean(row) if scrub else row, ensure_ascii=False, default=str) + "\n")


@dataclass(frozen=True)
class ResultsLayout:
    """The files of the results folder ``folder`` (module docstring)."""

    folder: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "folder", Path(self.folder))

    @property
    def results(self) -> Path:
        return self.folder / RESULTS

    def member(self, name: str) -> ResultsLayout:
        """The folder of a suite's member ``name``."""
        return ResultsLayout(self.folder / member_folder(name))

    @staticmethod
    def fixed_names() -> tuple[str, ...]:
        """Every file name an evaluation may write whatever its modes (the run files of several modes
        are named for them: :func:`is_run_name`)."""
        return (RESULTS, f"{RESULTS}.tmp", PER_QUERY, JUDGMENTS, run_name("", 1), first_stage_name("", 1),
                *VIEW_FILES.values())

    # -- before any work -----------------------------------------------------------------------------------
    def prepare(self, overwrite: bool = False, members: Sequence[str] = ()) -> Path:
        """Make sure results can be written here before any work is done: create the folder, write and
        delete a probe file, refuse a folder that already holds results (``results.json``, or a suite
        member's) unless ``overwrite``, and check that every file the run writes can be written (one that
        exists must be a regular, writable file: not a folder, a link, a FIFO or a device). Raises
        :class:`HarnessError` naming the path and the reason."""
        out = self.folder
        try:
            if out.exists() and not out.is_dir():
                raise HarnessError(f"--output {out} exists and is not a folder; give a folder path")
            if not overwrite:
                self._refuse_held(members)
            out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise HarnessError(f"cannot create the output folder {out}: {exc.strerror or exc}") from exc
        _probe(out)
        self.check_writable(members)
        return out

    def _refuse_held(self, members: Sequence[str]) -> None:
        held = [p for p in (self.results, *(self.member(m).results for m in members)) if p.is_file()]
        if held:
            raise HarnessError(
                f"--output {self.folder} already holds results ({held[0]}"
                + (f" and {len(held) - 1} more" if len(held) > 1 else "")
                + "); pass --overwrite (overwrite=True in Python) to replace them, or choose another folder")

    def check_writable(self, members: Sequence[str] = ()) -> None:
        """Raise :class:`HarnessError` naming the first path here (or in a member's folder) the run could
        not write."""
        folders = [self.folder]
        for member in members:
            sub = self.member(member).folder
            _check(sub, folder=True)
            folders.append(sub)
        for folder in folders:
            names = list(self.fixed_names())
            if folder.is_dir():  # run files named for their mode
                with os.scandir(folder) as entries:
                    names += [e.name for e in entries if is_run_name(e.name)]
            for name in dict.fromkeys(names):
                _check(folder / name, folder=False)

    # -- writing -------------------------------------------------------------------------------------------
    def write(self, result: Written, clients: Sequence[Any] = ()) -> Path:
        """Every file of one evaluation: ``harness view``'s, the runs, the per-query values, the
        judgments, then ``results.json`` (last, atomically: its presence means the folder is whole)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        self.write_view_files(result.dataset, result.runs, clients)
        files = self._write_runs(result)
        llm = getattr(result, "query_llm", None) or {}  # each query's LLM calls and cost (field "llm")
        _write_jsonl(self.folder / PER_QUERY, ({"query_id": q, **v, **({QUERY_LLM: llm[q]} if q in llm else {})}
                                               for q, v in result.per_query.items()))
        files["per_query"] = PER_QUERY
        if result.judgments:
            _write_jsonl(self.folder / JUDGMENTS, (
                {"mode": mode, "query_id": j.query_id, "doc_id": j.doc_id, "score": j.score, "details": j.details}
                for mode, js in result.judgments.items() for j in js.values()))
            files["judgments"] = JUDGMENTS
        return self._write_results({"schema_version": SCHEMA_VERSION, **result.to_dict(), "files": files})

    def write_suite(self, result: Written) -> Path:
        """A suite's own ``results.json`` (its members' folders are written by their evaluations)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        return self._write_results({"schema_version": SCHEMA_VERSION, **result.to_dict()})

    def _write_runs(self, result: Written) -> dict[str, str]:
        files: dict[str, str] = {}
        n = len(result.runs)
        for mode, run in result.runs.items():
            write_run(run, self.folder / run_name(mode, n), tag=run.name)
            files[f"run[{mode}]"] = run_name(mode, n)
        for mode, run in result.first_stage_runs.items():  # what each stage did to a query (harness view)
            write_run(run, self.folder / first_stage_name(mode, n), tag=run.name)
            files[f"first_stage[{mode}]"] = first_stage_name(mode, n)
        return files

    def _write_results(self, data: Mapping[str, Any]) -> Path:
        tmp = self.folder / f"{RESULTS}.tmp"
        tmp.write_text(json.dumps(clean(data), indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
        tmp.replace(self.results)
        return self.results

    def write_view_files(self, ds: Any, runs: Mapping[str, Any], clients: Iterable[Any]) -> None:
        """``queries.jsonl``, ``qrels.jsonl`` and, when a component made its calls per query
        (:meth:`harness.llm.client.Client.run_sequences`, ``map(..., query_ids=...)``), ``llm_calls.jsonl``
        (the rows of the clients' ``call_log``: ``query_id``, ``key``: the reply cache's key, ``cached``,
        ``error``, ``reasoning``, tokens, USD, seconds; with ``component`` and ``cache``: the cache folder)."""
        qids = {m: set(r) for m, r in runs.items()}
        _write_jsonl(self.folder / QUERIES, (
            {"mode": m, "query_id": q.id, "text": q.text, "instruction": q.instruction}
            for m in ds.modes for q in ds.queries.get(m, {}).values() if q.id in qids.get(m, ())), scrub=False)
        _write_jsonl(self.folder / QRELS, (
            {"mode": m, "query_id": q, "doc_id": d, "grade": g} for m in ds.modes
            for q, docs in (ds.qrels.get(m) or {}).items() if q in qids.get(m, ()) for d, g in docs.items()),
            scrub=False)
        calls = [{**row, "component": c.label, "cache": str(c.cache.path) if c.cache is not None else None}
                 for c in clients for row in getattr(c, "call_log", [])
                 if any(row["query_id"] in q for q in qids.values())]  # a client shared by a suite's members
        if calls:
            _write_jsonl(self.folder / LLM_CALLS, calls, scrub=False)
        elif (self.folder / LLM_CALLS).is_file():  # an --overwrite of a run that made calls
            (self.folder / LLM_CALLS).unlink()


def _probe(out: Path) -> None:
    try:
        fd, probe = tempfile.mkstemp(prefix=".harness-write-probe-", dir=out)
        try:
            os.write(fd, b"probe\n")
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as exc:
        raise HarnessError(f"cannot write to the output folder {out}: {exc.strerror or exc}") from exc


def _check(path: Path, folder: bool) -> None:
    try:
        st = path.lstat()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise HarnessError(f"--output: cannot check {path}: {exc.strerror or exc}") from None
    want = stat.S_ISDIR if folder else stat.S_ISREG
    if not want(st.st_mode):
        kind = "a folder" if folder else "a file"
        raise HarnessError(f"--output: {path} is not {kind} (the run writes {kind} there); remove it or choose "
                           "another folder")
    if not os.access(path, os.W_OK):
        raise HarnessError(f"--output: {path} cannot be written (permission denied)")
