"""The dataset, read from `data/NAME.json` inside this package (so it works offline, with no
download), and the task of the same name that evaluates on it.

A real dataset usually lives in the user's data folder instead: give the task `files=[DataFile(...)]`
(path, url, sha256) and `harness data download NAME` fetches and checks them.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources

from harness import DataError, Dataset, Document, Qrels, Query, Task

NAME = "plugin-name"
DATA_FILE = f"data/{NAME}.json"


def load_dataset(name: str = NAME) -> Dataset:
    """Dataset factory: `harness eval --dataset NAME`, or the task NAME."""
    path = resources.files(__package__).joinpath(DATA_FILE)
    raw = path.read_bytes()
    try:
        data = json.loads(raw)
        corpus = {d["id"]: Document(d["id"], d["text"], d.get("title", "")) for d in data["corpus"]}
        queries = {q["id"]: Query(q["id"], q["text"], q.get("instruction", "")) for q in data["queries"]}
        qrels = Qrels()
        for qid, doc_id, grade in data["qrels"]:
            qrels.add(qid, doc_id, grade)
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(f"not a valid {NAME} data file: {exc!r}", str(path)) from exc
    file = {"path": f"{__package__}/{DATA_FILE}", "sha256": hashlib.sha256(raw).hexdigest(), "size": len(raw)}
    identity = {"name": name, "files": [file]}  # results.json records exactly which bytes were used
    return Dataset.single(name, corpus, queries, qrels, identity=identity)


def make_task() -> Task:
    """Task factory: `harness eval --task NAME`."""
    return Task(
        name=NAME,
        description=f"BM25 over the packaged {NAME} dataset",
        dataset=NAME,
        metrics=["nDCG@10", "Recall@10"],
        first_stage="retrieve",  # retrieve over the corpus ("candidates": re-rank given lists)
        retriever="bm25",
        depth=100,
        query_format="{text} {instruction}",
    )
