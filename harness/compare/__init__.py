"""Comparing systems: paired significance tests (`harness compare`) and a self-contained HTML
report (`harness report`). See ``docs/compare.md``."""

from __future__ import annotations

from harness.compare.analysis import CompareResult, compare
from harness.compare.corrections import CORRECTIONS, adjust, benjamini_hochberg, benjamini_yekutieli, bonferroni
from harness.compare.equivalence import tost
from harness.compare.family import FamilyOptions
from harness.compare.paired_bootstrap import bootstrap_test
from harness.compare.ranks import rank_intervals
from harness.compare.runs import System, align, load_system, load_systems
from harness.compare.stats import (
    exact_randomization_p,
    holm,
    paired_summary,
    paired_t_test,
    randomization_test,
    randomized_tukey_hsd,
)
from harness.compare.wilcoxon import wilcoxon_test

__all__ = ["CORRECTIONS", "CompareResult", "FamilyOptions", "System", "adjust", "align", "benjamini_hochberg",
           "benjamini_yekutieli", "bonferroni", "bootstrap_test", "compare", "exact_randomization_p", "holm",
           "load_system", "load_systems", "paired_summary", "paired_t_test", "randomization_test",
           "randomized_tukey_hsd", "rank_intervals", "tost", "wilcoxon_test"]
