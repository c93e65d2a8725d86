"""Issue 22, items 5 and 6: GGUF chat templates rendered under the call's budget, and every option and
side file validated. Each case runs the real entry point in a subprocess (``python -m harness.cli``),
so a traceback printed anywhere would be seen, and asserts exit status 2, exactly one error line, no
traceback, and no work done where that applies (the loopback LLM server saw no request, no results
were written). The tiny GGUF models are written here, byte by byte, in the GGUF v3 format."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness.testing import TestServer

RERANKER = "llm-double:depth=4"  # an LLM reranker: the test double of tests/llm_double.py


@pytest.fixture(autouse=True)
def _llm_reranker(llm_double: str) -> None:
    """``RERANKER`` is installed for every test here (an entry point, as a plugin's)."""


def run_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          timeout=600, env={**os.environ, **(env or {})})


def assert_one_error(res: subprocess.CompletedProcess, *needles: str) -> str:
    """Exit status 2, no traceback, exactly one ``Error:`` line, every needle in it."""
    out = res.stdout + res.stderr
    assert res.returncode == 2, out
    assert "Traceback" not in out, out
    errors = [line for line in res.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, out
    for needle in needles:
        assert needle in errors[0], f"{needle!r} not in {errors[0]!r}"
    return errors[0]


def eval_args(tmp_path: Path, *extra: str) -> list[str]:
    return ["eval", "--task", "demo", "--limit", "2", "-q", "--cache-dir", str(tmp_path / "cache"), *extra]


# ------------------------------------------------------------------------------------- numbers in options

@pytest.mark.parametrize("option", ["--llm-timeout", "--llm-connect-timeout", "--llm-budget"])
@pytest.mark.parametrize("value", ["nan", "inf", "-1", "1e9"])
def test_llm_seconds_are_finite_and_in_range(tmp_path, option, value):
    with TestServer() as srv:
        res = run_cli(*eval_args(tmp_path, "--reranker", RERANKER, "--llm", srv.spec(), option, value))
        assert_one_error(res, option)
        assert srv.requests_total == 0


@pytest.mark.parametrize("variable", ["HARNESS_LLM_TIMEOUT", "HARNESS_LLM_CONNECT_TIMEOUT", "HARNESS_LLM_BUDGET",
                                      "HARNESS_BATCH_POLL", "HARNESS_REPLICA_RETRY"])
def test_llm_seconds_from_the_environment_are_finite(tmp_path, variable):
    with TestServer() as srv:
        res = run_cli(*eval_args(tmp_path, "--reranker", RERANKER, "--llm", srv.spec()), env={variable: "nan"})
        assert_one_error(res, "nan")
        assert srv.requests_total == 0


@pytest.mark.parametrize("arg", ["timeout=nan", "connect_timeout=NaN", "timeout=-5", "timeout=1e400"])
def test_llm_seconds_in_a_spec_are_finite(tmp_path, arg):
    with TestServer() as srv:
        res = run_cli(*eval_args(tmp_path, "--reranker", RERANKER, "--llm", f"{srv.spec()},{arg}"))
        assert_one_error(res, "must be a finite number")
        assert srv.requests_total == 0


def test_a_nan_share_of_failures_is_refused(tmp_path):
    res = run_cli(*eval_args(tmp_path, "--max-llm-failures", "nan"))
    assert_one_error(res, "max_llm_failures", "nan")


@pytest.mark.parametrize("args, needle", [
    (["--alpha", "nan"], "--alpha"), (["--alpha", "inf"], "--alpha"), (["--seed", "-1"], "--seed"),
    (["--seed", str(2**32)], "--seed"), (["-B", "10000000000"], "--permutations"), (["-B", "0"], "--permutations"),
])
def test_compare_numbers_are_in_range(tmp_path, args, needle):
    res = run_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), *args)
    assert_one_error(res, needle)


# ------------------------------------------------------------------------------------------- price files

