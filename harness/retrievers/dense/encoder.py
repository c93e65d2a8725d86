"""The dense encoder shared by every dense component: resolves the model (packaged default, local
folder, hub id; never the network when offline), renders the prompt templates, looks every text up
in the embedding cache and encodes only the misses, in batches, with progress. The model is loaded
only when something has to be encoded, so a fully cached rerun imports no torch; torch and
sentence-transformers are imported inside functions only.
"""

from __future__ import annotations

import hashlib
import logging
import time
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.concepts.component_context import ComponentContext
from harness.concepts.errors import HarnessError
from harness.retrievers.dense.embedding_cache import EmbeddingCache, text_key
from harness.retrievers.dense.model import (
    DEFAULT_ALIASES,
    DEFAULT_MODEL,
    PACKAGE,
    model_dimension,
    model_info,
    model_pooling,
    packaged_model_path,
    position_limit,
)
from harness.retrievers.dense.pooled import POOLINGS, PooledEncoder
from harness.retrievers.dense.presets import PRESETS, Preset, detect_preset, get_preset, split_template
from harness.runtime import weights
from harness.runtime.progress import progress

log = logging.getLogger("harness.dense")

_DOC_PROMPT_NAMES = ("document", "passage", "corpus", "doc")
_LOADED: weakref.WeakValueDictionary[tuple[Any, ...], Any] = weakref.WeakValueDictionary()


def _as_template(prompt: str) -> str:
    """A prompt is a prefix unless it places ``{text}`` itself."""
    return prompt if "{text}" in prompt else prompt + "{text}"


def _doc_model(label: str, model: str | None, doc_model: str | None) -> str | None:
    """The document encoder is ``model``; ``doc_model=`` names it beside ``query_model=``."""
    if doc_model is None:
        return model
    if model is not None and model != doc_model:
        raise HarnessError(f"{label}: model={model!r} and doc_model={doc_model!r} disagree; pass one")
    return doc_model


def _resolve_preset(preset: str | Preset | None, model: str | None) -> Preset | None:
    """The preset: given, detected from the model name (MiniLM's without a model), or none (``none``/``off``)."""
    if isinstance(preset, Preset):
        return preset
    if preset is None:
        return detect_preset(str(model)) if model else PRESETS["minilm"]
    if str(preset).strip().lower() in ("", "none", "off"):
        return None
    return get_preset(str(preset))


def _pooling(label: str, pooling: str | None) -> str | None:
    if pooling is not None and pooling not in POOLINGS:
        raise HarnessError(f"{label}: pooling must be one of {', '.join(POOLINGS)}, not {pooling!r}")
    return pooling


def _batch_size(label: str, batch_size: Any) -> int:
    try:
        size = int(batch_size)
    except (TypeError, ValueError):
        raise HarnessError(f"{label}: batch_size must be a positive integer, not {batch_size!r}") from None
    if size < 1:
        raise HarnessError(f"{label}: batch_size must be a positive integer, not {batch_size!r}")
    return size


