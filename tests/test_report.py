"""`harness report`: one self-contained HTML file with embedded data, radar and bar charts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli.compare import report_cmd
from harness.compare import load_systems
from harness.compare.report import build_report, write_report
from harness.compare.svg import radar, radial_range
from harness.testing.synthetic import (
    BIRCO_TASKS,
    DEMO_SYSTEMS,
    INFOSEARCH_DIMS,
    birco_like,
    ifir_like,
    infosearch_like,
    write_results_folder,
)

DIMS, SYSTEMS = list(INFOSEARCH_DIMS), list(DEMO_SYSTEMS)


@pytest.fixture(scope="module")
def infosearch_report(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("is")
    folders = infosearch_like(root)
    out = root / "report.html"
    r = CliRunner().invoke(report_cmd, [*folders, "-o", str(out), "-B", "2000"], catch_exceptions=False)
    assert r.exit_code == 0, r.output
    return out


def test_report_is_small_self_contained_and_has_one_polygon_per_system(infosearch_report):
    html = infosearch_report.read_text(encoding="utf-8")
    assert infosearch_report.stat().st_size < 1_000_000
    # no network: no external scripts, stylesheets, images or links
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<link" not in html and "@import" not in html
    assert re.findall(r"https?://[^\s\"'<>]+", html) == ["http://www.w3.org/2000/svg"] * len(
        re.findall(r"<svg ", html))
    radars = re.findall(r'<figure class="radar" data-metric="([^"]+)">(.*?)</figure>', html, re.S)
    assert [m for m, _ in radars] == ["nDCG@10[og]", "WISE", "p-MRR"]
    for _, body in radars:
        systems = re.findall(r'<polygon class="radar-series" data-system="([^"]+)"', body)
        assert systems == SYSTEMS
    # bars per task: one bar per system and dimension
    bars = re.findall(r'<figure class="bar-chart" data-metric="WISE" data-kind="task">(.*?)</figure>', html, re.S)
    assert len(re.findall(r'<rect class="bar"', bars[0])) == len(SYSTEMS) * len(DIMS)


def test_embedded_data_and_tables(infosearch_report):
    html = infosearch_report.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="harness-data">(.*?)</script>', html, re.S)
    data = json.loads(m.group(1))
    assert [s["name"] for s in data["systems"]] == SYSTEMS
    assert data["baseline"] == "bm25"
    assert set(data["metrics"]["dense"]) == {f"infosearch:{d}" for d in DIMS}
    assert data["comparison"]["settings"]["correction"] == "Holm"
    assert data["usage"][2]["calls"] == 20 * len(DIMS)  # summed over the suite's members
    assert html.count('<table class="metrics"') == len(DIMS)
    assert "▲" in html  # rankgpt is clearly better than bm25 on nDCG@10[og]
    assert html.count('<details class="worst"') == len(DIMS) * len(SYSTEMS)
    assert "og: rank" in html and "reversed: rank" in html  # rankings from the run files


def test_level_bars(tmp_path):
    folders = ifir_like(tmp_path)
    html = build_report(load_systems(folders), permutations=200)
    fig = re.search(r'<figure class="bar-chart" data-metric="nDCG@20" data-kind="level">(.*?)</figure>', html, re.S)
    assert fig and len(re.findall(r'<rect class="bar"', fig.group(1))) == 3 * 2
    assert ">L1<" in fig.group(1) and ">L3<" in fig.group(1)
    # each level's mean with its standard error over the level's queries
    assert len(re.findall(r'<path class="error-bar"', fig.group(1))) == 3 * 2
    assert "± SE of the level&#39;s mean over its queries" in fig.group(1)


def test_names_are_escaped(tmp_path):
    write_results_folder(tmp_path / "a", "t", {"q1": {"m": 0.1}, "q2": {"m": 0.3}}, retriever="<script>x</script>")
    html = build_report(load_systems([f"<b>evil</b>&={tmp_path / 'a'}"]))
    assert "<script>x" not in html and "<b>evil" not in html
    assert "&lt;b&gt;evil&lt;/b&gt;" in html
    data = re.search(r'id="harness-data">(.*?)</script>', html, re.S).group(1)
    assert "<" not in data and json.loads(data)["systems"][0]["name"] == "<b>evil</b>&"


def test_radar_range_admits_negatives():
    assert radial_range([0.2, 0.9]) == (0.0, 1.0)
    assert radial_range([-0.3, 0.5]) == (-1.0, 1.0)
    assert radial_range([0.5, 1.7]) == (0.0, 2.0)
    chart = radar(["a", "b", "c"], [("x", [-1.0, -1.0, -1.0]), ("y", [1.0, 0.0, None])])
    assert chart["lo"] == -1.0 and chart["hi"] == 1.0
    # the minimum of the range is the centre
    assert all(d["x"] == chart["cx"] and d["y"] == chart["cy"] for d in chart["polygons"][0]["dots"])
    assert any(r["zero"] for r in chart["rings"])


def test_single_system_report(tmp_path):
    f = write_results_folder(tmp_path / "a", "t", {"q1": {"m": 0.1}, "q2": {"m": 0.3}})
    out = write_report(load_systems([str(f)]), tmp_path / "r.html")
    assert "Task t" in out.read_text(encoding="utf-8")


def _figures(html: str) -> list[tuple[str, str, str]]:
    """(class, data-metric, body) of every chart."""
    return re.findall(r'<figure class="(radar|bar-chart)" data-metric="([^"]+)"[^>]*>(.*?)</figure>', html, re.S)


NON_METRIC = re.compile(r"(:se|:queries|:bootstrap|_queries|_queries_skipped|_positions_dropped|:triplets)(\[|$)")


def test_suite_bars_carry_the_metrics_own_error_bars(tmp_path):
    html = build_report(load_systems(birco_like(tmp_path)), permutations=200)
    figs = _figures(html)
    assert [(kind, m) for kind, m, _ in figs] == [("radar", "birco-ndcg@10"), ("radar", "birco-recall@5"),
                                                  ("bar-chart", "birco-ndcg@10"), ("bar-chart", "birco-recall@5")]
    for kind, _, body in figs:
        n_err = len(re.findall(r'<path class="error-bar"', body))
        assert n_err == (2 * len(BIRCO_TASKS) if kind == "bar-chart" else 0)  # one per bar; radars have none
    assert "Error bars: the metric&#39;s own uncertainty" in html
    # tables: value ± SE, hover for the method and n
    assert re.search(r'\d\.\d{4}<span class="se"> ± 0\.\d{4}</span>', html)
    assert "uncertainty: standard error of the mean over queries, n=20" in html
    data = json.loads(re.search(r'id="harness-data">(.*?)</script>', html, re.S).group(1))
    assert data["uncertainty"]["e5"]["birco:wtb"]["birco-ndcg@10"]["n"] == 20


def test_error_bars_follow_the_values(tmp_path):
    """An error bar spans value ± SE on the chart's scale (clipped to the range)."""
    from harness.compare.svg import bars

    chart = bars(["a", "b"], [("s", [0.5, 0.9])], errors=[[(0.4, 0.6, "± SE"), (0.8, 1.2)]])
    e0, e1 = chart["rects"][0]["error"], chart["rects"][1]["error"]
    top, bottom = chart["top"], chart["bottom"]
    scale = bottom - top  # range [0, 1]
    assert e0["y1"] == pytest.approx(top + 0.4 * scale, abs=0.1)  # y of 0.6
    assert e0["y2"] == pytest.approx(top + 0.6 * scale, abs=0.1)  # y of 0.4
    assert e1["y1"] == pytest.approx(top, abs=0.1)  # 1.2 clipped to the range's top
    assert e0["label"] == "± SE" and e1["high"] == 1.2
    assert bars(["a"], [("s", [0.5])])["rects"][0]["error"] is None


