"""``--dataset mteb:repo=OWNER/NAME,revision=COMMIT``: MTEB-layout repositories served by the Hub imitation
(``harness.testing.HubServer``), read from an empty data folder, with MTEB's names and rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness import Context
from harness.api import load_dataset
from harness.concepts.errors import DataError
from harness.data.hub_configs import match_files, parse_configs
from harness.testing import HubServer, parquet_bytes

COMMIT = "1" * 40
PUSHED_CARD = """---
configs:
- config_name: corpus
  data_files:
  - split: test
    path: corpus/test-*
- config_name: queries
  data_files:
  - split: test
    path: queries/test-*
- config_name: qrels
  data_files:
  - split: test
    path: qrels/test-*
  - split: dev
    path: qrels/dev-*
- config_name: fas-corpus
  data_files: fas-corpus/*.parquet
---
# a dataset pushed by MTEB's AbsTaskRetrieval._push_dataset_to_hub
"""


def _parquet(rows):
    pytest.importorskip("pyarrow")
    return parquet_bytes(rows)


def pushed_repository() -> dict[str, bytes]:
    """MTEB's push layout (``<config>/<split>-00000-of-00001.parquet``), integer ids and int64 scores."""
    return {
        "README.md": PUSHED_CARD.encode(),
        "corpus/test-00000-of-00001.parquet": _parquet([
            {"id": "10", "title": "Cats", "text": "cats purr"}, {"id": "11", "title": "", "text": "dogs bark"}]),
        "queries/test-00000-of-00001.parquet": _parquet([
            {"id": "1", "text": "purring"}, {"id": "2", "text": "barking"}, {"id": "3", "text": "unjudged"}]),
        "qrels/test-00000-of-00001.parquet": _parquet([
            {"query-id": "1", "corpus-id": "10", "score": 1}, {"query-id": "2", "corpus-id": "11", "score": 2}]),
        "qrels/dev-00000-of-00001.parquet": _parquet([{"query-id": "3", "corpus-id": "10", "score": 1}]),
    }


@pytest.fixture
def hub(monkeypatch, tmp_path):
    with HubServer() as server:
        server.downloading(monkeypatch, tmp_path / "hf")
        yield server


def _ctx(tmp_path) -> Context:
    (tmp_path / "data").mkdir(exist_ok=True)
    return Context.create(data_dir=tmp_path / "data")


def test_a_pushed_parquet_dataset_reads_as_mteb_reads_it(hub, tmp_path):
    hub.add_repo("org/pushed", pushed_repository(), commit=COMMIT)
    ds = load_dataset("mteb", _ctx(tmp_path), repo="org/pushed", revision=COMMIT)
    assert set(ds.corpus) == {"10", "11"} and ds.corpus["10"].full_text() == "Cats cats purr"
    assert list(ds.queries["default"]) == ["1", "2"]  # "3" has no qrels in split test: dropped
    assert ds.qrels["default"]["2"] == {"11": 2} and ds.candidates is None
    assert ds.identity["revision"] == COMMIT and ds.identity["configs"]["qrels"] == "qrels/test"
    # only the card and the files of the chosen configs and split were fetched
    gets = {r.file for r in hub.requests if r.method == "GET" and r.file}
    assert gets == {"README.md", "corpus/test-00000-of-00001.parquet", "queries/test-00000-of-00001.parquet",
                    "qrels/test-00000-of-00001.parquet"}
    dev = load_dataset("mteb", _ctx(tmp_path), repo="org/pushed", revision=COMMIT, split="dev")
    assert list(dev.queries["default"]) == ["3"]  # corpus and queries: their only split


def test_a_card_without_configs_is_read_as_a_beir_folder(hub, tmp_path):
    files = {
        "README.md": b"# legacy BEIR upload\n",
        "corpus.jsonl": b'{"_id": 5, "title": "T", "text": "x"}\n{"_id": "6", "text": "y"}\n',
        "queries.jsonl": b'{"_id": "q1", "text": "x?"}\n{"_id": "q2", "text": "other split"}\n',
        "qrels/test.tsv": b"query-id\tcorpus-id\tscore\nq1\t5\t1.0\n",
    }
    hub.add_repo("mteb/legacy", files, commit=COMMIT)
    ds = load_dataset("mteb", _ctx(tmp_path), repo="mteb/legacy", revision=COMMIT)
    assert list(ds.queries["default"]) == ["q1"] and ds.qrels["default"]["q1"] == {"5": 1}
    assert isinstance(ds.qrels["default"]["q1"]["5"], int)


def test_a_branch_is_refused_with_the_commit_it_names(hub, tmp_path):
    commit = hub.add_repo("org/pushed", pushed_repository())
    with pytest.raises(DataError) as err:
        load_dataset("mteb", _ctx(tmp_path), repo="org/pushed", revision="main")
    assert "full 40-hex commit id" in str(err.value) and commit in str(err.value)
    with pytest.raises(DataError, match="OWNER/NAME"):
        load_dataset("mteb", _ctx(tmp_path), repo="../etc", revision=COMMIT)


def test_the_cli_says_one_line_and_exits_2(hub, tmp_path):
    hub.add_repo("org/pushed", pushed_repository(), commit=COMMIT)
    env = dict(os.environ, HARNESS_DATA=str(tmp_path / "data"))
    (tmp_path / "data").mkdir()
    done = subprocess.run([sys.executable, "-m", "harness.cli", "eval", "--dataset", "mteb:repo=org/pushed", "-q"],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"main is commit {COMMIT}" in done.stderr
    ok = subprocess.run([sys.executable, "-m", "harness.cli", "eval", "--dataset",
                         f"mteb:repo=org/pushed,revision={COMMIT}", "-o", str(tmp_path / "out"), "-q"],
                        capture_output=True, text=True, env=env, timeout=300)
    assert ok.returncode == 0, ok.stderr
    saved = json.loads((tmp_path / "out" / "results.json").read_text())["dataset"]
    assert saved["repo"] == "org/pushed" and saved["revision"] == COMMIT and len(saved["files"]) == 4


def test_subset_configs_are_prefixed(hub, tmp_path):
    card = PUSHED_CARD.replace("config_name: corpus", "config_name: fas-corpus0").replace(
        "config_name: queries", "config_name: fas-queries").replace("config_name: qrels", "config_name: fas-qrels")
    card = card.replace("- config_name: fas-corpus\n  data_files: fas-corpus/*.parquet\n", "").replace(
        "fas-corpus0", "fas-corpus")
    files = {**pushed_repository(), "README.md": card.encode()}
    hub.add_repo("org/multi", files, commit=COMMIT)
    ds = load_dataset("mteb", _ctx(tmp_path), repo="org/multi", revision=COMMIT, subset="fas")
    assert ds.identity["configs"]["corpus"] == "fas-corpus/test" and list(ds.queries["default"]) == ["1", "2"]
    with pytest.raises(DataError, match="no 'rus-corpus' config"):
        load_dataset("mteb", _ctx(tmp_path), repo="org/multi", revision=COMMIT, subset="rus")


def test_card_configs_forms_and_globs():
    configs = parse_configs("configs:\n- config_name: a\n  data_files: x/*.parquet\n"
                            "- config_name: b\n  data_files:\n  - split: test\n    path: [d/t-*, e/**]\n"
                            "- config_name: c\n  data_files: {dev: c/dev.jsonl}\n")
    assert configs == {"a": {"train": ["x/*.parquet"]}, "b": {"test": ["d/t-*", "e/**"]},
                       "c": {"dev": ["c/dev.jsonl"]}}
    files = ["x/1.parquet", "x/y/2.parquet", "d/t-0.parquet", "e/f/g.jsonl"]
    assert match_files(["x/*.parquet"], files) == ["x/1.parquet"]
    assert match_files(["e/**"], files) == ["e/f/g.jsonl"]


def test_hostile_cards_are_refused_with_bounded_work():
    with pytest.raises(DataError, match="does not parse"):
        parse_configs("configs: [unclosed")
    with pytest.raises(DataError, match="does not parse"):
        parse_configs("configs: !!python/object/apply:os.system ['true']")
    # a list repeated by aliases: refused at its anchor, never expanded (tests/test_untrusted_hub.py has more)
    bomb = "a: &a [" + ",".join(["x"] * 1000) + "]\n" + "b: &b [" + ",".join(["*a"] * 200) + "]\n"
    bomb += "configs:\n" + "".join(f"- config_name: c{i}\n  data_files: *b\n" for i in range(200))
    with pytest.raises(DataError, match="anchors and aliases are refused"):
        parse_configs(bomb)
    with pytest.raises(DataError, match="over"):
        parse_configs("x" * (300 << 10))