class DenseEncoder:
    """Model resolution, prompt templates, the embedding cache and encoding, shared by
    :class:`~harness.retrievers.dense.retriever.DenseRetriever` and :class:`~harness.rerankers.dense.DenseReranker`
    (and plugins such as nv-embed)."""

    def __init__(
        self,
        model: str | None = None,
        preset: str | Preset | None = None,
        batch_size: int = 64,
        normalize: bool | None = None,
        query_prompt: str | None = None,
        doc_prompt: str | None = None,
        instruction: str | None = None,
        device: str | None = None,
        cache: bool = True,
        cache_dir: str | None = None,
        max_length: int | None = None,
        revision: str | None = None,
        trust_remote_code: bool | None = None,
        padding_side: str | None = None,
        dtype: str | None = None,
        local_files_only: bool = False,
        show_progress: bool | None = None,
        query_model: str | None = None,
        doc_model: str | None = None,
        pooling: str | None = None,
        label: str = "dense",
        context: ComponentContext | None = None,
    ):
        self.label = label
        model = _doc_model(label, model, doc_model)
        self.progress_settings = getattr(context, "progress", None)
        self.preset: Preset | None = _resolve_preset(preset, model)
        p = self.preset
        self.model_name = str(model or (p.model if p else DEFAULT_MODEL))
        self.pooling = _pooling(label, pooling if pooling is not None else (p.pooling_mode if p else None))
        if query_model is None and model is None and p is not None:
            query_model = p.query_model
        self.query_model = query_model if query_model not in (None, self.model_name) else None
        self.batch_size = _batch_size(label, batch_size)
        if max_length is not None and (not isinstance(max_length, int) or max_length < 1):
            raise HarnessError(f"{label}: max_length must be a positive integer, not {max_length!r}")
        self.instruction = instruction if instruction is not None else (p.instruction if p else "")
        self._query_prompt, self._doc_prompt = query_prompt, doc_prompt
        self._normalize_arg = normalize
        self.device = device
        self.use_cache = bool(cache)
        if cache_dir is None and context is not None:  # the evaluation's cache root
            cache_dir = str(Path(context.cache_dir) / "embeddings")
        self.cache_dir = cache_dir
        self.max_length = max_length if max_length is not None else (p.max_length if p else None)
        self.revision = revision
        self.trust_remote_code = bool(trust_remote_code if trust_remote_code is not None
                                      else (p.trust_remote_code if p else False))
        self.padding_side = padding_side if padding_side is not None else (p.padding_side if p else None)
        self.include_prompt = p.include_prompt if p else None
        self.dtype = dtype
        self.local_files_only = bool(local_files_only)
        self.show_progress = show_progress
        self._resolve_model()
        self._reset_state()
        # a separate query encoder (DPR): the same settings and templates, its own weights and cache
        self.query_encoder: DenseEncoder | None = None
        if self.query_model is not None:
            self.query_encoder = DenseEncoder(
                model=self.query_model, preset=p if p is not None else "none", batch_size=batch_size,
                normalize=normalize, query_prompt=query_prompt, doc_prompt=doc_prompt, instruction=instruction,
                device=device, cache=cache, cache_dir=self.cache_dir, max_length=max_length, revision=revision,
                trust_remote_code=trust_remote_code, padding_side=padding_side, dtype=dtype,
                local_files_only=local_files_only, show_progress=show_progress, pooling=self.pooling,
                label=f"{label} (queries)", context=context)

    def _resolve_model(self) -> None:
        """Find the model on this machine (or check the hub has it), read its info, set the templates and
        the normalization default."""
        self.packaged = False
        self.local_dir = self._locate()
        self.info: dict[str, Any] = model_info(self.local_dir) if self.local_dir else {}
        self.query_template, self.doc_template, self.prompt_source = self._templates()
        self.normalize = self._normalize_default()
        if self.local_dir is None:
            if self.local_files_only or weights.hub_offline():
                raise self._unavailable()
            self._probe_hub()
        if self.preset is None and "nv-embed" in self.model_name.lower():
            log.warning("%s: %s needs its own instruction format; use the nv-embed plugin "
                        "(--retriever plugin:nv-embed)", self.label, self.model_name)

    def _reset_state(self) -> None:
        """No model loaded yet, nothing encoded."""
        self._model: Any = None
        self._identity: dict[str, Any] | None = None
        self._cache: EmbeddingCache | None = None
        self.dimension: int | None = self.info.get("dimension")  # declared; replaced by what is seen
        self._dim_seen: int | None = None
        self.encoded = self.cache_hits = 0
        self.load_seconds = self.encode_seconds = 0.0

    # -- resolution -----------------------------------------------------------------------------
    def _locate(self) -> Path | None:
        """The model's folder on this machine, found without network access, or None."""
        name = self.model_name
        if name.strip().lower() in DEFAULT_ALIASES and self.revision is None:
            path = packaged_model_path()
            if path is not None:
                self.packaged = True
                self.model_name = DEFAULT_MODEL
                return path
        return weights.find(name, self.revision, self.label)

    def _probe_hub(self) -> None:
        """One quick request (no retries) before a download, so an unreachable hub or a wrong name
        fails at once instead of after the download's retry back-off."""
        try:
            from huggingface_hub import HfApi
            from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError
        except ImportError:
            return
        try:
            HfApi().model_info(self.model_name, revision=self.revision, timeout=15)
        except GatedRepoError as exc:
            raise HarnessError(f"{self.label}: model {self.model_name!r} is gated on the Hugging Face Hub: "
                               f"accept its terms on the model page and log in (`hf auth login` or HF_TOKEN), "
                               f"or pass model=/local/path/to/model") from exc
        except RevisionNotFoundError as exc:
            raise HarnessError(f"{self.label}: model {self.model_name!r} has no revision {self.revision!r}") from exc
        except RepositoryNotFoundError as exc:
            raise HarnessError(f"{self.label}: no model {self.model_name!r} on the Hugging Face Hub (private "
                               f"models need `hf auth login` or HF_TOKEN); check the name or pass "
                               f"model=/local/path/to/model (a sentence-transformers folder)") from exc
        except Exception as exc:  # network errors of whichever HTTP client the hub library uses
            raise self._unavailable(exc) from exc

    def _unavailable(self, cause: BaseException | None = None) -> HarnessError:
        why = weights.downloads_off(self.local_files_only) or "the Hugging Face Hub cannot be reached"
        preset = f" (preset {self.preset.name!r})" if self.preset else ""
        return weights.unavailable(self.label, self.model_name, why, preset, cause)

    def _templates(self) -> tuple[str, str, str]:
        p = self.preset
        query, doc = p.templates(self.instruction) if p else ("{text}", "{text}")
        source = f"preset:{p.name}" if p else "none"
        if p is None and self._query_prompt is None and self._doc_prompt is None:
            prompts = self.info.get("prompts") or {}
            default = prompts.get(self.info.get("default_prompt_name") or "", "")
            q = prompts.get("query", default)
            d = next((prompts[n] for n in _DOC_PROMPT_NAMES if n in prompts), default)
            if q or d:
                query, doc, source = _as_template(q), _as_template(d), "model config"
        if self._query_prompt is not None:
            query, source = _as_template(self._query_prompt).replace("{instruction}", self.instruction), "explicit"
        if self._doc_prompt is not None:
            doc, source = _as_template(self._doc_prompt).replace("{instruction}", self.instruction), "explicit"
        return query, doc, source

    def _normalize_default(self) -> bool:
        if self._normalize_arg is not None:
            return bool(self._normalize_arg)
        if self.preset is not None:
            return self.preset.normalize
        return str(self.info.get("similarity") or "cosine").lower() != "dot"

    def identity(self) -> dict[str, Any]:
        """Model identity for cache keys and results: name, revision, weight fingerprint, settings."""
        if self._identity is None:
            if self.local_dir is None:
                self.load()  # downloads it; sets local_dir when it lands in the hub cache
            revision = self.revision
            if self.packaged:
                from importlib import metadata

                try:
                    revision = f"{PACKAGE}=={metadata.version(PACKAGE)}"
                except metadata.PackageNotFoundError:
                    revision = PACKAGE
            elif self.local_dir is not None and self.local_dir.parent.name == "snapshots":
                revision = self.local_dir.name  # the hub commit hash
            fingerprint = weights.fingerprint_dir(self.local_dir) if self.local_dir else self._weights_fingerprint()
            name = self.model_name
            if self.local_dir is not None and Path(name).expanduser().is_dir():
                name = self.local_dir.name  # the same folder copied elsewhere keeps its cache
            self._identity = {
                "model": name, "revision": revision, "fingerprint": fingerprint,
                "max_length": self.max_length, "include_prompt": self.include_prompt,
                "padding_side": self.padding_side, "dtype": self.dtype,
            }
            if self.pooling is not None:  # only when set: the identities of other models stay as they were
                self._identity["pooling"] = self.pooling
            if self.query_encoder is not None:
                q = self.query_encoder.identity()
                self._identity.update(query_model=q["model"], query_fingerprint=q["fingerprint"])
        return self._identity

    def _weights_fingerprint(self) -> str:
        """Fallback fingerprint from the loaded parameters when no folder is known."""
        h = hashlib.sha256()
        params = list(self.load().state_dict().items())
        for key, tensor in params[:3] + params[-3:]:
            h.update(f"{key}{tuple(tensor.shape)}".encode())
            h.update(tensor.detach().flatten()[:4096].float().cpu().numpy().tobytes())
        return h.hexdigest()[:32]

    @property
    def cache(self) -> EmbeddingCache | None:
        if self.use_cache and self._cache is None:
            self._cache = EmbeddingCache(self.identity(), self.cache_dir)
        return self._cache if self.use_cache else None

    # -- loading --------------------------------------------------------------------------------
    def load(self) -> Any:
        """The SentenceTransformer, loaded on first use (shared between instances with equal settings)."""
        if self._model is not None:
            return self._model
        source = str(self.local_dir) if self.local_dir else self.model_name
        key = (source, self.revision, self.device, self.trust_remote_code, self.max_length,
               self.padding_side, self.include_prompt, self.dtype, self.pooling)
        model = _LOADED.get(key)
        if model is None:
            model = self._load_new(source)
            _LOADED[key] = model
        self._model = model
        if self.local_dir is None:  # just downloaded: read what the folder declares, as for a local one
            self.local_dir = weights.cached_snapshot(self.model_name, self.revision)
            if self.local_dir is not None:
                self.info = model_info(self.local_dir)
                self.query_template, self.doc_template, self.prompt_source = self._templates()
                self.normalize = self._normalize_default()
        self.dimension = self._dim_seen or model_dimension(model) or self.dimension
        return model

    def _load_new(self, source: str) -> Any:
        if self.pooling is not None:
            return self._load_pooled(source)
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise HarnessError(f"{self.label}: sentence-transformers is not installed "
                               f"(pip install sentence-transformers): {exc}") from exc
        kwargs: dict[str, Any] = {"device": self.device, "trust_remote_code": self.trust_remote_code}
        if self.local_dir is not None:
            kwargs["local_files_only"] = True  # never probe the hub for a folder we already have
        else:
            kwargs.update(revision=self.revision, local_files_only=self.local_files_only or weights.hub_offline())
        if self.dtype:
            import transformers

            dtype_key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
            kwargs["model_kwargs"] = {dtype_key: self.dtype}
        t = time.perf_counter()
        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()  # the weight-loading bar is noise; encoding shows its own
            model = SentenceTransformer(source, **kwargs)
        except HarnessError:
            raise
        except Exception as exc:
            raise self._load_error(exc) from exc
        self.load_seconds += time.perf_counter() - t
        self._configure(model)
        return model

    def _load_pooled(self, source: str) -> Any:
        """The model with the pooling named (:mod:`harness.retrievers.dense.pooled`), through transformers."""
        kwargs: dict[str, Any] = {"trust_remote_code": self.trust_remote_code,
                                  "local_files_only": self.local_dir is not None or self.local_files_only
                                  or weights.hub_offline()}
        if self.local_dir is None and self.revision:
            kwargs["revision"] = self.revision
        if self.dtype:
            import torch
            import transformers

            key = "dtype" if int(transformers.__version__.split(".")[0]) >= 5 else "torch_dtype"
            kwargs[key] = "auto" if self.dtype == "auto" else getattr(torch, self.dtype)
        t = time.perf_counter()
        try:
            model = PooledEncoder(source, self.pooling or "mean", device=self.device, **kwargs)
        except HarnessError:
            raise
        except Exception as exc:
            raise self._load_error(exc) from exc
        self.load_seconds += time.perf_counter() - t
        if self.max_length is not None:
            model.max_seq_length = min(self.max_length, model.max_seq_length or self.max_length)
        if self.padding_side:
            model.tokenizer.padding_side = self.padding_side
        return model

    def _load_error(self, exc: BaseException) -> HarnessError:
        text = f"{type(exc).__name__}: {exc}"
        low = text.lower()
        missing = ("couldn't connect", "could not connect", "cannot find", "not found", "localentrynotfound",
                   "offline", "connecterror", "connection", "does not appear to have", "repositorynotfound",
                   "gated", "401", "404")
        if self.local_dir is None and any(m in low for m in missing):
            return self._unavailable(exc)
        if "trust_remote_code" in low:
            return HarnessError(f"{self.label}: model {self.model_name!r} runs custom code; pass "
                                f"trust_remote_code=true if you trust it. ({text.splitlines()[0][:300]})")
        return HarnessError(f"{self.label}: could not load model {self.model_name!r}: {text.splitlines()[0][:500]}")

    def _configure(self, model: Any) -> None:
        if self.max_length is not None:
            limit = position_limit(model)
            if limit is not None and self.max_length > limit:
                log.warning("%s: max_length %d exceeds what %s supports; using %d",
                            self.label, self.max_length, self.model_name, limit)
            model.max_seq_length = min(self.max_length, limit) if limit else self.max_length
        if self.padding_side and getattr(model, "tokenizer", None) is not None:
            model.tokenizer.padding_side = self.padding_side
        if self.include_prompt is not None:
            for module in model:
                if hasattr(module, "include_prompt"):
                    module.include_prompt = self.include_prompt

    # -- encoding -------------------------------------------------------------------------------
    def template(self, role: str) -> str:
        if role not in ("query", "document"):
            raise ValueError(f"role must be 'query' or 'document', not {role!r}")
        return self.query_template if role == "query" else self.doc_template

    def embed(self, texts: Sequence[str], role: str) -> np.ndarray:
        """float32 ``[len(texts), dim]`` embeddings (L2-normalised when ``normalize``), cached."""
        if role == "query" and self.query_encoder is not None:
            return self.query_encoder.embed(texts, role)
        unique = list(dict.fromkeys(texts))
        vecs, found = self.lookup(unique, role)
        todo = np.flatnonzero(~found)
        if len(todo):
            new = self.encode_raw([unique[i] for i in todo], role, store=True)
            if vecs.shape[1] != new.shape[1]:  # dimension was unknown (or the cache disagreed)
                if found.any():
                    log.warning("%s: cached vectors have dimension %d, the model gives %d; re-encoding",
                                self.label, vecs.shape[1], new.shape[1])
                    found[:] = False
                    todo = np.arange(len(unique))
                    new = self.encode_raw(unique, role, store=True)
                vecs = np.zeros((len(unique), new.shape[1]), dtype=np.float32)
            vecs[todo] = new
        vecs = self.finish(vecs)
        if len(unique) == len(texts):
            return vecs
        pos = {t: i for i, t in enumerate(unique)}
        return vecs[[pos[t] for t in texts]]

    # the steps of embed(), for executors that encode elsewhere (a Ray actor) what the cache lacks
    def lookup(self, texts: Sequence[str], role: str) -> tuple[np.ndarray, np.ndarray]:
        """``(raw vectors, found mask)`` of ``texts`` in the embedding cache (all missing without one);
        counts the hits."""
        if role == "query" and self.query_encoder is not None:
            return self.query_encoder.lookup(texts, role)
        if self.local_dir is None:
            self.load()  # a model still to download: its own config may set the prompts
        cache = self.cache
        if cache is None:
            return np.zeros((len(texts), 0), dtype=np.float32), np.zeros(len(texts), dtype=bool)
        template = self.template(role)
        vecs, found = cache.lookup([text_key(role, template, t) for t in texts], self._dim_seen)
        self.cache_hits += int(found.sum())
        return vecs, found

    def encode_raw(self, texts: list[str], role: str, store: bool = False) -> np.ndarray:
        """float32 vectors as the model gives them (not normalised); ``store``: into the cache too."""
        if role == "query" and self.query_encoder is not None:
            return self.query_encoder.encode_raw(texts, role, store)
        template = self.template(role)
        keys = [text_key(role, template, t) for t in texts] if store and self.cache is not None else None
        return self._encode(texts, template, keys)

    def store(self, texts: Sequence[str], role: str, vectors: np.ndarray) -> None:
        """Put raw vectors encoded elsewhere into the embedding cache (no-op without one)."""
        if role == "query" and self.query_encoder is not None:
            return self.query_encoder.store(texts, role, vectors)
        if self.cache is not None and len(texts):
            template = self.template(role)
            self.cache.put([text_key(role, template, t) for t in texts], np.asarray(vectors, dtype=np.float32))

    def finish(self, vecs: np.ndarray) -> np.ndarray:
        """Raw vectors as :meth:`embed` returns them: float32, L2-normalised when ``normalize``."""
        vecs = np.asarray(vecs, dtype=np.float32)
        if vecs.shape[1]:
            self._dim_seen = self.dimension = int(vecs.shape[1])
        if self.normalize:
            vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return vecs

    def _encode(self, texts: list[str], template: str, keys: list[bytes] | None) -> np.ndarray:
        model = self.load()
        eos = getattr(getattr(model, "tokenizer", None), "eos_token", None) or ""
        prefix, suffix = split_template(template, eos)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        batch = self.batch_size
        chunk = max(16 * batch, 512) // batch * batch  # cache writes: one transaction per chunk
        # progress advances per encoded batch: a terminal bar for large jobs (or when asked), a plain
        # line every $HARNESS_PROGRESS_INTERVAL seconds in a log; HARNESS_PROGRESS=0 shows nothing
        bar = progress(len(texts), f"{self.label}: encoding", settings=self.progress_settings, unit="text",
                       leave=True, enabled=self.show_progress is not False,
                       min_total=0 if self.show_progress else chunk + 1)
        out: np.ndarray | None = None
        t = time.perf_counter()
        try:
            for start in range(0, len(order), chunk):
                idx = order[start:start + chunk]
                parts = []
                for b in range(0, len(idx), batch):  # one model call per batch, so progress is per batch
                    emb = model.encode([texts[i] + suffix for i in idx[b:b + batch]], prompt=prefix,
                                       batch_size=batch, convert_to_numpy=True, normalize_embeddings=False,
                                       show_progress_bar=False)
                    parts.append(np.asarray(emb, dtype=np.float32).reshape(len(idx[b:b + batch]), -1))
                    bar.update(len(parts[-1]))
                emb = np.concatenate(parts) if len(parts) > 1 else parts[0]
                if out is None:
                    out = np.zeros((len(texts), emb.shape[1]), dtype=np.float32)
                out[idx] = emb
                self.encoded += len(idx)
                if keys is not None and self.cache is not None:
                    self.cache.put([keys[i] for i in idx], emb)
        finally:
            bar.close()
            self.encode_seconds += time.perf_counter() - t
        assert out is not None
        return out

    # -- reporting ------------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """The constructor arguments that decide what a text's embedding is (not where or how fast it
        is computed): an index records them, to encode queries as its documents were."""
        return {"model": self.model_name, "preset": self.preset.name if self.preset else "none",
                "query_prompt": self._query_prompt, "doc_prompt": self._doc_prompt, "instruction": self.instruction,
                "normalize": self.normalize, "max_length": self.max_length, "revision": self.revision,
                "trust_remote_code": self.trust_remote_code, "padding_side": self.padding_side, "dtype": self.dtype,
                **({"pooling": self.pooling} if self.pooling is not None else {}),
                **({"query_model": self.query_model} if self.query_model is not None else {})}


    def stats(self) -> dict[str, Any]:
        out: dict[str, Any] = {"encoded": self.encoded, "cache_hits": self.cache_hits,
                               "model_loaded": self._model is not None,
                               "load_seconds": round(self.load_seconds, 3),
                               "encode_seconds": round(self.encode_seconds, 3)}
        if self._cache is not None:
            out["cache_corrupt"] = self._cache.corrupt
        if self.query_encoder is not None:
            out["query_encoder"] = self.query_encoder.stats()
            out["encoded"] += out["query_encoder"]["encoded"]
            out["cache_hits"] += out["query_encoder"]["cache_hits"]
        return out

    def config(self) -> dict[str, Any]:
        """Model identity, prompts and settings, for results.json (no model load when on disk)."""
        ident = self.identity() if (self.local_dir is not None or self._model is not None) else {}
        pooling = self.info.get("pooling") or (model_pooling(self._model) if self._model is not None else None)
        return {
            "model": self.model_name,
            "model_path": str(self.local_dir) if self.local_dir else None,
            "packaged_weights": self.packaged,
            "revision": ident.get("revision", self.revision),
            "fingerprint": ident.get("fingerprint"),
            "preset": self.preset.name if self.preset else None,
            "query_template": self.query_template,
            "doc_template": self.doc_template,
            "prompt_source": self.prompt_source,
            "instruction": self.instruction,
            "normalize": self.normalize,
            "similarity": "cosine" if self.normalize else "dot",
            "pooling": self.pooling or pooling or (self.preset.pooling if self.preset else None),
            "query_model": self.query_model,
            "dimension": self.dimension,
            "max_length": self.max_length,
            "batch_size": self.batch_size,
            "device": self.device,
            "dtype": self.dtype,
            "trust_remote_code": self.trust_remote_code,
            "cache": str(self.cache.path) if ident and self.cache is not None else None,
        }
