"""The ``instfol`` judge: an LLM scores (instruction, document) 0-3 for the top ``depth`` of a run.

What is judged (the authors' released code): the query's level text, query + " " + instruction
(``Query.meta["judge_instruction"]``; for datasets without it, the raw query and ``Query.instruction``),
against each document of the top ``depth`` (default 20). The same text is used for every mode, so the
query-only and the instructed rankings are judged against the same instruction.

Requests: the prompt template of the query's subset and level (``prompts.py``), temperature 0,
top_p 0.7, top_logprobs 10, logprobs optional (a provider without them gives the parsed integer,
recorded as ``fallback``). Scores: ``geval.py``. A failed judgment has ``score=None`` and is counted
in ``stats()``: an unparseable reply or a dry-run placeholder as ``unparseable``/``dry_run``, a call
that got no reply as ``transport_failures`` (per query too; it makes the run INCOMPLETE).

Every judgment is an LLM reply, cached by the LLM layer on (provider, model, options, messages); the
messages hold the template text, the instruction and the document, so the same (prompt version,
model, query, instruction, document) is sent once: across modes, retrievers and runs. Within one
call, identical requests are sent once too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness import ComponentContext, Context, Document, Judgment, Judgments, Query, Run
from harness.llm import Item, PointwiseScorer

from . import __version__
from .prompts import TemplateSet


def judge_instruction(query: Query) -> str:
    """The text the judge evaluates against."""
    text = query.meta.get("judge_instruction")
    if text:
        return str(text)
    raw = str(query.meta.get("query", query.text))
    return f"{raw} {query.instruction}".strip() if query.instruction else query.text


def document_text(doc: Document, max_chars: int | None = None) -> str:
    text = f"{doc.title} {doc.text}" if doc.title else doc.text
    return text[:max_chars] if max_chars else text


#: the judge's reply cap (see :class:`InstfolJudge`)
DEFAULT_MAX_TOKENS = 64


class InstfolJudge:
    """Options: ``llm`` (default: ``--llm``), ``depth`` (20), ``prompts`` (a folder of replacement
    templates), ``prompt`` (one template file for every query), ``temperature`` (0), ``top_p`` (0.7;
    ``null`` sends none), ``top_logprobs`` (10), ``min_prob`` (0.01), ``max_score`` (3), ``max_chars``
    (none: documents are sent whole, as the released code does), ``max_tokens`` (64: the reply's JSON
    puts the score first, so it fits with room; a truncated reason still parses; ``0`` sends none)."""

    def __init__(self, llm: str | None = None, depth: int = 20, prompts: str | None = None, prompt: str | None = None,
                 temperature: float | None = None, top_p: float | None = 0.7, top_logprobs: int | None = None,
                 min_prob: float = 0.01,
                 max_score: int = 3, max_chars: int | None = None, max_tokens: int | None = None,
                 context: ComponentContext | None = None):
        self.depth, self.min_prob = int(depth), float(min_prob)
        self.max_score, self.max_chars = int(max_score), max_chars
        self.templates = TemplateSet(prompts, prompt)
        given = {k: conv(v) for k, v, conv in (("temperature", temperature, float), ("top_logprobs", top_logprobs, int),
                                                ("max_tokens", max_tokens, int)) if v is not None}
        given["top_p"] = None if top_p is None else float(top_p)  # null sends none; untyped: a component default
        self.client = Context.of(context).llm.client(llm, component_defaults={
            "temperature": 0.0, "top_logprobs": 10, "max_tokens": DEFAULT_MAX_TOKENS, "logprobs": "optional"}, **given)
        d = self.client.defaults
        self.temperature, self.top_p, self.top_logprobs, self.max_tokens = d.temperature, d.top_p, d.top_logprobs, \
            d.max_tokens
        self.scorer = PointwiseScorer(self.client)

    def request(self, query: Query, doc: Document) -> tuple[str, dict[str, Any]]:
        tpl = self.templates.for_meta(query.meta)
        req: dict[str, Any] = {"messages": tpl.messages(judge_instruction(query), document_text(doc, self.max_chars))}
        return tpl.name, req

    def _geval(self, reply: Any) -> Any:
        from .geval import geval_score

        return geval_score(reply.text, reply.logprobs, max_score=self.max_score, min_prob=self.min_prob)

    def _parse(self, reply: Any) -> tuple[Any, tuple[str, ...]]:
        scored = self._geval(reply)
        if scored.score is None:
            return None, ()
        return scored, (("fallback",) if "fallback" in scored.details else ())

    def judge(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Judgments:
        out = Judgments()
        items, names, missing = [], {}, []
        for qid in run:
            query = queries.get(qid) or Query(qid, "")
            for d in run.doc_ids(qid)[: self.depth]:
                doc = corpus.get(d)
                if doc is None:
                    missing.append((qid, d))
                    continue
                names[(qid, d)], req = self.request(query, doc)
                items.append(Item((qid, d), qid, req))
        for qid, d in missing:
            out.add(Judgment(qid, d, None, {"error": "document not in the corpus"}))
        self.scorer.count(pairs=len(items) + len(missing), missing_documents=len(missing))
        for (qid, d), res in self.scorer.score(items, self._parse).items():
            name = names[(qid, d)]
            if res.status == "transport":
                out.add(Judgment(qid, d, None, {"error": f"LLM call failed: {type(res.error).__name__}",
                                                "llm_error": res.error.as_dict(), "template": name}))
            elif res.status == "dry_run":
                out.add(Judgment(qid, d, None, {"error": "dry run: nothing was sent", "template": name}))
            else:
                reply = res.reply
                scored = res.value if res.ok else self._geval(reply)  # unparseable: its details say why
                details = {**scored.details, "template": name, "reply": reply.text, "model": reply.model,
                           "cached": reply.cached}
                if reply.fallback and "fallback" in details:
                    details["fallback"] = reply.fallback
                out.add(Judgment(qid, d, scored.score, details))
        self.scorer.count(failed=sum(1 for j in out.values() if j.score is None))
        return out

    def config(self) -> dict[str, Any]:
        tpl = self.templates.describe()
        return {"method": "instfol", "plugin": f"harness-ifir {__version__}", "llm": self.client.describe(),
                "depth": self.depth, "temperature": self.temperature, "top_p": self.top_p,
                "top_logprobs": self.top_logprobs, "min_prob": self.min_prob, "max_score": self.max_score,
                "max_chars": self.max_chars, "prompt_version": tpl["version"], "prompt_sha256": tpl["sha256"],
                "prompt_sources": tpl["sources"],
                "score": "G-Eval: digits 0-5 among the score token's top logprobs with p >= min_prob, renormalised; "
                         "no logprobs -> parsed integer (fallback recorded); unparseable -> failed (None)"}

    def stats(self) -> dict[str, Any]:
        """Pairs judged, requests (``items``), calls, cache hits, unparseable replies
        (``parse_failures``), judgments without a score for any reason (``failed``), judgments scored
        from the parsed integer (``fallback``), dry-run
        placeholders, documents missing from the corpus and transport failures, with the per-query
        counts (:class:`harness.llm.PointwiseScorer`)."""
        return self.scorer.stats("pairs", "failed", "fallback", "missing_documents")
