"""PAP / PAP+ (perspective-aware projection) and the Table 4 baselines over any dense retriever.

With q the query embedding, r the root query's, p the perspective's and c a document's (one encoder;
q, r, p encoded as queries, c as documents), p̂ = p/‖p‖, a = q·p̂, b = c·p̂ and the sign s (-1):

- ``pap``:  cos(q_s, c),   q_s = q + s a p̂  (s = -1: q_p = q - (q·p/‖p‖²) p, the paper's rejection)
- ``pap+``: cos(q_s, c_s), c_s = c + s b p̂  (every document projected with the *query's* p)

in closed form: q_s·c = q·c + s a b, q_s·c_s = q·c + (2s + s²) a b, ‖q_s‖² = ‖q‖² + (2s + s²) a²,
‖c_s‖² = ‖c‖² + (2s + s²) b². Per query that is two matrix-vector products (C q and C p̂) with the
document norms precomputed; no projected corpus is materialised. ``sign=1`` is the authors'
unreported ``vec_projection_rev`` (q + w p).

Baselines (``method=``), as in the authors' code: ``add`` cos(r + p, c) (``vec_add``), ``concat``
cos([r; p], [c; p]) (``vec_concat``), ``cast`` cos(q - p, c) (``vec_aug_cast_single``), ``cast+``
cos(q - p, c - p) (``vec_aug_cast``), ``dual-sum`` cos(r, c) + cos(p, c) (``additive``), ``tri-sum``
cos(r, c) + cos(q, c) + cos(p, c) (``additive_tripple``), ``none`` cos(q, c) (the base itself).

Perspective vector (``perspective=``): ``text`` embeds the perspective string, ``diff`` uses
E(q) - E(r), ``auto`` (default) uses ``diff`` for AmbigQA queries (``meta['pir_task'] == 'ambigqa'``,
whose perspective string is the whole question) with the projection and cast methods, exactly where
the authors' code does, and ``text`` otherwise.

A query without a perspective (the root queries of the ``root`` mode) is scored cos(q, c) by
every method. Outside PIR data a query's perspective is ``meta['perspective']`` when present, else its
instruction, and its root ``meta['root']``, else the raw query text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from harness import ComponentContext, Context, Document, HarnessError, Query, Run

METHODS = ("pap", "pap+", "add", "concat", "cast", "cast+", "dual-sum", "tri-sum", "none")
PERSPECTIVE_MODES = ("auto", "text", "diff")
#: methods for which the authors' code replaces p by E(q) - E(r) on AmbigQA
DIFF_METHODS = ("pap", "pap+", "cast", "cast+")
_EPS = 1e-12


def _norms(x: np.ndarray) -> np.ndarray:
    return np.sqrt(np.einsum("ij,ij->i", x, x))


def _safe_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    return np.where(den > _EPS, num / np.where(den > _EPS, den, 1.0), 0.0)


def cosine(x: np.ndarray, c: np.ndarray, c_norms: np.ndarray | None = None) -> np.ndarray:
    """``[m, n]`` cosines of the rows of ``x`` with the rows of ``c`` (0 for a zero vector)."""
    cn = _norms(c) if c_norms is None else c_norms
    return _safe_div(x @ c.T, _norms(x)[:, None] * cn[None, :])


def projection_scores(q: np.ndarray, p: np.ndarray, c: np.ndarray, plus: bool = False, sign: float = -1.0,
                      c_norms: np.ndarray | None = None) -> np.ndarray:
    """PAP (``plus=False``) or PAP+ scores ``[m, n]`` of queries ``q [m, d]`` with perspectives
    ``p [m, d]`` against documents ``c [n, d]``, in closed form. A zero ``p`` leaves the query as it is."""
    cn = _norms(c) if c_norms is None else c_norms
    pn = _norms(p)
    p_hat = p / np.where(pn > _EPS, pn, 1.0)[:, None]
    p_hat[pn <= _EPS] = 0.0
    a = np.einsum("ij,ij->i", q, p_hat)  # q·p̂
    qc = q @ c.T  # C q, for all queries at once
    b = p_hat @ c.T  # C p̂
    t = 2.0 * sign + sign * sign
    qs_norm = np.sqrt(np.maximum(np.einsum("ij,ij->i", q, q) + t * a * a, 0.0))
    if not plus:
        return _safe_div(qc + sign * a[:, None] * b, qs_norm[:, None] * cn[None, :])
    cs_norm = np.sqrt(np.maximum(cn[None, :] ** 2 + t * b * b, 0.0))
    return _safe_div(qc + t * a[:, None] * b, qs_norm[:, None] * cs_norm)


def method_scores(method: str, q: np.ndarray, r: np.ndarray, p: np.ndarray, c: np.ndarray, sign: float = -1.0,
                  c_norms: np.ndarray | None = None) -> np.ndarray:
    """Scores ``[m, n]`` of one method (see the module docstring) for rows ``q``, ``r``, ``p``."""
    cn = _norms(c) if c_norms is None else c_norms
    if method in ("pap", "pap+"):
        return projection_scores(q, p, c, plus=method == "pap+", sign=sign, c_norms=cn)
    if method == "none":
        return cosine(q, c, cn)
    if method == "add":
        return cosine(r + p, c, cn)
    if method == "dual-sum":
        return cosine(r, c, cn) + cosine(p, c, cn)
    if method == "tri-sum":
        return cosine(r, c, cn) + cosine(q, c, cn) + cosine(p, c, cn)
    if method == "cast":
        return cosine(q - p, c, cn)
    pp = np.einsum("ij,ij->i", p, p)
    if method == "concat":  # [r; p]·[c; p] = r·c + ‖p‖²
        num = r @ c.T + pp[:, None]
        den = np.sqrt(np.einsum("ij,ij->i", r, r) + pp)[:, None] * np.sqrt(cn[None, :] ** 2 + pp[:, None])
        return _safe_div(num, den)
    if method == "cast+":  # (q - p)·(c - p) with ‖c - p‖² = ‖c‖² - 2 c·p + ‖p‖²
        u = q - p
        pc = p @ c.T
        num = u @ c.T - np.einsum("ij,ij->i", u, p)[:, None]
        den = _norms(u)[:, None] * np.sqrt(np.maximum(cn[None, :] ** 2 - 2.0 * pc + pp[:, None], 0.0))
        return _safe_div(num, den)
    raise HarnessError(f"pap: unknown method {method!r}; methods: {', '.join(METHODS)}")


class PAPRetriever:
    """Wraps a dense retriever that exposes ``encoder.embed(texts, role)`` (the core's ``dense``
    and retrievers built on it); ranks the whole corpus by the chosen method. A
    :class:`harness.QueryObjectRetriever`: the pipeline passes the :class:`Query` objects (the
    perspective and the root query are in their meta) to :meth:`search_queries`."""

    def __init__(self, base: Any, method: str = "pap", sign: float = -1.0, perspective: str = "auto",
                 base_spec: str = "dense", block_size: int = 256):
        if method not in METHODS:
            raise HarnessError(f"pap: unknown method {method!r}; methods: {', '.join(METHODS)}")
        if perspective not in PERSPECTIVE_MODES:
            raise HarnessError(f"pap: perspective must be one of {', '.join(PERSPECTIVE_MODES)}, not {perspective!r}")
        try:
            sign = float(sign)
        except (TypeError, ValueError):
            raise HarnessError(f"pap: sign must be a number (-1 or 1), not {sign!r}") from None
        encoder = getattr(base, "encoder", None)
        if not callable(getattr(encoder, "embed", None)):
            raise HarnessError(f"pap: base retriever {base_spec!r} is not a dense retriever (it has no "
                               "encoder.embed(texts, role)); use base=dense or a dense plugin")
        self.base, self.encoder, self.base_spec = base, encoder, base_spec
        self.method, self.sign, self.perspective, self.block_size = method, sign, perspective, int(block_size)
        self._doc_ids: list[str] = []
        self._docs: np.ndarray | None = None
        self._doc_norms: np.ndarray | None = None
        self.diff_queries = 0
        self.plain_queries = 0

    def config(self) -> dict[str, Any]:
        return {"method": self.method, "sign": self.sign, "perspective": self.perspective, "base": self.base_spec,
                "base_config": dict(self.base.config()) if callable(getattr(self.base, "config", None)) else {}}

    def stats(self) -> dict[str, Any]:
        base = dict(self.base.stats()) if callable(getattr(self.base, "stats", None)) else {}
        return {**base, "diff_perspective_queries": self.diff_queries,
                "queries_without_perspective": self.plain_queries}

    def index(self, corpus: Mapping[str, Document]) -> None:
        self._doc_ids = list(corpus)
        docs = self.encoder.embed([corpus[d].full_text() for d in self._doc_ids], "document")
        self._docs = np.asarray(docs, dtype=np.float64)
        self._doc_norms = _norms(self._docs)

    def _parts(self, query: Query | str) -> tuple[str, str, str, bool]:
        """(query text, root text, perspective text, use E(q) - E(r))."""
        if isinstance(query, str):
            return query, query, "", False
        meta = query.meta
        perspective = str(meta["perspective"]) if "perspective" in meta else query.instruction
        root = str(meta.get("root") or meta.get("query") or query.text)
        if self.perspective == "diff":
            diff = True
        elif self.perspective == "auto":
            diff = meta.get("pir_task") == "ambigqa" and self.method in DIFF_METHODS
        else:
            diff = False
        return query.text, root, perspective, diff and bool(perspective.strip())

    def _embed(self, texts: list[str]) -> dict[str, np.ndarray]:
        wanted = [t for t in dict.fromkeys(texts) if t.strip()]
        if not wanted:
            return {}
        vecs = np.asarray(self.encoder.embed(wanted, "query"), dtype=np.float64)
        return dict(zip(wanted, vecs, strict=True))

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        """Plain query texts: no perspective, so every method is the base ranking cos(q, c)."""
        return self.search_queries(queries, k)

    def search_queries(self, queries: Mapping[str, Query | str], k: int) -> Run:
        if self._docs is None or self._doc_norms is None:
            raise HarnessError("pap: search() called before index()")
        qids = list(queries)
        n = len(self._doc_ids)
        k = max(0, min(int(k), n))
        if not qids or k == 0:
            return Run({q: [] for q in qids})
        parts = [self._parts(queries[q]) for q in qids]
        emb = self._embed([t for qt, rt, pt, _ in parts for t in (qt, rt, pt)])
        dim = self._docs.shape[1]
        zero = np.zeros(dim)
        qm, rm, pm = (np.zeros((len(qids), dim)) for _ in range(3))
        plain = np.zeros(len(qids), dtype=bool)
        for i, (qt, rt, pt, diff) in enumerate(parts):
            qm[i] = emb.get(qt, zero)
            rm[i] = emb.get(rt, qm[i])
            if not pt.strip():
                plain[i] = True
                self.plain_queries += 1
                continue
            if diff:
                self.diff_queries += 1
            pm[i] = qm[i] - rm[i] if diff else emb.get(pt, zero)
        out: dict[str, list[tuple[str, float]]] = {}
        for start in range(0, len(qids), self.block_size):
            sl = slice(start, start + self.block_size)
            scores = method_scores(self.method, qm[sl], rm[sl], pm[sl], self._docs, self.sign, self._doc_norms)
            if plain[sl].any():  # no perspective: every method is the base ranking cos(q, c)
                rows = np.flatnonzero(plain[sl])
                scores[rows] = cosine(qm[sl][rows], self._docs, self._doc_norms)
            if k < n:
                cand = np.argpartition(-scores, k - 1, axis=1)[:, :k]
            else:
                cand = np.broadcast_to(np.arange(n), scores.shape).copy()
            top = np.take_along_axis(scores, cand, axis=1)
            order = np.lexsort((cand, -top), axis=-1)  # score desc, ties: corpus order
            cand = np.take_along_axis(cand, order, axis=1)
            top = np.take_along_axis(top, order, axis=1)
            for row, qid in enumerate(qids[sl]):
                out[qid] = [(self._doc_ids[j], float(s)) for j, s in zip(cand[row], top[row], strict=True)]
        return Run(out, name=f"pap-{self.method}")


def make_pap(base: str = "dense", method: str = "pap", sign: float = -1.0, perspective: str = "auto",
             block_size: int = 256, context: ComponentContext | None = None, **base_args: Any) -> PAPRetriever:
    """``pap:base=SPEC[,method=...,sign=-1,perspective=auto|text|diff][,<any base option>]``.

    ``base`` is a retriever spec (``dense``, ``dense:model=x`` when it is the only argument, or quoted:
    ``base='dense:model=x,batch_size=8'``); every other argument is passed to the base retriever, so
    ``pap:base=dense,model=princeton-nlp/sup-simcse-bert-base-uncased`` works too. The base comes
    from the evaluation's registry (``context``)."""
    if not isinstance(base, str) or not base.strip():
        raise HarnessError(f"pap: base must be a retriever spec, not {base!r}")
    if base.split(":")[0] in ("pap", "pap+"):
        raise HarnessError("pap: the base cannot itself be pap")
    ctx = Context.of(context)
    retriever = ctx.registry.create("retriever", base, ctx, **base_args)
    spec = base + "".join(f",{k}={v}" for k, v in base_args.items()) if base_args else base
    return PAPRetriever(retriever, method=method, sign=sign, perspective=perspective, base_spec=spec,
                        block_size=block_size)


def make_pap_plus(context: ComponentContext | None = None, **kwargs: Any) -> PAPRetriever:
    """``pap+:base=...``: PAP+ (query and documents projected)."""
    if kwargs.get("method", "pap+") != "pap+":
        raise HarnessError("pap+: method is fixed; use pap:method=... for the other methods")
    kwargs["method"] = "pap+"
    return make_pap(context=context, **kwargs)
