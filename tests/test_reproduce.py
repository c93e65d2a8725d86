"""``harness reproduce`` and the table of published figures (docs/reproductions.md): the offline rows
reproduce through the CLI (what CI runs), a row outside its tolerance exits 1, rows that cannot run here are
listed with why, a bad table is one message (exit 2), and the page is generated from the packaged table."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.cli.reproduce_rows import PACKAGED, load_rows, render_markdown

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


def reproduce(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``harness reproduce ARGS`` in a fresh process (the real command, its own environment)."""
    return subprocess.run([sys.executable, "-m", "harness.cli", "reproduce", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=3600)


def write_rows(path: Path, *rows: str) -> Path:
    path.write_text("format = 1\n" + "".join(f"\n[[rows]]\n{r.strip()}\n" for r in rows), encoding="utf-8")
    return path


def demo_ndcg10() -> float:
    from harness import evaluate

    return evaluate("demo", progress=False).metrics["nDCG@10"]


def demo_row(rid: str, published: float, tolerance: float, extra: str = "", metric: str = "nDCG@10",
             task: str = "demo") -> str:
    return (f'id = "{rid}"\ntask = "{task}"\nmetric = "{metric}"\npublished = {published!r}\n'
            f'tolerance = {tolerance!r}\nsource = "a test"\n{extra}')


# -- what CI runs -----------------------------------------------------------------------------------------------
def _offline_rows_runnable_here(data: Path) -> set[str]:
    """The packaged offline rows whose data, plugin and extras this machine has (checked here, independently
    of the command's own checks)."""
    plugins = {"birco:": "harness_birco", "bright:": "harness_bright", "followir": "harness_followir"}
    extras = {"dense": "sentence_transformers", "parquet": "pyarrow", "openai": "openai"}
    out = set()
    for row in load_rows():
        if row.blocked or row.needs.env or row.needs.gpu or row.needs.models:
            continue
        spec = row.task or row.dataset or ""
        if any(spec.startswith(p) and importlib.util.find_spec(m) is None for p, m in plugins.items()):
            continue
        if any(importlib.util.find_spec(extras[e]) is None for e in row.needs.extras):
            continue
        if all((data / p).exists() for p in row.needs.data):
            out.add(row.id)
    return out


@pytest.mark.slow
def test_the_offline_rows_reproduce_through_the_cli(data_dir: Path):
    """`harness reproduce --offline-only` on the shared data: every offline row whose data is here runs and is
    within its tolerance (SciFact with all-MiniLM-L6-v2 encodes 5,483 texts: the slow part)."""
    expected = _offline_rows_runnable_here(data_dir)
    if not {"dl19-bm25", "dl20-bm25"} <= expected:
        pytest.skip(f"the TREC DL files are not under {data_dir} (set HARNESS_DATA to the shared data folder)")
    res = reproduce("--data-dir", str(data_dir), "--offline-only", "--quiet")
    assert res.returncode == 0, res.stdout + res.stderr
    lines = res.stdout.splitlines()
    ran = {ln.split()[0]: ln.split() for ln in lines if ln and ln.split()[0] in expected}
    assert set(ran) == expected, res.stdout
    for rid, cells in ran.items():  # row metric published measured difference tolerance verdict time
        assert cells[6] == "ok", rid
        assert abs(float(cells[4])) <= float(cells[5]), rid
    # the figures as published, to the printed digits
    assert ran["dl19-bm25"][3].startswith("0.5058") and ran["dl20-bm25"][3].startswith("0.4796")
    if "scifact-minilm" in ran:
        assert round(float(ran["scifact-minilm"][3]), 4) == 0.6451
    not_run = res.stdout.split("not run here", 1)[1]
    assert "noveleval-bm25: no harness system computes it" in not_run
    assert "dl19-rankgpt-gpt-4: needs the network and an API key ($OPENAI_API_KEY); --offline-only leaves it out" \
        in not_run
    assert re.search(rf"{len(ran)} of {len(load_rows())} rows ran: {len(ran)} within tolerance, 0 outside", res.stdout)


# -- the verdicts -----------------------------------------------------------------------------------------------
def test_a_row_outside_its_tolerance_exits_1(tmp_path: Path):
    value = demo_ndcg10()
    rows = write_rows(tmp_path / "rows.toml", demo_row("demo-right", round(value, 4), 0.00005),
                      demo_row("demo-wrong", round(value, 4) + 0.01, 0.001))
    res = CliRunner().invoke(cli, ["reproduce", "--rows", str(rows), "--quiet"])
    assert res.exit_code == 1, res.output
    line = {ln.split()[0]: ln.split() for ln in res.output.splitlines() if ln.startswith("demo-")}
    assert line["demo-right"][6] == "ok" and line["demo-wrong"][6] == "OUTSIDE"
    assert float(line["demo-wrong"][4]) == pytest.approx(value - (round(value, 4) + 0.01), abs=1e-6)
    assert "2 of 2 rows ran: 1 within tolerance, 1 outside" in res.output
    only_right = CliRunner().invoke(cli, ["reproduce", "demo-right", "--rows", str(rows), "--quiet", "--json"])
    assert only_right.exit_code == 0, only_right.output
    [out] = json.loads(only_right.output)
    assert out["status"] == "ok" and out["measured"] == value
    assert out["difference"] == value - round(value, 4)


def test_scale_and_uncertainty_fields(tmp_path: Path):
    """A figure printed x100 is compared x100; a key NAME:se reads the metric's uncertainty (none for nDCG)."""
    value = demo_ndcg10()
    rows = write_rows(tmp_path / "rows.toml", demo_row("x100", round(100 * value, 2), 0.005, "scale = 100"),
                      demo_row("no-se", 0.0, 1.0, 'metrics = ["nDCG@10"]', metric="nDCG@10:se"))
    res = CliRunner().invoke(cli, ["reproduce", "--rows", str(rows), "--quiet", "--json"])
    assert res.exit_code == 1, res.output
    out = {o["id"]: o for o in json.loads(res.output)}
    assert out["x100"]["status"] == "ok" and out["x100"]["measured"] == pytest.approx(100 * value)
    assert out["no-se"]["status"] == "failed"
    assert out["no-se"]["why"] == ["the run reports no value for 'nDCG@10:se' (it reports: nDCG@10)"]


def test_a_row_that_fails_is_reported_and_the_others_still_run(tmp_path: Path):
    rows = write_rows(tmp_path / "rows.toml", demo_row("bad-spec", 0.7, 1.0, 'retriever = "bm25:k1=-1"'),
                      demo_row("fine", 0.7, 1.0))
    res = CliRunner().invoke(cli, ["reproduce", "--rows", str(rows), "--quiet"])
    assert res.exit_code == 1, res.output
    assert "bad-spec: bm25: k1 must be a finite number >= 0.0, not -1" in res.output
    assert re.search(r"^bad-spec .* failed ", res.output, re.M) and re.search(r"^fine .* ok ", res.output, re.M)
    assert "Traceback" not in res.output


# -- rows that cannot run here --------------------------------------------------------------------------------
def _cuda() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def test_rows_that_cannot_run_here_are_listed_with_why(tmp_path: Path):
    rows = write_rows(
        tmp_path / "rows.toml",
        demo_row("runs", 0.7, 1.0),
        demo_row("no-data", 0.7, 1.0, 'needs.data = ["nowhere/qrels.txt", "demo-files"]'),
        demo_row("no-weights", 0.7, 1.0, 'needs.models = ["nobody/absent-model"]'),
        demo_row("no-key", 0.7, 1.0, 'needs.env = ["HARNESS_TEST_ABSENT_KEY"]'),
        demo_row("no-gpu", 0.7, 1.0, "needs.gpu = true"),
        demo_row("no-plugin", 0.7, 1.0, task="nosuch:task"),
        demo_row("blocked", 0.7, 1.0, 'blocked = "no component does that"'),
    )
    (tmp_path / "data" / "demo-files").mkdir(parents=True)
    env = {"HF_HUB_CACHE": str(tmp_path / "empty-hub-cache"), "HF_HUB_OFFLINE": "1"}
    env_without_key = {k: v for k, v in os.environ.items() if k != "HARNESS_TEST_ABSENT_KEY"}
    run = subprocess.run([sys.executable, "-m", "harness.cli", "--data-dir", str(tmp_path / "data"), "reproduce",
                          "--rows", str(rows), "--quiet"], capture_output=True, text=True,
                         env={**env_without_key, **env})
    assert run.returncode == 0, run.stdout + run.stderr
    why = dict(ln.strip().split(": ", 1) for ln in run.stdout.split("not run here", 1)[1].splitlines()[1:]
               if ln.startswith("  "))
    assert why["no-data"] == "data not downloaded: nowhere/qrels.txt (fetch with `harness data download demo`)"
    assert why["no-weights"] == ("weights of nobody/absent-model not on this machine (not in the Hugging Face "
                                 "cache; fetch with `hf download nobody/absent-model`)")
    assert why["no-key"] == "needs $HARNESS_TEST_ABSENT_KEY (an API key) in the environment"
    assert why["no-plugin"] == "task 'nosuch:task' is not registered: its plugin is not installed"
    assert why["blocked"] == "no harness system computes it: no component does that"
    if not _cuda():
        assert why["no-gpu"] == "needs a GPU (torch sees no CUDA device)"
    assert "runs" not in why and re.search(r"^runs .* ok ", run.stdout, re.M)
    assert f"data folder: {tmp_path / 'data'} (given by --data-dir)" in run.stdout
    # --offline-only leaves out a row that needs the network, key or not; --list runs nothing
    listing = subprocess.run([sys.executable, "-m", "harness.cli", "--data-dir", str(tmp_path / "data"), "reproduce",
                              "--rows", str(rows), "--offline-only", "--list", "--json"], capture_output=True,
                             text=True, env={**os.environ, **env, "HARNESS_TEST_ABSENT_KEY": "set"})
    assert listing.returncode == 0, listing.stderr
    plan = {p["id"]: p for p in json.loads(listing.stdout)}
    assert plan["runs"] == {"id": "runs", "runs_here": True, "why": []}
    assert plan["no-key"]["why"] == ["needs the network and an API key ($HARNESS_TEST_ABSENT_KEY); --offline-only "
                                     "leaves it out"]
    assert not plan["no-data"]["runs_here"] and "demo: " not in listing.stderr  # nothing ran


# -- bad tables and arguments: one message, exit 2 ----------------------------------------------------------------
BAD_TABLES = {
    "not TOML": ("[[rows]\nid = 1", "not a valid TOML file"),
    "unknown key": (demo_row("a", 0.5, 0.1, "colour = 'red'"), "unknown key 'colour'"),
    "leaves the data folder": (demo_row("a", 0.5, 0.1, 'needs.data = ["../etc/passwd"]'),
                               "is not a path inside the data folder"),
    "absolute data path": (demo_row("a", 0.5, 0.1, 'needs.data = ["/etc/passwd"]'),
                           "is not a path inside the data folder"),
    "nan": (demo_row("a", 0.5, 0.1).replace("published = 0.5", "published = nan"),
            "published must be a finite number, not nan"),
    "negative tolerance": (demo_row("a", 0.5, -0.1), "tolerance must be >= 0.0"),
    "no source": (demo_row("a", 0.5, 0.1).replace('source = "a test"', ""), "source must be a non-empty string"),
    "task and dataset": (demo_row("a", 0.5, 0.1, 'dataset = "beir:path=x"'), "exactly one of task and dataset"),
    "bad id": (demo_row("A B", 0.5, 0.1), "id 'A B' must be lowercase"),
    "bad extra": (demo_row("a", 0.5, 0.1, 'needs.extras = ["gpu-please"]'), "is not an extra"),
    "bad depth": (demo_row("a", 0.5, 0.1, "depth = 0"), "depth must be a whole number"),
}


@pytest.mark.parametrize("name", sorted(BAD_TABLES))
def test_a_bad_table_is_one_message(tmp_path: Path, name: str):
    text, message = BAD_TABLES[name]
    path = tmp_path / "rows.toml"
    path.write_text(text if name == "not TOML" else f"format = 1\n[[rows]]\n{text}\n", encoding="utf-8")
    res = CliRunner().invoke(cli, ["reproduce", "--rows", str(path), "--list"])
    assert res.exit_code == 2, res.output
    assert message in res.output and res.output.startswith(f"Error: {path}")
    assert "Traceback" not in res.output and len(res.output.strip().splitlines()) == 1


def test_other_input_errors(tmp_path: Path):
    twice = write_rows(tmp_path / "twice.toml", demo_row("a", 0.5, 0.1), demo_row("a", 0.5, 0.1))
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (1024 * 1024 + 1))
    for args, message in (
        (["--rows", str(twice)], "row 2: the id 'a' is used twice"),
        (["--rows", str(big)], "larger than 1,048,576 bytes"),
        (["--rows", str(tmp_path / "absent.toml")], "not a file"),
        (["dl19-bm52"], "no row 'dl19-bm52' in the table; did you mean: dl19-bm25"),
    ):
        res = CliRunner().invoke(cli, ["reproduce", "--list", *args])
        assert res.exit_code == 2 and message in res.output and "Traceback" not in res.output, (args, res.output)


