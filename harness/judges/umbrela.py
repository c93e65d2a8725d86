"""The ``umbrela`` judge: an LLM grades each (query, passage) of a run's top ``depth`` on TREC's 0-3
scale with UMBRELA's prompt (Upadhyay et al., 2024; castorini/umbrela, the TREC 2024 RAG track's
assessor), parsed by the release's rule (:mod:`harness.judges.umbrela_prompts`).

Requests as the release's ``GPTJudge`` sends them: the system turn ``"You are a helpful assistant."``,
the filled template as the user turn, temperature 0, top_p 1, at most 100 output tokens, and at an
OpenAI Chat Completions endpoint (``openai``, ``openai-compatible``, ``local``) frequency_penalty 0.5 and
presence_penalty 0; the Messages API has no penalties, so none is sent there (``config()`` says which).

Every reply goes through the LLM layer (cache, batch, dry run, retries, failure counting:
:class:`~harness.llm.PointwiseScorer`): the same (template, model, query, passage) is sent once, across
runs and commands. A judgment's ``score`` is the grade (0-3), None when the reply had no grade
(``no_score``: counted, never guessed unless ``no_score=zero`` asks for the release's 0), when the call
got no reply (a transport failure: the run is INCOMPLETE) or in a dry run.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from harness.concepts.component_context import ComponentContext
from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.judgment import Judgment, Judgments
from harness.concepts.query import Query
from harness.concepts.run import Run
from harness.context import Context
from harness.judges.umbrela_prompts import (
    DEFAULT_PARSER,
    DEFAULT_TEMPLATE,
    PAPER_COMMIT,
    PARSERS,
    SYSTEM_MESSAGE,
    UMBRELA_COMMIT,
    ParsedGrade,
    load_template,
    parse_grade,
)
from harness.llm.pointwise import Item, PointwiseScorer, Scored
from harness.served.types import Reply, system, user

#: providers that speak OpenAI Chat Completions, where the release's penalties are sent
OPENAI_PROTOCOL = frozenset({"openai", "openai-compatible", "local"})
#: the release's sampling (gpt_judge.py ``_build_completion_params``)
RELEASE_OPTIONS = MappingProxyType({"temperature": 0.0, "top_p": 1.0, "max_tokens": 100})
NO_SCORE = ("none", "zero")


def passage_text(doc: Document, max_chars: int | None = None) -> str:
    """The passage as the prompt shows it: title and text joined by a space (MS MARCO passages have no title)."""
    text = f"{doc.title} {doc.text}" if doc.title else doc.text
    return text[:max_chars] if max_chars else text


class UmbrelaJudge:
    """Options: ``llm`` (default: ``--llm``), ``depth`` (10: the top of each ranking judged), ``template``
    (``zeroshot-bing``, the release's default; ``fewshot-bing``, ``zeroshot-basic``, ``instruction``),
    ``parser`` (``release`` or ``paper``), ``no_score`` (``none``: a reply without a grade is left without
    a score and counted; ``zero``: the release's 0), ``max_chars`` (none: passages sent whole, as the
    release does), ``max_tokens`` (100), ``frequency_penalty`` (0.5) and ``presence_penalty`` (0), sent
    only to an OpenAI Chat Completions endpoint (``null``: never)."""

    def __init__(self, llm: str | None = None, depth: int | None = 10, template: str = DEFAULT_TEMPLATE,
                 parser: str = DEFAULT_PARSER, no_score: str = "none", max_chars: int | None = None,
                 max_tokens: int | None = None, frequency_penalty: float | None = 0.5,
                 presence_penalty: float | None = 0.0, context: ComponentContext | None = None):
        if parser not in PARSERS:
            raise HarnessError(f"umbrela: parser must be one of {', '.join(PARSERS)}, not {parser!r}")
        if no_score not in NO_SCORE:
            raise HarnessError(f"umbrela: no_score must be one of {', '.join(NO_SCORE)}, not {no_score!r}")
        if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
            raise HarnessError(f"umbrela: depth must be a whole number >= 1, not {depth!r}")
        try:
            self.template = load_template(template)
        except ValueError as exc:
            raise HarnessError(f"umbrela: {exc}") from None
        self.depth, self.parser, self.no_score, self.max_chars = depth, parser, no_score, max_chars
        given = {"max_tokens": int(max_tokens)} if max_tokens is not None else {}
        self.client = Context.of(context).llm.client(llm, component_defaults=dict(RELEASE_OPTIONS), **given)
        openai = getattr(self.client.provider, "name", "") in OPENAI_PROTOCOL
        penalties = {"frequency_penalty": frequency_penalty, "presence_penalty": presence_penalty}
        self.penalties = {k: float(v) for k, v in penalties.items() if v is not None} if openai else {}
        self.scorer = PointwiseScorer(self.client)

    def prompt(self, query: Query) -> tuple[str, str]:
        """The query text the template takes, and the instruction (the variant's; empty otherwise)."""
        if self.template.takes_instruction:
            return str(query.meta.get("query", query.text)), query.instruction
        return query.text, ""

    def request(self, query: Query, doc: Document) -> dict[str, Any]:
        """The chat request for one pair, as the release sends it."""
        text, instruction = self.prompt(query)
        req: dict[str, Any] = {"messages": [system(SYSTEM_MESSAGE), user(self.template.render(
            text, passage_text(doc, self.max_chars), instruction))]}
        if self.penalties:
            req["extra"] = dict(self.penalties)
        return req

    def _parse(self, reply: Reply) -> tuple[ParsedGrade | None, tuple[str, ...]]:
        parsed = parse_grade(reply.text, self.parser)
        if parsed.grade is not None:
            return parsed, ()
        return (ParsedGrade(0), ("no_score_zero",)) if self.no_score == "zero" else (None, ())

    def judge(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Judgments:
        out = Judgments()
        items: list[Item] = []
        missing = 0
        for qid in run:
            query = queries.get(qid) or Query(qid, "")
            docs = run.doc_ids(qid)
            if docs and self.template.takes_instruction and not query.instruction:
                self.scorer.flag(qid, "no_instruction")  # once per query, as stats() says
            for d in docs[: self.depth] if self.depth is not None else docs:
                doc = corpus.get(d)
                if doc is None:
                    missing += 1
                    out.add(Judgment(qid, d, None, {"error": "document not in the corpus"}))
                    continue
                items.append(Item((qid, d), qid, self.request(query, doc)))
        self.scorer.count(pairs=len(items) + missing, missing_documents=missing)
        for (qid, d), res in self.scorer.score(items, self._parse).items():
            out.add(self._judgment(qid, d, res))
        self.scorer.count(failed=sum(1 for j in out.values() if j.score is None))
        return out

    def _judgment(self, qid: str, doc: str, res: Scored) -> Judgment:
        details: dict[str, Any] = {"template": self.template.name}
        if res.status == "transport":
            return Judgment(qid, doc, None, {**details, "error": f"LLM call failed: {type(res.error).__name__}",
                                             "llm_error": res.error.as_dict()})
        if res.status == "dry_run":
            return Judgment(qid, doc, None, {**details, "error": "dry run: nothing was sent"})
        reply = res.reply
        details.update(reply=reply.text, model=reply.model, cached=reply.cached)
        if not res.ok:
            return Judgment(qid, doc, None, {**details, "error": "no grade in the reply (counted as no_score)"})
        parsed = res.value
        details["pattern"] = parsed.pattern
        if "no_score_zero" in res.flags:
            details["no_score"] = "release rule: a reply without a grade is 0"
        return Judgment(qid, doc, float(parsed.grade), details)

    def config(self) -> dict[str, Any]:
        return {"method": "umbrela", "llm": self.client.describe(), "depth": self.depth,
                "template": self.template.name, "template_source": self.template.source,
                "prompt_sha256": self.template.sha256, "system_message": SYSTEM_MESSAGE, "parser": self.parser,
                "parser_source": f"castorini/umbrela@{UMBRELA_COMMIT if self.parser == 'release' else PAPER_COMMIT}:"
                                 "src/umbrela/utils/common_utils.py parse_fewshot_response",
                "no_score": self.no_score, "max_chars": self.max_chars, "penalties": self.penalties or None,
                "scale": "0-3 (TREC): 0 nothing to do with the query, 1 related but does not answer it, 2 some "
                         "answer, unclear or hidden, 3 dedicated to the query with the exact answer"}

    def stats(self) -> dict[str, Any]:
        """Pairs, requests (``items``), calls, cache hits, replies without a grade (``parse_failures``),
        judgments without a score for any reason (``failed``), dry-run placeholders, documents missing
        from the corpus, queries without an instruction for the ``instruction`` template, transport
        failures (per query too)."""
        return self.scorer.stats("pairs", "failed", "missing_documents", "no_score_zero", "no_instruction")
