"""``harness cache ...``, the shared LLM click options, and the test server's command line."""

from __future__ import annotations

import json
import subprocess
import sys

import click
from click.testing import CliRunner

from harness.cli.cache import cache_group
from harness.cli.options import llm_options
from harness.llm import LLMSession, get_client
from harness.testing import TestServer


def _fill(tmp_path, n=3):
    with TestServer() as srv:
        c = get_client(srv.spec("m"), cache_dir=tmp_path)
        c.map([f"p{i}" for i in range(n)])
        get_client(srv.spec("other"), cache_dir=tmp_path).chat("x")
        return srv.spec("m")


def test_cache_info_path_clear(tmp_path):
    runner = CliRunner()
    res = runner.invoke(cache_group, ["info", "--cache-dir", str(tmp_path / "empty")])
    assert res.exit_code == 0 and "entries: 0" in res.output
    assert not (tmp_path / "empty").exists()

    _fill(tmp_path)
    res = runner.invoke(cache_group, ["path", "--cache-dir", str(tmp_path)])
    assert res.output.strip() == str(tmp_path / "llm")
    res = runner.invoke(cache_group, ["info", "--cache-dir", str(tmp_path), "--json"])
    info = json.loads(res.output)
    assert info["entries"] == 4
    assert info["by_model"] == {"openai-compatible:m": 3, "openai-compatible:other": 1}
    res = runner.invoke(cache_group, ["info", "--cache-dir", str(tmp_path)])
    assert "openai-compatible:m" in res.output and "entries: 4" in res.output

    res = runner.invoke(cache_group, ["clear", "--cache-dir", str(tmp_path)], input="n\n")
    assert res.exit_code == 1  # aborted
    res = runner.invoke(cache_group, ["clear", "--cache-dir", str(tmp_path), "--model",
                                      "openai-compatible:other", "-y"])
    assert res.exit_code == 0 and "removed 1" in res.output
    res = runner.invoke(cache_group, ["clear", "--cache-dir", str(tmp_path), "-y"])
    assert "removed 3" in res.output


def test_cache_explain(tmp_path):
    spec = _fill(tmp_path)
    req = tmp_path / "req.json"
    req.write_text(json.dumps({"messages": [{"role": "user", "content": "p1"}], "max_tokens": 10}))
    res = CliRunner().invoke(cache_group, ["explain", "--cache-dir", str(tmp_path), "--llm", spec, str(req)])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert not out["hit"] and [d["field"] for d in out["differences"]] == ["options.max_tokens"]


def test_llm_options_give_the_command_its_settings(tmp_path):
    prices = tmp_path / "p.json"
    prices.write_text('{"models": {"openai-compatible:m": {"input": 1, "output": 1}}}')
    seen = {}

    @click.command()
    @llm_options
    @click.option("--other", default="x")
    def cmd(llm_settings, cache_dir, other):
        seen["s"], seen["other"], seen["cache"] = llm_settings, other, cache_dir

    res = CliRunner().invoke(cmd, ["--llm", "vllm:m", "--max-concurrency", "3", "--dry-run", "--cache-dir",
                                   str(tmp_path), "--prices", str(prices), "--other", "y"])
    assert res.exit_code == 0, res.output
    s = seen["s"]
    assert (s.llm, s.max_concurrency, s.dry_run, s.cache_dir, s.prices) == ("vllm:m", 3, True, str(tmp_path),
                                                                            str(prices))
    assert seen["other"] == "y" and seen["cache"] == str(tmp_path)
    session = LLMSession(s)  # the settings are all a session needs: nothing was configured anywhere else
    c = session.client()
    assert c.dry_run is not None and c.max_concurrency == 3 and c.label == "openai-compatible:m"
    c.chat("x" * 400)
    assert session.usage().as_dict()["total"]["cost_usd"] > 0

    res = CliRunner().invoke(cmd, ["--llm", "mystery"])
    assert res.exit_code == 2 and "name the provider" in res.output
    res = CliRunner().invoke(cmd, ["--help"])
    for opt in ("--llm", "--max-concurrency", "--dry-run", "--cache-dir", "--no-llm-cache", "--prices", "--llm-timeout",
                "--llm-connect-timeout", "--llm-budget"):
        assert opt in res.output


def test_testserver_command_line(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "harness.testing.llm_server", "--port", "0", "--echo"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:")
        url = line.split()[-1]
        c = get_client(f"openai:m:base_url={url}/v1", cache_dir=tmp_path)
        assert c.chat("ping").text == "ping"
    finally:
        proc.terminate()
        proc.wait(10)
