"""``monot5``: castorini's monoT5 (and the mT5/ptT5 variants pygaggle lists), as pygaggle's
``MonoT5.rescore`` runs it (github castorini/pygaggle, ``pygaggle/rerank/transformer.py``,
``pygaggle/model/tokenize.py``, ``pygaggle/model/decode.py``):

- input ``Query: {query} Document: {document} Relevant:``, tokenized with padding to the longest
  and ``truncation=True`` at ``max_length`` 512: the whole string is cut from its end, so a long
  document loses its tail and ``Relevant:`` with it, exactly as pygaggle does;
- one decoding step from ``decoder_start_token_id``; the score is the log-softmax over the logits of
  the false and true tokens (``▁false``/``▁true``; ``▁no``/``▁yes`` and ``▁não``/``▁sim`` for the
  variants in pygaggle's table; ``token_false=``/``token_true=`` for others), taken at the true token.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from harness.concepts.errors import HarnessError
from harness.rerankers.model_base import ModelReranker

TEMPLATE = "Query: {query} Document: {document} Relevant:"
#: pygaggle's ``prediction_tokens`` (false, true) by checkpoint
PREDICTION_TOKENS: Mapping[str, tuple[str, str]] = MappingProxyType({
    **{f"castorini/monot5-{s}": ("▁false", "▁true") for s in (
        "base-msmarco", "base-msmarco-10k", "large-msmarco", "large-msmarco-10k", "base-med-msmarco",
        "3b-med-msmarco", "3b-msmarco-10k", "3b-msmarco")},
    **{f"unicamp-dl/{s}": ("▁no", "▁yes") for s in (
        "mt5-base-en-msmarco", "mt5-base-en-pt-msmarco-v2", "mt5-base-mmarco-v2", "mt5-base-en-pt-msmarco-v1",
        "mt5-base-mmarco-v1")},
    **{f"unicamp-dl/{s}": ("▁não", "▁sim") for s in (
        "ptt5-base-pt-msmarco-10k-v2", "ptt5-base-pt-msmarco-100k-v2", "ptt5-base-en-pt-msmarco-100k-v2",
        "ptt5-base-pt-msmarco-10k-v1", "ptt5-base-pt-msmarco-100k-v1", "ptt5-base-en-pt-msmarco-10k-v1")},
})


class MonoT5Reranker(ModelReranker):
    """``monot5[:model=castorini/monot5-3b-msmarco-10k,...]``; see the module docstring."""

    default_model = "castorini/monot5-base-msmarco-10k"
    label = "monot5"
    default_batch_size = 16

    def __init__(self, model: str | None = None, token_false: str | None = None, token_true: str | None = None,
                 max_length: int | None = None, **options: Any) -> None:
        super().__init__(model=model, max_length=max_length or 512, **options)
        known = PREDICTION_TOKENS.get(self.model_name, ("▁false", "▁true"))
        self.token_false, self.token_true = token_false or known[0], token_true or known[1]
        self._ids: tuple[int, int] | None = None

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "template": TEMPLATE, "tokens": [self.token_false, self.token_true]}

    def _load(self) -> Any:
        from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

        folder = str(self.folder())
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        vocab = tokenizer.get_vocab()
        missing = [t for t in (self.token_false, self.token_true) if t not in vocab]
        if missing:
            raise HarnessError(f"monot5: the tokenizer of {self.model_name} has no token {missing[0]!r}; "
                               f"pass token_false=/token_true=")
        self._ids = (vocab[self.token_false], vocab[self.token_true])
        model = AutoModelForSeq2SeqLM.from_pretrained(folder, **self.load_kwargs()).to(self.torch_device()).eval()
        return model, tokenizer

    def _compute(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        import torch

        model, tokenizer = self.model()
        texts = [TEMPLATE.format(query=q, document=d) for q, d in pairs]
        enc = tokenizer(texts, padding="longest", truncation=True, max_length=self.max_length,
                        return_tensors="pt").to(model.device)
        start = torch.full((len(texts), 1), model.config.decoder_start_token_id, dtype=torch.long,
                           device=model.device)
        with torch.no_grad():
            logits = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                           decoder_input_ids=start).logits[:, -1, :]
        two = logits[:, list(self._ids)].double()
        return torch.log_softmax(two, dim=1)[:, 1].cpu().numpy()


__all__ = ["PREDICTION_TOKENS", "TEMPLATE", "MonoT5Reranker"]
