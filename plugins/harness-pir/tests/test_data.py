"""Loading the PIR releases: the real demo JSON (skipped when absent) and the hub's BEIR layout."""

from __future__ import annotations

import json

import pytest
from harness import DataError, PluginHost
from harness.formats import sha256_file

import harness_pir
from harness_pir.data import hub_label, load_beir_dataset, load_demo_dataset

SIZES = {  # task: (roots, labels) in the demo release (100 queries, 500 documents each)
    "perspectrum": (16, {"support", "undermine", "general"}),
    "agnews": (50, {"subtopic", "location"}),
    "story": (50, {"analogy", "entity"}),
    "ambigqa": (26, {"perspective"}),
    "allsides": (17, {"left", "right", "center"}),
    "exfever": (34, {"SUPPORT", "REFUTE", "NOT ENOUGH INFO"}),
}


def test_task_file_checksum_matches_the_shared_copy(demo_file):
    (f,) = harness_pir.pir_task("story").files
    assert f.path == "pir/demo_pir_dataset.json" and "colinzhaoust/pir/cad87350" in f.url
    assert sha256_file(demo_file) == f.sha256 and demo_file.stat().st_size == f.size


@pytest.mark.parametrize("task", list(SIZES))
def test_demo_tasks_load(demo_file, task):
    ds = load_demo_dataset(task)
    roots, labels = SIZES[task]
    assert ds.name == f"pir:{task}" and ds.modes == ["default", "root"]
    assert len(ds.corpus) == 500 and len(ds.queries["default"]) == 100 and len(ds.queries["root"]) == roots
    assert ds.validate() == {}
    qs = ds.queries["default"]
    assert {q.meta["label"] for q in qs.values()} == labels
    assert all(set(q.meta) >= {"root", "root_id", "perspective", "label", "pir_task"} for q in qs.values())
    # a root query's id is its first member's; its gold set is the union of its members'
    for rid, root in ds.queries["root"].items():
        members = [q for q in qs if qs[q].meta["root_id"] == rid]
        assert members[0] == rid and root.meta["members"] == members and root.text == qs[rid].meta["root"]
        union = set().union(*(ds.qrels["default"].relevant(q) for q in members))
        assert ds.qrels["root"].relevant(rid) == union
    assert ds.identity["files"][0]["sha256"] == harness_pir.DEMO_SHA256


def test_demo_fields_are_mapped_by_index(demo_file):
    raw = json.loads(demo_file.read_text(encoding="utf-8"))["perspectrum"]
    ds = load_demo_dataset("perspectrum")
    q = ds.queries["default"]["7"]
    assert q.text == raw["queries"][7] and q.meta["root"] == raw["source_queries"][7]
    assert q.meta["perspective"] == raw["perspectives"][7] and q.meta["label"] == raw["query_labels"][7]
    assert ds.qrels["default"].relevant("7") == {str(i) for i in raw["key_ref"]["7"]}
    assert ds.corpus["3"].text == raw["corpus"][3]
    # identical query texts (and labels) under one root keep their own gold sets: keyed by id
    by_text: dict[tuple[str, str], list[str]] = {}
    for qid, query in ds.queries["default"].items():
        by_text.setdefault((query.text, query.meta["label"]), []).append(qid)
    dup = next(ids for ids in by_text.values() if len(ids) > 1)
    golds = [ds.qrels["default"].relevant(i) for i in dup]
    assert golds[0] != golds[1] and not golds[0] & golds[1]


def test_exfever_has_a_singleton_root(demo_file):
    ds = load_demo_dataset("exfever")
    assert ds.meta["singleton_roots"] == 1


def test_unknown_task_and_missing_file(demo_file, tmp_path):
    with pytest.raises(DataError, match="no task 'nope'"):
        load_demo_dataset("nope")
    with pytest.raises(DataError, match="not found"):
        load_demo_dataset("story", path=str(tmp_path / "absent.json"))


def test_tasks_and_suite_are_registered():
    host = PluginHost(load_entry_points=False)
    host.register_plugin(harness_pir, "pir")
    task = host.registry.create("task", "pir:ambigqa")
    assert task.dataset == "pir-demo" and task.dataset_args == {"task": "ambigqa"}
    assert task.metrics[0] == "p-recall@5" and task.first_stage == "retrieve"
    suite = host.registry.create("task", "pir")
    assert suite.tasks == [f"pir:{t}" for t in ("agnews", "story", "perspectrum", "ambigqa", "allsides", "exfever")]
    assert suite.files == task.files  # `harness data download pir` fetches the demo file


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def test_hub_beir_release(tmp_path):
    folder = tmp_path / "perspective-information-retrieval-perspectrum"
    (folder / "qrels").mkdir(parents=True)
    _write_jsonl(folder / "corpus.jsonl", [{"_id": f"c{i}", "title": "", "text": f"claim {i}"} for i in range(5)])
    meta = [("a claim that supports the argument", "Tax is good"), ("a claim that opposes the argument", "Tax is good"),
            ("a claim that relates to the argument", "Tax is good"), ("a claim that supports the argument", "Guns")]
    _write_jsonl(folder / "queries.jsonl", [
        {"_id": f"q{i}", "text": f"Find {p}: {s}", "meta": json.dumps({"src_query": s, "perspective": p})}
        for i, (p, s) in enumerate(meta)] + [{"_id": "q9", "text": "unjudged", "meta": "{}"}])
    _write_jsonl(folder / "qrels" / "test.jsonl", [
        {"query-id": "q0", "corpus-id": "c0", "score": 1}, {"query-id": "q0", "corpus-id": "c1", "score": 1},
        {"query-id": "q1", "corpus-id": "c2", "score": 1}, {"query-id": "q2", "corpus-id": "c3", "score": 1},
        {"query-id": "q3", "corpus-id": "c4", "score": 1}])
    ds = load_beir_dataset(str(folder))
    qs = ds.queries["default"]
    assert list(qs) == ["q0", "q1", "q2", "q3"]
    assert [q.meta["label"] for q in qs.values()] == ["support", "undermine", "general", "support"]
    assert qs["q2"].meta["root_id"] == "q0" and qs["q3"].meta["root_id"] == "q3"
    assert ds.qrels["root"].relevant("q0") == {"c0", "c1", "c2", "c3"}
    assert ds.meta["singleton_roots"] == 1 and ds.identity["task"] == "perspectrum"


def test_hub_labels_follow_the_authors_rules():
    assert hub_label("exfever", "claim that this sentence relates but has no information about") == "NOT ENOUGH INFO"
    assert hub_label("agnews", "a news article happened in Brazil") == "location"
    assert hub_label("story", "similar entities of the story") == "entity"
    assert hub_label(None, "anything") == "none"
