"""The model rerankers against an independent computation on tiny random models built here."""

from __future__ import annotations

import numpy as np
import pytest

from harness import Document, HarnessError, Query, Run

pytest.importorskip("transformers")
pytest.importorskip("sentence_transformers")

from tests.reranker_models import save_bert_classifier, save_t5  # noqa: E402

QUERIES = {"q1": Query("q1", "how many people live in tokyo"), "q2": Query("q2", "what is a lobster roll")}
CORPUS = {
    "d1": Document("d1", "the population of tokyo dropped", title="tokyo"),
    "d2": Document("d2", "a lobster roll is a sandwich made of lobster meat"),
    "d3": Document("d3", "pasta sauce recipe"),
    "d4": Document("d4", "tokyo is the capital city of japan " * 30),
}
RUN = Run.from_order({"q1": ["d3", "d1", "missing", "d4", "d2"], "q2": ["d1", "d2", "d3"]})


def pairs_of(run=RUN):
    return [(QUERIES[q].text, CORPUS[d].full_text()) for q in run for d in run.doc_ids(q) if d in CORPUS]


def check_ranking(out: Run, scores: dict) -> None:
    assert out.is_strictly_decreasing()
    for q in RUN:
        known = [d for d in RUN.doc_ids(q) if d in CORPUS]
        expected = sorted(known, key=lambda d: -scores[(q, d)])
        assert out.doc_ids(q)[:len(known)] == expected
        assert out.doc_ids(q)[len(known):] == [d for d in RUN.doc_ids(q) if d not in CORPUS]


def component_scores(component, run=RUN) -> dict:
    flat = component.score_pairs(pairs_of(run))
    keys = [(q, d) for q in run for d in run.doc_ids(q) if d in CORPUS]
    return dict(zip(keys, flat))


def test_cross_encoder_equals_crossencoder_predict_and_warm_rerun_computes_nothing(tmp_path):
    from sentence_transformers import CrossEncoder

    from harness.rerankers.cross_encoder import CrossEncoderReranker

    folder = save_bert_classifier(tmp_path / "ce", num_labels=1)
    comp = CrossEncoderReranker(model=str(folder), cache_dir=str(tmp_path / "scores"), batch_size=2, device="cpu")
    out = comp.rerank(QUERIES, RUN, CORPUS)
    expected = CrossEncoder(str(folder), device="cpu").predict([list(p) for p in pairs_of()], batch_size=1)
    got = component_scores(comp)
    np.testing.assert_allclose(list(got.values()), expected, rtol=1e-5, atol=1e-5)
    check_ranking(out, got)
    assert comp.stats()["computed"] == len(set(pairs_of())) and comp.stats()["forward_batches"] == 4
    warm = CrossEncoderReranker(model=str(folder), cache_dir=str(tmp_path / "scores"), device="cpu")
    assert warm.rerank(QUERIES, RUN, CORPUS) == out
    assert warm.stats()["computed"] == 0 and warm.stats()["forward_batches"] == 0 and not warm.stats()["model_loaded"]
    other = CrossEncoderReranker(model=str(folder), cache_dir=str(tmp_path / "scores"), activation="sigmoid")
    other.rerank(QUERIES, RUN, CORPUS)
    assert other.stats()["computed"] == len(set(pairs_of()))  # another setting: another cache identity


def test_monobert_is_log_softmax_of_the_last_label(tmp_path):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from harness.rerankers.cross_encoder import CrossEncoderReranker

    folder = save_bert_classifier(tmp_path / "monobert", num_labels=2, seed=3)
    comp = CrossEncoderReranker(model=str(folder), preset="monobert", cache=False, device="cpu")
    assert comp.max_length == 512
    out = comp.rerank(QUERIES, RUN, CORPUS)
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    expected = []
    for q, d in pairs_of():  # pygaggle's MonoBERT.rescore, one pair at a time
        enc = tok(q, d, max_length=512, truncation=True, return_tensors="pt")
        with torch.no_grad():
            expected.append(torch.log_softmax(model(**enc).logits, 1)[0, -1].item())
    got = component_scores(comp)
    np.testing.assert_allclose(list(got.values()), expected, atol=1e-5)
    check_ranking(out, got)
    with pytest.raises(HarnessError, match="two labels"):
        CrossEncoderReranker(model=str(save_bert_classifier(tmp_path / "one")), activation="log-softmax",
                             cache=False).rerank(QUERIES, RUN, CORPUS)


