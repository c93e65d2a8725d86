"""The loader of the released layout, on the hand-made fixture."""

from __future__ import annotations

from pathlib import Path

import pytest
from harness import DataError, HarnessError

from harness_ifir import SUBSETS
from harness_ifir.data import load_ifir

FIXTURE = Path(__file__).resolve().parent / "fixture"


def test_fixture_fiqa():
    ds = load_ifir("fiqa")
    assert ds.modes == ["query", "instructed"]
    assert sorted(ds.queries["query"]) == ["q1-L1", "q1-L2", "q1-L3", "q2-L1", "q2-L3"]
    assert "f12" not in ds.corpus and len(ds.corpus) == 11  # empty text skipped
    assert ds.corpus["f1"].title == "LLC vs S corp"
    q, qi = ds.queries["query"]["q1-L2"], ds.queries["instructed"]["q1-L2"]
    assert q.instruction == "" and qi.instruction.startswith("I am a 40-year-old accountant")
    assert q.text == qi.text and q.text.startswith("Full-time work")
    for x in (q, qi):
        assert x.meta["level"] == 2 and x.meta["ifir_subset"] == "fiqa" and x.meta["query_id"] == "q1"
        assert x.meta["judge_instruction"] == f"{q.text} {qi.instruction}"
    # relevance is per instruction (rel indexes the query's corpus list) and the same in both modes
    assert ds.qrels["query"]["q1-L2"] == {"f1": 1, "f3": 1, "f8": 1}
    assert ds.qrels["query"]["q1-L3"] == {"f1": 1, "f3": 1}
    assert ds.qrels["instructed"] is ds.qrels["query"]
    assert ds.validate() == {}
    assert [f["path"] for f in ds.identity["files"]] == [
        "ifir/fiqa/fiqa-corpus.jsonl", "ifir/fiqa/test_data.json", "ifir/fiqa/fiqa-query.json",
        "ifir/fiqa/fiqa-qrel.jsonl"]
    assert ds.meta["levels"] == [1, 2, 3]


def test_levels_filter_and_path_argument():
    ds = load_ifir("fiqa", path=str(FIXTURE / "ifir" / "fiqa"), levels="3")
    assert sorted(ds.queries["instructed"]) == ["q1-L3", "q2-L3"]


def test_unleveled_subset_keeps_the_release_id():
    ds = load_ifir("nfcorpus")
    (qid,) = ds.queries["query"]
    assert qid == "PLAIN-1" and ds.queries["query"][qid].meta["level"] == 0


def test_missing_data_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path))
    with pytest.raises(DataError, match=r"ifir/aila.*HARNESS_DATA"):
        load_ifir("aila")


def test_registered_tasks_and_suite(registry):
    for s in SUBSETS:
        t = registry.create("task", f"ifir:{s}")
        assert t.dataset == f"ifir:{s}" and t.metrics == ["nDCG@20", "instfol"] and t.first_stage == "retrieve"
    suite = registry.create("task", "ifir")
    assert suite.tasks == [f"ifir:{s}" for s in SUBSETS]
    ds = registry.create("dataset", "ifir:fiqa:levels=1")
    assert sorted(ds.queries["query"]) == ["q1-L1", "q2-L1"]
    with pytest.raises(HarnessError):
        registry.create("dataset", "ifir:cds")  # not in the fixture


def _cli(*args):
    """The real CLI, which loads the installed plugins (as a user's shell does)."""
    from click.testing import CliRunner
    from harness import PluginHost
    from harness.cli import cli

    if "ifir:fiqa" not in PluginHost().registry.components["task"]:
        pytest.skip("the CLI sees installed plugins only: pip install -e plugins/harness-ifir --no-deps")
    return CliRunner().invoke(cli, list(args))


def test_missing_subset_suggests_what_works(tmp_path, monkeypatch):
    """The message names the folder and the layout; it suggests no download (there is none to run)."""
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path))
    res = _cli("eval", "--task", "ifir:fiqa")
    assert res.exit_code == 2
    assert res.stderr == (
        f"Error: IFIR-EVAL subset 'fiqa' not found: {tmp_path / 'ifir' / 'fiqa'} (looked in the data folder "
        f"{tmp_path}, from $HARNESS_DATA). IFIR-EVAL is not published for download, so harness cannot fetch it: put "
        "the subset's folder there (fiqa-corpus.jsonl and test_data.json, as released; see docs/ifir.md), or point "
        "to a data folder that holds ifir/fiqa/ with HARNESS_DATA=/path/to/data or `--data-dir /path/to/data`.\n")
    with pytest.raises(DataError, match=r"^IFIR-EVAL subset 'aila' not found: /nowhere/aila\. IFIR-EVAL is not "
                                        r"published for download.*see docs/ifir\.md\)\.$"):
        load_ifir("aila", path="/nowhere/aila")


def test_data_download_says_there_is_nothing_to_fetch(tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path))
    res = _cli("data", "download", "ifir:fiqa")
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.startswith(
        "Error: ifir:fiqa: nothing to download: the task publishes no files for harness to fetch, and its data is "
        f"not in place: IFIR-EVAL subset 'fiqa' not found: {tmp_path / 'ifir' / 'fiqa'} (looked in the data folder")
    assert "put the subset's folder there (fiqa-corpus.jsonl and test_data.json" in res.stderr
    assert list(tmp_path.iterdir()) == []
    # the suite: a line per subset; where the files are in place (the fixture's fiqa, nfcorpus), it says so
    monkeypatch.setenv("HARNESS_DATA", str(FIXTURE))
    res = _cli("data", "download", "ifir")
    assert res.exit_code == 2
    assert res.stdout.splitlines() == [f"ifir:{s}: nothing to download (the task publishes no files); its data is in "
                                       "place" for s in ("fiqa", "nfcorpus")]
    absent = [s for s in SUBSETS if s not in ("fiqa", "nfcorpus")]
    lines = res.stderr.splitlines()
    assert len(lines) == len(absent)
    for line, s in zip(lines, absent, strict=True):
        assert line.startswith(f"Error: ifir:{s}: nothing to download: the task publishes no files"), line
        assert f"{FIXTURE / 'ifir' / s} (looked in the data folder" in line
