"""The rows of the files ``harness view`` reads beside a run's results, type-checked field by field.

``queries.jsonl``, ``qrels.jsonl``, ``llm_calls.jsonl`` and ``judgments.jsonl`` are read inside the
results folder by :mod:`harness.formats.bounded` (regular files, bounded sizes, bounded JSON); each row
must then be an object whose fields have the types of :data:`SCHEMAS` (ids are text, an integer read
as its digits as in ``per_query.jsonl``; grades numbers in the range of
:func:`harness.concepts.qrels.grade_problem`; ...), and a row may not repeat the key of an earlier
one. Run files' lines are ``qid Q0 docid rank score tag`` with a whole rank and a finite score, both
written strictly. Fields a schema does not name are left out (never handed to the page). Every
problem is one :class:`~harness.concepts.errors.HarnessError` naming the file, the line and the field."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness.concepts.errors import HarnessError
from harness.concepts.qrels import grade_problem
from harness.formats import bounded as files_in
from harness.formats.grades import strict_number

#: an LLM cache key (a sha256 in hex)
CACHE_KEY = re.compile(r"[0-9a-f]{64}", re.ASCII)


def _shown(v: Any) -> str:
    """A value for a message: a list's or object's size (never its nesting), a scalar's text cut short."""
    if isinstance(v, list | dict):
        return f"{'a list' if isinstance(v, list) else 'an object'} of {len(v)} item{'s' * (len(v) != 1)}"
    kind = ("null" if v is None else "a boolean" if isinstance(v, bool) else "a number" if isinstance(v, int | float)
            else "text")
    text = repr(v)
    return f"{kind} ({text if len(text) <= 40 else text[:37] + '...'})"


def _id(v: Any) -> Any:
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return v if isinstance(v, str) else _refuse("text (an id)")


def _text(v: Any) -> Any:
    return v if isinstance(v, str) else _refuse("text")


def _grade(v: Any) -> Any:
    problem = grade_problem(v)
    return _refuse(problem) if problem else v


def _score(v: Any) -> Any:
    if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
        return v
    return _refuse("a finite number")


def _flag(v: Any) -> Any:
    return v if isinstance(v, bool) else _refuse("true or false")


def _key(v: Any) -> Any:
    return v if isinstance(v, str) and CACHE_KEY.fullmatch(v) else _refuse("an LLM cache key (64 hex digits)")


def _object(v: Any) -> Any:
    return v if isinstance(v, dict) else _refuse("an object")


def _whole(v: Any) -> Any:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else _refuse("a whole number >= 0")


def _amount(v: Any) -> Any:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v >= 0
    return v if ok else _refuse("a finite number >= 0")


class _Wrong(Exception):
    """A field of the wrong type; :func:`check_row` names the file, line and field."""


def _refuse(expected: str) -> Any:
    raise _Wrong(expected)


#: a field: (check, required, may be null)
Field = tuple[Callable[[Any], Any], bool, bool]
#: file kind -> field -> how it is checked
SCHEMAS: MappingProxyType[str, dict[str, Field]] = MappingProxyType({
    "queries": {"mode": (_text, False, False), "query_id": (_id, True, False), "text": (_text, False, True),
                "instruction": (_text, False, True)},
    "qrels": {"mode": (_text, False, False), "query_id": (_id, True, False), "doc_id": (_id, True, False),
              "grade": (_grade, True, False)},
    "judgments": {"mode": (_text, False, False), "query_id": (_id, True, False), "doc_id": (_id, True, False),
                  "score": (_score, False, True), "details": (_object, False, True)},
    "llm_calls": {"query_id": (_id, True, False), "component": (_text, False, True), "key": (_key, False, True),
                  "cached": (_flag, False, True), "error": (_text, False, True), "cache": (_text, False, True),
                  "reasoning": (_text, False, True), "input_tokens": (_whole, False, True),
                  "output_tokens": (_whole, False, True), "reasoning_tokens": (_whole, False, True),
                  "price_usd": (_amount, False, True), "cost_usd": (_amount, False, True),
                  "seconds": (_amount, False, True), "latency_s": (_amount, False, True),
                  "batch": (_flag, False, True), "retries": (_whole, False, True)},
})
#: file kind -> the fields no two rows may share (None: rows may repeat, e.g. several LLM calls a query)
UNIQUE: MappingProxyType[str, tuple[str, ...] | None] = MappingProxyType({
    "queries": ("mode", "query_id"), "qrels": ("mode", "query_id", "doc_id"),
    "judgments": ("mode", "query_id", "doc_id"), "llm_calls": None,
})


def _count(v: Any) -> Any:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else _refuse("a whole number >= 0")


def _share(v: Any) -> Any:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and 0 <= v <= 1
    return v if ok else _refuse("a number from 0 to 1")


def _counts(v: Any) -> Any:
    if not isinstance(v, dict):
        return _refuse("an object of counts")
    for x in v.values():
        _count(x)
    return v


