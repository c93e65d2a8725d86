"""``cross-encoder``: any sequence-classification checkpoint through sentence-transformers'
``CrossEncoder``, scored as its model card prescribes.

- One-label models (``cross-encoder/ms-marco-MiniLM-L6-v2``, the mMARCO cross-encoder,
  ``BAAI/bge-reranker-v2-m3``): ``activation=default`` gives exactly what ``CrossEncoder.predict``
  returns for the checkpoint (the activation its config declares: the raw logit for the ms-marco
  cards); ``identity`` forces the raw logit (FlagEmbedding's ``compute_score`` default for BGE
  rerankers), ``sigmoid`` its sigmoid.
- Two-label models, monoBERT (``preset=monobert``: ``castorini/monobert-large-msmarco``): the
  log-softmax of the last label, as pygaggle's ``MonoBERT.rescore`` computes it, 512 tokens.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from harness.concepts.errors import HarnessError
from harness.rerankers.model_base import ModelReranker
from harness.runtime.extras import require

ACTIVATIONS = ("default", "identity", "sigmoid", "log-softmax")
PRESETS: Mapping[str, dict[str, Any]] = MappingProxyType({
    "ms-marco-minilm": {"model": "cross-encoder/ms-marco-MiniLM-L6-v2", "activation": "default"},
    "mmarco": {"model": "cross-encoder/mmarco-mMiniLMv2-L12-H384-v1", "activation": "default"},
    "bge-reranker": {"model": "BAAI/bge-reranker-v2-m3", "activation": "identity"},
    "monobert": {"model": "castorini/monobert-large-msmarco", "activation": "log-softmax", "max_length": 512},
})


class CrossEncoderReranker(ModelReranker):
    """``cross-encoder[:model=...,preset=...,activation=...]``; see the module docstring. Other options:
    :class:`~harness.rerankers.model_base.ModelReranker`'s."""

    default_model = PRESETS["ms-marco-minilm"]["model"]
    label = "cross-encoder"
    extra = "dense"
    default_batch_size = 32

    def __init__(self, model: str | None = None, preset: str | None = None, activation: str | None = None,
                 max_length: int | None = None, **options: Any) -> None:
        chosen: dict[str, Any] = {}
        if preset is not None:
            if preset not in PRESETS:
                raise HarnessError(f"cross-encoder: unknown preset {preset!r} (known: {', '.join(PRESETS)})")
            chosen = PRESETS[preset]
        self.preset = preset
        self.activation = activation or chosen.get("activation", "default")
        if self.activation not in ACTIVATIONS:
            raise HarnessError(f"cross-encoder: activation must be one of {', '.join(ACTIVATIONS)}, "
                               f"not {self.activation!r}")
        super().__init__(model=model or chosen.get("model"), max_length=max_length or chosen.get("max_length"),
                         **options)

    def require(self) -> None:
        require("sentence_transformers", "dense", "reranker 'cross-encoder'")

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "activation": self.activation}

    def _load(self) -> Any:
        from sentence_transformers import CrossEncoder

        kwargs = self.load_kwargs()
        model_kwargs = {k: v for k, v in kwargs.items() if k in ("dtype", "torch_dtype")}
        return CrossEncoder(str(self.folder()), device=self.torch_device(), max_length=self.max_length,
                            local_files_only=True, model_kwargs=model_kwargs or None)

    def _compute(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        import torch

        model = self.model()
        kwargs: dict[str, Any] = {}
        if self.activation != "default":
            kwargs["activation_fn"] = torch.nn.Sigmoid() if self.activation == "sigmoid" else torch.nn.Identity()
        out = np.asarray(model.predict([list(p) for p in pairs], batch_size=len(pairs), convert_to_numpy=True,
                                       show_progress_bar=False, **kwargs), dtype=np.float64)
        if out.ndim == 2 and out.shape[1] > 1:
            if self.activation not in ("log-softmax", "default"):
                raise HarnessError(f"cross-encoder: {self.model_name} has {out.shape[1]} labels; use "
                                   f"activation=log-softmax (the log-softmax of the last label, pygaggle's monoBERT)")
            if self.activation == "default":  # predict's own activation first, then the monoBERT rule
                out = np.asarray(model.predict([list(p) for p in pairs], batch_size=len(pairs),
                                               convert_to_numpy=True, show_progress_bar=False,
                                               activation_fn=torch.nn.Identity()), dtype=np.float64)
            shifted = out - out.max(axis=1, keepdims=True)
            return shifted[:, -1] - np.log(np.exp(shifted).sum(axis=1))
        if self.activation == "log-softmax":
            raise HarnessError(f"cross-encoder: activation=log-softmax needs a model with two labels; "
                               f"{self.model_name} has one")
        return out.reshape(-1)


__all__ = ["ACTIVATIONS", "PRESETS", "CrossEncoderReranker"]
