"""Bi-encoders as the PIR code runs them: a separate query encoder (DPR), an explicit pooling
(cls, pooler, mean, last-token), presets dpr / simcse / contriever; the embedding cache and an index
with two encoders. Tiny random models built here, compared with a direct transformers forward pass."""

from __future__ import annotations

import numpy as np
import pytest

from harness import Document, HarnessError

pytest.importorskip("sentence_transformers")

from tests.reranker_models import wordpiece_vocab  # noqa: E402

CORPUS = {"d1": Document("d1", "the population of tokyo dropped", title="tokyo"),
          "d2": Document("d2", "a lobster roll is a sandwich made of lobster meat"),
          "d3": Document("d3", "pasta sauce recipe")}
QUERIES = {"q1": "how many people live in tokyo", "q2": "what is a lobster roll"}


def _tokenizer(folder):
    from transformers import BertTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(wordpiece_vocab()) + "\n")
    return BertTokenizerFast(vocab_file=str(folder / "vocab.txt"))


def save_dpr(tmp_path):
    import torch
    from transformers import DPRConfig, DPRContextEncoder, DPRQuestionEncoder

    out = []
    for i, (cls, name) in enumerate(((DPRQuestionEncoder, "dpr-question_encoder"), (DPRContextEncoder,
                                                                                    "dpr-ctx_encoder"))):
        folder = tmp_path / name
        tok = _tokenizer(folder)
        torch.manual_seed(i)
        cfg = DPRConfig(vocab_size=len(wordpiece_vocab()), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=128)
        cls(cfg).eval().save_pretrained(folder)
        tok.save_pretrained(folder)
        out.append(folder)
    return out


def save_simcse(tmp_path):
    import torch
    from transformers import BertConfig, BertModel

    folder = tmp_path / "sup-simcse-tiny"
    tok = _tokenizer(folder)
    torch.manual_seed(5)
    cfg = BertConfig(vocab_size=len(wordpiece_vocab()), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=128)
    BertModel(cfg, add_pooling_layer=True).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def _direct(folder, texts, pooling):
    import torch
    import transformers
    from transformers import AutoModel, AutoTokenizer

    cls = {"dpr-question_encoder": transformers.DPRQuestionEncoder, "dpr-ctx_encoder": transformers.DPRContextEncoder
           }.get(folder.name, AutoModel)
    tok, model = AutoTokenizer.from_pretrained(folder), cls.from_pretrained(folder).eval()
    vecs = []
    for t in texts:  # one text at a time: no padding involved
        enc = tok(t, return_tensors="pt")
        with torch.no_grad():
            out = model(**enc)
        if pooling == "pooler":
            v = out.pooler_output[0]
        else:
            hidden = out.last_hidden_state[0]
            v = {"cls": hidden[0], "mean": hidden.mean(0), "last-token": hidden[-1]}[pooling]
        vecs.append(v.numpy().astype(np.float64))
    m = np.stack(vecs)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def _scores(run):
    return {(q, d): s for q in run for d, s in run[q]}


def test_dpr_two_encoders_pooler_output_cosine_and_warm_cache(tmp_path):
    from harness.retrievers.dense import DenseRetriever

    qdir, cdir = save_dpr(tmp_path)
    opts = dict(preset="dpr", model=str(cdir), query_model=str(qdir), cache_dir=str(tmp_path / "emb"), batch_size=2)
    r = DenseRetriever(**opts)
    assert r.encoder.pooling == "pooler" and r.encoder.query_encoder is not None
    r.index(CORPUS)
    got = _scores(r.search(QUERIES, k=3))
    docs = _direct(cdir, [CORPUS[d].full_text() for d in CORPUS], "pooler")
    qs = _direct(qdir, list(QUERIES.values()), "pooler")
    for i, q in enumerate(QUERIES):
        for j, d in enumerate(CORPUS):
            assert got[(q, d)] == pytest.approx(float(qs[i] @ docs[j]), abs=1e-5)
    # the query side really is the question encoder: the context encoder gives other query vectors
    assert not np.allclose(_direct(cdir, list(QUERIES.values()), "pooler"), qs, atol=1e-3)
    warm = DenseRetriever(**opts)
    warm.index(CORPUS)
    assert _scores(warm.search(QUERIES, k=3)) == pytest.approx(got)
    st = warm.stats()
    assert st["encoded"] == 0 and st["cache_hits"] == 5 and not st["model_loaded"]
    assert r.config()["query_model"] == str(qdir) and r.encoder.settings()["pooling"] == "pooler"


