"""Comparing systems: paired significance tests (`harness compare`) and a self-contained HTML
report (`harness report`). See ``docs/compare.md``."""

from __future__ import annotations

from harness.compare.analysis import CompareResult, compare
from harness.compare.runs import System, align, load_system, load_systems
from harness.compare.stats import (
    exact_randomization_p,
    holm,
    paired_summary,
    paired_t_test,
    randomization_test,
    randomized_tukey_hsd,
)

__all__ = ["CompareResult", "System", "align", "compare", "exact_randomization_p", "holm", "load_system",
           "load_systems", "paired_summary", "paired_t_test", "randomization_test", "randomized_tukey_hsd"]