def _objects(v: Any) -> Any:
    return v if isinstance(v, list) and all(isinstance(x, dict) for x in v) else _refuse("a list of objects")


#: the fields of results.json's ``llm_failures`` the page reads (:func:`harness.served.failure_policy.failure_report`)
FAILURES: MappingProxyType[str, Callable[[Any], Any]] = MappingProxyType({
    "complete": _flag, "failed": _count, "requests": _count, "share": _share, "max_share": _share,
    "kinds": _counts, "per_query": _counts, "examples": _objects})


def check_results(data: dict[str, Any], where: str) -> None:
    """The fields of a results.json the page reads that :func:`harness.results.store.validate` leaves
    untyped: ``status`` and ``created`` text, ``counts`` an object, ``llm_failures`` an object with
    the fields of :data:`FAILURES` (each may be absent or null)."""
    checks: list[tuple[str, Any, Callable[[Any], Any]]] = [
        ("status", data.get("status"), _text), ("created", data.get("created"), _text),
        ("counts", data.get("counts"), _object), ("llm_failures", data.get("llm_failures"), _object)]
    failures = data.get("llm_failures")
    if isinstance(failures, dict):
        checks += [(f"llm_failures[{k!r}]", failures.get(k), check) for k, check in FAILURES.items()]
    for name, value, check in checks:
        if value is None:
            continue
        try:
            check(value)
        except _Wrong as exc:
            raise HarnessError(f"{where}: field {name} must be {exc}, not {_shown(value)}") from None


def check_row(row: Any, kind: str, where: str) -> dict[str, Any]:
    """``row`` (one parsed line of a ``kind`` file, ``where`` = ``file:line``) with its fields checked
    and converted (integer ids to text); fields the schema does not name are left out."""
    if not isinstance(row, dict):
        raise HarnessError(f"{where}: a {kind} row is a JSON object, not {_shown(row)}")
    out: dict[str, Any] = {}
    for name, (check, required, nullable) in SCHEMAS[kind].items():
        if name not in row:
            if required:
                raise HarnessError(f"{where}: field {name!r} is missing")
            continue
        value = row[name]
        if value is None and nullable:
            out[name] = None
            continue
        try:
            out[name] = check(value)
        except _Wrong as exc:
            raise HarnessError(f"{where}: field {name!r} must be {exc}, not {_shown(value)}") from None
    if "mode" in SCHEMAS[kind] and "mode" not in out:
        out["mode"] = "default"
    return out


def read_rows(lines: Iterable[tuple[int, str]], path: Path, kind: str) -> list[dict[str, Any]]:
    """The checked rows of a ``kind`` file (``lines``: its numbered lines, read inside the folder);
    blank lines are skipped, a row repeating an earlier row's key (:data:`UNIQUE`) is an error naming
    both lines. Only a judgment keeps a nested value (``details``), so only its rows get the depth walk
    (a nested value elsewhere is never kept; the parser's own limit still ends in a message)."""
    dec = files_in.decoder()
    unique = UNIQUE[kind]
    first: dict[tuple[str, ...], int] = {}
    rows = []
    for lineno, line in lines:
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        row = check_row(files_in.loads(line, where, dec, nested=kind == "judgments"), kind, where)
        if unique is not None:
            key = tuple(row[f] for f in unique)
            if key in first:
                shown = ", ".join(f"{f} {v!r}" for f, v in zip(unique, key))
                raise HarnessError(f"{where}: a second row for {shown} (first on line {first[key]})")
            first[key] = lineno
        rows.append(row)
    return rows


def _hit(line: str) -> tuple[list[Any] | None, str]:
    """``[doc, rank, score]`` from a run file's line, or None and what is wrong."""
    parts = line.split()
    if len(parts) != 6:
        return None, f"expected 6 fields 'qid Q0 docid rank score tag', found {len(parts)}"
    rank, score = strict_number(parts[3]), strict_number(parts[4])
    if not isinstance(rank, int):
        return None, f"field 'rank' must be a whole number, not {parts[3][:40]!r}"
    if score is None or not math.isfinite(score):
        return None, f"field 'score' must be a finite number, not {parts[4][:40]!r}"
    return [parts[2], rank, float(score)], ""


def parse_hits(path: Path, lines: list[str], locate: Callable[[str], int | None]) -> list[list[Any]]:
    """``[[doc, rank, score], ...]`` sorted by rank from a query's lines of a run file; every line ``qid
    Q0 docid rank score tag``, numbers written strictly (:func:`harness.formats.grades.strict_number`:
    no ``1_00``, no other script's digits), the score finite. ``locate`` gives a bad line's number for
    the message (the file is read again only then)."""
    hits = []
    for line in lines:
        hit, problem = _hit(line)
        if hit is None:
            raise HarnessError(f"{path}:{locate(line) or '?'}: {problem}")
        hits.append(hit)
    hits.sort(key=lambda h: h[1])
    return hits
