"""The README's offline quickstart prints what the README shows: every ``$ harness ...`` line with
output under it is run with a fresh cache and its stdout compared line by line (the ``--llm local``
line runs the packaged model: about 80 s on 2 cores)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def quickstart() -> list[tuple[str, list[str]]]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    block = text.split("## Quickstart (offline)", 1)[1].split("```console", 1)[1].split("```", 1)[0]
    examples: list[tuple[str, list[str]]] = []
    for line in block.strip("\n").splitlines():
        if line.startswith("$ "):
            examples.append((line[2:].split("  #", 1)[0].strip(), []))
        elif line.strip():
            examples[-1][1].append(line.rstrip())
    return [(cmd, out) for cmd, out in examples if out]


EXAMPLES = quickstart()


def test_the_quickstart_has_the_offline_llm_line():
    assert [c for c, _ in EXAMPLES if "--llm local" in c]
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("command,shown", EXAMPLES, ids=[c for c, _ in EXAMPLES])
def test_a_quickstart_line_prints_what_the_readme_shows(command, shown, tmp_path):
    if "--llm local" in command:
        pytest.importorskip("llama_cpp", reason="--llm local needs the local extra")
    args = shlex.split(command)
    assert args[0] == "harness"
    res = subprocess.run([sys.executable, "-m", "harness.cli", *args[1:]], capture_output=True, text=True,
                         cwd=tmp_path, env={**os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache")})
    assert res.returncode == 0, res.stderr
    assert [ln.rstrip() for ln in res.stdout.strip("\n").splitlines()] == shown
