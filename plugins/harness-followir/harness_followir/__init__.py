"""harness-followir: FollowIR (Weller et al., 2024, arXiv 2403.15246) as a harness plugin.

Registers the dataset ``followir`` (a FollowIR repository in MTEB's layout, read through the core's ``mteb``
dataset, or in the original layout mteb 1.x read; split into the modes ``og`` and ``changed``), the tasks
``followir:robust04``, ``followir:news21``, ``followir:core17`` (``release=mteb``, the -mteb release, by
default; ``release=mteb1`` is the task ``followir:<x>:mteb1``, on the original release), the suites
``followir`` and ``followir:mteb1`` and the metric ``followir-p-MRR`` (``ties=trec_eval`` by default,
``ties=release``). Importing this module reads no data.
"""

from __future__ import annotations

from harness import hookimpl, lazy

from .benchmarks import BENCHMARKS, PMRR_METRIC, RELEASES, Benchmark, suite

__version__ = "0.1.0"
__all__ = ["BENCHMARKS", "PMRR_METRIC", "RELEASES", "Benchmark", "suite"]


def _task(b: Benchmark, fixed: str | None = None):
    """``followir:<x>`` (its ``release=`` argument picks the release) or, with ``fixed``, ``followir:<x>:<fixed>``."""
    if fixed is not None:
        return lambda: b.task(fixed)

    def factory(release: str | None = None):
        return b.task(release)

    return factory


@hookimpl
def register_datasets(register):
    register("followir", lazy("harness_followir.data:load_followir_dataset"),
             "FollowIR (task=robust04|news21|core17[,release=mteb1], or repo=,revision=[,layout=original|mteb]): "
             "modes og / changed")


@hookimpl
def register_tasks(register):
    for b in BENCHMARKS:
        register(b.task_name, _task(b), f"FollowIR {b.title}: {b.score} (og) and p-MRR over the given pools "
                                        "(release=mteb|mteb1)")
        register(b.task_name_for("mteb1"), _task(b, "mteb1"),
                 f"FollowIR {b.title} on the original release (mteb 1.x's data): {b.score} (og) and p-MRR")
    register("followir", suite, "FollowIR suite: Robust04, News21, Core17 (release=mteb|mteb1)")
    register("followir:mteb1", lambda: suite("mteb1"), "FollowIR suite on the original release (mteb 1.x's data)")


@hookimpl
def register_metrics(register):
    register(PMRR_METRIC, lazy("harness_followir.metric:FollowIRPMRR"),
             "FollowIR p-MRR over qrel_diff, og vs changed; ties=trec_eval (MTEB now, default) or release")
