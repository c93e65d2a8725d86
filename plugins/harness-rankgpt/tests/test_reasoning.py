"""RankGPT with a reasoning model, against the loopback server (docs/compute.md): ``reasoning_effort`` and
Anthropic's thinking sent in every request, the reasoning stored with each call and never parsed (a decoy
ranking in it changes nothing), reasoning tokens per query summing to the totals, a warm rerun sending
nothing and another setting sending anew."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from harness.testing import ScriptedReply, TestServer, input_tokens

from harness_rankgpt.rankgpt import permutation_cap

pytest.importorskip("openai", reason="needs openai: pip install 'harness-ir[openai]'")

WINDOW = 5


def window_size(req: dict) -> int:
    """The passages of a window request (RankGPT's layout: one user turn per passage, after the preamble)."""
    turns = [m for m in req["messages"] if m["role"] != "system"]  # Anthropic's body holds no system turn
    return len(turns[2:-1:2])


def reversed_answer(req: dict) -> str:
    return " > ".join(f"[{i}]" for i in range(window_size(req), 0, -1))


def decoy(req: dict) -> str:
    """The window in its given order: a ranking that, parsed, would leave every window as it was."""
    return " > ".join(f"[{i}]" for i in range(1, window_size(req) + 1))


def thinking(req: dict, **shape) -> ScriptedReply:
    return ScriptedReply(reversed_answer(req), reasoning=f"Draft: {decoy(req)}. Then I reconsidered.", **shape)


def harness_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=600,
                          env=dict(os.environ))


def run_eval(tmp_path: Path, llm: str, out: str, *extra: str) -> Path:
    prices = tmp_path / "prices.toml"
    prices.write_text('[models]\n"openai:m" = { input = 1.25, output = 10.0 }\n'
                      '"anthropic:m" = { input = 3.0, output = 15.0 }\n')
    res = harness_cli("eval", "--task", "demo", "--reranker", f"rankgpt:window={WINDOW},step=2,depth=10",
                      "--llm", llm, "--cache-dir", str(tmp_path / "cache"), "--prices", str(prices), "--quiet",
                      "-o", str(tmp_path / out), *extra)
    assert res.returncode == 0, res.stdout + res.stderr
    return tmp_path / out


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_rankgpt_with_reasoning_effort_high(tmp_path):
    with TestServer(thinking) as srv:
        out = run_eval(tmp_path, srv.spec("m", "openai") + ",reasoning_effort=high", "high")
        bodies = list(srv.requests)
        assert bodies and all(b["reasoning_effort"] == "high" for b in bodies)
        run_eval(tmp_path, srv.spec("m", "openai") + ",reasoning_effort=high", "warm")
        assert srv.requests_total == len(bodies)  # a warm rerun sends nothing
        run_eval(tmp_path, srv.spec("m", "openai") + ",reasoning_effort=low", "low")
        assert srv.requests_total == 2 * len(bodies)  # another effort: every request anew
        assert all(b["reasoning_effort"] == "low" for b in srv.requests[len(bodies):])
    data = json.loads((out / "results.json").read_text())
    total = data["usage"]["total"]
    per = [r["llm"] for r in rows(out / "per_query.jsonl")]
    for k in ("calls", "input_tokens", "output_tokens", "reasoning_tokens"):
        assert sum(p[k] for p in per) == total[k]
    assert total["input_tokens"] == sum(input_tokens(b) for b in bodies)  # the server's own count
    assert sum(p["cost_usd"] for p in per) == pytest.approx(total["cost_usd"])
    assert total["reasoning_tokens"] > 0 and total["output_tokens"] > total["reasoning_tokens"]
    calls = rows(out / "llm_calls.jsonl")
    assert len(calls) == total["calls"] and all(c["reasoning"].startswith("Draft: [1] > [2]") for c in calls)
    assert data["components"]["rerankers"][0]["stats"]["unparseable"] == 0
    warm = json.loads((tmp_path / "warm" / "results.json").read_text())
    assert warm["usage"]["total"]["calls"] == 0 and warm["metrics"] == data["metrics"]


@pytest.mark.parametrize("shape", [{}, {"reasoning_field": "reasoning"}, {"think_in_content": True}],
                         ids=["reasoning_content", "reasoning", "think-in-content"])
def test_a_decoy_ranking_in_the_reasoning_changes_nothing(tmp_path, shape):
    runs = {}
    for name, script in (("reasoning", lambda req: thinking(req, **shape)),
                         ("plain", lambda req: reversed_answer(req)), ("decoy", decoy)):
        with TestServer(script) as srv:
            home = tmp_path / name
            home.mkdir()
            out = run_eval(home, srv.spec("m", "openai") + ",reasoning_effort=high", "o")
        runs[name] = (out / "run.trec").read_text()
    assert runs["reasoning"] == runs["plain"]
    assert runs["decoy"] != runs["plain"]  # the decoy, had it been parsed, would have changed the run


def test_rankgpt_with_anthropic_thinking(tmp_path):
    pytest.importorskip("anthropic", reason="needs anthropic: pip install 'harness-ir[anthropic]'")
    with TestServer(thinking) as srv:
        out = run_eval(tmp_path, srv.spec("m", "anthropic") + ",thinking_budget=2048", "think")
        bodies = list(srv.requests)
        run_eval(tmp_path, srv.spec("m", "anthropic") + ",thinking_budget=2048", "warm")
        assert srv.requests_total == len(bodies)
    cap = permutation_cap(WINDOW)  # RankGPT's answer cap: the budget goes on top of it
    assert bodies and all(b["thinking"] == {"type": "enabled", "budget_tokens": 2048} for b in bodies)
    assert all(b["max_tokens"] == 2048 + cap and b["temperature"] == 1.0 for b in bodies)
    data = json.loads((out / "results.json").read_text())
    per = [r["llm"] for r in rows(out / "per_query.jsonl")]
    assert sum(p["reasoning_tokens"] for p in per) == data["usage"]["total"]["reasoning_tokens"] > 0
    settings = data["components"]["rerankers"][0]["llm"]["settings"]
    assert settings["thinking_budget"] == {"value": 2048, "from": "llm spec"}
    assert settings["temperature"] == {"value": 1.0, "from": "provider rule"}
    calls = rows(out / "llm_calls.jsonl")
    assert all(c["reasoning"].startswith("Draft: [1] > [2]") for c in calls)
    plain_runs = (out / "run.trec").read_text()
    with TestServer(lambda req: reversed_answer(req)) as srv:
        home = tmp_path / "plain"
        home.mkdir()
        plain = run_eval(home, srv.spec("m", "anthropic") + ",thinking_budget=2048", "o")
    assert (plain / "run.trec").read_text() == plain_runs
