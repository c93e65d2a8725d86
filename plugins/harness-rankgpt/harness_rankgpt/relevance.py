"""The relevance-generation (RG) baseline of the RankGPT paper (HELM 4-shot prompt, App. A.2).

Each (query, passage) pair of the top ``depth`` is one call asking for ``Yes``/``No`` (one output
token, temperature 0, top logprobs). Score (paper §3.1): ``1 + p(Yes)`` when the output is Yes,
``1 - p(No)`` when it is No, so the range is [0, 2]; ``p`` is the probability of the generated token.

Providers without logprobs (Anthropic; OpenAI-compatible servers that omit them): the call is made
with ``logprobs="optional"`` and the reply comes back with ``fallback == "no-logprobs"``; the score is
then the label alone (Yes = 2, No = 0, i.e. ``p`` taken as 1), ties keep the incoming order, and the
number of such replies is in ``stats()["no_logprobs"]``.

An output that is neither Yes nor No: when the top alternatives of the first token hold Yes or No,
the likelier of the two decides (``1 + p(Yes)`` or ``1 - p(No)``); otherwise the score is 1 (between
every No and every Yes) and the pair is counted as ``unparseable``. A call that got no reply (a
transport failure) scores 1 as well; it is counted in ``transport_failures`` (per query too) and
makes the run INCOMPLETE: the method was not applied to that pair.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness import ComponentContext, Context, Document, Query, Run
from harness.llm import Item, PointwiseScorer, order_by_scores

from . import __version__
from .prompts import passage_text, rg_prompt, rg_template_hash


def _label(token: str) -> str:
    return token.strip().strip(".,:;!'\"").lower()


def rg_score(reply: Any) -> tuple[float, str]:
    """(score, status) of one reply; status is ``ok``, ``no-logprobs`` or ``unparseable``."""
    first = reply.logprobs[0] if reply.logprobs else None
    token = first.token if first is not None else (reply.text.split() or [""])[0]
    label = _label(token)
    if label in ("yes", "no"):
        if first is None:
            return (2.0 if label == "yes" else 0.0), "no-logprobs"
        return (1.0 + first.prob if label == "yes" else 1.0 - first.prob), "ok"
    if first is not None:
        p = {"yes": 0.0, "no": 0.0}
        for alt in first.top:
            lab = _label(alt.token)
            if lab in p:
                p[lab] += alt.prob
        if p["yes"] or p["no"]:
            return (1.0 + p["yes"] if p["yes"] >= p["no"] else 1.0 - p["no"]), "ok"
    return 1.0, "unparseable"


class RelevanceGeneration:
    """Pointwise yes/no relevance generation, scored by the probability of the answer token.

    Options: ``llm`` (default ``--llm``), ``depth`` (100), ``shots`` (4; 0 gives the zero-shot
    prompt), ``top_logprobs`` (5), ``max_tokens`` (1), ``max_words`` (300), ``query`` (``formed`` or
    ``raw``). The LLM spec's ``top_logprobs``/``max_tokens``/``temperature`` beat these defaults; a value
    given here beats the LLM spec's."""

    def __init__(self, llm: str | None = None, depth: int = 100, shots: int = 4, top_logprobs: int | None = None,
                 max_tokens: int | None = None, max_words: int | None = 300, query: str = "formed",
                 context: ComponentContext | None = None):
        if query not in ("formed", "raw"):
            raise ValueError(f"relevance-generation: query must be 'formed' or 'raw', got {query!r}")
        self.depth, self.shots = int(depth), int(shots)
        self.max_words, self.query_field = max_words, query
        rg_prompt("q", "p", self.shots)  # validates shots
        given = {k: int(v) for k, v in (("top_logprobs", top_logprobs), ("max_tokens", max_tokens)) if v is not None}
        self.client = Context.of(context).llm.client(llm, component_defaults={
            "temperature": 0.0, "max_tokens": 1, "logprobs": "optional", "top_logprobs": 5}, **given)
        self.top_logprobs, self.max_tokens = self.client.defaults.top_logprobs, self.client.defaults.max_tokens
        self.scorer = PointwiseScorer(self.client)

    def request(self, query: Query, doc: Document | None) -> dict[str, Any]:
        text = query.meta.get("query", query.text) if self.query_field == "raw" else query.text
        passage = passage_text(doc.text, doc.title, self.max_words) if doc is not None else ""
        return {"messages": [{"role": "user", "content": rg_prompt(text, passage, self.shots)}]}

    @staticmethod
    def parse(reply: Any) -> tuple[float | None, tuple[str, ...]]:
        score, status = rg_score(reply)
        flags = ("no_logprobs",) if reply.fallback == "no-logprobs" or status == "no-logprobs" else ()
        return (None if status == "unparseable" else score), flags

    def rerank(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Run:
        items = [Item((q, d), q, self.request(queries.get(q) or Query(q, ""), corpus.get(d)))
                 for q in run for d in run.doc_ids(q)[: self.depth]]
        results = self.scorer.score(items, self.parse)
        scores: dict[str, dict[str, float]] = {}
        for (q, d), res in results.items():  # no usable score (unparseable, failed, dry run): 1, between No and Yes
            scores.setdefault(q, {})[d] = res.value if res.ok else 1.0
        return order_by_scores(run, scores, self.depth)

    def config(self) -> dict[str, Any]:
        return {"method": "relevance-generation", "plugin": f"harness-rankgpt {__version__}",
                "llm": self.client.describe(), "depth": self.depth, "shots": self.shots,
                "top_logprobs": self.top_logprobs, "max_tokens": self.max_tokens, "max_words": self.max_words,
                "query": self.query_field, "prompt_template_sha256": rg_template_hash(self.shots),
                "score": "1+p(Yes) if Yes, 1-p(No) if No; without logprobs Yes=2, No=0 (fallback)"}

    def stats(self) -> dict[str, Any]:
        """Pairs scored (``items``), calls, cache hits, unparseable replies (``parse_failures``),
        replies without logprobs (``no_logprobs``), dry-run placeholders and transport failures, with
        the per-query counts (:class:`harness.llm.PointwiseScorer`)."""
        return self.scorer.stats("no_logprobs")
