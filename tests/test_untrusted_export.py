"""`harness export mteb` and `harness compare` with MTEB result files decide a run's MTEB task from the task
registered under its name and from the dataset identity its results.json records, never from the `mteb` block
that results.json carries (docs/untrusted.md, "MTEB export and compare"). Each forged results.json below is
refused through the CLI with one message naming results.json and the field, exit status 2, nothing written
and no leaderboard row shown; the honest record of the same task exports and compares."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

import harness
from harness.cli import _Group
from harness.cli.compare import compare_cmd
from harness.cli.export import export_group
from harness.testing.synthetic import write_results_folder

REV = "d56462d0e63a25450459c4f213e49ffdb866f7f9"  # mteb/scifact's revision, as tasks/scifact.toml pins it
PER_QUERY = {"q1": {"nDCG@10": 0.5, "Recall@100": 1.0, "MRR@10": 0.5},
             "q2": {"nDCG@10": 0.25, "Recall@100": 0.5, "MRR@10": 0.25},
             "q3": {"nDCG@10": 1.0, "Recall@100": 1.0, "MRR@10": 1.0}}


@click.group(cls=_Group)  # the main CLI's group: HarnessError -> one message, exit status 2
def _cli() -> None:
    pass


_cli.add_command(compare_cmd)
_cli.add_command(export_group)


def _invoke(*args: str):
    return CliRunner().invoke(_cli, list(args), catch_exceptions=False)


def _scifact() -> harness.Task:
    return harness.load_task("scifact")


def _edit(folder: Path, change) -> Path:
    """Forge results.json: read it, let ``change`` edit the object, write it back."""
    path = folder / "results.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return folder


def _honest_scifact(folder: Path) -> Path:
    """A results folder recording what a scifact run records: the registered task (with its mteb block) and
    the dataset identity with the sha256 of every file the task pins."""
    task = _scifact()
    write_results_folder(folder, "scifact", PER_QUERY)

    def record(data: dict[str, Any]) -> None:
        data.update(status="complete", command=["harness", "eval", "--task", "scifact"], task=task.as_dict())
        data["dataset"].update(files=[{"path": f.path, "sha256": f.sha256, "size": f.size} for f in task.files])

    return _edit(folder, record)


def _leaderboard(folder: Path, task_name: str = "SciFact", revision: str = REV) -> Path:
    """An MTEB result file as the leaderboard publishes one (nDCG@10 0.6912)."""
    folder.mkdir(parents=True, exist_ok=True)
    f = folder / f"{task_name}.json"
    f.write_text(json.dumps({"dataset_revision": revision, "task_name": task_name, "mteb_version": "1.12.0",
                             "scores": {"test": [{"ndcg_at_10": 0.6912, "main_score": 0.6912, "hf_subset": "default",
                                                  "languages": ["eng-Latn"]}]},
                             "evaluation_time": 1.0, "kg_co2_emissions": None}), encoding="utf-8")
    return f


def _refused(r, *fields: str) -> None:
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and "results.json" in r.output
    for field in fields:
        assert field in r.output, (field, r.output)


def _export_refused(run: Path, out: Path, *fields: str) -> None:
    r = _invoke("export", "mteb", str(run), "-o", str(out), "--model", "org/m", "--revision", "r1")
    _refused(r, *fields)
    assert r.output.startswith("Error: cannot export to MTEB's format")  # one message
    assert not out.exists()  # nothing written: no SciFact.json, no model_meta.json


def _compare_refused(run: Path, leaderboard: Path, *fields: str) -> None:
    r = _invoke("compare", str(run), str(leaderboard), "--metric", "nDCG@10", "-B", "50")
    _refused(r, *fields)
    assert "(MTEB)" not in r.output and "0.6912" not in r.output  # no leaderboard row next to the run
    assert len(r.output.strip().splitlines()) == 1


def test_the_honest_record_exports_and_compares(tmp_path):
    """The control: the same record, unforged, is exported as SciFact and compared with SciFact's file."""
    run = _honest_scifact(tmp_path / "run")
    r = _invoke("export", "mteb", str(run), "-o", str(tmp_path / "out"), "--model", "org/m", "--revision", "r1")
    assert r.exit_code == 0, r.output
    data = json.loads((tmp_path / "out" / "org__m" / "r1" / "SciFact.json").read_text(encoding="utf-8"))
    mean = sum(q["nDCG@10"] for q in PER_QUERY.values()) / len(PER_QUERY)
    assert data["task_name"] == "SciFact" and data["dataset_revision"] == REV
    assert data["scores"]["test"][0]["main_score"] == round(mean, 6)
    r = _invoke("compare", str(run), str(_leaderboard(tmp_path / "lb")), "--metric", "nDCG@10", "-B", "50")
    assert r.exit_code == 0, r.output
    assert any("(MTEB)*" in line and "0.6912" in line for line in r.output.splitlines())


