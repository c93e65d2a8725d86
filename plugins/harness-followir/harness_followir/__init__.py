"""harness-followir: FollowIR (Weller et al., 2024, arXiv 2403.15246) as a harness plugin.

Registers the dataset ``followir`` (a FollowIR-layout repository read through the core's ``mteb``
dataset, split into the modes ``og`` and ``changed``), the tasks ``followir:robust04``,
``followir:news21``, ``followir:core17``, the suite ``followir`` and the metric ``followir-p-MRR``
(``ties=trec_eval`` by default, ``ties=release``). Importing this module reads no data.
"""

from __future__ import annotations

from harness import hookimpl, lazy

from .benchmarks import BENCHMARKS, PMRR_METRIC, Benchmark, suite

__version__ = "0.1.0"
__all__ = ["BENCHMARKS", "PMRR_METRIC", "Benchmark", "suite"]


def _task(b: Benchmark):
    def factory():
        return b.task()

    return factory


@hookimpl
def register_datasets(register):
    register("followir", lazy("harness_followir.data:load_followir_dataset"),
             "FollowIR in MTEB's layout (task=robust04|news21|core17, or repo=,revision=): modes og / changed")


@hookimpl
def register_tasks(register):
    for b in BENCHMARKS:
        register(b.task_name, _task(b), f"FollowIR {b.title}: {b.score} (og) and p-MRR over the given pools")
    register("followir", suite, "FollowIR suite: Robust04, News21, Core17")


@hookimpl
def register_metrics(register):
    register(PMRR_METRIC, lazy("harness_followir.metric:FollowIRPMRR"),
             "FollowIR p-MRR over qrel_diff, og vs changed; ties=trec_eval (MTEB now, default) or release")
