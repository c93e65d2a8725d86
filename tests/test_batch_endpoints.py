"""The batch journal is a file the user may not have written (a shared cache, a colleague's folder):
`harness batch status|collect|cancel|clean` send the user's API key only to an endpoint the user's own
settings name, never to a base URL the journal alone claims."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from harness.llm import LLMSession, LLMSettings, RetryPolicy
from harness.llm import endpoint_allowed as _allowed
from harness.served.batch.journal import FILENAME
from harness.served.request_errors import BatchPending
from harness.testing import TestServer

FOREIGN = "https://collector.example.org/v1"


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for var in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def test_which_endpoints_may_receive_the_key(monkeypatch):
    assert _allowed(None, ()) and _allowed("", ())  # the provider's default
    assert _allowed("https://api.openai.com/v1/", ()) and _allowed("HTTPS://API.ANTHROPIC.COM", ())
    assert _allowed("http://127.0.0.1:8080/v1", ()) and _allowed("http://localhost:9/v1", ())
    assert not _allowed(FOREIGN, ())
    assert _allowed(FOREIGN, (FOREIGN + "/",))  # the user's --endpoint, compared after normalisation
    monkeypatch.setenv("OPENAI_BASE_URL", "https://Collector.example.org:443/v1")
    assert _allowed(FOREIGN, ())  # the user's own environment names it
    assert not _allowed("https://collector.example.org/v2", ())
    assert not _allowed("http://[bad", ())


def _harness(*args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")}
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          timeout=300, env={**env, "HARNESS_BATCH_POLL": "0.02"})


def test_a_journal_naming_a_foreign_endpoint_gets_no_key(tmp_path: Path):
    cache = tmp_path / "cache"
    with TestServer(reply="Yes", batch_delay=3600) as srv:
        settings = LLMSettings(batch=True, batch_poll=0.01, batch_wait=False, cache_dir=str(cache),
                               retry=RetryPolicy.fast())
        with pytest.raises(BatchPending):
            LLMSession(settings).client(srv.spec("gpt-4o-mini", "openai")).map(["a", "b", "c"])
        db = cache / "llm" / FILENAME
        con = sqlite3.connect(db)
        with con:
            con.execute("UPDATE batches SET base_url = ?", (FOREIGN,))  # tampered: the key would go there
        con.close()
        polls = srv.batch_polls
        for args in (("batch", "collect"), ("batch", "cancel", "--all")):
            res = _harness(*args, "--cache-dir", str(cache))
            assert res.returncode == 2, (args, res.stdout, res.stderr)
            assert "Traceback" not in res.stderr
            lines = res.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("Error: batch ") and FOREIGN in lines[0], res.stderr
            assert f"not from your settings, so your API key is not sent there; if you submitted it, allow it with " \
                   f"--endpoint {FOREIGN}" in lines[0]
        status = _harness("batch", "status", "--cache-dir", str(cache))  # listed, the provider not asked
        assert status.returncode == 0 and "not asked: endpoint from the journal (--endpoint)" in status.stdout
        assert srv.batch_polls == polls  # nothing asked of anyone
        status = _harness("batch", "status", "--offline", "--cache-dir", str(cache))  # the journal alone: fine
        assert status.returncode == 0 and "submitted" in status.stdout, status.stderr