def test_a_record_without_a_block_takes_the_registered_one(tmp_path):
    """A run written before its task had an mteb block: the registered task and the identity decide."""
    run = _edit(_honest_scifact(tmp_path / "run"), lambda d: d["task"].pop("mteb"))
    r = _invoke("export", "mteb", str(run), "-o", str(tmp_path / "out"), "--model", "org/m", "--revision", "r1")
    assert r.exit_code == 0, r.output
    assert (tmp_path / "out" / "org__m" / "r1" / "SciFact.json").is_file()


@pytest.mark.parametrize("name", ["demo", "my-demo"])
def test_a_demo_run_carrying_scifacts_block_is_neither_exported_nor_compared(tmp_path, name):
    """A real demo run whose results.json is given SciFact's block (and, second case, a task name nothing
    registers): never SciFact.json, never next to SciFact's leaderboard file."""
    from harness.evaluation.pipeline import evaluate

    evaluate("demo", retriever="bm25", output=str(tmp_path / "demo"), progress=False)

    def forge(data: dict[str, Any]) -> None:
        data["task"].update(name=name, mteb=_scifact().mteb)

    run = _edit(tmp_path / "demo", forge)
    _export_refused(run, tmp_path / "out", "task.mteb", "'SciFact'", repr(name))
    _compare_refused(run, _leaderboard(tmp_path / "lb"), "task.mteb", "'SciFact'", repr(name))


def test_a_registered_task_with_another_tasks_block_is_refused(tmp_path):
    """scifact's record claiming MTEB's ArguAna: neither ArguAna.json nor a row next to ArguAna's file."""
    other = "c22ab2a51041ffd869aaddef7af8d8215647e41a"

    def forge(data: dict[str, Any]) -> None:
        data["task"]["mteb"].update(task_name="ArguAna", dataset="mteb/arguana", dataset_revision=other)

    run = _edit(_honest_scifact(tmp_path / "run"), forge)
    _export_refused(run, tmp_path / "out", "task.mteb.task_name", "'ArguAna'", "'SciFact'")
    _compare_refused(run, _leaderboard(tmp_path / "lb", "ArguAna", other), "task.mteb.task_name", "'ArguAna'")


def _claim(key: str, value: str):
    return lambda d: d["task"]["mteb"].update({key: value})


def _file_sha(d: dict[str, Any]) -> None:
    d["dataset"]["files"][0]["sha256"] = "0" * 64


def _no_file(d: dict[str, Any]) -> None:
    del d["dataset"]["files"][1]


def _identity(key: str, value: str):
    return lambda d: d["dataset"].update({key: value})


def _ran(key: str, value: Any):
    return lambda d: d["task"].update({key: value})


