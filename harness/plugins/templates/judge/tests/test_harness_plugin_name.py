"""Tests of harness-plugin-name.

Registration, grades on a toy run, and judging a run of the packaged `demo` task."""

from importlib import metadata

import harness
import pytest
from harness import Document, Query, Run

import harness_plugin_name as plugin
from harness_plugin_name.judge import OverlapJudge

NAME, DIST = plugin.NAME, "harness-plugin-name"


from _helpers import needs_install, registered  # noqa: E402 (rendering puts templates/_helpers.py here)


def test_registers_the_judge():
    factory, description = registered(plugin.register_judges)[NAME]
    assert description
    assert isinstance(factory(depth=3), OverlapJudge)


def test_grades_zero_to_three():
    corpus = {"all": Document("all", "Dogs bark at night"), "half": Document("half", "dogs sleep"),
              "none": Document("none", "volcanoes erupt")}
    queries = {"q": Query("q", "dogs bark")}
    run = Run.from_order({"q": ["all", "half", "none", "gone"]})
    judgments = OverlapJudge().judge(queries, run, corpus)
    assert {d: j.score for (_, d), j in judgments.items()} == {"all": 3.0, "half": 2.0, "none": 0.0, "gone": None}
    assert judgments.n_failed == 1
    assert len(OverlapJudge(depth=2).judge(queries, run, corpus)) == 2


@needs_install
def test_listed_and_evaluated_through_the_entry_point():
    plugins = {p["distribution"]: p for p in harness.list_plugins()}
    assert NAME in plugins[DIST]["components"]["judge"]
    result = harness.evaluate("demo", retriever="bm25", judge=f"{NAME}:depth=5", metrics=["nDCG@10"], progress=False)
    judgments = result.judgments["default"]
    assert len(judgments) == 5 * len(result.dataset.queries["default"])
    assert {j.score for j in judgments.values()} <= {0.0, 1.0, 2.0, 3.0}
