"""A TREC run file as the first stage (``run-file:PATH``, what ``harness eval --run FILE`` sets): a ranking
made elsewhere (a TREC participant's run, a paper's baseline, pyserini's output) evaluated as if the
harness had produced it.

The file is read as trec_eval reads it (:func:`harness.formats.trec.read_run`: each query's list ordered
by score descending, ties by document id descending; the rank column checked, never used), when the
component is created, so a malformed file fails before any data is read. Its lists are given whole (the
first stage's depth is the longest list unless ``--depth`` cuts them), so the metrics are trec_eval's on
the file. Ids the evaluation does not know are counted and listed, never dropped: a query of the file
that is not among the evaluation's queries is not scored (as trec_eval ignores a query without
judgments), a document not in the dataset's corpus stays in its list and counts as not relevant (as
trec_eval counts it). Both go to ``results.json`` (the retriever's ``stats``) and to stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness.concepts.document import Document
from harness.concepts.errors import DataError
from harness.concepts.run import Run
from harness.formats.files import sha256_file
from harness.formats.trec import read_run

#: how many unknown ids results.json lists (all are counted)
LISTED = 1000
TIE_RULE = "score descending, then document id descending (trec_eval's order)"


class RunFileRetriever:
    """``run-file:PATH[,name=NAME]``: the rankings of a TREC run file (``qid Q0 docid rank score tag``).
    ``path`` is the user's file (relative to the working folder, not the data folder); ``name``: the
    system's name (default the file's run tag)."""

    spec_tail = "path"  # run-file:PATH is run-file:path=PATH

    def __init__(self, path: str | os.PathLike[str], name: str | None = None) -> None:
        self.path = Path(path).expanduser()
        if not self.path.is_file():
            raise DataError("run file not found (a run file's path is relative to the working folder)", self.path)
        self.run = read_run(self.path)
        self.name = str(name) if name else self.run.name
        self._corpus: Mapping[str, Document] | None = None
        self._unknown_queries: set[str] = set()
        self._unknown_docs: set[tuple[str, str]] = set()

    def index(self, corpus: Mapping[str, Document]) -> None:
        """Nothing to index: the corpus is kept to check the file's document ids against."""
        self._corpus = corpus

    def given_depth(self) -> int:
        """The longest list of the file: the run is scored whole unless a depth is given."""
        return max(len(self.run.scores(q)) for q in self.run)  # read_run refuses an empty file

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        """The file's top ``k`` for each query asked (an empty list for a query the file lacks)."""
        out = Run({q: self.run[q][:k] if q in self.run else [] for q in queries}, name=self.name)
        new_queries = {q for q in self.run if q not in queries} - self._unknown_queries
        new_docs = set()
        if self._corpus:
            new_docs = {(q, d) for q in out for d in out.doc_ids(q) if d not in self._corpus} - self._unknown_docs
        self._unknown_queries |= new_queries
        self._unknown_docs |= new_docs
        if new_queries or new_docs:
            print(f"[harness] {self.unknown_line(new_queries, new_docs)}", file=sys.stderr, flush=True)
        return out

    def unknown_line(self, queries: set[str], docs: set[tuple[str, str]]) -> str:
        """One line on the ids the evaluation does not know (kept, never dropped)."""
        parts = []
        if queries:
            parts.append(f"{len(queries)} of its queries are not among the evaluation's queries and are not scored "
                         f"(e.g. {', '.join(repr(q) for q in sorted(queries)[:3])})")
        if docs:
            ids = sorted({d for _, d in docs})
            shown = ", ".join(repr(d) for d in ids[:3])
            parts.append(f"{len(docs)} ranked documents ({len(ids)} distinct) are not in the dataset's corpus and "
                         f"count as not relevant, as trec_eval counts them (e.g. {shown})")
        return f"run file {self.path}: " + "; ".join(parts) + " (listed in results.json)"

    def config(self) -> dict[str, Any]:
        return {"source": "run file", "path": str(self.path.resolve()), "sha256": sha256_file(self.path),
                "size": self.path.stat().st_size, "system": self.name, "tag": self.run.name, "queries": len(self.run),
                "tie_rule": TIE_RULE}

    def stats(self) -> dict[str, Any]:
        """The ids the evaluation did not know: counted, the first :data:`LISTED` of each listed."""
        docs = sorted({d for _, d in self._unknown_docs})
        return {"unknown_queries": len(self._unknown_queries),
                "unknown_queries_listed": sorted(self._unknown_queries)[:LISTED],
                "unknown_documents": len(self._unknown_docs),
                "unknown_documents_distinct": len(docs),
                "unknown_documents_listed": docs[:LISTED],
                "documents_checked": bool(self._corpus)}
