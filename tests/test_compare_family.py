"""`harness compare`'s family-wise options on synthetic results folders (two tasks x two metrics):
the documented family and its adjusted p-values recomputed by hand, the JSON contract, every format,
the means over tasks, the errors, folders merged by name, and the rank charts of `harness report` and
of `harness view`'s compare page. Without any of the new options the output is the classic one."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from harness.compare import compare, load_systems, rank_intervals, tost
from harness.compare.format import render_result
from harness.testing.synthetic import write_results_folder, write_suite_folder

from .compare_cli import invoke as _invoke

TASKS = ("t1", "t2")
METRICS = ("m1", "m2")
SYSTEMS = ("base", "small", "big")


@pytest.fixture(scope="module")
def suites(tmp_path_factory) -> list[str]:
    """Three systems, each a suite of two tasks (25 and 40 queries) with two metrics."""
    root = tmp_path_factory.mktemp("family")
    rng = np.random.default_rng(7)
    base = {t: rng.uniform(0, 1, n) for t, n in zip(TASKS, (25, 40))}
    folders = []
    for name, shift in zip(SYSTEMS, (0.0, 0.03, 0.12)):
        members = {}
        for t in TASKS:
            v = np.clip(base[t] + shift + rng.normal(0, 0.1, base[t].size), 0, 1)
            members[t] = {f"{t}-q{i}": {"m1": float(x), "m2": float(np.round(x * 3) / 3)} for i, x in enumerate(v)}
        folders.append(f"{name}={write_suite_folder(root / name, 'suite', members)}")
    return folders


def _values(folder_arg: str, task: str, metric: str) -> np.ndarray:
    path = folder_arg.split("=", 1)[1]
    rows = [json.loads(line) for line in open(f"{path}/{task}/per_query.jsonl", encoding="utf-8")]
    return np.array([r[metric] for r in rows])


def _bh_by_hand(p: list[float]) -> list[float]:
    """BH written another way: for each i, the least p_j * m / rank_j over the p_j >= p_i."""
    m = len(p)
    rank = {j: sum(q <= p[j] for q in p) for j in range(m)}
    return [min(1.0, min(p[j] * m / rank[j] for j in range(m) if p[j] >= p[i])) for i in range(m)]


def test_no_new_option_keeps_the_classic_output(suites):
    classic = _invoke("compare", *suites, "-B", "500", "--format", "json")
    assert classic.exit_code == 0, classic.output
    data = json.loads(classic.output)
    assert set(data) == {"baseline", "systems", "settings", "results"}
    res = compare(load_systems(suites), permutations=500)
    assert _invoke("compare", *suites, "-B", "500").output == render_result(res, "table") + "\n"
    # the default family, asked for: the same p-values and Holm adjustments as the classic table
    new = json.loads(_invoke("compare", *suites, "-B", "500", "--family", "task-metric", "--format", "json").output)
    assert new["results"] == data["results"]
    for r in data["results"]:
        for c in r["comparisons"]:
            (row,) = [x for x in new["comparisons"] if (x["task"], x["metric"], x["a"], x["b"]) ==
                      (r["task"], r["metric"], data["baseline"], c["system"])]
            assert row["p_value"] == c["p_randomization"] and row["p_adjusted"] == c["p_randomization_holm"]
            assert row["delta"] == pytest.approx(c["diff"]) and row["ci"] == pytest.approx([c["ci_low"], c["ci_high"]])


def test_family_all_bh_over_two_tasks_and_two_metrics(suites):
    r = _invoke("compare", *suites, "--family", "all", "--correction", "bh", "--test", "t", "--format", "json")
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    rows = data["comparisons"]
    assert data["family_size"] == len(rows) == len(TASKS) * len(METRICS) * 2 == data["family"]["size"]
    assert data["family"]["scope"] == "all" and "one family of 8" in data["family"]["description"]
    p = []
    for row in rows:
        a, b = _values(suites[SYSTEMS.index(row["a"])], row["task"], row["metric"]), \
            _values(suites[SYSTEMS.index(row["b"])], row["task"], row["metric"])
        assert row["p_value"] == pytest.approx(sps.ttest_rel(b, a).pvalue, rel=1e-10)
        assert row["delta"] == pytest.approx(b.mean() - a.mean()) and row["n"] == a.size
        p.append(row["p_value"])
    assert [row["p_adjusted"] for row in rows] == pytest.approx(_bh_by_hand(p), rel=1e-12)
    assert {(row["task"], row["metric"]) for row in rows} == {(t, m) for t in TASKS for m in METRICS}
    assert all(row["family"] == "all" and row["family_size"] == 8 and row["correction"] == "bh" for row in rows)
    assert all(row["significant"] == (row["p_adjusted"] <= 0.05) for row in rows)
    # the same invocation per task and metric: four families of two, Holm within each
    per = json.loads(_invoke("compare", *suites, "--test", "t", "--format", "json").output)
    assert per["family_size"] == 2 and {row["family_size"] for row in per["comparisons"]} == {2}


#: the documented contract of ``comparisons`` and ``ranks`` (docs/compare.md "The JSON contract")
ROW = {"task": str, "metric": str, "a": str, "b": str, "mean_a": float, "mean_b": float, "delta": float, "ci": list,
       "ci_method": str, "test": str, "p_value": float, "correction": str, "p_adjusted": float, "n": int, "scope": str,
       "family": str, "family_size": int, "significant": bool}
RANK = {"task": str, "metric": str, "system": str, "mean": float, "rank": float, "rank_ci": list, "groups": list}


def test_json_contract(suites):
    data = json.loads(_invoke("compare", *suites, "--pairs", "all", "--equivalence", "0.05", "--across-tasks",
                              "-B", "300", "--bootstrap", "500", "--format", "json").output)
    names = {s["name"] for s in data["systems"]}
    assert names == set(SYSTEMS)
    for row in data["comparisons"]:
        for key, kind in ROW.items():
            assert isinstance(row[key], kind), (key, row[key])
        assert row["a"] in names and row["b"] in names and len(row["ci"]) == 2
        assert row["delta"] == pytest.approx(row["mean_b"] - row["mean_a"])
        assert set(row) >= {"p_equivalence", "p_equivalence_adjusted", "equivalent"}
        if row["scope"] == "task":
            a, b = (_values(suites[SYSTEMS.index(row[k])], row["task"], row["metric"]) for k in ("a", "b"))
            assert row["p_equivalence"] == pytest.approx(tost(a, b, 0.05))
            assert {"wins", "ties", "losses"} <= set(row)
        else:
            assert row["task"] == "(mean over tasks)" and row["tasks"] == list(TASKS)
            assert {"task_wins", "task_ties", "task_losses"} <= set(row) and row["n"] == 25 + 40
    for r in data["ranks"]:
        for key, kind in RANK.items():
            assert isinstance(r[key], kind), (key, r[key])
        assert r["system"] in names and 1 <= r["rank_ci"][0] <= r["rank_ci"][1] <= len(SYSTEMS)
        assert 1 <= r["rank"] <= len(SYSTEMS) and r["groups"] and all(g.isalpha() for g in r["groups"])
    assert data["family"]["equivalence_margin"] == 0.05 and data["family"]["pairs"] == "all"
    # without a margin, no equivalence keys
    plain = json.loads(_invoke("compare", *suites, "--ranks", "-B", "200", "--bootstrap", "300",
                               "--format", "json").output)
    assert not any("p_equivalence" in row for row in plain["comparisons"])


def test_pairs_all_in_the_order_given(suites):
    data = json.loads(_invoke("compare", *suites, "--pairs", "all", "--baseline", "big", "--metric", "m1",
                              "--task", "t1", "-B", "200", "--bootstrap", "200", "--format", "json").output)
    assert [(r["a"], r["b"]) for r in data["comparisons"]] == [("base", "small"), ("base", "big"), ("small", "big")]
    ranks = [r for r in data["ranks"] if r["task"] == "t1"]
    x = np.column_stack([_values(s, "t1", "m1") for s in suites])
    want = rank_intervals(x, list(SYSTEMS), resamples=200, seed=0)
    assert [(r["system"], r["rank"], r["rank_ci"]) for r in ranks] == [(w.system, w.rank, [w.low, w.high])
                                                                      for w in want]


def test_across_tasks_counts_tasks_after_the_correction(suites):
    data = json.loads(_invoke("compare", *suites, "--across-tasks", "--family", "all", "--correction", "holm",
                              "-B", "1000", "--bootstrap", "1000", "--format", "json").output)
    across = [r for r in data["comparisons"] if r["scope"] == "across-tasks"]
    tasks = {(r["task"], r["metric"], r["a"], r["b"]): r for r in data["comparisons"] if r["scope"] == "task"}
    assert len(across) == len(METRICS) * 2 and data["family_size"] == 8 + 4
    for r in across:
        per = [tasks[(t, r["metric"], r["a"], r["b"])] for t in TASKS]
        assert r["task_wins"] == sum(p["significant"] and p["delta"] > 0 for p in per)
        assert r["task_losses"] == sum(p["significant"] and p["delta"] < 0 for p in per)
        assert r["task_wins"] + r["task_ties"] + r["task_losses"] == len(TASKS)
        means = [tasks[(t, r["metric"], r["a"], r["b"])] for t in TASKS]
        assert r["mean_b"] == pytest.approx(np.mean([m["mean_b"] for m in means]))
    assert any(r["task"] == "(mean over tasks)" for r in data["ranks"])


def test_formats_state_the_family_and_its_size(suites):
    args = [*suites, "--family", "all", "--correction", "by", "--equivalence", "0.1", "--across-tasks", "-B", "300",
            "--bootstrap", "300"]
    table = _invoke("compare", *args).output
    assert "one family of 12" in table and "Benjamini-Yekutieli" in table and "p_by" in table
    assert "ranks:" in table and "(mean over tasks) / m1" in table and "W/T/L (tasks)" in table
    md = _invoke("compare", *args, "--format", "markdown").output
    assert "### t1 / m1" in md and "| a | b | mean_a |" in md and "one family of 12" in md
    tex = _invoke("compare", *args, "--format", "latex").output
    assert tex.count(r"\begin{table}") == 2 and "one family of 12" in tex and r"95\% rank CI" in tex
    assert r"(mean over tasks)" in tex


@pytest.mark.parametrize("args,message", [
    (["--task", "t1", "--across-tasks"], "--across-tasks compares means over two or more tasks"),
    (["--equivalence", "0"], "'--equivalence': 0.0 is not in the range x>0"),
    (["--equivalence", "nan"], "'nan' is not a finite number"),
    (["--correction", "fdr"], "'fdr' is not one of 'holm', 'bonferroni', 'bh', 'by', 'none'"),
    (["--bootstrap", "0"], "'--bootstrap': 0 is not in the range 1<=x<=1000000"),
])
def test_bad_options_are_one_message(suites, args, message):
    r = _invoke("compare", *suites, *args)
    assert r.exit_code == 2 and message in r.output and "Traceback" not in r.output


def test_folders_of_one_name_are_one_system(tmp_path):
    pq = {f"q{i}": {"m": 0.1 * i} for i in range(5)}
    for sys_name in ("x", "y"):
        for task in ("ta", "tb"):
            write_results_folder(tmp_path / f"{sys_name}-{task}", task, pq)
    systems = load_systems([f"x={tmp_path / 'x-ta'}", f"x={tmp_path / 'x-tb'}", f"y={tmp_path / 'y-ta'}",
                            f"y={tmp_path / 'y-tb'}"])
    assert [s.name for s in systems] == ["x", "y"] and all(list(s.tasks) == ["ta", "tb"] for s in systems)
    assert systems[0].merged == [tmp_path / "x-tb"]
    res = compare(systems, permutations=100)
    assert [r.task for r in res.results] == ["ta", "tb"]
    assert res.as_dict()["systems"][0]["merged"] == [str(tmp_path / "x-tb")]
    # a folder repeating a task of its name stays a system of its own, as before
    again = load_systems([f"x={tmp_path / 'x-ta'}", f"x={tmp_path / 'y-ta'}"])
    assert [s.name for s in again] == ["x", "x#2"]


def test_report_draws_the_rank_intervals(suites, tmp_path):
    out = tmp_path / "report.html"
    r = _invoke("report", *suites, "-o", str(out), "-B", "200", "--bootstrap", "400")
    assert r.exit_code == 0, r.output
    html = out.read_text(encoding="utf-8")
    figs = re.findall(r'<figure class="rank-chart" data-task="([^"]+)" data-metric="([^"]+)">(.*?)</figure>', html,
                      re.S)
    # the suite's section (ranks by the mean over tasks) comes first, then each task's
    assert [(t, m) for t, m, _ in figs] == [("(mean over tasks)", m) for m in METRICS] + [(t, m) for t in TASKS
                                                                                          for m in METRICS]
    ranks = json.loads(_invoke("compare", *suites, "--across-tasks", "-B", "200", "--bootstrap", "400",
                               "--format", "json").output)["ranks"]
    for task, metric, body in figs:
        points = re.findall(r'<circle class="rank-point" data-system="([^"]+)" data-rank="([^"]+)"', body)
        want = [(x["system"], x["rank"]) for x in ranks if (x["task"], x["metric"]) == (task, metric)]
        assert [(s, float(v)) for s, v in points] == want
        assert body.count('<line class="rank-interval"') == len(SYSTEMS)
    data = json.loads(re.search(r'<script type="application/json" id="harness-data">(.*?)</script>', html,
                                re.S).group(1))
    assert len(data["ranks"]) == len(figs)


def test_view_payload_ranks(tmp_path):
    from harness.view.catalog import Catalog
    from harness.view.comparison import BOOTSTRAP, compare_payload

    rng = np.random.default_rng(1)
    for k, shift in enumerate((0.0, 0.2, 0.1)):
        write_results_folder(tmp_path / f"run{k}", "t", {f"q{i}": {"m": float(v)} for i, v in
                                                        enumerate(np.clip(rng.uniform(0, 1, 30) + shift, 0, 1))})
    cat = Catalog([tmp_path])
    p = compare_payload(cat, ["r1", "r2", "r3"])
    x = np.column_stack([[json.loads(line)["m"] for line in open(tmp_path / f"run{k}" / "per_query.jsonl")]
                         for k in range(3)])
    want = rank_intervals(x, p["names"], resamples=BOOTSTRAP, seed=0)
    assert [(r["system"], r["rank"], r["rank_ci"]) for r in p["ranks"]["m"]] == [(w.system, w.rank, [w.low, w.high])
                                                                             for w in want]


DOC = Path(__file__).resolve().parents[1] / "docs" / "compare.md"


def _first_column(after: str) -> set[str]:
    """The backticked names in the first column of the table that follows ``after`` in docs/compare.md."""
    text = DOC.read_text(encoding="utf-8").split(after, 1)[1].lstrip("\n")
    names: set[str] = set()
    for line in text.splitlines()[2:]:
        if not line.startswith("|"):
            break
        names |= set(re.findall(r"`(\w+)`", line.split("|")[1]))
    return names


def test_the_documented_contract_is_the_json(suites):
    data = json.loads(_invoke("compare", *suites, "--equivalence", "0.05", "--across-tasks", "-B", "200",
                              "--bootstrap", "200", "--format", "json").output)
    assert _first_column("adds:\n") == set(data) - {"baseline", "systems", "settings", "results"}
    assert _first_column("Each entry of `comparisons`:") == {k for row in data["comparisons"] for k in row}
    assert set(ROW) <= _first_column("Each entry of `comparisons`:")
    ranks = DOC.read_text(encoding="utf-8").split("Each entry of `ranks`:", 1)[1].split("\n\n", 1)[0]
    assert {k for r in data["ranks"] for k in r} == set(RANK) and all(f"`{k}`" in ranks for k in RANK)
    family = DOC.read_text(encoding="utf-8").split("| `family` |", 1)[1].split("\n", 1)[0]
    assert set(data["family"]) <= set(re.findall(r"`(\w+)`", family))


def test_the_docs_python_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    (example,) = [b for b in blocks if "FamilyOptions" in b]
    exec(compile(example, "docs/compare.md", "exec"), {})