# -- the packaged table and its page ------------------------------------------------------------------------------
def test_the_page_is_generated_from_the_table():
    page = (REPO / "docs" / "reproductions.md").read_text(encoding="utf-8")
    assert page == render_markdown(load_rows()), "regenerate: harness reproduce --markdown > docs/reproductions.md"
    res = CliRunner().invoke(cli, ["reproduce", "--markdown"])
    assert res.exit_code == 0 and res.output == page
    for row in load_rows():  # every row is listed with its source
        assert f"| `{row.id}` |" in page and f"- **`{row.id}`**: {row.source}." in page


def test_the_table_ships_in_the_wheel():
    """The command finds its table when installed: hatch puts it in the wheel (listed, nothing built)."""
    pytest.importorskip("hatchling", reason="listing the wheel's files needs hatchling: pip install 'harness-ir[test]'")
    from hatchling.builders.wheel import WheelBuilder

    assert PACKAGED == REPO / "harness" / "data" / "reproductions.toml"
    shipped = {f.distribution_path for f in WheelBuilder(str(REPO)).recurse_included_files()}
    assert "harness/data/reproductions.toml" in shipped and "harness/cli/reproduce.py" in shipped


#: the components of the packaged rows that an in-repo plugin registers (absent where it is not installed)
PLUGIN_COMPONENTS = {"rankgpt", "followir", "birco", "bright"}


