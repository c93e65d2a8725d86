"""Results folders are untrusted (issue 22, item 4): every file a results.json names is read inside
its folder (no absolute path, no ``..``, no symlink out, regular files only, bounded sizes), and
every malformed file ends `harness compare` / `harness report` with one message naming the file,
exit status 2 and no traceback; nothing outside the folder is read."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from harness.cli import _Group
from harness.cli.compare import compare_cmd, report_cmd
from harness.concepts.errors import HarnessError
from harness.formats import bounded as files_in
from harness.testing import requires_plugin
from harness.testing.synthetic import write_results_folder, write_suite_folder

CANARY = "q1 Q0 CANARY-7f3a9c-secret-line 1 9.5 leaked"


@click.group(cls=_Group)  # the main CLI's group: HarnessError -> one line, exit status 2
def _cli() -> None:
    pass


_cli.add_command(compare_cmd)
_cli.add_command(report_cmd)


def _pair(tmp_path, values_b=(0.6, 0.1, 0.3)):
    a = write_results_folder(tmp_path / "a", "t", {f"q{i}": {"nDCG@10": v} for i, v in enumerate((0.5, 0.4, 0.2), 1)})
    b = write_results_folder(tmp_path / "b", "t", {f"q{i}": {"nDCG@10": v} for i, v in enumerate(values_b, 1)})
    return a, b


def _edit(folder, **fields):
    data = json.loads((folder / "results.json").read_text())
    data.update(fields)
    (folder / "results.json").write_text(json.dumps(data))


def _refused(tmp_path, folders, *names, commands=("compare", "report")):
    """Each command exits 2 with one message naming every one of ``names``, no traceback, no report."""
    for command in commands:
        out = tmp_path / f"{command}-out.html"
        args = [command, *map(str, folders), "-B", "50"] + (["-o", str(out)] if command == "report" else [])
        r = CliRunner().invoke(_cli, args)
        assert r.exit_code == 2, (command, r.output, r.exception)
        assert isinstance(r.exception, SystemExit), r.exception  # not an exception escaping the CLI
        text = r.output.strip()
        assert "Traceback" not in text and len(text.splitlines()) == 1 and text.startswith("Error: "), text
        for name in names:
            assert str(name) in text, (name, text)
        assert not out.exists()
        assert CANARY.split()[2] not in text


def test_untouched_folders_compare_and_report(tmp_path):
    """The rules refuse nothing a harness eval writes (the baseline for every case below)."""
    a, b = _pair(tmp_path)
    r = CliRunner().invoke(_cli, ["compare", str(a), str(b), "-B", "50", "--format", "json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.output)["results"][0]["n_queries"] == 3
    out = tmp_path / "report.html"
    r = CliRunner().invoke(_cli, ["report", str(a), str(b), "-B", "50", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "t-default-d1" in out.read_text() or "q1-default-d1" in out.read_text()


# ------------------------------------------------------------------------------------ paths leaving the folder


@pytest.fixture
def secret(tmp_path):
    """A file outside every results folder, holding a line a crafted run file path would leak."""
    path = tmp_path / "outside" / "secret.trec"
    path.parent.mkdir()
    path.write_text(CANARY + "\n")
    return path


def test_absolute_run_path_reads_nothing_outside(tmp_path, secret):
    a, b = _pair(tmp_path)
    _edit(b, files={"run[default]": str(secret), "per_query": "per_query.jsonl"})
    _refused(tmp_path, [a, b], b / "results.json", "files['run[default]']", "absolute path")
    # what would have leaked: with the path inside the folder, the report shows the run's lines
    shutil.copy(secret, b / "run.trec")
    _edit(b, files={"run[default]": "run.trec", "per_query": "per_query.jsonl"})
    out = tmp_path / "control.html"
    r = CliRunner().invoke(_cli, ["report", str(a), str(b), "-B", "50", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert CANARY.split()[2] in out.read_text()


def test_dotdot_and_symlink_out_are_refused(tmp_path, secret):
    a, b = _pair(tmp_path)
    _edit(b, files={"run[default]": "../outside/secret.trec", "per_query": "per_query.jsonl"})
    _refused(tmp_path, [a, b], b / "results.json", "files['run[default]']", "'..'")
    _edit(b, files={"run[default]": "run.trec", "per_query": "per_query.jsonl"})
    (b / "run.trec").unlink()
    (b / "run.trec").symlink_to(secret)
    _refused(tmp_path, [a, b], b / "results.json", "files['run[default]']", "outside the results folder")
    (b / "run.trec").unlink()
    (b / "run.trec").write_text("q1 Q0 d1 1 1.0 x\n")
    (b / "per_query.jsonl").rename(b / "pq.jsonl")  # a symlink to /dev/zero: outside, never opened
    (b / "per_query.jsonl").symlink_to("/dev/zero")
    _refused(tmp_path, [a, b], "files['per_query']", "outside the results folder")


def test_suite_member_outside_is_refused(tmp_path, secret):
    members = {f"s:{d}": {"q1": {"m": 0.1 * i}, "q2": {"m": 0.2}} for i, d in enumerate("xyz")}
    x = write_suite_folder(tmp_path / "x", "s", members)
    y = write_suite_folder(tmp_path / "y", "s", members)
    data = json.loads((y / "results.json").read_text())
    data["tasks"]["s:y"]["results"] = "/etc/hostname"
    (y / "results.json").write_text(json.dumps(data))
    _refused(tmp_path, [x, y], y / "results.json", "tasks['s:y']['results']", "absolute path")
    (y / "s_y" / "results.json").unlink()
    (y / "s_y" / "results.json").symlink_to(secret)
    data["tasks"]["s:y"]["results"] = "s_y/results.json"
    (y / "results.json").write_text(json.dumps(data))
    _refused(tmp_path, [x, y], "tasks['s:y']['results']", "outside the results folder")


# ------------------------------------------------------------------------------------ not regular files


def test_fifo_is_refused_by_its_type_without_opening(tmp_path):
    """A FIFO is refused by the os.stat check before any open: the command cannot block on it."""
    a, b = _pair(tmp_path)
    (b / "per_query.jsonl").unlink()
    os.mkfifo(b / "per_query.jsonl")
    _refused(tmp_path, [a, b], b / "results.json", "files['per_query']", "a FIFO, not a regular file")
    os.unlink(b / "per_query.jsonl")
    os.mkfifo(b / "results.json.fifo")
    (b / "results.json").rename(b / "kept.json")
    (b / "results.json").symlink_to("results.json.fifo")
    _refused(tmp_path, [a, b], b / "results.json", "a FIFO")


def test_devices_and_folders_are_not_regular_files(tmp_path):
    """The same check as for the FIFO, on /dev/zero (a character device) and a folder."""
    with pytest.raises(HarnessError, match="is a device, not a regular file"):
        files_in.check_inside("/dev", "/dev/zero", "results.json", "files['run[x]']")
    with pytest.raises(HarnessError, match="is a device"):
        files_in.open_inside("/dev", "/dev/zero", "results.json", "files['run[x]']")
    a, b = _pair(tmp_path)
    (b / "run.trec").unlink()
    (b / "run.trec").mkdir()
    _refused(tmp_path, [a, b], "files['run[default]']", "a folder, not a regular file")


def test_size_bounds(tmp_path, monkeypatch):
    a, b = _pair(tmp_path)
    monkeypatch.setattr(files_in, "MAX_RESULTS_JSON", 200)
    _refused(tmp_path, [a, b], a / "results.json", "more than the 200 bytes")
    monkeypatch.setattr(files_in, "MAX_RESULTS_JSON", 2**20)
    monkeypatch.setattr(files_in, "MAX_DATA_FILE", 100)
    _refused(tmp_path, [a, b], "files['run[default]']", "more than the 100 bytes")


# ------------------------------------------------------------------------------------ contents


def test_invalid_utf8(tmp_path):
    a, b = _pair(tmp_path)
    (b / "results.json").write_bytes((b / "results.json").read_bytes().replace(b'"t"', b'"t\xff"', 1))
    _refused(tmp_path, [a, b], b / "results.json", "not valid UTF-8")
    a, b = _pair(tmp_path / "2")
    (b / "per_query.jsonl").write_bytes(b'{"query_id": "q\xc3(", "nDCG@10": 0.5}\n')
    _refused(tmp_path, [a, b], b / "per_query.jsonl", "not valid UTF-8")


def test_huge_integers(tmp_path):
    a, b = _pair(tmp_path)
    text = (b / "results.json").read_text()
    (b / "results.json").write_text(text.replace('"schema_version": 2', '"schema_version": 2, "x": ' + "9" * 400))
    _refused(tmp_path, [a, b], b / "results.json", "an integer of 400 digits")
    (b / "results.json").write_text(text)
    (b / "per_query.jsonl").write_text('{"query_id": "q1", "nDCG@10": ' + "1" * 5000 + "}\n")
    _refused(tmp_path, [a, b], b / "per_query.jsonl", "an integer of 5000 digits")


@pytest.mark.parametrize("field,value,message", [
    ("task", {"name": ["t"]}, "task['name'] must be text"),
    ("files", {"per_query": ["per_query.jsonl"]}, "files['per_query'] must be a file name"),
    ("components", {"retriever": {"spec": ["bm25"]}}, "components['retriever']['spec'] must be text"),
    ("components", {"rerankers": [1]}, "components['rerankers'][0] must be an object"),
    ("usage", {"total": [1]}, "usage['total'] must be an object"),
    ("metrics", {"nDCG@10": [0.5]}, "metrics['nDCG@10'] is not a number"),
])
def test_wrong_types(tmp_path, field, value, message):
    a, b = _pair(tmp_path)
    _edit(b, **{field: value})
    _refused(tmp_path, [a, b], b / "results.json", message)


def test_deep_nesting(tmp_path):
    a, b = _pair(tmp_path)
    text = (b / "results.json").read_text()
    (b / "results.json").write_text(text.replace('"schema_version": 2',
                                                 '"schema_version": 2, "x": ' + "[" * 200_000 + "]" * 200_000))
    _refused(tmp_path, [a, b], b / "results.json", "nested more than")
    (b / "results.json").write_text(text)
    (b / "per_query.jsonl").write_text('{"query_id": "q1", "x": ' + "[" * 200_000 + "]" * 200_000 + "}\n")
    _refused(tmp_path, [a, b], b / "per_query.jsonl", "nested more than")


def test_run_file_with_a_fractional_rank(tmp_path):
    a, b = _pair(tmp_path)
    lines = (b / "run.trec").read_text().splitlines()
    lines[1] = lines[1].replace(" 2 ", " 1.5 ", 1)
    (b / "run.trec").write_text("\n".join(lines) + "\n")
    _refused(tmp_path, [a, b], f"{b / 'run.trec'}:2", "rank '1.5' is not a whole number", commands=("report",))


def test_missing_and_looping_per_query(tmp_path):
    a, b = _pair(tmp_path)
    (b / "per_query.jsonl").unlink()
    _refused(tmp_path, [a, b], b / "results.json", "files['per_query']", "does not exist")
    (b / "per_query.jsonl").symlink_to("per_query.jsonl")  # a symlink loop
    _refused(tmp_path, [a, b], "files['per_query']", "cannot be read")
    (b / "per_query.jsonl").unlink()
    (b / "per_query.jsonl").write_text("")
    _refused(tmp_path, [a, b], b / "per_query.jsonl", "no per-query row")


def test_an_empty_comparison_is_an_error(tmp_path):
    """Rows without a single value leave nothing to compare: a message, not a bare footer."""
    a, b = _pair(tmp_path)
    (b / "per_query.jsonl").write_text("".join(json.dumps({"query_id": f"q{i}", "nDCG@10": None}) + "\n"
                                               for i in (1, 2, 3)))
    _refused(tmp_path, [a, b], "no metric has per-query values in every result for t", commands=("compare",))


def test_duplicated_query_id(tmp_path):
    """A second row for q2 would otherwise replace the first and move the mean."""
    a, b = _pair(tmp_path)
    with open(b / "per_query.jsonl", "a") as fh:
        fh.write(json.dumps({"query_id": "q2", "nDCG@10": 1.0}) + "\n")
    _refused(tmp_path, [a, b], f"{b / 'per_query.jsonl'}:4", "query_id 'q2' appears twice (first on line 2)")


def test_duplicated_key_in_results_json(tmp_path):
    a, b = _pair(tmp_path)
    text = (b / "results.json").read_text()
    (b / "results.json").write_text(text.replace('"schema_version": 2', '"schema_version": 2, "schema_version": 2'))
    _refused(tmp_path, [a, b], b / "results.json", "'schema_version' appears twice")


def test_relative_names_rule():
    for bad, why in [("/etc/passwd", "absolute"), ("../x", "'..'"), ("a/../../x", "'..'"), ("", "file name"),
                     (["x"], "file name"), ("a\x00b", "NUL"), ("\\\\server\\share\\x", "absolute")]:
        with pytest.raises(HarnessError, match=why):
            files_in.relative_name(bad, "results.json", "files['run[x]']")
    assert files_in.relative_name("sub/run.og.trec", "r", "f") == "sub/run.og.trec"


def test_the_cli_entry_point_prints_one_line(tmp_path, secret):
    """The installed command (plugins loaded, the real group), as a user runs it."""
    a, b = _pair(tmp_path)
    _edit(b, files={"run[default]": str(secret), "per_query": "per_query.jsonl"})
    for command in ("compare", "report"):
        p = subprocess.run([sys.executable, "-m", "harness.cli", command, str(a), str(b), "-B", "50",
                            *(["-o", str(tmp_path / "r.html")] if command == "report" else [])],
                           capture_output=True, text=True, cwd=tmp_path)
        assert p.returncode == 2, p.stderr
        assert p.stdout == "" and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
        assert "files['run[default]']" in p.stderr and CANARY.split()[2] not in p.stderr
    assert not (tmp_path / "r.html").exists()


@requires_plugin("harness-infosearch")
def test_infosearch_table_applies_the_rules_without_reading_runs(tmp_path, secret):
    """`harness infosearch table` reads only results.json, yet a folder naming a file outside itself is
    refused there too (the rule lives in the one reader)."""
    members = {f"infosearch:{d}": {"q1": {"WISE": 0.1}, "q2": {"WISE": 0.3}} for d in ("audience", "format")}
    x = write_suite_folder(tmp_path / "x", "infosearch", members)
    ok = subprocess.run([sys.executable, "-m", "harness.cli", "infosearch", "table", str(x)], capture_output=True,
                        text=True, cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    member = x / "infosearch_format"
    _edit(member, files={"run[default]": str(secret), "per_query": "per_query.jsonl"})
    p = subprocess.run([sys.executable, "-m", "harness.cli", "infosearch", "table", str(member)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert "files['run[default]']" in p.stderr and "absolute path" in p.stderr


def test_stat_check_comes_before_open(tmp_path, monkeypatch):
    """A FIFO never reaches os.open (so no read can block on it)."""
    os.mkfifo(tmp_path / "f")
    opened = []
    real_open = os.open
    monkeypatch.setattr(os, "open", lambda *a, **k: opened.append(a) or real_open(*a, **k))
    with pytest.raises(HarnessError, match="a FIFO"):
        files_in.read_bytes(tmp_path, tmp_path / "f", "results.json", "results.json", 100)
    assert opened == [] and stat.S_ISFIFO(os.stat(tmp_path / "f").st_mode)
