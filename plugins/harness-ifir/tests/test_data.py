"""The loader of the released layout, on the hand-made fixture."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from harness import Context, DataError, HarnessError

from harness_ifir import SUBSETS
from harness_ifir import data as ifir_data
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
        "ifir/fiqa/fiqa-corpus.jsonl", "ifir/fiqa/test_data.json", "ifir/fiqa/fiqa-query.jsonl",
        "ifir/fiqa/fiqa-qrel.tsv"]  # the hub's names for the original queries and qrels
    folder = FIXTURE / "ifir" / "fiqa"
    assert [f["sha256"] for f in ds.identity["files"]] == [
        hashlib.sha256((folder / f["path"].split("/")[-1]).read_bytes()).hexdigest() for f in ds.identity["files"]]
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


def test_missing_subset_says_where_and_how_to_fetch_it(tmp_path, monkeypatch):
    """With downloads off, the message names the file, the folder and the command that fetches the subset;
    the loader's own message names the layout and the hub dataset."""
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path))
    res = _cli("eval", "--task", "ifir:fiqa")
    assert res.exit_code == 2 and len(res.stderr.splitlines()) == 1
    corpus = tmp_path / "ifir" / "fiqa" / "fiqa-corpus.jsonl"
    assert res.stderr.startswith(f"Error: data file not found: {corpus} and 1 more of ifir:fiqa's files (looked in "
                                 f"the data folder {tmp_path}, from $HARNESS_DATA")
    for part in ("`harness data download ifir:fiqa`", "HARNESS_DATA=/path/to/data"):
        assert part in res.stderr, part
    with pytest.raises(DataError, match=r"songtingyu/IFIR.*\(fiqa-corpus\.jsonl and test_data\.json, as released; see "
                                        r"docs/ifir\.md\)"):
        load_ifir("fiqa", context=Context.create(data_dir=tmp_path))
    with pytest.raises(DataError, match=r"^IFIR-EVAL subset 'aila' not found: /nowhere/aila\. put the subset's folder "
                                        r"there \(aila-corpus\.jsonl and test_data\.json.*see docs/ifir\.md\)\.$"):
        load_ifir("aila", path="/nowhere/aila")


def test_without_a_pinned_commit_and_without_the_hub_the_download_is_one_message(tmp_path, monkeypatch):
    """No full commit id of songtingyu/IFIR is pinned: the task asks the Hub which commit ``main`` names;
    offline (HF_HUB_OFFLINE), that is one message naming the repository and revision, exit 2, nothing written.
    Where the files are in place, nothing is asked."""
    monkeypatch.setattr(ifir_data, "HUB_REVISION", "")
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    res = _cli("data", "download", "ifir:fiqa")
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
    assert res.stderr.startswith("Error: cannot download from the Hugging Face Hub: dataset repository "
                                 "songtingyu/IFIR, revision main"), res.stderr
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("HARNESS_DATA", str(FIXTURE))  # fiqa in place: no question to the Hub
    res = _cli("data", "download", "ifir:fiqa")
    assert res.exit_code == 0, res.stderr
    assert res.stdout.splitlines() == ["ifir:fiqa: nothing to download (the task publishes no files); its data is in "
                                       "place"]


def test_hub_files_follow_the_hub_layout(registry, tmp_path, monkeypatch):
    from harness import Context

    rev = "0123456789abcdef0123456789abcdef01234567"
    context = Context.create(registry=registry, data_dir=tmp_path)
    task = registry.create("task", f"ifir:cds:revision={rev}", context)
    assert task.dataset_args == {"revision": rev}
    assert [(f.path, f.url) for f in task.files] == [
        (f"ifir/cds@{rev}/{name}", f"https://huggingface.co/datasets/songtingyu/IFIR/resolve/{rev}/cds/{name}")
        for name in ("cds-corpus.jsonl", "cds-query.jsonl", "cds-qrel.tsv", "test_data.json")]
    suite = registry.create("task", f"ifir:revision={rev}", context)
    assert suite.tasks == [f"ifir:{s}:revision={rev}" for s in SUBSETS]
    monkeypatch.setattr(ifir_data, "HUB_REVISION", rev)  # when pinned: the plain folder, the pinned commit
    task = registry.create("task", "ifir:cds", context)
    assert task.files[0].path == "ifir/cds/cds-corpus.jsonl" and f"/resolve/{rev}/cds/" in task.files[0].url
    fixture = Context.create(registry=registry, data_dir=FIXTURE)  # the files in place: nothing to fetch
    assert registry.create("task", "ifir:fiqa", fixture).files == []