def test_each_row_names_components_that_exist_and_its_tasks_files():
    """Every packaged row's task, dataset, retriever and rerankers are registered (where their plugin is
    installed), and a task's data files are exactly the ones the row says it needs."""
    from harness import Context, HarnessError

    context = Context.create()
    checked = 0
    for row in load_rows():
        try:
            task = context.registry.create("task", row.task, context) if row.task else None
        except HarnessError as exc:  # only a plugin's task, where the plugin is not installed
            assert str(exc).startswith("unknown task") and row.task.split(":")[0] in PLUGIN_COMPONENTS, exc
            continue
        for kind, spec in [("dataset", row.dataset), ("retriever", row.retriever),
                           *(("reranker", r) for r in row.rerankers)]:
            try:
                context.registry.resolve(kind, spec) if spec else None
            except HarnessError as exc:  # only a plugin that is not installed here
                assert str(exc).startswith(f"unknown {kind}") and spec.split(":")[0] in PLUGIN_COMPONENTS, exc
        if task is not None and task.files:
            assert set(row.needs.data) == {f.path for f in task.files if not f.optional}, row.id
            checked += 1
    assert checked >= 10


def test_every_published_figure_is_in_the_shared_notes():
    """No figure is invented: each row's published value appears in the notes it was read from."""
    notes = [SHARED / "notes" / "published-figures.md", *sorted((SHARED / "papers" / "notes").glob("*.md"))]
    if not all(p.is_file() for p in notes[:1]):
        pytest.skip(f"the shared notes are not at {SHARED} (published-figures.md)")
    text = "\n".join(p.read_text(encoding="utf-8") for p in notes).replace("\u2212", "-")
    from harness.cli.reproduce_rows import plain

    missing = [r.id for r in load_rows() if plain(r.published) not in text]
    assert not missing, missing
