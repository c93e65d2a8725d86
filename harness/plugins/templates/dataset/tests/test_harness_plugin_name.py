"""Tests of harness-plugin-name.

The packaged data file, the dataset and the task registered with it."""

from importlib import metadata

import harness
import pytest
from harness import Dataset, Task

import harness_plugin_name as plugin
from harness_plugin_name.dataset import load_dataset, make_task

NAME, DIST = plugin.NAME, "harness-plugin-name"


from _helpers import needs_install, registered  # noqa: E402 (rendering puts templates/_helpers.py here)


def test_registers_a_dataset_and_a_task():
    datasets = registered(plugin.register_datasets)
    tasks = registered(plugin.register_tasks)
    assert isinstance(datasets[NAME][0](), Dataset)
    task = tasks[NAME][0]()
    assert isinstance(task, Task) and task.dataset in datasets


def test_the_dataset():
    dataset = load_dataset()
    assert (len(dataset.corpus), len(dataset.queries["default"])) == (8, 3)
    assert all(count == 0 for count in dataset.validate().values())  # every qrels id is known
    assert dataset.queries["default"]["q1"].instruction
    assert len(dataset.identity["files"][0]["sha256"]) == 64


def test_the_task():
    task = make_task()
    assert (task.dataset, task.first_stage) == (NAME, "retrieve")


@needs_install
def test_listed_and_evaluated_through_the_entry_point():
    plugins = {p["distribution"]: p for p in harness.list_plugins()}
    assert plugins[DIST]["components"] == {"dataset": [NAME], "task": [NAME]}
    result = harness.evaluate(NAME, progress=False)
    assert 0.0 < result.metrics["nDCG@10"] <= 1.0
