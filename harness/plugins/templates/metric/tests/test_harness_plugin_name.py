"""Tests of harness-plugin-name.

Registration, values on a hand-made run, and on the packaged `demo` task."""

from importlib import metadata

import harness
import pytest
from harness import Dataset, MetricInput, Qrels, Run

import harness_plugin_name as plugin
from harness_plugin_name.metric import MeanGainMetric

NAME, DIST = plugin.NAME, "harness-plugin-name"


from _helpers import needs_install, registered  # noqa: E402 (rendering puts templates/_helpers.py here)


def compute(metric, run, qrels):
    dataset = Dataset.single("toy", {}, {}, qrels)
    return metric.compute(MetricInput({"default": run}, {"default": qrels}, dataset))


def test_registers_the_metric():
    factory, description = registered(plugin.register_metrics)[NAME]
    assert description
    assert factory(cutoff=5).names == [f"{NAME}@5"]


def test_values():
    qrels = Qrels({"q1": {"a": 2, "b": 1, "c": 0}, "q2": {"x": 1}, "q3": {"y": 0}})
    run = Run.from_order({"q1": ["b", "a", "z"], "q2": ["w"]})
    result = compute(MeanGainMetric(cutoff=2), run, qrels)
    assert result.per_query == {"q1": {f"{NAME}@2": 0.75}, "q2": {f"{NAME}@2": 0.0}}  # q3: nothing relevant
    assert result.aggregate == {f"{NAME}@2": 0.375}
    assert compute(MeanGainMetric(cutoff=4), run, qrels).per_query["q1"][f"{NAME}@4"] == 3 / 8


@needs_install
def test_listed_and_evaluated_through_the_entry_point():
    plugins = {p["distribution"]: p for p in harness.list_plugins()}
    assert NAME in plugins[DIST]["components"]["metric"]
    result = harness.evaluate("demo", metrics=[f"{NAME}@10", "nDCG@10"], progress=False)
    assert 0.0 < result.metrics[f"{NAME}@10"] <= 1.0
