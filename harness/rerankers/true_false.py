"""``true-false``: InfoSearch's pointwise LLM rerankers (``evaluation/models/rerankers/reranker_models.py``
of the InfoSearch code; prompts verbatim in ``../shared/papers/notes/infosearch_tables.md``): the prompt
``template=llama|mistral|followir`` filled with the task-formed query (``"{query} {instruction}"``) and
the document, and the score P(true) = softmax over the logits of the ``true`` and ``false`` tokens at
the position that follows the prompt exactly as written (the llama and followir templates end in a
space: the token scored is the one after it).

Three ways to run the model, the same scores:

- ``llm=SPEC`` (or the evaluation's ``--llm``), an OpenAI-compatible server or OpenAI: a raw completion
  (``/v1/completions``, :mod:`harness.llm.providers.completion`) through the LLM layer (cache, failure
  policy, usage), both tokens given the same ``logit_bias`` where the server's tokenizer endpoint gives
  their ids. A server whose log-probabilities come before the bias (llama-cpp-python) lists only the
  sampled one of the two: the other is asked for in a second request biased to it alone. Every request
  is a *fresh prompt* (``extra["fresh_prompt"]``): its score does not depend on what the server
  evaluated before (:mod:`harness.llm.providers.completion`; ``docs/rerankers.md``).
- ``llm=local`` (``local:path=FILE.gguf``): llama.cpp in this process, exact log-probabilities.
- ``model=ID_OR_FOLDER``: Hugging Face ``transformers`` in process (``AutoModelForCausalLM``; e.g.
  ``jhu-clsp/FollowIR-7B``), ``max_length`` 2048 as the released code.

**The missing-token rule.** When a reply still lacks one of the two tokens (an API without
``logit_bias`` and a top-k list that does not reach it), the missing token's log-probability is taken
as the smallest one listed (an upper bound; flag ``false_bounded`` or ``true_bounded``); when both are
missing P(true) is 0.5 (flag ``both_missing``). Each is counted per query in ``stats()["flags_per_query"]``,
never silent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np

from harness.concepts.component_context import ComponentContext
from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.query import Query
from harness.concepts.run import Run
from harness.context import Context
from harness.llm.pointwise import Item, PointwiseScorer
from harness.rerankers.model_base import ModelReranker, candidate_pairs, rank
from harness.served.types import user

TEMPLATES: Mapping[str, str] = MappingProxyType({
    "llama": "Determine if the following document is relevant to the query (true/false).\n\n"
             "Query: {query}\nDocument: {text}\nRelevant: ",
    "mistral": "<s>[INST] You are an expert Google searcher, whose job is to determine if the following document "
               "is relevant to the query (true/false).\n" + " " * 24 + "Query: {query}\n" + " " * 24
               + "Document: {text}\n" + " " * 24 + 'Relevant (either "true" or "false"): [/INST]',
    "followir": "<s> [INST] You are an expert Google searcher, whose job is to determine if the following "
                "document is relevant to the query (true/false). Answer using only one word, one of those two "
                'choices.\n\nQuery: {query}\nDocument: {text}\nRelevant (only output one word, either "true" or '
                '"false"): [/INST] ',
})
TRUE, FALSE = "true", "false"


def prompt(template: str, query: str, text: str) -> str:
    """The template filled in (values are inserted as they are: braces in them stay)."""
    return TEMPLATES[template].replace("{query}", query, 1).replace("{text}", text, 1)


def p_true(logit_true: float, logit_false: float) -> float:
    """softmax([false, true])[true], computed stably."""
    return 1.0 / (1.0 + math.exp(logit_false - logit_true))


def _template(name: str) -> str:
    if name not in TEMPLATES:
        raise HarnessError(f"true-false: template must be one of {', '.join(TEMPLATES)}, not {name!r}")
    return name


def true_false(template: str = "followir", llm: str | None = None, model: str | None = None,
               top_logprobs: int = 20, context: ComponentContext | None = None, **options: Any) -> Any:
    """The ``true-false`` reranker: ``model=`` runs transformers in process, otherwise ``llm=`` (or the
    evaluation's ``--llm``) through the LLM layer."""
    if model is not None:
        if llm is not None:
            raise HarnessError("true-false: pass llm= (an LLM endpoint or local) or model= (transformers), not both")
        return TransformersTrueFalse(model=model, template=template, context=context, **options)
    if options:
        raise HarnessError(f"true-false: {', '.join(sorted(options))} apply to model= (transformers) only")
    return LLMTrueFalse(template=template, llm=llm, top_logprobs=top_logprobs, context=context)


class LLMTrueFalse:
    """P(true) from raw completions through the LLM layer (see the module docstring)."""

    label = "true-false"

    def __init__(self, template: str = "followir", llm: str | None = None, top_logprobs: int = 20,
                 context: ComponentContext | None = None) -> None:
        self.template = _template(template)
        if isinstance(top_logprobs, bool) or not isinstance(top_logprobs, int) or not 2 <= top_logprobs <= 20:
            raise HarnessError(f"true-false: top_logprobs must be an integer from 2 to 20, not {top_logprobs!r}")
        self.top_logprobs = top_logprobs
        if context is None and llm is None:
            raise HarnessError("true-false: pass llm=SPEC (e.g. llm=local) or model=ID for transformers")
        self.client = Context.of(context).llm.client(llm, temperature=0)
        self.scorer = PointwiseScorer(self.client)

    def request(self, text: str, tokens: Sequence[str]) -> dict[str, Any]:
        return {"messages": [user(text)], "max_tokens": 1, "temperature": 0, "logprobs": True,
                "top_logprobs": self.top_logprobs,
                "extra": {"raw_prompt": True, "score_tokens": list(tokens), "fresh_prompt": True}}

    def rerank(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Run:
        keys = candidate_pairs(queries, run, corpus)
        texts = {k: prompt(self.template, queries[k[0]].text, corpus[k[1]].full_text()) for k in keys}
        first = self.scorer.score([Item(k, k[0], self.request(texts[k], (TRUE, FALSE))) for k in keys], _found)
        again = [Item((k, w), k[0], self.request(texts[k], (w,))) for k in keys if first[k].ok
                 for w in (TRUE, FALSE) if w not in first[k].value[0]]
        second = self.scorer.score(again, _found, prefix="second_") if again else {}
        scores: dict[tuple[str, str], float] = {}
        for k in keys:
            if not first[k].ok:  # no usable reply (transport failure, dry run): counted by the scorer
                scores[k] = 0.0
                continue
            found, floor = dict(first[k].value[0]), first[k].value[1]
            for w in (TRUE, FALSE):
                res = second.get((k, w))
                if w not in found and res is not None and res.ok and w in res.value[0]:
                    found[w] = res.value[0][w]
            scores[k], flag = missing_token_rule(found, floor)
            if flag:
                self.scorer.flag(k[0], flag)
        return rank(queries, run, corpus, scores)

    def stats(self) -> dict[str, Any]:
        """The scorer's counters (calls, cache hits, ``second_items``: replies that lacked one token and
        were asked again) and the missing-token rule's flags, in total and per query."""
        return self.scorer.stats("true_bounded", "false_bounded", "both_missing")

    def config(self) -> dict[str, Any]:
        return {"template": self.template, "prompt": TEMPLATES[self.template], "llm": self.client.describe(),
                "top_logprobs": self.top_logprobs, "tokens": [TRUE, FALSE], "fresh_prompt": True}


def _found(reply: Any) -> tuple[tuple[dict[str, float], float], tuple[str, ...]] | None:
    """``(({token: logprob} of true/false present, the smallest logprob listed), flags)``; None (a
    reply-quality failure) when the reply has no log-probabilities."""
    if not reply.logprobs:
        return None
    first = reply.logprobs[0]
    out = {a.token: a.logprob for a in first.top if a.token in (TRUE, FALSE)}
    if first.token in (TRUE, FALSE):
        out.setdefault(first.token, first.logprob)
    return (out, min([a.logprob for a in first.top] or [first.logprob])), ()


def missing_token_rule(found: Mapping[str, float], floor: float) -> tuple[float, str]:
    """P(true) from the log-probabilities found, and the flag of the rule applied ("" when both were found)."""
    t, f = found.get(TRUE), found.get(FALSE)
    if t is not None and f is not None:
        return p_true(t, f), ""
    if t is None and f is None:
        return 0.5, "both_missing"
    if t is None:
        return p_true(min(floor, f), f), "true_bounded"
    return p_true(t, min(floor, t)), "false_bounded"


class TransformersTrueFalse(ModelReranker):
    """P(true) with Hugging Face transformers in process (``AutoModelForCausalLM``)."""

    label = "true-false"
    default_model = "jhu-clsp/FollowIR-7B"
    default_batch_size = 4

    def __init__(self, model: str | None = None, template: str = "followir", max_length: int | None = None,
                 **options: Any) -> None:
        self.template = _template(template)
        super().__init__(model=model, max_length=max_length or 2048, **options)
        self._ids: tuple[int, int] | None = None

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "template": TEMPLATES[self.template], "tokens": [TRUE, FALSE]}

    def _load(self) -> Any:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        folder = str(self.folder())
        tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
        ids = [tok.encode(w, add_special_tokens=False) for w in (TRUE, FALSE)]
        if any(len(i) != 1 for i in ids):
            raise HarnessError(f"true-false: 'true' and 'false' must each be one token of {self.model_name}'s "
                               f"tokenizer (got {ids})")
        self._ids = (ids[0][0], ids[1][0])
        tok.padding_side = "left"
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token or tok.unk_token
        model = AutoModelForCausalLM.from_pretrained(folder, **self.load_kwargs()).to(self.torch_device()).eval()
        return model, tok

    def _compute(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        import torch

        model, tok = self.model()
        enc = tok([prompt(self.template, q, d) for q, d in pairs], padding=True, truncation=True,
                  max_length=self.max_length, return_tensors="pt").to(model.device)
        mask = enc["attention_mask"]
        positions = (mask.cumsum(-1) - 1).clamp(min=0)  # left padding: each text's positions from 0
        with torch.no_grad():
            logits = model(input_ids=enc["input_ids"], attention_mask=mask, position_ids=positions).logits[:, -1, :]
        t, f = self._ids
        two = logits[:, [f, t]].double()
        return torch.softmax(two, dim=1)[:, 1].cpu().numpy()


__all__ = ["FALSE", "TEMPLATES", "TRUE", "LLMTrueFalse", "TransformersTrueFalse", "missing_token_rule", "p_true",
           "prompt", "true_false"]
