"""Scoring against other qrels (``harness eval --qrels FILE``): the dataset's qrels replaced by a file's
(LLM-filled qrels written by ``harness judge fill``, another assessor's), the file's identity recorded in
results.json (``dataset.qrels_file``: path, sha256, size, counts; ``dataset.qrels_replaced``: the
dataset's own counts)."""

from __future__ import annotations

from dataclasses import replace

from harness.concepts.dataset import Dataset
from harness.concepts.errors import HarnessError
from harness.formats.qrels_file import read_qrels_file


def with_qrels_file(ds: Dataset, path: str) -> Dataset:
    """``ds`` with the qrels of ``path`` in place of its own. A dataset of several modes is refused: each
    mode has qrels of its own and one file cannot say which it replaces."""
    if len(ds.modes) != 1:
        raise HarnessError(f"--qrels replaces one set of qrels, but dataset {ds.name!r} has {len(ds.modes)} modes "
                           f"({', '.join(ds.modes)}), each with its own; evaluate a single-mode task")
    qrels, identity = read_qrels_file(path)
    (mode,) = ds.modes
    own = ds.qrels.get(mode)
    replaced = {"n_queries": len(own) if own is not None else 0,
                "n_judgments": own.n_judgments() if own is not None else 0}
    return replace(ds, qrels={mode: qrels},
                   identity={**ds.identity, "qrels_file": identity, "qrels_replaced": replaced})