def _prices(tmp_path: Path, name: str, content: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(content)
    return path


PRICE_FILES = {  # name -> (content, what the message says)
    "inf.json": (b'{"models": {"openai-compatible:test-model": {"input": 1e400, "output": 1}}}', "from 0 to"),
    "nan.json": (b'{"models": {"openai-compatible:test-model": {"input": NaN, "output": 1}}}', "from 0 to"),
    "big.json": (b'{"models": {"m": {"input": 1' + b"0" * 400 + b', "output": 1}}}', "from 0 to"),
    "deep.json": (b"[" * 200_000 + b"]" * 200_000, "nested more than"),
    "deep.toml": (b"a = " + b"[" * 100_000 + b"]" * 100_000, "nested more than"),
    "binary.json": (bytes(range(256)) * 4, "not UTF-8"),
    "large.json": (b'{"models": {}, "pad": "' + b"x" * (2 << 20) + b'"}', "at most 1,048,576"),
    "list.json": (b"[1, 2]", "expected a table"),
    "date.json": (b'{"date": {"a": 1}, "models": {}}', "'date'"),
}


@pytest.mark.parametrize("name", sorted(PRICE_FILES))
def test_a_bad_price_file_is_one_message_before_any_work(tmp_path, name):
    content, needle = PRICE_FILES[name]
    path = _prices(tmp_path, name, content)
    with TestServer() as srv:
        res = run_cli(*eval_args(tmp_path, "--reranker", RERANKER, "--llm", srv.spec(), "--prices", str(path)))
        assert_one_error(res, "--prices", needle)
        assert srv.requests_total == 0


def test_a_price_file_that_is_not_a_regular_file_is_never_read(tmp_path):
    res = run_cli(*eval_args(tmp_path, "--prices", "/dev/zero"))
    assert_one_error(res, "not a regular file")
    res = run_cli(*eval_args(tmp_path), env={"HARNESS_PRICES": "/dev/zero"})
    assert_one_error(res, "not a regular file")
    fifo = tmp_path / "prices.fifo"
    os.mkfifo(fifo)  # opening it would block: it is refused from its stat
    assert_one_error(run_cli(*eval_args(tmp_path, "--prices", str(fifo))), "not a regular file")


def test_a_good_price_file_prices_the_run(tmp_path):
    path = _prices(tmp_path, "p.toml", b'[models]\n"openai-compatible:test-model" = { input = 1000, output = 0 }\n')
    with TestServer(reply=lambda req: "[2] > [1]") as srv:
        res = run_cli(*eval_args(tmp_path, "--reranker", RERANKER, "--llm", srv.spec(), "--prices", str(path),
                                 "--json", "-o", str(tmp_path / "out")))
        assert res.returncode == 0, res.stderr
    usage = json.loads((tmp_path / "out" / "results.json").read_text())["usage"]
    total = usage["total"]
    assert total["cost_usd"] == pytest.approx(total["input_tokens"] * 1000 / 1e6)


# ------------------------------------------------------------------------------------------ metric names

@pytest.mark.parametrize("metric, needle", [
    ("", "empty metric name"), ("   ", "empty metric name"), ("P(rel=1.5)@5", "P(rel=1.5)@5"),
    ("nDCG(gains={0:0.5})@10", "nDCG"), ("x" * 300, "at most 200"),
])
def test_a_bad_metric_name_is_one_message(tmp_path, metric, needle):
    res = run_cli(*eval_args(tmp_path, "-m", "nDCG@10", "-m", metric, "-o", str(tmp_path / "out")))
    assert_one_error(res, needle)
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------ files the run writes

@pytest.mark.parametrize("name", ["results.json", "per_query.jsonl", "run.trec", "results.json.tmp"])
def test_a_folder_where_a_result_file_goes_fails_before_work(tmp_path, name):
    out = tmp_path / "out"
    (out / name).mkdir(parents=True)
    with TestServer(reply=lambda req: "[2] > [1]") as srv:
        res = run_cli(*eval_args(tmp_path, "--reranker", RERANKER, "--llm", srv.spec(), "-o", str(out)))
        assert_one_error(res, str(out / name), "not a file")
        assert srv.requests_total == 0


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_a_write_error_without_a_file_name_is_one_message(tmp_path):
    """/dev/full accepts the open and refuses the write (ENOSPC, no file name in the OSError)."""
    for name in ("a", "b"):
        assert run_cli(*eval_args(tmp_path, "-o", str(tmp_path / name))).returncode == 0
    res = run_cli("compare", str(tmp_path / "a"), str(tmp_path / "b"), "-o", "/dev/full")
    assert_one_error(res, "/dev/full", "No space left on device")
    res = run_cli("report", str(tmp_path / "a"), str(tmp_path / "b"), "-o", "/dev/full")
    assert_one_error(res, "No space left on device")


def test_an_output_file_in_a_missing_folder_fails_before_reading(tmp_path):
    res = run_cli("compare", str(tmp_path / "a"), "-o", str(tmp_path / "nope" / "c.md"))
    assert_one_error(res, "does not exist")
    res = run_cli("report", str(tmp_path / "a"), "-o", str(tmp_path))
    assert_one_error(res, "--output")


# ---------------------------------------------------------------------------------------- spec arguments

@pytest.mark.parametrize("arg, needle", [("n_ctx=abc", "n_ctx"), ("n_ctx=0", "n_ctx"), ("instances=1e3", "instances"),
                                         ("n_threads=-2", "n_threads"), ("timeout=nan", "timeout")])
def test_local_arguments_are_checked(tmp_path, arg, needle):
    pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'harness-ir[local]')")
    gguf = tmp_path / "m.gguf"
    tiny_gguf(gguf, GOOD)
    res = run_cli(*eval_args(tmp_path, "--reranker", RERANKER, "--llm", f"local:path={gguf},{arg}"))
    assert_one_error(res, needle)


