"""The example dimension package: registered in-process, then installed from its wheel into a
fresh virtual environment where ``harness list-plugins`` shows it and ``harness eval`` runs it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from harness import Context, PluginHost, evaluate
from harness.testing import build_wheel, fresh_venv, pip

harness_infosearch = pytest.importorskip("harness_infosearch", reason="pip install -e plugins/harness-infosearch")
from harness_infosearch import dimensions  # noqa: E402

PROJECT = Path(__file__).resolve().parent.parent


@pytest.fixture
def example(monkeypatch):
    monkeypatch.syspath_prepend(str(PROJECT))
    import harness_infosearch_example

    return harness_infosearch_example


@pytest.fixture
def host(example):
    h = PluginHost(load_entry_points=False)
    h.register_plugin(harness_infosearch, "infosearch", "harness-infosearch")
    h.register_plugin(example, "infosearch-tone", "harness-infosearch-example")
    return h


def test_tone_dimension_in_process(host):
    assert host.registry.lookup("task", "infosearch:tone").source == "harness-infosearch-example"
    task = host.registry.create("task", "infosearch:tone")
    assert task.files == [] and Path(task.dataset_args["path"]).is_absolute()
    res = evaluate("infosearch:tone", retriever="bm25", registry=host.registry, progress=False)
    assert res.dataset.modes == ["og", "changed", "reversed"] and len(res.dataset.queries["og"]) == 4
    assert -1 <= res.metrics["WISE"] <= 1 and 0 <= res.metrics["SICR"] <= 1
    suite = host.registry.create("task", "infosearch", Context.create(host=host))
    assert suite.tasks[-1] == "infosearch:tone" and len(suite.tasks) == 7
    assert [d.name for d in dimensions.registered_dimensions(host.registry)][-1] == "tone"
    # the dimension lives in that host's registry only: another host (without the example) never sees it
    other = PluginHost(load_entry_points=False)
    other.register_plugin(harness_infosearch, "infosearch", "harness-infosearch")
    assert "tone" not in [d.name for d in dimensions.registered_dimensions(other.registry)]
    assert len(other.registry.create("task", "infosearch", Context.create(host=other)).tasks) == 6


def test_wheel_in_fresh_venv(tmp_path):
    pytest.importorskip("hatchling", reason="building a wheel needs hatchling (pip install 'harness-ir[test]')")
    wheel = build_wheel(PROJECT, tmp_path / "wheels")
    python = fresh_venv(tmp_path / "venv", hide=("harness-infosearch-example",))
    cli = [str(python), "-m", "harness.cli"]

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([*cli, *args], capture_output=True, text=True, timeout=120)

    before = run("list-plugins", "--json")
    assert before.returncode == 0, before.stderr
    assert "harness-infosearch-example" not in before.stdout
    installed = pip(python, "install", "--no-deps", "--no-index", str(wheel))
    assert installed.returncode == 0, installed.stderr
    listed = run("list-plugins", "--json")
    entry = {p["distribution"]: p for p in json.loads(listed.stdout)}["harness-infosearch-example"]
    assert entry["error"] is None and entry["components"]["task"] == ["infosearch:tone"]
    res = run("eval", "--task", "infosearch:tone", "--retriever", "bm25", "--quiet", "--json")
    assert res.returncode == 0, res.stderr
    metrics = json.loads(res.stdout)
    assert {"WISE", "SICR", "p-MRR", "nDCG@10[changed]", "R_rev"} <= set(metrics)
    text = run("list-plugins")
    assert "infosearch:tone" in text.stdout
