"""``openai-embeddings`` against a real embeddings server: llama.cpp's (llama-cpp-python's
``python -m llama_cpp.server --embedding true``, mean pooling) with the packaged Gemma 3 270M on CPU.

``harness eval --task demo --retriever openai-embeddings:...`` must complete, and its ranking must equal
one computed here, with numpy, from vectors fetched directly through the official ``openai`` SDK from
the same server. llama.cpp embeds a request's inputs together, so a vector depends slightly on the other
inputs of its request: the direct fetch sends the same inputs in the same groups as the component (in
order, at most 32 per request: the default ``batch_size`` for a server other than OpenAI's), and a
counting proxy checks that the component sent exactly those groups. Skipped, with the reason, where
llama-cpp-python is missing, except under CI=true, where that is a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from harness import task_queries
from harness.api import load_dataset, load_task
from harness.testing import CountingProxy, LlamaServer

try:
    import llama_cpp  # noqa: F401

    MISSING = None
except ImportError as exc:  # pragma: no cover - depends on the install
    MISSING = f"llama-cpp-python is not installed (pip install 'harness-ir[local]'): {exc}"
if MISSING and os.environ.get("CI") == "true":  # pragma: no cover
    raise RuntimeError(f"CI must run the real-model tests: {MISSING}")
pytestmark = [pytest.mark.skipif(MISSING is not None, reason=MISSING or ""), pytest.mark.slow]
GROUP = 32  # inputs per request: the component's default batch_size for an OpenAI-compatible server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with LlamaServer(embedding=True, n_threads=2, cache_dir=tmp_path_factory.mktemp("models")) as srv:
        yield srv


def groups(texts: list[str]) -> list[list[str]]:
    return [texts[i:i + GROUP] for i in range(0, len(texts), GROUP)]


def fetch(base_url: str, model: str, batches: list[list[str]]) -> dict[str, np.ndarray]:
    """Each group in one request through the official SDK: text -> its vector (float64, as served)."""
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0)
    out: dict[str, np.ndarray] = {}
    for batch in batches:
        resp = client.embeddings.create(model=model, input=batch)
        assert [d.index for d in resp.data] == list(range(len(batch)))
        for text, item in zip(batch, resp.data, strict=True):
            out[text] = np.asarray(item.embedding, dtype=np.float64)
    return out


def read_trec(path: Path) -> dict[str, list[tuple[str, float]]]:
    run: dict[str, list[tuple[str, int, float]]] = {}
    for line in path.read_text().splitlines():
        qid, _, doc, rank, score, _ = line.split()
        run.setdefault(qid, []).append((doc, int(rank), float(score)))
    return {q: [(d, s) for d, _, s in sorted(hits, key=lambda h: h[1])] for q, hits in run.items()}


def test_openai_embeddings_on_llama_cpp_ranks_as_the_sdk_vectors(server, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from harness.cli import cli

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    task = load_task("demo")
    dataset = load_dataset("demo")
    doc_ids = list(dataset.corpus)
    doc_texts = [dataset.corpus[d].full_text() for d in doc_ids]
    queries = {q: v.text for q, v in task_queries(dataset, "default", task.query_format).items()}
    want_groups = groups(list(dict.fromkeys(doc_texts))) + groups(list(dict.fromkeys(queries.values())))
    with CountingProxy(server.url) as proxy:
        spec = f"openai-embeddings:model={server.alias},base_url={proxy.url}/v1"
        result = CliRunner().invoke(cli, ["eval", "--task", "demo", "--retriever", spec, "-o", str(tmp_path / "out")])
        assert result.exit_code == 0, result.output
        sent = [body["input"] for body in proxy.bodies]
    assert sorted(map(tuple, sent)) == sorted(map(tuple, want_groups))  # the groups this test sends below
    assert proxy.posts == len(want_groups) and set(proxy.statuses) == {200}
    got = read_trec(tmp_path / "out" / "run.trec")

    base = f"{server.url}/v1"
    vectors = fetch(base, server.alias, want_groups)
    again = fetch(base, server.alias, want_groups[-1:])  # the smallest group (the queries): embedding is slow here
    assert all(np.array_equal(vectors[t], v) for t, v in again.items())  # the server is deterministic
    docs = np.stack([vectors[t] for t in doc_texts])
    assert not np.allclose(np.linalg.norm(docs, axis=1), 1.0)  # llama.cpp's Gemma vectors are not unit length
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    assert set(got) == set(queries)
    for qid, text in queries.items():
        q = vectors[text] / np.linalg.norm(vectors[text])
        scores = docs @ q
        order = sorted(range(len(doc_ids)), key=lambda i: (-scores[i], i))[:len(got[qid])]
        assert [d for d, _ in got[qid]] == [doc_ids[i] for i in order], qid
        assert np.allclose([s for _, s in got[qid]], scores[order], atol=1e-5), qid