def test_version_1_suites_chart_no_se_or_count(tmp_path):
    """Results written before schema 2 (uncertainty flattened into names): converted on read, so the
    radars and bars show metrics only, with error bars from the converted SEs."""
    folders = []
    for k, system in enumerate(["old-a", "old-b"]):
        root = tmp_path / system
        members = {}
        for t, task in enumerate(BIRCO_TASKS):
            sub = root / task.replace(":", "_")
            sub.mkdir(parents=True)
            pq = {f"q{i}": {"birco-ndcg@10": 0.1 * (i + t + k) % 1} for i in range(6)}
            rows = "".join(json.dumps({"query_id": q, **v}) + "\n" for q, v in pq.items())
            (sub / "per_query.jsonl").write_text(rows)
            m = {"birco-ndcg@10": 0.3 + 0.1 * k, "birco-ndcg@10:bootstrap": 0.31, "birco-ndcg@10:se": 0.04,
                 "birco-ndcg@10:queries": 6.0, "instfol_queries": 6.0, "instfol_positions_dropped": 2.0}
            (sub / "results.json").write_text(json.dumps({"task": {"name": task}, "metrics": m,
                                                          "files": {"per_query": "per_query.jsonl"}}))
            members[task] = {"metrics": m, "results": f"{task.replace(':', '_')}/results.json"}
        (root / "results.json").write_text(json.dumps({"task": {"name": "birco"}, "tasks": members,
                                                       "metrics": members[BIRCO_TASKS[0]]["metrics"]}))
        folders.append(str(root))
    html = build_report(load_systems(folders), permutations=100)
    figs = _figures(html)
    assert figs and not [m for _, m, _ in figs if NON_METRIC.search(m)]
    assert {m for _, m, _ in figs} == {"birco-ndcg@10"}
    bar_body = next(body for kind, _, body in figs if kind == "bar-chart")
    assert len(re.findall(r'<path class="error-bar"', bar_body)) == 2 * len(BIRCO_TASKS)
    tables = re.findall(r'<table class="metrics".*?</table>', html, re.S)
    assert tables and not any(":se<" in t or "_queries<" in t for t in tables)
    assert html.count('<table class="details"') == len(BIRCO_TASKS)  # the counts, in their own table
