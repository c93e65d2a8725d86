"""Messages about the data folder say what is true, through the real CLI: which setting chose the
folder (option, variable, default), `--data-dir` before or after the command name, a mistyped
`--data-dir` reported (never created), and `harness data download` of a task with nothing to fetch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.data.folder import DataFolder

from .plugin_fixtures import make_distribution


@pytest.fixture(autouse=True)
def _fresh_data_dir(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Automatic download off (no network). (No data folder needs resetting afterwards: there is no
    process-wide one; each command and context has its own.)"""
    monkeypatch.setenv("HARNESS_AUTO_DOWNLOAD", "0")
    yield


def invoke(*args: str) -> tuple[int, str, str]:
    res = CliRunner().invoke(cli, list(args))
    return res.exit_code, res.stdout, res.stderr


def missing_corpus(root: Path) -> str:
    return f"data file not found: {root / 'noveleval' / 'corpus.tsv'} and 2 more of noveleval's files"


# --- the source of the folder is named truly ---------------------------------------------------


def test_only_the_variable_is_named_as_the_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path))
    code, _, err = invoke("eval", "--task", "noveleval")
    assert code == 2
    assert err.startswith(f"Error: {missing_corpus(tmp_path)} (looked in the data folder {tmp_path}, from "
                          "$HARNESS_DATA). Automatic download is off ($HARNESS_AUTO_DOWNLOAD=0): fetch the files "
                          "with `harness data download noveleval`, or point to a folder that holds them with "
                          "HARNESS_DATA=/path/to/data or `--data-dir /path/to/data`"), err
    assert "given by --data-dir" not in err


@pytest.mark.parametrize("before", [True, False])
def test_the_option_is_named_as_the_option(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, before: bool) -> None:
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path / "elsewhere"))
    args = ["--data-dir", str(tmp_path), "eval", "--task", "noveleval"] if before else [
        "eval", "--task", "noveleval", "--data-dir", str(tmp_path)]
    code, _, err = invoke(*args)
    assert code == 2
    assert f"(looked in the data folder {tmp_path}, given by --data-dir)" in err, err


def test_the_default_is_named_as_the_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_DATA", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = tmp_path / "xdg" / "harness" / "data"
    code, _, err = invoke("eval", "--task", "noveleval")
    assert code == 2
    assert (f"(looked in the data folder {root}, the default: neither --data-dir nor $HARNESS_DATA is set; "
            "that folder does not exist)") in err, err
    assert not root.exists()  # automatic download is off: nothing was created
    assert DataFolder.from_env().source == "the default: neither --data-dir nor $HARNESS_DATA is set"
    from harness.context import Context

    assert Context.create(data_dir=tmp_path).data.source == "given by Context(data_dir=...)"
    assert DataFolder.from_env(tmp_path).source == "given by --data-dir"


def test_data_path_names_the_folder_and_its_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path))
    assert invoke("data", "path") == (0, f"{tmp_path}\n", "(from $HARNESS_DATA)\n")
    other = tmp_path / "other"
    other.mkdir()
    for args in (["--data-dir", str(other), "data", "path"], ["data", "--data-dir", str(other), "path"],
                 ["data", "path", "--data-dir", str(other)]):
        assert invoke(*args) == (0, f"{other}\n", "(given by --data-dir)\n"), args
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path / "new"))
    assert invoke("data", "path") == (0, f"{tmp_path / 'new'}\n", "(from $HARNESS_DATA; it does not exist yet: "
                                      "`harness data download TASK` creates it)\n")


# --- --data-dir before or after the command name ----------------------------------------------


def test_data_dir_after_the_command_name(data_dir: Path, tmp_path: Path) -> None:
    after = invoke("eval", "--task", "noveleval", "--data-dir", str(data_dir), "--quiet", "--json")
    before = invoke("--data-dir", str(data_dir), "eval", "--task", "noveleval", "--quiet", "--json")
    assert after[0] == before[0] == 0, after[2]
    assert json.loads(after[1]) == json.loads(before[1])
    assert round(json.loads(after[1])["nDCG@10"], 4) == 0.6503
    # the one given last (after the command name) wins
    both = invoke("--data-dir", str(tmp_path), "eval", "--task", "noveleval", "--data-dir", str(data_dir), "-q",
                  "--json")
    assert both[0] == 0 and json.loads(both[1]) == json.loads(after[1])


