"""``harness data verify``: the files in place against their pins. The shared data is only read; a
changed file is a copy of ONE small file in the test's own folder."""

from __future__ import annotations

import hashlib
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.concepts.task import DataFile
from harness.data.verify import check_file
from harness.testing import requires_plugin

STAGED = ("trec-dl19", "trec-dl20", "noveleval", "scifact", "birco:arguana", "birco:wtb", "birco:clinical-trial",
          "birco:relic", "birco:doris-mae", "birco-dev:clinical-trial", "birco-dev:doris-mae", "birco-dev:wtb",
          "pir:agnews", "pir:story", "pir:perspectrum", "pir:ambigqa", "pir:allsides", "pir:exfever")


def verify(*args: str):
    return CliRunner().invoke(cli, ["data", "verify", *args])


def task_states(output: str) -> dict[str, str]:
    found = re.findall(r"^(\S+): (ok|not downloaded|incomplete|checksum mismatch|no files)\b", output, re.M)
    return {task: state for task, state in found if task != "Error"}


@requires_plugin("harness-birco", "harness-pir")
def test_every_staged_task_of_the_shared_data_is_ok(data_dir: Path) -> None:
    res = verify("--data-dir", str(data_dir))
    assert res.exit_code == 0, res.output
    states = task_states(res.output)
    assert {t: states.get(t) for t in STAGED} == {t: "ok" for t in STAGED}
    # the digests it reports are those the shared folder's own SHA256SUMS lists
    sums = {path.removeprefix("./"): digest for digest, path in
            (line.split() for line in (data_dir / "SHA256SUMS").read_text().splitlines() if line.strip())}
    reported = re.findall(r"^  (\S+): ok: sha256 ([0-9a-f]{64}), (\d+) bytes; from (\S+)", res.output, re.M)
    assert len({path for path, *_ in reported}) >= 20
    for path, digest, size, host in reported:
        assert sums[path] == digest and (data_dir / path).stat().st_size == int(size)
        assert host in ("github.com", "huggingface.co")
    assert re.search(r"trec-dl/bm25_top100\.dl19\.json: ok: .*; from huggingface\.co dataset castorini/rank_llm_data "
                     r"@3506f981b25db886390e23025be96052cc0fae57$", res.output, re.M)


def copy_one(data_dir: Path, tmp_path: Path, rel: str, change: bool) -> Path:
    target = tmp_path / rel
    target.parent.mkdir(parents=True)
    shutil.copyfile(data_dir / rel, target)
    if change:
        body = bytearray(target.read_bytes())
        body[len(body) // 2] ^= 0x01  # one byte
        target.write_bytes(bytes(body))
    return target


def test_one_changed_byte_is_a_checksum_mismatch_with_both_digests(data_dir: Path, tmp_path: Path) -> None:
    rel = "noveleval/queries.tsv"
    changed = copy_one(data_dir, tmp_path, rel, change=True)
    res = verify("--data-dir", str(tmp_path), "noveleval")
    assert res.exit_code == 1, res.output
    assert task_states(res.output) == {"noveleval": "checksum mismatch"}
    expected = hashlib.sha256((data_dir / rel).read_bytes()).hexdigest()
    actual = hashlib.sha256(changed.read_bytes()).hexdigest()
    assert f"{rel}: checksum mismatch: expected sha256 {expected}, actual {actual} (1096 bytes)" in res.output
    assert "noveleval/corpus.tsv: absent;" in res.output
    assert "do not match their pins: noveleval (checksum mismatch)" in res.output


def test_a_task_with_some_files_is_incomplete(data_dir: Path, tmp_path: Path) -> None:
    copy_one(data_dir, tmp_path, "noveleval/queries.tsv", change=False)
    res = verify("--data-dir", str(tmp_path), "noveleval")
    assert res.exit_code == 1 and task_states(res.output) == {"noveleval": "incomplete"}, res.output
    assert "noveleval/queries.tsv: ok: sha256 78ed1ab0" in res.output


@requires_plugin("harness-birco", "harness-pir")
def test_nothing_in_place_is_listed_or_an_error_when_named(tmp_path: Path) -> None:
    res = verify("--data-dir", str(tmp_path))
    assert res.exit_code == 0, res.output
    states = task_states(res.output)
    assert states["trec-dl19"] == "not downloaded" and states["demo"] == "no files"
    assert "birco" not in states and "pir" not in states  # suites are listed as their members
    res = verify("--data-dir", str(tmp_path), "trec-dl19", "pir")
    assert res.exit_code == 1
    assert task_states(res.output) == {"trec-dl19": "not downloaded", **{f"pir:{t}": "not downloaded" for t in (
        "agnews", "story", "perspectrum", "ambigqa", "allsides", "exfever")}}
    assert "Error: not downloaded: trec-dl19, pir:agnews" in res.output and "harness data download" in res.output


def test_files_without_a_published_checksum(tmp_path: Path) -> None:
    (tmp_path / "a.jsonl").write_bytes(b"{}\n")
    assert check_file(DataFile("a.jsonl"), tmp_path).detail == "present (no published checksum), 3 bytes"
    assert check_file(DataFile("a.jsonl", size=3), tmp_path).state == "ok"
    bad = check_file(DataFile("a.jsonl", size=4), tmp_path)
    assert bad.bad and bad.detail == "expected 4 bytes, found 3 (no published sha256)"
    assert check_file(DataFile("b.jsonl", optional=True), tmp_path).line().startswith("b.jsonl: absent (optional)")


def test_a_mistyped_data_folder_is_one_error(tmp_path: Path) -> None:
    res = verify("--data-dir", str(tmp_path / "nope"))
    assert res.exit_code == 2 and "does not exist" in res.output


@pytest.mark.parametrize("name", ["no-such-task"])
def test_an_unknown_task_is_a_usage_error(name: str, tmp_path: Path) -> None:
    res = verify("--data-dir", str(tmp_path), name)
    assert res.exit_code == 2 and name in res.output
