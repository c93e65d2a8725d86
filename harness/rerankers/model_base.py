"""What every model reranker shares: locating the weights (a folder, the Hugging Face cache, or a
download; never the network when offline), the model's identity, the score cache, scoring the
cache's misses in batches of similar length with progress, and the ranking (stable sort, candidates
missing from the corpus last, scores strictly decreasing by the one rule).

A subclass sets ``default_model`` and ``label``, and implements ``_load()`` and ``_compute(pairs)``
(the scores of one batch of ``(query text, document text)`` pairs); ``settings()`` adds whatever
changes a score (templates, tokens, activation), so it enters the cache identity.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.concepts.component_context import ComponentContext
from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.query import Query
from harness.concepts.run import Run, strictly_decreasing
from harness.rerankers.score_cache import ScoreCache, default_scores_dir
from harness.runtime import weights
from harness.runtime.extras import require
from harness.runtime.progress import progress

DTYPES = ("float32", "float16", "bfloat16", "auto")


def _positive(value: Any, name: str, label: str, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise HarnessError(f"{label}: {name} must be a positive integer, not {value!r}")
    return value


class ModelReranker:
    """Options: ``model`` (hub id or folder), ``revision``, ``device`` (cpu, cuda, cuda:1, mps; default:
    CUDA when present), ``dtype`` (float32, float16, bfloat16, auto), ``batch_size``, ``max_length``,
    ``local_files_only``, ``cache``/``cache_dir`` (the score cache), ``show_progress``."""

    default_model = ""
    label = "reranker"
    extra = "dense"
    default_batch_size = 16

    def __init__(self, model: str | None = None, revision: str | None = None, device: str | None = None,
                 dtype: str | None = None, batch_size: int | None = None, max_length: int | None = None,
                 local_files_only: bool = False, cache: bool = True, cache_dir: str | None = None,
                 show_progress: bool | None = None, context: ComponentContext | None = None) -> None:
        self.require()
        self.model_name = str(model or self.default_model)
        self.revision = revision
        self.device = device
        if dtype is not None and dtype not in DTYPES:
            raise HarnessError(f"{self.label}: dtype must be one of {', '.join(DTYPES)}, not {dtype!r}")
        self.dtype = dtype
        self.batch_size = _positive(batch_size if batch_size is not None else self.default_batch_size,
                                    "batch_size", self.label)
        self.max_length = _positive(max_length, "max_length", self.label, optional=True)
        self.local_files_only = bool(local_files_only)
        self.use_cache = bool(cache)
        self.cache_dir = cache_dir
        self.context = context
        self.show_progress = show_progress
        self.local_dir = self._locate(self.model_name)
        self._model: Any = None
        self._cache: Any = None
        self._identity: dict[str, Any] | None = None
        self.computed = self.cache_hits = self.forward_batches = 0
        self.load_seconds = self.score_seconds = 0.0

    # -- extras and weights -----------------------------------------------------------------------
    def require(self) -> None:
        """The extra this component needs, checked when it is created (before any data is read)."""
        require("transformers", self.extra, f"reranker {self.label!r}")
        require("torch", self.extra, f"reranker {self.label!r}")

    def _locate(self, name: str) -> Path | None:
        """The folder of ``name`` on this machine, or None when it must be downloaded; offline, a missing
        model fails here, at creation (:mod:`harness.runtime.weights`)."""
        return weights.locate(name, self.revision, self.label, self.local_files_only)

    def folder(self) -> Path:
        """The model's folder, downloaded from the hub on first need."""
        if self.local_dir is None:
            self.local_dir = weights.download(self.model_name, self.revision, self.label)
        return self.local_dir

    def settings(self) -> dict[str, Any]:
        """What decides a score besides the weights (a subclass adds its templates and rules)."""
        return {"max_length": self.max_length, "dtype": self.dtype}

    def identity(self) -> dict[str, Any]:
        """Model, revision (the hub commit of a cached snapshot), weight fingerprint and settings."""
        if self._identity is None:
            folder = self.folder()
            revision = folder.name if folder.parent.name == "snapshots" else self.revision
            name = folder.name if Path(self.model_name).expanduser().is_dir() else self.model_name
            self._identity = {"component": self.label, "model": name, "revision": revision,
                              "fingerprint": weights.fingerprint_dir(folder), **self.extra_identity(),
                              **self.settings()}
        return self._identity

    def extra_identity(self) -> dict[str, Any]:
        """More of the identity (a LoRA adapter's base model)."""
        return {}

    @property
    def cache(self) -> Any:
        if self.use_cache and self._cache is None:
            self._cache = ScoreCache(self.identity(), self.cache_dir or default_scores_dir(self.context))
        return self._cache if self.use_cache else None

    # -- torch helpers ---------------------------------------------------------------------------
    def torch_device(self) -> str:
        if self.device:
            return str(self.device)
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"

    def load_kwargs(self) -> dict[str, Any]:
        """``from_pretrained`` arguments: never the network for a folder on disk; the dtype."""
        out: dict[str, Any] = {"local_files_only": True}
        if self.dtype:
            import torch
            import transformers

            value = "auto" if self.dtype == "auto" else getattr(torch, self.dtype)
            out["dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"] = value
        return out

    def model(self) -> Any:
        """The loaded model, on first need (a fully cached rerun loads nothing)."""
        if self._model is None:
            t = time.perf_counter()
            try:
                self._model = self._load()
            except HarnessError:
                raise
            except Exception as exc:
                raise HarnessError(f"{self.label}: could not load model {self.model_name!r}: "
                                   f"{type(exc).__name__}: {str(exc).splitlines()[0][:400] if str(exc) else ''}"
                                   ) from exc
            self.load_seconds += time.perf_counter() - t
        return self._model

    def _load(self) -> Any:
        raise NotImplementedError

    def _compute(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        raise NotImplementedError

    # -- scoring -------------------------------------------------------------------------------
    def pair(self, query: Query, doc: Document) -> tuple[str, str]:
        """The two texts the model scores: the task-formed query and ``title text``."""
        return query.text, doc.full_text()

    def score_pairs(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """float64 scores of ``pairs`` (float32 precision: what the cache holds), from the cache where
        possible; the misses in batches of similar length, longest first, with progress."""
        unique = list(dict.fromkeys(pairs))
        cache = self.cache
        if cache is not None and unique:
            scores, found = cache.lookup(unique)
            scores = scores.astype(np.float64)
        else:
            scores, found = np.zeros(len(unique)), np.zeros(len(unique), dtype=bool)
        self.cache_hits += int(found.sum())
        todo = [i for i in np.flatnonzero(~found)]
        if todo:
            todo.sort(key=lambda i: -(len(unique[i][0]) + len(unique[i][1])))
            self._score_missing(unique, todo, scores)
        pos = {p: i for i, p in enumerate(unique)}
        return scores[[pos[p] for p in pairs]] if pairs else np.zeros(0)

    def _score_missing(self, unique: list[tuple[str, str]], todo: list[int], scores: np.ndarray) -> None:
        settings = getattr(self.context, "progress", None)
        bar = progress(len(todo), f"{self.label}: scoring", settings=settings, unit="pair", leave=True,
                       enabled=self.show_progress is not False, min_total=0 if self.show_progress else 257)
        self.model()
        t = time.perf_counter()
        try:
            for start in range(0, len(todo), self.batch_size):
                idx = todo[start:start + self.batch_size]
                batch = [unique[i] for i in idx]
                values = np.asarray(self._compute(batch), dtype=np.float32).reshape(-1)
                if len(values) != len(batch) or not np.isfinite(values).all():
                    raise HarnessError(f"{self.label}: the model gave {len(values)} scores for {len(batch)} "
                                       f"pairs, or a non-finite score")
                self.forward_batches += 1
                scores[idx] = values.astype(np.float64)
                self.computed += len(batch)
                if self.cache is not None:
                    self.cache.put(batch, values)
                bar.update(len(batch))
        finally:
            bar.close()
            self.score_seconds += time.perf_counter() - t

    def rerank(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Run:
        """Each query's candidates by score, highest first (:func:`rank`)."""
        keys = candidate_pairs(queries, run, corpus)
        flat = self.score_pairs([self.pair(queries[q], corpus[d]) for q, d in keys])
        return rank(queries, run, corpus, dict(zip(keys, (float(x) for x in flat))))

    # -- reporting -------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        """``computed`` pairs, ``cache_hits``, ``forward_batches``, load and scoring seconds."""
        return {"computed": self.computed, "cache_hits": self.cache_hits, "forward_batches": self.forward_batches,
                "model_loaded": self._model is not None, "load_seconds": round(self.load_seconds, 3),
                "score_seconds": round(self.score_seconds, 3)}

    def config(self) -> dict[str, Any]:
        """Model identity and settings, for results.json."""
        ident = self.identity() if self.local_dir is not None else {}
        return {"model": self.model_name, "model_path": str(self.local_dir) if self.local_dir else None,
                "revision": ident.get("revision", self.revision), "fingerprint": ident.get("fingerprint"),
                "device": self.device, "batch_size": self.batch_size, **self.settings(),
                "cache": str(self.cache.path) if ident and self.cache is not None else None}


def candidate_pairs(queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> list[tuple[str, str]]:
    """``(qid, docid)`` of every candidate to score: queries known, documents in the corpus, each once."""
    return [(q, d) for q in run if q in queries for d in dict.fromkeys(d for d, _ in run[q]) if d in corpus]


def rank(queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document],
         scores: Mapping[tuple[str, str], float]) -> Run:
    """Each query's candidates by ``scores``, highest first; equal scores keep the incoming order;
    candidates not in the corpus go last in their incoming order; scores strictly decreasing (the one rule)."""
    out: dict[str, list[tuple[str, float]]] = {q: list(hits) for q, hits in run.items()}
    for q in (q for q in run if q in queries):
        hits = list(dict.fromkeys(d for d, _ in run[q]))
        known = [d for d in hits if d in corpus]
        order = sorted(range(len(known)), key=lambda i: -scores[(q, known[i])])  # stable
        ranked = [(known[i], scores[(q, known[i])]) for i in order]
        floor = ranked[-1][1] if ranked else 0.0
        ranked += [(d, floor - 1.0 - i) for i, d in enumerate(d for d in hits if d not in corpus)]
        out[q] = list(zip([d for d, _ in ranked], strictly_decreasing([x for _, x in ranked]), strict=True))
    return Run(out, name=run.name)


__all__ = ["DTYPES", "ModelReranker", "candidate_pairs", "rank"]
