"""``tart``: TART-full (``facebook/tart-full-flan-t5-xl``; Asai et al. 2023), as the TART release runs it
(github facebookresearch/tart @4ed5fcb: ``TART/src/modeling_enc_t5.py``, ``tokenization_enc_t5.py``,
``TART/src/rerank.py``, the README's example):

- the model is ``EncT5ForSequenceClassification``: the T5 encoder, the hidden state of the first token
  (``<s>``), a linear classifier over two labels (reproduced here, no remote code);
- the input pair is ``{instruction} [SEP] {query}`` and the document (``title text``), built as EncT5Tokenizer
  builds a pair: ``<s> A </s> B </s>``, ``truncation=True`` (longest first) at ``max_length`` 512;
- the score is the probability of the positive label, ``softmax(logits)[1]``.

The instruction is ``instruction=`` when given, else the query's own (``Query.instruction``, with the raw
query text from ``meta["query"]``), else none: then the query alone, as ``rerank.py`` does without a prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.query import Query
from harness.rerankers.model_base import ModelReranker


def truncate_longest_first(a: list[int], b: list[int], remove: int) -> tuple[list[int], list[int]]:
    """transformers' ``longest_first``: one token at a time from the end of the longer sequence (the
    second on a tie)."""
    a, b = list(a), list(b)
    for _ in range(max(0, remove)):
        if len(a) > len(b):
            a.pop()
        elif b:
            b.pop()
    return a, b


def enc_t5_class() -> Any:
    """``EncT5ForSequenceClassification`` of the TART release (inference part), built on first use."""
    import copy

    from torch import nn
    from transformers.models.t5.modeling_t5 import T5EncoderModel, T5PreTrainedModel, T5Stack

    class EncT5ForSequenceClassification(T5PreTrainedModel):
        _keys_to_ignore_on_load_missing = [r"encoder\.embed_tokens\.weight"]
        _tied_weights_keys = T5EncoderModel._tied_weights_keys  # encoder.embed_tokens is shared

        def __init__(self, config: Any, dropout: float = 0.1) -> None:
            super().__init__(config)
            self.num_labels = config.num_labels
            self.shared = nn.Embedding(config.vocab_size, config.d_model)
            encoder_config = copy.deepcopy(config)
            encoder_config.use_cache = False
            encoder_config.is_encoder_decoder = False
            try:
                self.encoder = T5Stack(encoder_config, self.shared)  # transformers 4
            except TypeError:  # transformers 5: the stack makes its embedding, tied to ``shared``
                self.encoder = T5Stack(encoder_config)
                self.encoder.set_input_embeddings(self.shared)
            self.dropout = nn.Dropout(dropout)
            self.classifier = nn.Linear(config.hidden_size, config.num_labels)
            self.post_init()

        def get_input_embeddings(self) -> Any:
            return self.shared

        def set_input_embeddings(self, new: Any) -> None:
            self.shared = new
            self.encoder.set_input_embeddings(new)

        def forward(self, input_ids: Any = None, attention_mask: Any = None, **_: Any) -> Any:
            hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, return_dict=True)[0]
            return self.classifier(self.dropout(hidden[:, 0, :]))  # the <s> token

    return EncT5ForSequenceClassification


class TartReranker(ModelReranker):
    """``tart[:model=...,instruction=...]``; see the module docstring."""

    default_model = "facebook/tart-full-flan-t5-xl"
    label = "tart"
    default_batch_size = 8

    def __init__(self, model: str | None = None, instruction: str | None = None, max_length: int | None = None,
                 **options: Any) -> None:
        self.instruction = instruction
        super().__init__(model=model, max_length=max_length or 512, **options)

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "format": "<s> {instruction} [SEP] {query} </s> {document} </s>",
                "instruction": self.instruction, "score": "softmax(logits)[1]"}

    def pair(self, query: Query, doc: Document) -> tuple[str, str]:
        instruction = self.instruction if self.instruction is not None else query.instruction
        text = str(query.meta.get("query", query.text)) if (query.instruction and self.instruction is None) \
            else query.text
        first = f"{instruction} [SEP] {text}" if instruction else text
        return first, doc.full_text()

    def _load(self) -> Any:
        from transformers import AutoTokenizer, T5TokenizerFast

        folder = str(self.folder())
        try:
            tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        except (ValueError, OSError, AttributeError):  # tokenizer_class EncT5Tokenizer: the T5 tokenizer it extends
            tok = T5TokenizerFast.from_pretrained(folder, local_files_only=True)
        bos = tok.convert_tokens_to_ids("<s>")
        if bos is None or bos == tok.unk_token_id or tok.eos_token_id is None:
            raise HarnessError(f"tart: the tokenizer of {self.model_name} has no <s> or </s> token (EncT5Tokenizer's)")
        model = enc_t5_class().from_pretrained(folder, **self.load_kwargs()).to(self.torch_device()).eval()
        return model, tok, bos

    def _compute(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        import torch

        model, tok, bos = self.model()
        eos, pad = tok.eos_token_id, tok.pad_token_id if tok.pad_token_id is not None else 0
        rows = []
        for a_text, b_text in pairs:
            a = tok(a_text, add_special_tokens=False)["input_ids"]
            b = tok(b_text, add_special_tokens=False)["input_ids"]
            a, b = truncate_longest_first(a, b, len(a) + len(b) + 3 - self.max_length)
            rows.append([bos, *a, eos, *b, eos])
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], device=model.device)
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], device=model.device)
        with torch.no_grad():
            logits = model(input_ids=ids, attention_mask=mask)
        return torch.softmax(logits.double(), dim=1)[:, 1].cpu().numpy()


__all__ = ["TartReranker", "enc_t5_class", "truncate_longest_first"]
