"""Qrels a user names (``--qrels FILE``: LLM-filled qrels, another assessor's): read with the TREC
reader's rules, with the file's identity for results provenance; and writing TREC qrels atomically."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.concepts.errors import DataError
from harness.concepts.qrels import Qrels
from harness.formats.files import sha256_file
from harness.formats.trec import read_qrels


def read_qrels_file(path: str | os.PathLike[str]) -> tuple[Qrels, dict[str, Any]]:
    """The qrels of a TREC qrels file (:func:`~harness.formats.trec.read_qrels`: every line checked) and
    its identity: ``{"path", "sha256", "size", "n_queries", "n_judgments"}``. A file without a judgment is
    an error naming it."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise DataError("no such qrels file" if not p.exists() else "not a regular file", p)
    qrels = read_qrels(p)
    if not qrels.n_judgments():
        raise DataError("the qrels file holds no judgment ('qid 0 docid grade' lines)", p)
    identity = {"path": str(p.resolve()), "sha256": sha256_file(p), "size": p.stat().st_size,
                "n_queries": len(qrels), "n_judgments": qrels.n_judgments()}
    return qrels, identity


def grade_text(grade: float) -> str:
    """A grade as a qrels file writes it: a whole number without a decimal point."""
    return str(int(grade)) if float(grade).is_integer() else repr(float(grade))


def write_qrels(path: str | os.PathLike[str], rows: Iterable[tuple[str, str, float]]) -> Path:
    """Write ``(qid, docid, grade)`` rows as ``qid 0 docid grade`` lines, in the order given, through a
    temporary file renamed into place (an id holding white space is an error: the format splits on it)."""
    out = Path(path).expanduser()
    lines = []
    for qid, docid, grade in rows:
        if len(qid.split()) != 1 or len(docid.split()) != 1:
            raise DataError(f"query {qid!r}, document {docid!r}: an id with white space cannot be written to a "
                            "TREC qrels file", out)
        lines.append(f"{qid} 0 {docid} {grade_text(grade)}\n")
    tmp = out.with_name(out.name + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(lines)
    os.replace(tmp, out)
    return out
