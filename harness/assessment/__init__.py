"""LLM relevance assessment against a task's human qrels (``harness judge``, ``docs/judges.md``):
``agreement.py`` (an LLM judge against the people, on the pairs they judged; ``kappa.py`` its figures),
``fill.py`` (the holes given runs expose, filled by a judge, written as TREC qrels with provenance),
``rankcorr.py`` (the systems' order under two sets of qrels), ``task_data.py`` (a task's mode, qrels and
relevance threshold) and ``judging.py`` (a judge run over chosen pairs). The names below are the
``harness judge`` commands' back-end, imported on first use."""

from __future__ import annotations

from types import MappingProxyType
from typing import TYPE_CHECKING

from harness.runtime.exports import lazy_exports

_EXPORTS = MappingProxyType({
    "load_task_data": "harness.assessment.task_data",
    "measure_agreement": "harness.assessment.agreement",
    "write_agreement": "harness.assessment.agreement",
    "fill_qrels": "harness.assessment.fill",
    "rank_correlation": "harness.assessment.rankcorr",
    "split_named": "harness.assessment.rankcorr",
})

if TYPE_CHECKING:  # pragma: no cover
    from harness.assessment.agreement import measure_agreement, write_agreement  # noqa: F401
    from harness.assessment.fill import fill_qrels  # noqa: F401
    from harness.assessment.rankcorr import rank_correlation, split_named  # noqa: F401
    from harness.assessment.task_data import load_task_data  # noqa: F401

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__all__ = sorted(_EXPORTS)
