"""harness-infosearch: InfoSearch (Zhou et al., 2024, arXiv 2410.23841) as a harness plugin.

Registers the ``infosearch`` dataset loader (hub layout, three modes ``og``/``changed``/``reversed``),
the tasks ``infosearch:<dimension>`` for the six published dimensions plus any a third-party package
adds with :func:`register_dimension`, the suite ``infosearch``, the cross-mode metrics ``WISE``,
``SICR``, ``p-MRR``, ``gold-rank`` and the per-mode ``Robustness@k``, and the command
``harness infosearch`` (``table``: Table-1 rows from results folders; ``dimensions``).

Importing this module is light (no model library, no data read).
"""

from __future__ import annotations

from harness import ComponentContext, hookimpl

from .dimensions import (
    BUILTIN_DIMENSIONS,
    DEFAULT_METRICS,
    Dimension,
    register_dimension,
    registered_dimensions,
    suite_task,
)
from .layout import MODES

__version__ = "0.1.0"

__all__ = [
    "BUILTIN_DIMENSIONS",
    "DEFAULT_METRICS",
    "MODES",
    "Dimension",
    "register_dimension",
    "registered_dimensions",
    "suite_task",
]


def _load_dataset(context: ComponentContext | None = None, **kwargs):
    from .data import load_infosearch_dataset

    return load_infosearch_dataset(context=context, **kwargs)


def _dimension_dataset(dim: Dimension):
    def factory(context: ComponentContext | None = None, revision: str | None = None, **kwargs):
        from .data import load_infosearch_dataset

        d = dim.at_revision(revision)
        source = {"repo": d.hub_repo, "revision": d.hub_revision} if d.hub_repo and d.path is None else {}
        return load_infosearch_dataset(**{"path": d.folder, "name": d.task_name, **source, **kwargs},
                                       context=context)

    return factory


def _metric(cls_name: str):
    def factory(**kwargs):
        from . import metrics

        return getattr(metrics, cls_name)(**kwargs)

    return factory


@hookimpl
def register_datasets(register):
    register("infosearch", _load_dataset,
             "InfoSearch dimension folder (corpus, queries, qrels_{og,changed,reversed}, optional top_ranked; "
             "JSONL or Parquet): modes og/changed/reversed")
    for dim in BUILTIN_DIMENSIONS:
        register(dim.task_name, _dimension_dataset(dim),
                 f"InfoSearch {dim.hub_name} from the data folder (revision=COMMIT: another snapshot's folder)")


@hookimpl
def register_tasks(register):
    for dim in BUILTIN_DIMENSIONS:
        register_dimension(register, dim)
    register("infosearch", suite_task, "InfoSearch suite: every installed dimension, per-dimension and mean figures")


@hookimpl
def register_metrics(register):
    register("WISE", _metric("WISE"),
             "InfoSearch WISE, Ideal WISE, Per. (K=20 via WISE@K; first_case=code|paper); cross-mode")
    register("SICR", _metric("SICR"), "InfoSearch strict instruction compliance ratio (rank1=code|paper); cross-mode")
    register("p-MRR", _metric("PMRR"), "FollowIR p-MRR over demoted documents, og vs changed; cross-mode")
    register("gold-rank", _metric("GoldRank"), "InfoSearch mean gold ranks R_ori, R_ins, R_rev; cross-mode")
    register("Robustness", _metric("Robustness"),
             "Robustness@k: mean over core queries of the min nDCG@k over instruction variants; per mode")


@hookimpl
def register_commands(cli):
    from .cli import infosearch_group

    cli.add_command(infosearch_group)
