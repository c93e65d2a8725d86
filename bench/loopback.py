"""The loopback LLM test server in a subprocess, for the bench scripts (``python bench/X.py``)."""

from __future__ import annotations

import subprocess
import sys


def start_server(*args: str) -> tuple[subprocess.Popen, str]:
    """``python -m harness.testing.llm_server --port 0 ARGS``: the process and its base URL."""
    proc = subprocess.Popen([sys.executable, "-m", "harness.testing.llm_server", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        proc.kill()
        raise RuntimeError(f"test server did not start: {line!r}")
    return proc, line.split()[-1]
