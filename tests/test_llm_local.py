"""The embedded provider's contract without running the model: its spec, its errors, its cache key,
its bound, its price and the messages it hands Gemma's template. (Generation itself: test_llm_real.)"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from harness.concepts.errors import HarnessError
from harness.llm import LLMSession, LLMSettings, user
from harness.served.pricing import PriceTable

pytest.importorskip("llama_cpp", reason="llama-cpp-python is not installed (pip install 'harness-ir[local]')")


def client(tmp_path, spec: str):
    return LLMSession(LLMSettings(cache_dir=str(tmp_path / "cache"))).client(spec)


def gguf(tmp_path, name: str, content: bytes = b"GGUF fake weights") -> str:
    path = tmp_path / name
    path.write_bytes(content)
    return str(path)


def test_the_cache_key_names_the_weights_and_the_template_not_the_file(tmp_path):
    a = client(tmp_path, f"local:path={gguf(tmp_path, 'a.gguf')}")
    renamed = client(tmp_path, f"local:path={gguf(tmp_path, 'b.gguf')}")
    other = client(tmp_path, f"local:path={gguf(tmp_path, 'c.gguf', b'GGUF other weights')}")
    template = client(tmp_path, f"local:path={gguf(tmp_path, 'a.gguf')},chat_format=chatml")
    msgs = [user("hello")]
    assert a.cache_key(msgs) == renamed.cache_key(msgs)
    assert len({a.cache_key(msgs), other.cache_key(msgs), template.cache_key(msgs)}) == 3
    assert a.key_payload(msgs)["base_url"].startswith("gguf:sha256:")


def test_the_packaged_model_needs_no_path_and_runs_one_call_at_a_time(tmp_path):
    c = client(tmp_path, "local:max_concurrency=8")
    assert c.provider.model == "gemma-3-270m-q4_k_m" and c.provider.chat_format == "gemma"
    assert c.max_concurrency == 1  # one model instance: the client queues nothing
    assert PriceTable().cost("local", c.provider.model, 10_000, 1_000) == 0.0


def test_gemma_gets_the_system_prompt_before_the_first_user_turn(tmp_path):
    """llama-cpp-python's gemma format drops system messages; Gemma's template prefixes them."""
    p = client(tmp_path, "local").provider
    msgs = [{"role": "system", "content": "You are RankGPT."}, user("Rank."),
            {"role": "assistant", "content": "Okay."}, user("Now.")]
    assert p.prompt_messages(msgs) == [user("You are RankGPT.\n\nRank."), {"role": "assistant", "content": "Okay."},
                                       user("Now.")]
    assert p.prompt_messages([user("hi")]) == [user("hi")]
    chatml = client(tmp_path, f"local:path={gguf(tmp_path, 'a.gguf')},chat_format=chatml").provider
    assert chatml.prompt_messages(msgs) == msgs  # a template with a system role keeps it


def test_a_missing_file_or_name_without_path_is_one_message(tmp_path, llm_double):
    with pytest.raises(HarnessError, match="nope.gguf not found"):
        client(tmp_path, f"local:path={tmp_path / 'nope.gguf'}")
    with pytest.raises(HarnessError, match="needs path=FILE.gguf"):
        client(tmp_path, "local:qwen")
    res = subprocess.run([sys.executable, "-m", "harness.cli", "eval", "--task", "demo", "--reranker", llm_double,
                          "--llm", f"local:path={tmp_path / 'nope.gguf'}", "-o", str(tmp_path / "out")],
                         capture_output=True, text=True)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert f"{tmp_path / 'nope.gguf'} not found" in res.stderr


def test_a_file_that_is_not_a_model_fails_when_loaded_with_its_path(tmp_path):
    p = client(tmp_path, f"local:path={gguf(tmp_path, 'a.gguf')}").provider
    with pytest.raises(HarnessError, match="could not load .*a.gguf"):
        p.load()


def test_the_packaged_model_is_assembled_into_the_cache_folder(tmp_path):
    from harness.llm.providers.local import packaged_gguf

    path, sha = packaged_gguf(tmp_path)
    assert path.parent.parent == tmp_path / "models" or path.parent == tmp_path / "models"
    assert path.stat().st_size > 200_000_000 and len(sha) == 64
    shutil.rmtree(tmp_path / "models")
