"""Generate ``harness/data/mteb_tasks.json``: the MTEB tasks ``harness export mteb`` knows (``docs/mteb.md``).

    python bench/mteb_tasks_table.py            # rewrite the table from the installed mteb
    python bench/mteb_tasks_table.py --check    # exit 1 when the checked-in table differs

Offline: only the installed mteb package's task metadata is read (``mteb.get_tasks``), nothing is downloaded.
The table keeps MTEB's text retrieval tasks (types Retrieval, Reranking, InstructionRetrieval and
InstructionReranking, category ``t2t``; superseded, beta and private tasks included, aggregate tasks left
out), one row per task, sorted by name: its name, type, Hub dataset and revision, evaluation splits, subsets
(``hf_subset`` -> languages), main score, metric cutoffs (``k_values``), which of mteb's methods the task
class replaces (``own_code``: ``load_data``, ``dataset_transform``, ``task_specific_scores``),
``ignore_identical_ids``, ``superseded_by`` and ``public``. ``tests/test_mteb_tasks.py`` checks that the
checked-in table is what this makes from the installed mteb (skipped where mteb is absent or another
version)."""

from __future__ import annotations

import argparse
import json
import logging
import sys
import warnings
from importlib.metadata import version
from pathlib import Path
from typing import Any

TABLE = Path(__file__).resolve().parents[1] / "harness" / "data" / "mteb_tasks.json"
TYPES = ("Retrieval", "Reranking", "InstructionRetrieval", "InstructionReranking")
#: the methods of mteb's AbsTaskRetrieval whose replacement makes a task's data or scores its own
OWN_CODE = ("load_data", "dataset_transform", "task_specific_scores")
SELECTION = ("mteb.get_tasks(task_types=[Retrieval, Reranking, InstructionRetrieval, InstructionReranking], "
             "categories=[t2t], exclude_superseded=False, exclude_beta=False, exclude_private=False, "
             "exclude_aggregate=True)")


def _row(task: Any, base: type) -> dict[str, Any]:
    meta = task.metadata
    langs = meta.hf_subsets_to_langscripts
    cls = type(task)
    return {
        "name": meta.name,
        "type": meta.type,
        "dataset": meta.dataset["path"],
        "revision": meta.dataset["revision"],
        "splits": list(task.eval_splits),
        "subsets": {s: list(langs.get(s, [])) for s in task.hf_subsets},
        "main_score": meta.main_score,
        "k_values": list(task.k_values),
        "own_code": [m for m in OWN_CODE if getattr(cls, m) is not getattr(base, m)],
        "ignore_identical_ids": bool(task.ignore_identical_ids),
        "superseded_by": meta.superseded_by,
        "public": bool(meta.is_public),
    }


def rows() -> list[dict[str, Any]]:
    """One row per selected task of the installed mteb, sorted by name."""
    import mteb
    from mteb.abstasks import AbsTaskRetrieval

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            tasks = mteb.get_tasks(task_types=list(TYPES), categories=["t2t"], exclude_superseded=False,
                                   exclude_beta=False, exclude_private=False, exclude_aggregate=True)
        finally:
            logging.disable(logging.NOTSET)
    return sorted((_row(t, AbsTaskRetrieval) for t in tasks), key=lambda r: r["name"])


def render(table: list[dict[str, Any]], mteb_version: str) -> str:
    """The file's text: a header, then one task per line (diffs show the tasks that changed)."""
    head = json.dumps({"mteb_version": mteb_version, "generated_by": "python bench/mteb_tasks_table.py",
                       "selection": SELECTION}, ensure_ascii=False)[:-1]
    body = ",\n".join("  " + json.dumps(r, ensure_ascii=False, sort_keys=True) for r in table)
    return f'{head}, "tasks": [\n{body}\n]}}\n'


def generate() -> str:
    """The table's text from the installed mteb."""
    return render(rows(), version("mteb"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the checked-in table; write nothing")
    parser.add_argument("--output", type=Path, default=TABLE)
    args = parser.parse_args(argv)
    text = generate()
    if args.check:
        same = args.output.is_file() and args.output.read_text(encoding="utf-8") == text
        print(f"{args.output}: {'up to date' if same else 'differs from the installed mteb ' + version('mteb')}")
        return 0 if same else 1
    args.output.write_text(text, encoding="utf-8")
    print(f"{args.output}: {text.count(chr(10)) - 2} tasks from mteb {version('mteb')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