def test_an_invocation_without_the_option_forgets_an_earlier_one(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path / "env"))
    assert invoke("--data-dir", str(tmp_path), "data", "path")[1] == f"{tmp_path}\n"
    assert invoke("data", "path")[1] == f"{tmp_path / 'env'}\n"  # same process, no --data-dir this time


# --- a mistyped --data-dir is reported, not created --------------------------------------------


@pytest.mark.parametrize("args", [
    ["eval", "--task", "demo", "--data-dir", "{typo}"],
    ["--data-dir", "{typo}", "eval", "--task", "demo"],
    ["data", "path", "--data-dir", "{typo}"],
    ["--data-dir", "{typo}", "data", "path"],
])
def test_a_mistyped_data_dir_is_one_line_and_status_2(tmp_path: Path, args: list[str]) -> None:
    typo = tmp_path / "dta"
    code, out, err = invoke(*(a.format(typo=typo) for a in args))
    assert code == 2 and out == ""
    assert err == (f"Error: the data folder {typo} given by --data-dir does not exist; check the path, or create "
                   f"it and fetch a task's files into it with `harness data download TASK --data-dir {typo}`\n")
    assert not typo.exists()


def test_auto_download_never_creates_a_data_dir_given_by_the_option(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from harness.api import load_dataset, load_task
    from harness.concepts.errors import DataError
    from harness.context import Context
    from harness.data.download import ensure_task_files
    from harness.runtime.progress import ProgressSettings

    monkeypatch.setenv("HARNESS_AUTO_DOWNLOAD", "1")
    typo = tmp_path / "dta"
    folder = DataFolder.from_env(typo, given_by="--data-dir")
    with pytest.raises(DataError) as exc:
        ensure_task_files(load_task("noveleval"), folder, progress=ProgressSettings("off"))
    assert str(exc.value) == (f"the data folder {typo} (given by --data-dir) does not exist; check the path, or "
                              f"create it and fetch noveleval's files with `harness data download noveleval "
                              f"--data-dir {typo}`")
    assert not typo.exists()
    # a folder given in Python is not created either
    with pytest.raises(DataError) as exc:
        load_dataset("noveleval", context=Context.create(data_dir=typo, progress=ProgressSettings("off")))
    assert str(exc.value).startswith(f"the data folder {typo} (given by Context(data_dir=...)) does not exist")
    assert not typo.exists()


# --- `harness data download` of a task with nothing to fetch ----------------------------------


def test_download_of_a_task_without_files_whose_data_is_in_place() -> None:
    assert invoke("data", "download", "demo") == (
        0, "demo: nothing to download (the task publishes no files); its data is in place\n", "")


NO_FILES_PLUGIN = """
from harness.plugins.hookspecs import hookimpl

@hookimpl
def register_tasks(register):
    from harness.concepts.task import Task

    register("handmade", lambda: Task(name="handmade", dataset="beir", dataset_args={"path": "handmade/beir"},
                                      first_stage="retrieve"), "A task whose files are not published")
"""


def test_download_of_a_task_without_files_says_where_they_go(tmp_path: Path) -> None:
    site = make_distribution(tmp_path / "site", "harness-handmade", "harness_handmade_plugin", NO_FILES_PLUGIN)
    data = tmp_path / "data"
    data.mkdir()
    env = {**os.environ, "PYTHONPATH": str(site), "HARNESS_DATA": str(data), "HARNESS_PLUGINS": "harness-handmade"}
    res = subprocess.run([sys.executable, "-m", "harness.cli", "data", "download", "handmade"], capture_output=True,
                         text=True, env=env)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr == (
        f"Error: handmade: nothing to download: the task publishes no files for harness to fetch, and its data is "
        f"not in place: data file not found: {data / 'handmade' / 'beir'} (looked in the data folder {data}, from "
        f"$HARNESS_DATA). Put it there, or point to another data folder with HARNESS_DATA=/path/to/data or "
        f"`--data-dir /path/to/data`, or, if a task publishes the file, fetch it with "
        "`harness data download TASK`\n")
    assert sorted(p.name for p in data.iterdir()) == []  # nothing was created
