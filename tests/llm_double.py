"""A test double of an LLM reranker, for the core tests that need *some* LLM reranker (batches, the
cache, the failure policy, the ``--llm`` options, the view of LLM calls) and must not borrow a plugin's.
The tests install it as the distribution ``harness-llm-double``, an entry point in the ``harness``
group (``tests/conftest.py``, fixture ``llm_double``), so the CLI and :func:`harness.evaluate` find it
the way they find every plugin; it uses only the public API, as a plugin does.

``llm-double``: one chat request per (query, document) of the first stage's top ``depth`` (100):
:data:`PROMPT` with the query's text and the document's title and text. A reply whose first word is
Yes scores 1, No 0; any other reply is a reply-quality failure and scores 0.5; a request without a
usable reply (a transport failure) scores 0.5 and is counted, which makes the run INCOMPLETE. Ties
keep the first stage's order."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness import ComponentContext, Context, Document, Query, Run, hookimpl
from harness.llm import Item, PointwiseScorer, order_by_scores

NAME = "llm-double"
PROMPT = "Query: {query}\nDocument: {text}\nIs the document relevant to the query? Answer Yes or No."
LABELS = {"yes": 1.0, "no": 0.0}


def prompt(query: str, text: str) -> str:
    """:data:`PROMPT` filled in (braces in the values stay as they are)."""
    return PROMPT.replace("{query}", query, 1).replace("{text}", text, 1)


def parse(reply: Any) -> float | None:
    """1 for Yes, 0 for No (the first word, case and trailing punctuation aside), None otherwise."""
    words = reply.text.split()
    return LABELS.get(words[0].strip(".,:;!").lower()) if words else None


class LLMDouble:
    """The ``llm-double`` reranker (see the module docstring). Options: ``llm`` (default ``--llm``), ``depth``."""

    def __init__(self, llm: str | None = None, depth: int = 100, context: ComponentContext | None = None) -> None:
        self.depth = int(depth)
        self.client = Context.of(context).llm.client(llm, component_defaults={"temperature": 0.0, "max_tokens": 1})
        self.scorer = PointwiseScorer(self.client)

    def rerank(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Run:
        items = []
        for q in run:
            text = queries[q].text if q in queries else ""
            for d in run.doc_ids(q)[: self.depth]:
                doc = corpus[d].full_text() if d in corpus else ""
                items.append(Item((q, d), q, {"messages": [{"role": "user", "content": prompt(text, doc)}]}))
        scores: dict[str, dict[str, float]] = {}
        for (q, d), res in self.scorer.score(items, parse).items():
            scores.setdefault(q, {})[d] = res.value if res.ok else 0.5
        return order_by_scores(run, scores, self.depth)

    def config(self) -> dict[str, Any]:
        return {"method": NAME, "llm": self.client.describe(), "depth": self.depth, "prompt": PROMPT}

    def stats(self) -> dict[str, Any]:
        return self.scorer.stats()


@hookimpl
def register_rerankers(register: Any) -> None:
    register(NAME, LLMDouble, "Test double: one Yes/No chat request per (query, document), scored 1/0")