@pytest.mark.parametrize("urls", ['["HTTP://h:8000/v1","http://h:8000/v1"]', '["http://H/v1/","http://h:80/v1"]',
                                  '["https://h/v1","https://h:443/v1/"]'])
def test_one_replica_written_two_ways_is_listed_twice(tmp_path, urls):
    res = run_cli(*eval_args(tmp_path, "--reranker", RERANKER, "--llm", f"vllm:m:base_url={urls}"))
    assert_one_error(res, "listed twice")


def test_replicas_that_differ_stay_apart():
    from harness.llm.spec import normalize_url, parse_llm_spec

    spec = parse_llm_spec('vllm:m:base_url=["http://h:8000/v1","http://h:8001/v1","http://h:8000/V1"]')
    assert len(spec.replicas) == 3  # the port and the path's case name other servers
    assert normalize_url("HTTP://User:Pw@Host:80/v1/") == "http://User:Pw@host/v1"


# ------------------------------------------------------------------------------------ GGUF chat templates

GOOD = ("{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def _kv(key: str, vtype: int, value) -> bytes:
    def text(s: str) -> bytes:
        b = s.encode("utf-8")
        return struct.pack("<Q", len(b)) + b

    out = text(key) + struct.pack("<I", vtype)
    if vtype == 8:
        return out + text(value)
    if vtype == 4:
        return out + struct.pack("<I", value)
    if vtype == 6:
        return out + struct.pack("<f", value)
    etype, items = value  # an array
    out += struct.pack("<IQ", etype, len(items))
    return out + b"".join(text(i) if etype == 8 else struct.pack({6: "<f", 5: "<i"}[etype], i) for i in items)


def tiny_gguf(path: Path, template: str | None) -> Path:
    """A one-layer llama model (dimension 16, a 284-token SentencePiece vocabulary with byte tokens,
    random float32 weights): it loads in llama.cpp in milliseconds and generates (meaningless) text."""
    n_embd, n_ff, n_head = 16, 32, 2
    tokens = ["<unk>", "<s>", "</s>", *(f"<0x{i:02X}>" for i in range(256)), *"abcdefghijklmnopqrstuvwxyz", "\u2581"]
    types = [2, 3, 3] + [6] * 256 + [1] * 27
    kvs = [("general.architecture", 8, "llama"), ("general.name", 8, "tiny"), ("llama.context_length", 4, 512),
           ("llama.embedding_length", 4, n_embd), ("llama.block_count", 4, 1), ("llama.feed_forward_length", 4, n_ff),
           ("llama.attention.head_count", 4, n_head), ("llama.attention.head_count_kv", 4, n_head),
           ("llama.rope.dimension_count", 4, n_embd // n_head), ("llama.attention.layer_norm_rms_epsilon", 6, 1e-5),
           ("tokenizer.ggml.model", 8, "llama"), ("tokenizer.ggml.tokens", 9, (8, tokens)),
           ("tokenizer.ggml.scores", 9, (6, [0.0] * len(tokens))), ("tokenizer.ggml.token_type", 9, (5, types)),
           ("tokenizer.ggml.bos_token_id", 4, 1), ("tokenizer.ggml.eos_token_id", 4, 2),
           ("tokenizer.ggml.unknown_token_id", 4, 0)]
    if template is not None:
        kvs.append(("tokenizer.chat_template", 8, template))
    v = len(tokens)
    shapes = {"token_embd.weight": (n_embd, v), "output_norm.weight": (n_embd,), "output.weight": (n_embd, v),
              "blk.0.attn_norm.weight": (n_embd,), "blk.0.attn_q.weight": (n_embd, n_embd),
              "blk.0.attn_k.weight": (n_embd, n_embd), "blk.0.attn_v.weight": (n_embd, n_embd),
              "blk.0.attn_output.weight": (n_embd, n_embd), "blk.0.ffn_norm.weight": (n_embd,),
              "blk.0.ffn_gate.weight": (n_embd, n_ff), "blk.0.ffn_up.weight": (n_embd, n_ff),
              "blk.0.ffn_down.weight": (n_ff, n_embd)}
    rng = np.random.default_rng(0)
    infos, data = b"", b""
    for name, shape in shapes.items():
        arr = np.ones(shape) if len(shape) == 1 else rng.normal(0, 0.1, size=shape[::-1])
        infos += struct.pack("<Q", len(name)) + name.encode() + struct.pack("<I", len(shape))
        infos += b"".join(struct.pack("<Q", d) for d in shape) + struct.pack("<IQ", 0, len(data))  # F32, offset
        data += arr.astype("<f4").tobytes()
        data += b"\0" * (-len(data) % 32)
    head = b"GGUF" + struct.pack("<IQQ", 3, len(shapes), len(kvs)) + b"".join(_kv(*kv) for kv in kvs) + infos
    path.write_bytes(head + b"\0" * (-len(head) % 32) + data)
    return path


@pytest.fixture
def local_extra():
    if os.environ.get("CI") != "true":
        pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'harness-ir[local]')")


@pytest.mark.parametrize("template, needle", [
    ("{% for m in messages %}{{ m.content }", "not a valid Jinja template"),
    ("{{ ''.__class__.__mro__[1].__subclasses__() }}", "refused by the sandbox"),
    ("{{ cycler.__init__.__globals__ }}", "refused by the sandbox"),
    ("{{ 'x' * 10**9 }}", "needs too much"),
    ("{{ 'x' * 10**8 }}", "longer than"),
    ("{{ 'x'|center(10**9) }}", "needs too much"),
    ("{{ 'x' * (messages|length * 10**9) }}", "more memory"),
    ("{% for i in range(30) %}{{ 'x' * 100000 }}{% endfor %}", "passes 1,048,576 characters"),
    ("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}",
     "more memory"),
    ("{{ raise_exception('only user and assistant roles') }}", "only user and assistant roles"),
    ("{{ messages[0].nope.deeper }}", "rendering failed"),
    ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", "within 5 s"),
])
def test_a_bad_gguf_template_is_one_message_naming_the_file(tmp_path, local_extra, template, needle):
    gguf = tiny_gguf(tmp_path / "crafted.gguf", template)
    res = run_cli(*eval_args(tmp_path, "--reranker", RERANKER, "--llm", f"local:path={gguf},timeout=5",
                             "-o", str(tmp_path / "out")))
    assert_one_error(res, str(gguf), "chat template", needle)
    assert not (tmp_path / "out" / "results.json").exists()


def test_the_call_budget_bounds_the_render(tmp_path, local_extra):
    """--llm-budget (the call's budget across retries) stops a render as local:timeout=S does."""
    gguf = tiny_gguf(tmp_path / "slow.gguf", "{% for i in range(100000) %}{% for j in range(100000) %}"
                                               "{% endfor %}{% endfor %}")
    res = run_cli(*eval_args(tmp_path, "--reranker", RERANKER, "--llm", f"local:path={gguf}", "--llm-budget", "3"))
    assert_one_error(res, str(gguf), "within 3 s")


def test_a_template_longer_than_the_bound_is_refused_before_loading(tmp_path, local_extra):
    gguf = tiny_gguf(tmp_path / "long.gguf", "x" * ((1 << 20) + 1))
    res = run_cli(*eval_args(tmp_path, "--reranker", RERANKER, "--llm", f"local:path={gguf}"))
    assert_one_error(res, str(gguf), "at most 1,048,576")


def test_the_bounded_render_gives_llama_cpp_pythons_own_prompt(local_extra):
    """The worker renders what llama-cpp-python's Jinja2ChatFormatter renders (an independent computation)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    from harness.llm.providers.chat_template import ChatTemplate

    gemma_like = ("{{ bos_token }}{% if messages[0]['role'] == 'system' %}{% set first = messages[0]['content'] + "
                  "'\n\n' %}{% set loop_messages = messages[1:] %}{% else %}{% set first = '' %}{% set loop_messages "
                  "= messages %}{% endif %}{% for message in loop_messages %}{% if loop.first %}{% set content = first "
                  "+ message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}<start_of_turn>"
                  "{{ 'model' if message['role'] == 'assistant' else message['role'] }}\n{{ content | trim }}"
                  "<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
                  "{{ messages | tojson }}{% generation %}x{% endgeneration %}{% for m in messages %}{% if loop.index "
                  "> 1 %}{% break %}{% endif %}{{ m.role }}{% endfor %}")
    msgs = [{"role": "system", "content": "You are RankGPT. ü"}, {"role": "user", "content": "Rank [1] and [2]."},
            {"role": "assistant", "content": "Okay."}, {"role": "user", "content": "  Now.  "}]
    for text in (GOOD, gemma_like):
        ours = ChatTemplate(text, "t.gguf", max_chars=1 << 20)
        try:
            got = ours.render(msgs, bos_token="<s>", eos_token="</s>", budget=30)
        finally:
            ours.close()
        want = Jinja2ChatFormatter(text, eos_token="</s>", bos_token="<s>")(messages=msgs).prompt
        assert got == want


def test_a_good_gguf_template_still_runs_the_evaluation(tmp_path, local_extra):
    gguf = tiny_gguf(tmp_path / "good.gguf", GOOD)
    res = run_cli(*eval_args(tmp_path, "--reranker", RERANKER, "--llm", f"local:path={gguf},max_tokens=4",
                             "-o", str(tmp_path / "out")))
    assert res.returncode == 0, res.stdout + res.stderr
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["usage"]["total"]["calls"] > 0  # the tiny model answered (meaningless text) every request
