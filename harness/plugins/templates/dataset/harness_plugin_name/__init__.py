"""Registers a dataset and a task of the same name that evaluates on it.

Plugin: harness-plugin-name
Example: harness eval --task plugin-name

Imported by every `harness` command: keep it light (the data is read when the dataset is used)."""

from harness import hookimpl, lazy

__version__ = "0.1.0"
NAME = "plugin-name"


@hookimpl
def register_datasets(register):
    register(NAME, lazy(f"{__name__}.dataset:load_dataset"),
             "A small packaged dataset: 8 documents, 3 queries with instructions, graded qrels")


@hookimpl
def register_tasks(register):
    register(NAME, lazy(f"{__name__}.dataset:make_task"), "BM25 over the packaged dataset; nDCG@10, Recall@10")
