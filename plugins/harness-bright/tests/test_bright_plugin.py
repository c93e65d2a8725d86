"""BRIGHT in process: the official instructions (hand-copied texts from xlang-ai/BRIGHT
``d99e8391...`` ``configs/<model>/<task>.json``), the variants a spec picks, and the messages."""

from __future__ import annotations

import importlib.util

import pytest
from bright_fixture import BIO_EXAMPLES, repository
from harness import Context, HarnessError, load_dataset, load_task
from harness.testing import plugin_registry

import harness_bright
from harness_bright import instruction, instruction_table


def test_instructions_are_the_official_texts():
    assert instruction("e5", "earth_science") == ("Instruct: Given a earth_science post, retrieve relevant passages "
                                                  "that help answer the post\nQuery: ")
    assert instruction("qwen", "pony", long=True) == ("Instruct: Given a pony question, retrieve relevant documents "
                                                      "that help answer the question\nQuery: ")
    assert instruction("bge", "leetcode") == "Represent this Coding problem for searching relevant examples: "
    assert instruction("bge", "pony", long=True) == "Represent this Pony question for searching relevant documents: "
    assert instruction("inst-l", "theoremqa_theorems", "document") == "Represent the Math theorem for retrieval: "
    assert instruction("inst-l", "biology", "document", long=True) == "Represent the biology document for retrieval: "
    assert instruction("grit", "aops") == ("<|user|>\nGiven a Math problem, retrieve relevant examples that help "
                                           "answer the problem\n<|embed|>\n")
    assert instruction("grit", "leetcode", "document") == "<|embed|>\n"
    assert instruction("sf", "leetcode", long=True) is None  # no long documents: no long instruction
    assert instruction("e5", "biology", "document") is None  # concatenating families: queries only
    table = instruction_table()
    assert set(table) == {"e5", "sf", "qwen", "qwen2", "bge", "inst-l", "inst-xl", "grit"}
    assert all(len(splits) == 12 for splits in table.values())


def _context(tmp_path):
    """A data folder holding the fixture's files where the plugin keeps them (nothing to download)."""
    data = tmp_path / "data"
    for path, content in repository().items():
        if path.endswith(".parquet"):
            target = data / "bright" / harness_bright.REVISION / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
    return Context.create(registry=plugin_registry(harness_bright), data_dir=data, cache_dir=tmp_path / "cache")


@pytest.mark.skipif(importlib.util.find_spec("pyarrow") is None, reason="BRIGHT is Parquet: pip install pyarrow")
def test_instructions_are_prepended_to_each_query_as_the_official_code_does(tmp_path):
    ctx = _context(tmp_path)
    plain = load_dataset("bright:task=biology", ctx).queries["default"]
    ds = load_dataset("bright:task=biology,instructions=e5", ctx)
    prefix = "Instruct: Given a biology post, retrieve relevant passages that help answer the post\nQuery: "
    for e in BIO_EXAMPLES:
        q = ds.queries["default"][e["id"]]
        assert q.text == prefix + e["query"] == prefix + plain[e["id"]].text  # add_instruct_concatenate
        assert q.meta == {"bright_query": e["query"], "bright_instruction": prefix} and q.instruction == ""
    long = load_dataset("bright:task=biology,documents=long,instructions=bge", ctx).queries["default"]["0"]
    assert long.text == "Represent this biology post for searching relevant documents: " + BIO_EXAMPLES[0]["query"]
    assert all(not q.meta for q in plain.values())  # no instruction by default


@pytest.mark.parametrize("spec,words", [
    ("bright:task=biology,instructions=grit", ("grit", "prompts")),
    ("bright:task=biology,instructions=nope", ("unknown family",)),
    ("bright:task=chemistry", ("biology", "theoremqa_questions")),
    ("bright:task=biology,query=gpt5", ("gpt4_reason", "Gemini-1.0_reason")),
    ("bright:task=aops,documents=long", ("aops has no long documents",)),
])
def test_a_bad_argument_is_one_message(tmp_path, spec, words):
    with pytest.raises(HarnessError) as err:
        load_dataset(spec, _context(tmp_path))
    assert all(w in str(err.value) for w in words) and "\n" not in str(err.value)


def test_tasks_list_exactly_the_files_their_setting_reads():
    ctx = Context.create(registry=plugin_registry(harness_bright))
    task = load_task("bright:biology", ctx)
    rev = harness_bright.REVISION
    assert [f.path for f in task.files] == [f"bright/{rev}/examples/biology-00000-of-00001.parquet",
                                            f"bright/{rev}/documents/biology-00000-of-00001.parquet"]
    assert task.files[0].url == (f"https://huggingface.co/datasets/xlangai/BRIGHT/resolve/{rev}/examples/"
                                 "biology-00000-of-00001.parquet")
    assert task.depth == 1000 and task.metrics == ["nDCG@10", "MAP@10", "Recall@100", "P@5", "MRR"]
    assert task.mteb["task_name"] == "BrightBiologyRetrieval" and task.mteb["dataset_revision"].startswith("c26703e6")
    assert "mteb/BRIGHT" in task.mteb["differs"]
    variant = load_task("bright:biology:query=gpt4,documents=long", ctx)
    assert [f.path.split("/", 2)[2] for f in variant.files] == ["gpt4_reason/biology-00000-of-00001.parquet",
                                                               "long_documents/biology-00000-of-00001.parquet"]
    assert variant.dataset_args == {"task": "biology", "query": "gpt4_reason", "documents": "long"}
    assert variant.mteb == {}  # not the MTEB task
    suite = load_task("bright", ctx)
    assert suite.tasks == [f"bright:{s}" for s in harness_bright.SPLITS] and len(suite.tasks) == 12
