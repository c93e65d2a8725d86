"""Built-in metrics: one per standard measure family (``harness.metrics.names``), and ``Hole@k``."""

from __future__ import annotations

from harness.components.lazy import lazy
from harness.metrics.names import STANDARD_FAMILIES
from harness.plugins.hookspecs import hookimpl


@hookimpl
def register_metrics(register):
    for name, description in STANDARD_FAMILIES.items():
        register(name, lazy("harness.metrics.standard:StandardMetric"), description)
    register("Hole", lazy("harness.metrics.hole:HoleMetric"),
             "Hole@k: share of the top k without a judgment, mean over queries (scope=corpus: MTEB's)")
