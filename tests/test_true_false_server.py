"""``true-false`` scores that do not depend on what a llama.cpp-family server evaluated before: the
real llama-cpp-python server (``harness.testing.LlamaServer``, the packaged Gemma 3 270M) and ``--llm
local`` give the same ranking and the same P(true) within 1e-4 on the demo task (``--limit 2``), with
the documents scored in two different orders on the same server process (so a reused prompt prefix
would show). Skipped, with the reason, where llama-cpp-python is missing, except under CI=true, where
that is a failure."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from harness import Context, Run, evaluate
from harness.llm import LLMSettings, RetryPolicy

try:
    import llama_cpp  # noqa: F401

    MISSING = None
except ImportError as exc:  # pragma: no cover - depends on the install
    MISSING = f"llama-cpp-python is not installed (pip install 'harness-ir[local]'): {exc}"
if MISSING and os.environ.get("CI") == "true":  # pragma: no cover
    raise RuntimeError(f"CI must run the real-model tests: {MISSING}")
pytestmark = [pytest.mark.skipif(MISSING is not None, reason=MISSING or ""), pytest.mark.slow]
SPEC = "true-false:template=llama"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    from harness.testing import CountingProxy, LlamaServer

    with LlamaServer(n_ctx=2048, n_threads=2, cache_dir=tmp_path_factory.mktemp("models")) as srv:
        with CountingProxy(srv.url) as proxy:
            yield proxy


def context(folder: Path) -> Context:
    return Context.create(cache_dir=str(folder), llm=LLMSettings(cache_dir=str(folder),
                                                                 retry=RetryPolicy(budget=600.0)))


class Given:
    """A first stage that returns a fixed run (the order the reranker scores its documents in)."""

    def __init__(self, run: Run) -> None:
        self.run = run

    def index(self, corpus: Mapping) -> None:
        pass

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        return self.run


def scores(run: Run) -> dict[tuple[str, str], float]:
    return {(q, d): s for q in run for d, s in run[q]}


def test_server_and_local_agree_whatever_the_server_evaluated_before(server, tmp_path):
    bm25 = evaluate("demo", limit=2, progress=False, context=context(tmp_path / "bm25")).runs["default"]
    reverse = Run.from_order({q: bm25.doc_ids(q)[::-1] for q in list(bm25)[::-1]})
    assert len(scores(bm25)) == 80 and list(reverse) != list(bm25)
    local = evaluate("demo", limit=2, rerankers=[SPEC], llm="local:n_ctx=2048", progress=False,
                     context=context(tmp_path / "local"))
    assert local.complete
    want = local.runs["default"]
    spec = f"openai-compatible:gemma:base_url={server.url}/v1"
    for name, first in (("bm25 order", None), ("reversed", Given(reverse))):
        got = evaluate("demo", limit=2, retriever=first, rerankers=[SPEC], llm=spec, progress=False,
                       context=context(tmp_path / name))  # a fresh LLM cache: every request reaches the server
        assert got.complete and got.usage["total"]["calls"] > 0
        run = got.runs["default"]
        assert {q: run.doc_ids(q) for q in want} == {q: want.doc_ids(q) for q in want}, name
        a, b = scores(run), scores(want)
        assert a.keys() == b.keys()
        diff = max(abs(a[k] - b[k]) for k in b)
        assert diff <= 1e-4, f"{name}: P(true) differs from the local provider by up to {diff:.6f}"
    # what was sent: every scored prompt with llama.cpp's switch, after the two neutral completions that
    # leave llama-cpp-python's server (which has no switch) in the same state whatever came before
    scored = [b for b in server.bodies if b.get("logprobs")]
    neutral = [b for b in server.bodies if not b.get("logprobs")]
    assert len(scored) >= 160 and all(b["cache_prompt"] is False for b in scored)
    assert len(neutral) == 2 * len(scored) and {b["prompt"] for b in neutral} == {"", "Determine if the\n\n"}