@pytest.mark.parametrize("pooling", ["pooler", "cls", "mean", "last-token"])
def test_simcse_style_bert_each_pooling(tmp_path, pooling):
    from harness import Query, Run
    from harness.retrievers.dense import DenseReranker

    folder = save_simcse(tmp_path)
    rr = DenseReranker(model=str(folder), pooling=pooling, cache=False, batch_size=2)
    if pooling == "pooler":
        assert DenseReranker(model=str(folder), preset="simcse", cache=False).encoder.pooling == "pooler"
    run = Run.from_order({"q1": ["d3", "d1", "d2"]})
    out = rr.rerank({"q1": Query("q1", QUERIES["q1"])}, run, CORPUS)
    docs = _direct(folder, [CORPUS[d].full_text() for d in ("d3", "d1", "d2")], pooling)
    q = _direct(folder, [QUERIES["q1"]], pooling)[0]
    expected = dict(zip(("d3", "d1", "d2"), docs @ q))
    assert out.doc_ids("q1") == sorted(expected, key=lambda d: -expected[d])
    for d, s in out["q1"]:
        assert s == pytest.approx(expected[d], abs=1e-5)


def test_contriever_preset_and_bad_pooling(tmp_path):
    from harness.retrievers.dense import DenseRetriever
    from harness.retrievers.dense.presets import detect_preset, get_preset

    assert get_preset("contriever").pooling_mode == "mean" and detect_preset("facebook/contriever").name == "contriever"
    assert detect_preset("facebook/dpr-question_encoder-single-nq-base").name == "dpr"
    assert get_preset("dpr").query_model == "facebook/dpr-question_encoder-single-nq-base"
    with pytest.raises(HarnessError, match="pooling must be one of"):
        DenseRetriever(model=str(save_simcse(tmp_path)), pooling="max")


def test_index_with_two_encoders_searches_as_in_memory_and_checks_both_fingerprints(tmp_path):
    from harness.retrievers.dense import DenseRetriever
    from harness.retrievers.dense.build import build_index
    from harness.retrievers.dense.encoder import DenseEncoder

    qdir, cdir = save_dpr(tmp_path)
    enc = DenseEncoder(preset="dpr", model=str(cdir), query_model=str(qdir), cache=False)
    build_index(enc, list(CORPUS), [CORPUS[d].full_text() for d in CORPUS], tmp_path / "index")
    memory = DenseRetriever(preset="dpr", model=str(cdir), query_model=str(qdir), cache=False)
    memory.index(CORPUS)
    expected = _scores(memory.search(QUERIES, k=3))
    r = DenseRetriever(index=str(tmp_path / "index"), model=str(cdir), query_model=str(qdir), cache=False)
    r.index(CORPUS)
    assert _scores(r.search(QUERIES, k=3)) == pytest.approx(expected, abs=1e-6)
    with pytest.raises(HarnessError, match="query-encoder fingerprint"):  # other weights for the queries
        DenseRetriever(index=str(tmp_path / "index"), model=str(cdir), query_model=str(save_simcse(tmp_path)),
                       cache=False)
    with pytest.raises(HarnessError, match="must agree"):  # no query encoder at all
        DenseRetriever(index=str(tmp_path / "index"), model=str(cdir), query_model=str(cdir), cache=False)
    with pytest.raises(HarnessError, match="query model folder"):
        DenseRetriever(index=str(tmp_path / "index"), model=str(cdir), cache=False)
