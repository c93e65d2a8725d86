"""BIRCO's pointwise LLM protocols as rerankers: Score, Reason, Subtask, each with or without the task
objective ("+O", ``objective=true``: the query's ``instruction``, which BIRCO tasks set to App. B's text).

- ``birco-score``: one call per (query, passage); the score is the number after ``SCORE:``.
- ``birco-reason``: one criteria call per query (the Reason prompt with the released output format, on
  the query's top passage), then one call per passage with the Reason prompt and those criteria.
- ``birco-subtask``: the same criteria call; its criteria lines become requirements (at most
  ``max_requirements``); one call per (requirement, passage); the passage scores the mean.

An unparseable or refused reply scores 0 and is counted (a reply-quality failure, part of what is
measured). A call that got no reply (a transport failure) scores 0 too, but is counted apart
(``transport_failures``, per query) and makes the run INCOMPLETE. Ties are broken by the incoming
order (the E5-large-v2 order when the task's candidates are the first stage): a plain lexicographic sort
on (score desc, incoming rank), not the released ``+0.01*i`` bump, which can cross score levels.
A dry run assumes ``max_requirements`` requirements per query for Subtask (the estimate is then an upper
bound; it is exact when every criteria reply yields that many).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness import ComponentContext, Context, Document, Query, Run
from harness.llm import Item, PointwiseScorer, order_by_scores, user

from . import __version__
from .prompts import (
    criteria_prompt,
    parse_criteria,
    parse_score,
    reason_prompt,
    score_prompt,
    split_requirements,
    subtask_prompt,
    template_hash,
)


def _flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on", "o", "+o")
    return bool(value)


#: the reply cap of the pointwise protocols: the official code's for its open models (Together AI);
#: its GPT-4 runs used 3000 (``max_tokens=3000``). The score comes last, after the reasoning.
DEFAULT_MAX_TOKENS = 1024


class _Pointwise:
    protocol = ""
    templates: list[str] = []

    def __init__(self, llm: str | None = None, objective: Any = True, temperature: float | None = None,
                 max_tokens: int | None = None, max_requirements: int = 5, depth: int | None = None,
                 context: ComponentContext | None = None):
        self.objective = _flag(objective)
        self.max_requirements = int(max_requirements)
        if self.max_requirements < 1:
            raise ValueError("max_requirements must be >= 1")
        self.depth = int(depth) if depth else None
        given = {k: conv(v) for k, v, conv in (("temperature", temperature, float), ("max_tokens", max_tokens, int))
                 if v is not None}  # typed beats the LLM spec, which beats the defaults; max_tokens=0: no cap
        self.client = Context.of(context).llm.client(
            llm, component_defaults={"temperature": 0.0, "max_tokens": DEFAULT_MAX_TOKENS}, **given)
        self.temperature, self.max_tokens = self.client.defaults.temperature, self.client.defaults.max_tokens
        self.scorer = PointwiseScorer(self.client)
        self.last_scores: dict[str, dict[str, float]] = {}
        self.last_criteria: dict[str, str] = {}

    # -- helpers ---------------------------------------------------------------------------------
    def objective_of(self, query: Query) -> str | None:
        if not self.objective:
            return None
        return query.instruction or query.meta.get("objective") or None

    @staticmethod
    def raw_query(query: Query) -> str:
        return query.meta.get("query", query.text)

    @staticmethod
    def _parse_score(reply: Any) -> tuple[float | None, tuple[str, ...]]:
        return parse_score(reply.text), (("refused",) if reply.refused else ())

    def _score_replies(self, keys: list[Any], prompts: list[str]) -> dict[Any, float]:
        """One user turn per prompt; the number after ``SCORE:`` of each reply, 0 when there is none
        (unparseable, refused, no reply, dry run), every such case counted."""
        items = [Item(key, key[0], [user(p)]) for key, p in zip(keys, prompts)]
        results = self.scorer.score(items, self._parse_score)
        return {key: (res.value if res.ok else 0.0) for key, res in results.items()}

    def _criteria(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]
                  ) -> dict[str, tuple[str, bool]]:
        """One criteria call per query on its top passage: ``qid -> (criteria text, dry_run)``."""
        items = []
        for q in (q for q in run if run.doc_ids(q)):
            query = queries.get(q) or Query(q, "")
            top = corpus.get(run.doc_ids(q)[0])
            prompt = criteria_prompt(self.raw_query(query), top.text if top else "", self.objective_of(query))
            items.append(Item(q, q, [user(prompt)]))
        results = self.scorer.score(items, lambda reply: parse_criteria(reply.text) or None, prefix="criteria_")
        out = {q: (res.value or "", res.status == "dry_run") for q, res in results.items()}
        self.last_criteria.update({q: c for q, (c, _) in out.items()})
        return out

    def _order(self, run: Run, scores: dict[str, dict[str, float]]) -> Run:
        self.last_scores.update(scores)
        self.scorer.count(queries=len(run), pairs=sum(len(s) for s in scores.values()))
        return order_by_scores(run, scores, self.depth)

    def _pairs(self, run: Run) -> list[tuple[str, str]]:
        return [(q, d) for q in run for d in (run.doc_ids(q)[: self.depth] if self.depth else run.doc_ids(q))]

    # -- reporting -------------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        return {
            "method": f"birco-{self.protocol}",
            "protocol": self.protocol.capitalize() + ("+O" if self.objective else ""),
            "plugin": f"harness-birco {__version__}",
            "llm": self.client.describe(),
            "objective": self.objective,
            "objective_source": "query.instruction (BIRCO App. B)" if self.objective else None,
            "prompt_template_sha256": template_hash(self.templates),
            "templates": list(self.templates),
            "temperature": self.temperature, "max_tokens": self.max_tokens, "depth": self.depth,
            "tie_break": "incoming order (E5-large-v2 with the task's candidates)",
            "unparseable": "scored 0 and counted",
            **({"max_requirements": self.max_requirements} if self.protocol == "subtask" else {}),
        }

    def stats(self) -> dict[str, Any]:
        """Queries, pairs, prompts scored (``items``; criteria prompts apart, ``criteria_items``), calls,
        cache hits, unparseable replies (``parse_failures``, ``criteria_parse_failures``), refusals,
        dry-run placeholders and transport failures, with the per-query counts."""
        return self.scorer.stats("queries", "pairs", "refused", *(
            ("criteria_items", "criteria_parse_failures") if self.protocol in ("reason", "subtask") else ()),
            *(("requirements",) if self.protocol == "subtask" else ()))


class ScoreReranker(_Pointwise):
    """BIRCO Score(+O): one call per (query, passage)."""

    protocol = "score"
    templates = ["score+o", "score"]

    def rerank(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Run:
        keys, prompts = [], []
        for q, d in self._pairs(run):
            query = queries.get(q) or Query(q, "")
            doc = corpus.get(d)
            keys.append((q, d))
            prompts.append(score_prompt(self.raw_query(query), doc.text if doc else "", self.objective_of(query)))
        got = self._score_replies(keys, prompts)
        scores: dict[str, dict[str, float]] = {}
        for (q, d), v in got.items():
            scores.setdefault(q, {})[d] = v
        return self._order(run, scores)


class ReasonReranker(_Pointwise):
    """BIRCO Reason(+O): criteria written once per query, reused for every passage."""

    protocol = "reason"
    templates = ["reason+o", "reason", "criteria_suffix", "with_criteria"]

    def rerank(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Run:
        criteria = self._criteria(queries, run, corpus)
        keys, prompts = [], []
        for q, d in self._pairs(run):
            query = queries.get(q) or Query(q, "")
            doc = corpus.get(d)
            keys.append((q, d))
            prompts.append(reason_prompt(self.raw_query(query), doc.text if doc else "", self.objective_of(query),
                                         criteria.get(q, ("", False))[0] or None))
        got = self._score_replies(keys, prompts)
        scores: dict[str, dict[str, float]] = {}
        for (q, d), v in got.items():
            scores.setdefault(q, {})[d] = v
        return self._order(run, scores)


class SubtaskReranker(_Pointwise):
    """BIRCO Subtask(+O): requirements from the query's criteria; a passage scores the mean over them."""

    protocol = "subtask"
    templates = ["reason+o", "reason", "criteria_suffix", "subtask", "subtask_format"]

    def requirements(self, query: Query, criteria: str, dry_run: bool) -> list[str]:
        if dry_run:  # the estimate assumes the most requirements a query may have
            return [f"(requirement {i + 1})" for i in range(self.max_requirements)]
        reqs = split_requirements(criteria, self.max_requirements)
        return reqs or [self.raw_query(query)]  # no usable criteria: the query itself is the one requirement

    def rerank(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Run:
        criteria = self._criteria(queries, run, corpus)
        reqs = {}
        for q in run:
            query = queries.get(q) or Query(q, "")
            text, dry = criteria.get(q, ("", False))
            reqs[q] = self.requirements(query, text, dry)
        self.scorer.count(requirements=sum(len(r) for r in reqs.values()))
        keys, prompts = [], []
        for q, d in self._pairs(run):
            query = queries.get(q) or Query(q, "")
            doc = corpus.get(d)
            for i, req in enumerate(reqs[q]):
                keys.append((q, d, i))
                prompts.append(subtask_prompt(self.raw_query(query), doc.text if doc else "", req))
        got = self._score_replies(keys, prompts)
        sums: dict[tuple[str, str], list[float]] = {}
        for (q, d, _i), v in got.items():
            sums.setdefault((q, d), []).append(v)
        scores: dict[str, dict[str, float]] = {}
        for (q, d), vals in sums.items():
            scores.setdefault(q, {})[d] = sum(vals) / len(vals)
        return self._order(run, scores)
