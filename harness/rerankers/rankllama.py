"""``rankllama``: RankLLaMA (``castorini/rankllama-v1-7b-lora-passage``; Ma et al. 2023, "Fine-Tuning LLaMA
for Multi-Stage Text Retrieval"), as its model card runs it
(https://huggingface.co/castorini/rankllama-v1-7b-lora-passage):

- the base model named by the adapter (``PeftConfig.base_model_name_or_path``: ``meta-llama/Llama-2-7b-hf``;
  ``base_model=`` to point at a local copy) loaded as ``AutoModelForSequenceClassification`` with one label,
  the LoRA adapter applied through ``peft`` and merged (``merge_and_unload``);
- the tokenizer of the base model, the pair ``query: {query}`` / ``document: {title} {text}</s>`` (the EOS
  the card writes at the end of the document);
- the score is the logit at the last token (``outputs.logits[0][0]``; in a batch, each pair's last token
  before the right padding).

Needs ``peft`` (the ``rankllama`` extra).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.query import Query
from harness.rerankers.model_base import ModelReranker
from harness.runtime import weights
from harness.runtime.extras import require


class RankLlamaReranker(ModelReranker):
    """``rankllama[:model=ADAPTER,base_model=...]``; see the module docstring."""

    default_model = "castorini/rankllama-v1-7b-lora-passage"
    label = "rankllama"
    extra = "rankllama"
    default_batch_size = 4

    def __init__(self, model: str | None = None, base_model: str | None = None, max_length: int | None = None,
                 **options: Any) -> None:
        super().__init__(model=model, max_length=max_length, **options)
        self.base_model = base_model or self._adapter_base()
        self.base_dir = self._locate(self.base_model)

    def require(self) -> None:
        super().require()
        require("peft", "rankllama", "reranker 'rankllama'")

    def _adapter_base(self) -> str:
        folder = self.folder()
        try:
            cfg = json.loads((folder / "adapter_config.json").read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise HarnessError(f"rankllama: {folder} has no readable adapter_config.json (a peft LoRA adapter): "
                               f"{exc}") from None
        base = cfg.get("base_model_name_or_path") if isinstance(cfg, dict) else None
        if not isinstance(base, str) or not base:
            raise HarnessError(f"rankllama: {folder}/adapter_config.json names no base model; pass base_model=")
        return base

    def extra_identity(self) -> dict[str, Any]:
        return {"base_model": Path(self.base_model).name if Path(self.base_model).is_dir() else self.base_model,
                "base_fingerprint": weights.fingerprint_dir(self._base_folder())}

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "format": ["query: {query}", "document: {title} {text}</s>"],
                "score": "logit of the last token"}

    def _base_folder(self) -> Path:
        if self.base_dir is None:
            self.base_dir = weights.download(self.base_model, self.revision, self.label)
        return self.base_dir

    def pair(self, query: Query, doc: Document) -> tuple[str, str]:
        return f"query: {query.text}", f"document: {doc.title} {doc.text}</s>"

    def _load(self) -> Any:
        from peft import PeftModel
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        base = str(self._base_folder())
        tok = AutoTokenizer.from_pretrained(base, local_files_only=True)
        if tok.pad_token_id is None:
            tok.pad_token = tok.unk_token or tok.eos_token
        tok.padding_side = "right"
        model = AutoModelForSequenceClassification.from_pretrained(base, num_labels=1, **self.load_kwargs())
        model = PeftModel.from_pretrained(model, str(self.folder()), local_files_only=True).merge_and_unload()
        model.config.pad_token_id = tok.pad_token_id
        return model.to(self.torch_device()).eval(), tok

    def _compute(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        import torch

        model, tok = self.model()
        kwargs: dict[str, Any] = {"truncation": True, "max_length": self.max_length} if self.max_length else {}
        enc = tok([q for q, _ in pairs], [d for _, d in pairs], padding=True, return_tensors="pt",
                  **kwargs).to(model.device)
        with torch.no_grad():
            hidden = model.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state
        last = enc["attention_mask"].sum(dim=1) - 1  # right padding: each pair's last token
        logits = model.score(hidden[torch.arange(len(pairs), device=hidden.device), last])
        return logits[:, 0].double().cpu().numpy()


__all__ = ["RankLlamaReranker"]