def test_monot5_equals_pygaggle_formula_with_its_truncation(tmp_path):
    import torch
    from transformers import AutoTokenizer, T5ForConditionalGeneration

    from harness.rerankers.monot5 import MonoT5Reranker

    folder = save_t5(tmp_path / "t5")
    comp = MonoT5Reranker(model=str(folder), max_length=24, cache_dir=str(tmp_path / "s"), batch_size=3)
    out = comp.rerank(QUERIES, RUN, CORPUS)
    tok = AutoTokenizer.from_pretrained(folder)
    model = T5ForConditionalGeneration.from_pretrained(folder).eval()
    vocab = tok.get_vocab()
    expected = []
    for q, d in pairs_of():
        enc = tok([f"Query: {q} Document: {d} Relevant:"], truncation=True, max_length=24, return_tensors="pt")
        assert enc["input_ids"].shape[1] <= 24
        with torch.no_grad():
            logits = model(**enc, decoder_input_ids=torch.zeros((1, 1), dtype=torch.long)).logits[0, -1]
        two = logits[[vocab["▁false"], vocab["▁true"]]]
        expected.append(torch.log_softmax(two, 0)[1].item())
    got = component_scores(comp)
    np.testing.assert_allclose(list(got.values()), expected, atol=1e-5)
    check_ranking(out, got)
    warm = MonoT5Reranker(model=str(folder), max_length=24, cache_dir=str(tmp_path / "s"))
    assert warm.rerank(QUERIES, RUN, CORPUS) == out and warm.stats()["computed"] == 0
    with pytest.raises(HarnessError, match="no token"):
        MonoT5Reranker(model=str(folder), token_true="▁maybe", cache=False).rerank(QUERIES, RUN, CORPUS)


def test_offline_missing_model_fails_at_creation(monkeypatch):
    from harness.rerankers.monot5 import MonoT5Reranker

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(HarnessError, match="not available on this machine"):
        MonoT5Reranker(model="castorini/monot5-3b-msmarco-10k")


def test_tart_equals_encoder_first_token_classifier(tmp_path):
    import torch
    from safetensors.torch import load_file
    from transformers import AutoTokenizer, T5EncoderModel

    from harness.rerankers.tart import TartReranker, truncate_longest_first
    from tests.reranker_models import save_enc_t5

    folder = save_enc_t5(tmp_path / "tart")
    queries = {"q1": Query("q1", "how many people live in tokyo find a document", instruction="find a document",
                           meta={"query": "how many people live in tokyo"}),
               "q2": Query("q2", "what is a lobster roll")}
    comp = TartReranker(model=str(folder), max_length=40, cache_dir=str(tmp_path / "s"), batch_size=2)
    out = comp.rerank(queries, RUN, CORPUS)
    assert comp.pair(queries["q1"], CORPUS["d1"])[0] == "find a document [SEP] how many people live in tokyo"
    assert comp.pair(queries["q2"], CORPUS["d1"])[0] == "what is a lobster roll"
    tok = AutoTokenizer.from_pretrained(folder)
    encoder = T5EncoderModel.from_pretrained(folder).eval()
    weights = load_file(str(folder / "model.safetensors"))
    w, b = weights["classifier.weight"], weights["classifier.bias"]
    bos, eos = tok.convert_tokens_to_ids("<s>"), tok.eos_token_id
    got = {}
    for q in RUN:
        for d in RUN.doc_ids(q):
            if d not in CORPUS:
                continue
            first, second = comp.pair(queries[q], CORPUS[d])
            a, c = (tok(t, add_special_tokens=False)["input_ids"] for t in (first, second))
            a, c = truncate_longest_first(a, c, len(a) + len(c) + 3 - 40)
            ids = torch.tensor([[bos, *a, eos, *c, eos]])
            assert ids.shape[1] <= 40
            with torch.no_grad():
                logits = encoder(input_ids=ids).last_hidden_state[0, 0] @ w.T + b
            got[(q, d)] = torch.softmax(logits.double(), 0)[1].item()
    assert truncate_longest_first([1, 2, 3, 4], [5, 6], 3) == ([1, 2], [5])
    scores = {(q, d): s for q in out for d, s in out[q] if d in CORPUS}
    for k, v in got.items():
        assert scores[k] == pytest.approx(v, abs=1e-5)
    warm = TartReranker(model=str(folder), max_length=40, cache_dir=str(tmp_path / "s"))
    assert warm.rerank(queries, RUN, CORPUS) == out and warm.stats()["computed"] == 0


