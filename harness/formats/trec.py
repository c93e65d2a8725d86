"""TREC qrels (``qid iter docid grade``) and run files (``qid Q0 docid rank score tag``)."""

from __future__ import annotations

import gzip
import os
from collections.abc import Iterable
from pathlib import Path

from harness.concepts.errors import DataError
from harness.concepts.qrels import Qrels
from harness.concepts.run import Run
from harness.formats.files import iter_lines
from harness.formats.grades import grade_from_text, rank_from_text, score_from_text
from harness.formats.shards import Table, qrels_from_rows


def parse_grade(value: str, path: object, lineno: int | None) -> float:
    """A relevance grade: an ``int`` when written as one, else a ``float``; strictly written, finite
    and in the grade range (:func:`harness.formats.grades.grade_from_text`)."""
    return grade_from_text(value.strip(), path, lineno)


def check_new_judgment(
    seen_at: dict[tuple[str, str], int], qid: str, docid: str, path: object, loc: int, unit: str = "line"
) -> None:
    """Record that ``(qid, docid)`` is judged at ``loc``; a pair judged before raises :class:`DataError`
    naming this line (or Parquet row) and the first one."""
    first = seen_at.setdefault((qid, docid), loc)
    if first != loc:
        message = f"document {docid!r} judged twice for query {qid!r} (first on {unit} {first})"
        raise DataError(message, path, loc) if unit == "line" else DataError(f"{unit} {loc}: {message}", path)


def read_qrels(path: str | os.PathLike[str]) -> Qrels:
    """TREC qrels: ``qid 0|Q0 docid grade`` separated by spaces or tabs; int or float grades, written
    strictly (``1_00``, ``nan`` refused) and in the grade range (-100 to 100).

    Blank lines are skipped; a line without exactly four fields raises :class:`DataError` naming it.
    A repeated (qid, docid) pair is an error naming both lines (trec_eval would silently keep the
    last grade, so a file with a stray duplicate scores differently from what its author meant).
    """
    return qrels_from_rows(qrels_table(path).rows)


def qrels_table(path: str | os.PathLike[str]) -> Table[tuple[str, str], float]:
    """:func:`read_qrels` as ``{(qid, docid): grade}`` with the line of each judgment."""
    rows: dict[tuple[str, str], float] = {}
    seen_at: dict[tuple[str, str], int] = {}
    for lineno, line in iter_lines(path):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 4:
            raise DataError(
                f"expected 4 fields 'qid iteration docid grade', found {len(parts)}: {line[:80]!r}",
                path,
                lineno,
            )
        qid, _, docid, grade = parts
        check_new_judgment(seen_at, qid, docid, path, lineno)
        rows[qid, docid] = parse_grade(grade, path, lineno)
    return Table(Path(path), "line", rows, seen_at)


def read_run(path: str | os.PathLike[str], name: str | None = None) -> Run:
    """A TREC run file ``qid Q0 docid rank score tag``.

    Each query's list is ordered as trec_eval orders it: by score descending, ties by docid
    descending (the rank column is ignored). The run's name is ``name`` or the first line's tag.
    A document listed twice for one query is an error, as it is for trec_eval; so are a score that
    is not a finite number strictly written (``nan``, ``inf``, ``1_00``), a rank that is not a whole
    number and a file without any run line.
    """
    return run_from_lines(iter_lines(path), path, name)


def run_from_lines(lines: Iterable[tuple[int, str]], path: object, name: str | None = None) -> Run:
    """:func:`read_run` over ``(line number, line)`` pairs already read (a results folder's run file read
    inside its folder, :func:`harness.formats.bounded.iter_lines`); ``path`` names the file in messages."""
    scores: dict[str, dict[str, float]] = {}
    seen_at: dict[tuple[str, str], int] = {}
    tag = name
    for lineno, line in lines:
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise DataError(
                f"expected 6 fields 'qid Q0 docid rank score tag', found {len(parts)}: {line[:80]!r}",
                path,
                lineno,
            )
        qid, _, docid, rank, score_s, run_tag = parts
        rank_from_text(rank, path, lineno)
        score = score_from_text(score_s, path, lineno)
        if (qid, docid) in seen_at:
            raise DataError(
                f"document {docid!r} listed twice for query {qid!r} (first on line {seen_at[qid, docid]})",
                path,
                lineno,
            )
        seen_at[qid, docid] = lineno
        scores.setdefault(qid, {})[docid] = score
        if tag is None:
            tag = run_tag
    if not scores:
        raise DataError("the run file is empty: no 'qid Q0 docid rank score tag' lines", path)
    return Run.from_scores(scores, name=tag or Path(path).name)


def write_run(run: Run, path: str | os.PathLike[str], tag: str | None = None) -> Path:
    """Write ``run`` as ``qid Q0 docid rank score tag`` lines, in the run's order, ranks from 1.

    Scores are written at full precision. trec_eval re-sorts by score, so a run whose order must
    survive scoring should have strictly decreasing scores (:meth:`Run.with_strict_scores`).
    The file is written to a temporary name and renamed; a ``.gz`` suffix compresses it.
    """
    out = Path(path)
    label = "_".join((tag or run.name or "harness").split()) or "harness"
    tmp = out.with_name(out.name + ".tmp")
    out.parent.mkdir(parents=True, exist_ok=True)
    opener = gzip.open if out.suffix == ".gz" else open
    with opener(tmp, "wt", encoding="utf-8", newline="\n") as f:
        for qid, hits in run.items():
            for rank, (docid, score) in enumerate(hits, 1):
                f.write(f"{qid} Q0 {docid} {rank} {float(score)!r} {label}\n")
    os.replace(tmp, out)
    return out


# the names harness.formats exports (a TREC reader beside the BEIR one)
read_trec_qrels = read_qrels
read_trec_run = read_run
write_trec_run = write_run
