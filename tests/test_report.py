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
from harness.testing.synthetic import DEMO_SYSTEMS, INFOSEARCH_DIMS, ifir_like, infosearch_like, write_results_folder

DIMS, SYSTEMS = INFOSEARCH_DIMS, DEMO_SYSTEMS


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