def test_rankllama_equals_peft_merged_model(tmp_path):
    pytest.importorskip("peft")
    import torch
    from peft import PeftModel
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from harness.rerankers.rankllama import RankLlamaReranker
    from tests.reranker_models import save_rankllama

    base, adapter = save_rankllama(tmp_path / "base", tmp_path / "lora")
    comp = RankLlamaReranker(model=str(adapter), cache_dir=str(tmp_path / "s"), batch_size=3)
    out = comp.rerank(QUERIES, RUN, CORPUS)
    tok = AutoTokenizer.from_pretrained(base)
    plain = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1).eval()
    merged = PeftModel.from_pretrained(AutoModelForSequenceClassification.from_pretrained(base, num_labels=1),
                                       str(adapter)).merge_and_unload().eval()
    scores = {(q, d): s for q in out for d, s in out[q] if d in CORPUS}
    changed = 0
    for (q, d), s in scores.items():  # the card: one pair at a time, logits[0][0]
        doc = CORPUS[d]
        enc = tok(f"query: {QUERIES[q].text}", f"document: {doc.title} {doc.text}</s>", return_tensors="pt")
        with torch.no_grad():
            expected = merged(**enc).logits[0][0].item()
            changed += abs(plain(**enc).logits[0][0].item() - expected) > 1e-3
        assert s == pytest.approx(expected, abs=1e-4)
    assert changed == len(scores)  # the adapter matters
    assert out.is_strictly_decreasing()
    warm = RankLlamaReranker(model=str(adapter), cache_dir=str(tmp_path / "s"))
    assert warm.rerank(QUERIES, RUN, CORPUS) == out and warm.stats()["computed"] == 0


def test_missing_extra_fails_at_creation_with_the_install_line(monkeypatch, tmp_path):
    import sys

    from harness.rerankers.cross_encoder import CrossEncoderReranker
    from harness.rerankers.rankllama import RankLlamaReranker

    monkeypatch.setitem(sys.modules, "peft", None)
    with pytest.raises(HarnessError, match=r"peft: pip install 'harness-ir\[rankllama\]'"):
        RankLlamaReranker(model=str(tmp_path))
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(HarnessError, match=r"pip install 'harness-ir\[dense\]'"):
        CrossEncoderReranker(model=str(tmp_path))


def test_registered_as_builtins_and_created_from_a_spec(tmp_path):
    from harness import PluginHost

    folder = save_t5(tmp_path / "t5")
    registry = PluginHost().registry
    comp = registry.create("reranker", f"monot5:model={folder},batch_size=2,cache=false")
    assert comp.batch_size == 2 and comp.rerank(QUERIES, RUN, CORPUS).is_strictly_decreasing()
    for name in ("cross-encoder", "monot5", "tart", "rankllama", "true-false"):
        assert name in registry.names("reranker")
