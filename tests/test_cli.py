"""The CLI end to end: eval on the packaged demo and on real data, score, results files,
list-plugins with a broken plugin installed, startup without heavy imports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.formats.rankllm import read_rankllm
from harness.formats.trec import write_run

from .plugin_fixtures import BROKEN_IMPORT, GOOD_PLUGIN, make_distribution


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd)


def test_demo_eval_writes_reproducible_results(tmp_path):
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["eval", "--task", "demo", "--output", str(out), "--quiet"])
    assert res.exit_code == 0, res.output
    assert "nDCG@10" in res.output
    data = json.loads((out / "results.json").read_text())
    assert data["task"]["name"] == "demo"
    assert data["components"]["retriever"]["name"] == "bm25"
    assert data["components"]["retriever"]["stemmer"] == "porter"
    assert data["versions"]["harness-ir"] and data["versions"]["pytrec-eval-terrier"]
    assert all(f["sha256"] for f in data["dataset"]["files"])
    rows = [json.loads(line) for line in (out / "per_query.jsonl").read_text().splitlines()]
    assert len(rows) == data["dataset"]["n_queries"]["default"] == 10
    # the reported number is recomputed from the written run file and the dataset's qrels
    from harness.datasets.loaders import load_demo_dataset

    qrels_file = tmp_path / "qrels.txt"
    qrels_file.write_text("".join(f"{q} 0 {d} {int(g)}\n" for q, docs in load_demo_dataset().qrels["default"].items()
                                  for d, g in docs.items()))
    rescore = CliRunner().invoke(cli, ["score", "--qrels", str(qrels_file), "--run", str(out / "run.trec"),
                                       "-m", "nDCG@10", "-m", "MRR@10", "--json"])
    assert rescore.exit_code == 0, rescore.output
    again = json.loads(rescore.output)["aggregate"]
    assert again["nDCG@10"] == pytest.approx(data["metrics"]["nDCG@10"], abs=1e-12)
    assert again["MRR@10"] == pytest.approx(data["metrics"]["MRR@10"], abs=1e-12)


@pytest.mark.parametrize("year,expected", [("19", 0.5058), ("20", 0.4796)])
def test_score_dl_bm25_matches_trec_eval(data_dir, tmp_path, year, expected):
    candidates = read_rankllm(data_dir / f"trec-dl/bm25_top100.dl{year}.json").candidates
    run_file = tmp_path / "bm25.run"
    write_run(candidates, run_file, tag="bm25")
    res = CliRunner().invoke(cli, ["score", "--qrels", str(data_dir / f"trec-dl/qrels.dl{year}-passage.txt"),
                                   "--run", str(run_file), "--json"])
    assert res.exit_code == 0, res.output
    assert round(json.loads(res.output)["aggregate"]["nDCG@10"], 4) == expected


@pytest.mark.parametrize("task,expected", [("trec-dl19", 0.5058), ("trec-dl20", 0.4796)])
def test_eval_dl_candidates_prints_the_same(data_dir, task, expected):
    res = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "eval", "--task", task, "--quiet", "--json"])
    assert res.exit_code == 0, res.output
    assert round(json.loads(res.output)["nDCG@10"], 4) == expected


def test_broken_plugin_is_listed_and_eval_still_works(tmp_path):
    make_distribution(tmp_path / "site", "harness-broken", "harness_broken_plugin", BROKEN_IMPORT)
    make_distribution(tmp_path / "site", "harness-echo", "harness_echo_plugin", GOOD_PLUGIN)
    env = {"PYTHONPATH": str(tmp_path / "site")}
    listing = run_cli("list-plugins", "--json", env=env)
    assert listing.returncode == 0, listing.stderr
    report = {p["distribution"]: p for p in json.loads(listing.stdout)}
    assert "broken on purpose" in report["harness-broken"]["error"]
    assert report["harness-echo"]["components"] == {"retriever": ["bm25", "echo"]}
    assert {"bm25", "dense"} <= set(report["harness-ir"]["components"]["retriever"])
    text = run_cli("list-plugins", env=env)
    assert "ERROR: import: RuntimeError: this plugin is broken on purpose" in text.stdout
    ev = run_cli("eval", "--task", "demo", "--retriever", "builtin:bm25", "--quiet", "--json", env=env)
    assert ev.returncode == 0, ev.stderr
    assert json.loads(ev.stdout)["nDCG@10"] > 0.5
    clash = run_cli("eval", "--task", "demo", "--retriever", "bm25", "--quiet", env=env)
    assert clash.returncode == 2 and "harness-echo" in clash.stderr and "Traceback" not in clash.stderr
    strict = run_cli("list-plugins", env={**env, "HARNESS_STRICT_PLUGINS": "1"})
    assert strict.returncode != 0 and "broken on purpose" in strict.stderr


def test_unknown_component_lists_close_matches():
    res = CliRunner().invoke(cli, ["eval", "--task", "demo", "--retriever", "bm26"])
    assert res.exit_code == 2
    assert "unknown retriever 'bm26'" in res.output and "bm25" in res.output
    res = CliRunner().invoke(cli, ["eval", "--task", "dmeo"])
    assert res.exit_code == 2 and "did you mean: demo" in res.output
    res = CliRunner().invoke(cli, ["eval", "--task", "demo", "--metric", "nDGC@10"])
    assert res.exit_code == 2 and "nDCG@10" in res.output


def test_help_imports_nothing_heavy():
    code = ("import sys; from harness.cli import main; sys.argv=['harness','--help'];\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print([m for m in ('torch','sentence_transformers','openai','anthropic','numpy','scipy') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip().endswith("[]"), out.stdout + out.stderr
