"""A bi-encoder with the pooling named explicitly (``dense:pooling=cls|pooler|mean|last-token``), as the
PIR code and the DPR/SimCSE/Contriever releases pool, whatever the checkpoint's sentence-transformers
config says: ``transformers``' ``AutoModel`` and its tokenizer, no sentence-transformers modules.

- ``cls``: the last hidden state of the first token;
- ``pooler``: the model's ``pooler_output`` (BERT/SimCSE: CLS -> dense -> tanh; DPR: the CLS vector,
  projected when the checkpoint has a projection);
- ``mean``: the mean of the last hidden states over the attended tokens (Contriever's ``mean_pooling``);
- ``last-token``: the last attended token (right or left padding).

It answers the few calls the dense encoder makes of a SentenceTransformer (``encode``, ``tokenizer``,
``max_seq_length``, the embedding dimension, ``state_dict``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

POOLINGS = ("cls", "pooler", "mean", "last-token")


class PooledEncoder:
    """``source``: a folder or hub id; loading arguments as ``from_pretrained`` takes them."""

    def __init__(self, source: str, pooling: str, device: str | None = None, **load: Any) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {', '.join(POOLINGS)}, not {pooling!r}")
        self.pooling = pooling
        tok_args = {k: v for k, v in load.items() if k in ("revision", "local_files_only", "trust_remote_code")}
        self.tokenizer = AutoTokenizer.from_pretrained(source, **tok_args)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.model = _model_class(source, tok_args, AutoModel).from_pretrained(source, **load).to(self.device).eval()
        limit = getattr(self.model.config, "max_position_embeddings", None)
        self.max_seq_length: int | None = min(limit, self.tokenizer.model_max_length) if limit else None

    def __iter__(self) -> Iterator[Any]:  # no sentence-transformers modules
        return iter(())

    def get_sentence_embedding_dimension(self) -> int | None:
        cfg = self.model.config
        return getattr(cfg, "projection_dim", 0) or getattr(cfg, "hidden_size", None)

    def state_dict(self) -> Any:
        return self.model.state_dict()

    def encode(self, texts: Sequence[str], prompt: str | None = None, batch_size: int = 32, **_: Any) -> np.ndarray:
        out = [self._batch([(prompt or "") + t for t in texts[i:i + batch_size]])
               for i in range(0, len(texts), batch_size)]
        return np.concatenate(out) if out else np.zeros((0, self.get_sentence_embedding_dimension() or 0))

    def _batch(self, texts: list[str]) -> np.ndarray:
        import torch

        enc = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_seq_length,
                             return_tensors="pt").to(self.device)
        with torch.no_grad():
            out = self.model(**enc)
        return pool(out, enc["attention_mask"], self.pooling).float().cpu().numpy()


def _model_class(source: str, args: dict[str, Any], auto: Any) -> Any:
    """``AutoModel``, except for DPR checkpoints: their config names the encoder (question or context),
    which ``AutoModel`` does not follow (it would load a context encoder as a question encoder)."""
    import transformers
    from transformers import AutoConfig

    arch = (getattr(AutoConfig.from_pretrained(source, **args), "architectures", None) or [""])[0]
    if arch in ("DPRQuestionEncoder", "DPRContextEncoder"):
        return getattr(transformers, arch)
    return auto


def pool(outputs: Any, mask: Any, pooling: str) -> Any:
    """One vector per text from a model's ``outputs`` by ``pooling`` (see the module docstring)."""
    import torch

    if pooling == "pooler":
        vec = getattr(outputs, "pooler_output", None)
        if vec is None:
            raise ValueError("this model gives no pooler_output; use pooling=cls or mean")
        return vec
    hidden = outputs.last_hidden_state
    if pooling == "cls":
        return hidden[:, 0]
    if pooling == "mean":
        m = mask.unsqueeze(-1).to(hidden.dtype)
        return (hidden * m).sum(1) / m.sum(1).clamp(min=1e-9)
    last = torch.where(mask[:, -1].bool(), torch.full_like(mask[:, 0], mask.shape[1] - 1), mask.sum(1) - 1)
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


__all__ = ["POOLINGS", "PooledEncoder", "pool"]
