"""harness-bright: BRIGHT (Su et al., 2024, arXiv 2407.12883) as a harness plugin.

Registers the dataset ``bright`` (``--dataset bright:task=biology[,query=gpt4_reason][,documents=long]
[,instructions=e5]``), the tasks ``bright:<split>`` for the twelve splits (their variant arguments as
task arguments: ``--task bright:biology:query=gpt4``) and the suite ``bright``. Each query's
``excluded_ids`` are removed from every ranking through ``Dataset.excluded``, as the official code pops
them before the top-1,000 cut. Importing this module is light (no data read, no pyarrow).
"""

from __future__ import annotations

from harness import ComponentContext, hookimpl

from .instructions import CONCATENATED, FAMILIES, instruction, instruction_table
from .tasks import HUB_REPO, LONG_SPLITS, METRICS, REASONING, REVISION, SPLITS, bright_task, suite_task

__version__ = "0.1.0"

__all__ = ["CONCATENATED", "FAMILIES", "HUB_REPO", "LONG_SPLITS", "METRICS", "REASONING", "REVISION", "SPLITS",
           "bright_task", "instruction", "instruction_table", "suite_task"]


def _load_dataset(context: ComponentContext | None = None, **kwargs):
    from .data import load_bright_dataset

    return load_bright_dataset(context=context, **kwargs)


def _task_factory(split: str):
    def factory(query: str = "examples", documents: str = "short", instructions: str = "none"):
        return bright_task(split, query, documents, instructions)

    return factory


@hookimpl
def register_datasets(register):
    register("bright", _load_dataset,
             "BRIGHT split from xlangai/BRIGHT (task=SPLIT, query=examples|<model>_reason, documents=short|long, "
             "instructions=none|e5|sf|qwen|qwen2|bge); excluded_ids removed from every ranking")


@hookimpl
def register_tasks(register):
    for split in SPLITS:
        register(f"bright:{split}", _task_factory(split), f"BRIGHT {split} (nDCG@10; excluded_ids removed)")
    register("bright", suite_task, "BRIGHT suite: the 12 tasks, per-task and mean figures")
