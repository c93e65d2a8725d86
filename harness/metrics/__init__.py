"""Metrics (public: see docs/api.md): standard IR measures computed by pytrec_eval / ir-measures
(values equal trec_eval's) and the resolution of metric names given on the command line or by
tasks. A plugin metric that needs a standard measure inside (InfoSearch's Table-1 row) uses
:class:`StandardMetric`."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from harness.runtime.exports import lazy_exports

_EXPORTS = MappingProxyType({
    # standard measures
    "StandardMetric": "harness.metrics.standard",
    "parse_measure": "harness.metrics.standard",
    # instruction following (FollowIR, InfoSearch, InstructIR)
    "p_mrr": "harness.metrics.pmrr",
    "pmrr_doc": "harness.metrics.pmrr",
    "tie_ranks": "harness.metrics.pmrr",
    "Robustness": "harness.metrics.robust",
    "robustness": "harness.metrics.robust",
    "id_group": "harness.metrics.robust",
    # intervals
    "bootstrap_uncertainty": "harness.metrics.bootstrap",
    # metric names
    "resolve_metrics": "harness.metrics.resolve",
    "MAX_CUTOFF": "harness.metrics.names",
})

if TYPE_CHECKING:  # pragma: no cover
    from harness.metrics.bootstrap import bootstrap_uncertainty  # noqa: F401
    from harness.metrics.names import MAX_CUTOFF  # noqa: F401
    from harness.metrics.pmrr import p_mrr, pmrr_doc, tie_ranks  # noqa: F401
    from harness.metrics.resolve import resolve_metrics  # noqa: F401
    from harness.metrics.robust import Robustness, id_group, robustness  # noqa: F401
    from harness.metrics.standard import StandardMetric, parse_measure  # noqa: F401

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__all__ = sorted(_EXPORTS)