ZEROS = "0" * 40
TAMPERED = [  # (id, forge, the fields the message names, the revision the leaderboard file gives)
    ("claimed revision", _claim("dataset_revision", ZEROS), ["task.mteb.dataset_revision", ZEROS], ZEROS),
    ("claimed dataset", _claim("dataset", "someone/scifact"), ["task.mteb.dataset", "someone/scifact"], REV),
    ("claimed split", _claim("split", "dev"), ["task.mteb.split", "'dev'"], REV),
    ("claimed subset", _claim("hf_subset", "en"), ["task.mteb.hf_subset", "'en'"], REV),
    ("file digest", _file_sha, ["dataset.files['scifact/scifact_csv.zip'].sha256", "0" * 64], REV),
    ("file missing", _no_file, ["dataset.files", "scifact/topics.beir-v1.0.0-scifact.test.tsv.gz"], REV),
    ("identity revision", _identity("revision", ZEROS), ["dataset.revision", ZEROS], REV),
    ("identity repo", _identity("repo", "someone/scifact"), ["dataset.repo", "someone/scifact"], REV),
    ("identity revision of another type", _identity("revision", ["x"]), ["dataset.revision", "['x']"], REV),
    ("dataset override", _ran("dataset", "beir"), ["task.dataset", "'beir'"], REV),
    ("dataset arguments", _ran("dataset_args", {"corpus": "elsewhere.zip"}), ["task.dataset_args", "elsewhere"], REV),
]


@pytest.mark.parametrize("forge, fields, revision", [t[1:] for t in TAMPERED], ids=[t[0] for t in TAMPERED])
def test_a_tampered_scifact_record_is_refused(tmp_path, forge, fields, revision):
    """Each field of the record that disagrees with the registered task's pins: one message naming it, for
    the export and for a compare with SciFact's leaderboard file (at the revision the record claims)."""
    run = _edit(_honest_scifact(tmp_path / "run"), forge)
    _export_refused(run, tmp_path / "out", *fields)
    _compare_refused(run, _leaderboard(tmp_path / "lb", revision=revision), *fields)


def test_a_compare_without_mteb_files_does_not_decide(tmp_path):
    """Without an MTEB result file in the comparison, the blocks are not read: a forged run compares."""
    a = _edit(_honest_scifact(tmp_path / "a"), _claim("task_name", "ArguAna"))
    b = _honest_scifact(tmp_path / "b")
    r = _invoke("compare", str(a), str(b), "--metric", "nDCG@10", "-B", "50")
    assert r.exit_code == 0, r.output


def test_a_task_defined_in_python_exports_once_registered(tmp_path):
    """An ad hoc Task's block is a claim like any other until a registry the caller passes registers the task:
    refused from the installed plugins alone, exported through a context whose host registers it."""
    from types import SimpleNamespace

    from harness import Context, PluginHost, hookimpl
    from harness.evaluation.pipeline import evaluate
    from harness.mteb.result_files import export_mteb

    block = {"task_name": "HarnessDemoRetrieval", "dataset": "example/demo", "dataset_revision": REV,
             "metrics": {"nDCG@10": "ndcg_at_10"}}
    task = harness.Task(name="adhoc-mteb", dataset="demo", metrics=["nDCG@10"], first_stage="retrieve",
                        retriever="bm25", mteb=block)
    evaluate(task, retriever="bm25", output=str(tmp_path / "run"), progress=False)
    with pytest.raises(harness.HarnessError, match="task 'adhoc-mteb' is not registered here"):
        export_mteb([tmp_path / "run"], tmp_path / "out", model="org/m")
    assert not (tmp_path / "out").exists()

    @hookimpl
    def register_tasks(register):
        register("adhoc-mteb", lambda: task, "an ad hoc task")

    host = PluginHost()
    host.register_plugin(SimpleNamespace(register_tasks=register_tasks), "adhoc")
    paths = export_mteb([tmp_path / "run"], tmp_path / "out", model="org/m", context=Context.create(host=host))
    assert [p.name for p in paths] == ["HarnessDemoRetrieval.json", "model_meta.json"]
