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

import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any

from harness.concepts.document import Document
from harness.concepts.query import Query
from harness.concepts.run import Run

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


class _Pointwise:
    protocol = ""
    templates: list[str] = []

    def __init__(self, llm: str | None = None, objective: Any = True, temperature: float = 0.0,
                 max_tokens: int | None = None, max_requirements: int = 5, depth: int | None = None):
        from harness.llm import get_client

        self.objective = _flag(objective)
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens) if max_tokens else None
        self.max_requirements = int(max_requirements)
        if self.max_requirements < 1:
            raise ValueError("max_requirements must be >= 1")
        self.depth = int(depth) if depth else None
        defaults: dict[str, Any] = {"temperature": self.temperature}
        if self.max_tokens:
            defaults["max_tokens"] = self.max_tokens
        self.client = get_client(llm, **defaults)
        self._lock = threading.Lock()
        self._stats: Counter[str] = Counter()
        self._failures: dict[str, int] = {}
        self._transport: Counter[str] = Counter()
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

    def _score_replies(self, keys: list[Any], prompts: list[str]) -> dict[Any, float]:
        """Send ``prompts`` (one user turn each) in a batch; score each; count what went wrong."""
        from harness.llm import LLMError, user

        replies = self.client.map([[user(p)] for p in prompts]) if prompts else []
        out: dict[Any, float] = {}
        st: Counter[str] = Counter()
        fails: Counter[str] = Counter()
        transport: Counter[str] = Counter()
        for key, reply in zip(keys, replies):
            st["prompts"] += 1
            if isinstance(reply, LLMError):
                st["transport_failures"] += 1
                transport[key[0]] += 1
                out[key] = 0.0
                continue
            st["cache_hits" if reply.cached else "calls"] += 1
            if reply.dry_run:
                st["dry_run"] += 1
                out[key] = 0.0
                continue
            if reply.refused:
                st["refused"] += 1
            value = parse_score(reply.text)
            if value is None:
                st["parse_failures"] += 1
                fails[key[0]] += 1
                value = 0.0
            out[key] = value
        with self._lock:
            self._stats.update(st)
            self._transport.update(transport)
            for q, n in fails.items():
                self._failures[q] = self._failures.get(q, 0) + n
        return out

    def _criteria(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]
                  ) -> dict[str, tuple[str, bool]]:
        """One criteria call per query on its top passage: ``qid -> (criteria text, dry_run)``."""
        from harness.llm import LLMError, user

        qids = [q for q in run if run.doc_ids(q)]
        prompts = []
        for q in qids:
            query = queries.get(q) or Query(q, "")
            top = corpus.get(run.doc_ids(q)[0])
            prompts.append(criteria_prompt(self.raw_query(query), top.text if top else "", self.objective_of(query)))
        replies = self.client.map([[user(p)] for p in prompts]) if prompts else []
        out: dict[str, tuple[str, bool]] = {}
        st: Counter[str] = Counter()
        transport: Counter[str] = Counter()
        for q, reply in zip(qids, replies):
            st["criteria_prompts"] += 1
            if isinstance(reply, LLMError):
                st["criteria_transport_failures"] += 1
                transport[q] += 1
                out[q] = ("", False)
                continue
            st["cache_hits" if reply.cached else "calls"] += 1
            if reply.dry_run:
                st["dry_run"] += 1
                out[q] = ("", True)
                continue
            text = parse_criteria(reply.text)
            if not text:
                st["criteria_failures"] += 1
            out[q] = (text, False)
        with self._lock:
            self._stats.update(st)
            self._transport.update(transport)
            self.last_criteria.update({q: c for q, (c, _) in out.items()})
        return out

    def _order(self, run: Run, scores: dict[str, dict[str, float]]) -> Run:
        order = {}
        for q in run:
            docs = run.doc_ids(q)
            head = docs[: self.depth] if self.depth else docs
            tail = docs[len(head):]
            rank = {d: i for i, d in enumerate(head)}
            s = scores.get(q, {})
            order[q] = sorted(head, key=lambda d: (-s.get(d, 0.0), rank[d])) + tail
        with self._lock:
            self.last_scores.update(scores)
            self._stats["queries"] += len(order)
            self._stats["pairs"] += sum(len(s) for s in scores.values())
        return Run.from_order(order, run.name)

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
        with self._lock:
            s = self._stats
            out = {
                "queries": s["queries"], "pairs": s["pairs"], "prompts": s["prompts"] + s["criteria_prompts"],
                "calls": s["calls"], "cache_hits": s["cache_hits"],
                "parse_failures": s["parse_failures"], "refused": s["refused"], "dry_run": s["dry_run"],
                "failures_per_query": dict(self._failures),
                "transport_failures": s["transport_failures"] + s["criteria_transport_failures"],
                "transport_failures_per_query": dict(self._transport),
            }
            if self.protocol in ("reason", "subtask"):
                out.update({"criteria_prompts": s["criteria_prompts"], "criteria_failures": s["criteria_failures"],
                            "criteria_transport_failures": s["criteria_transport_failures"]})
            if self.protocol == "subtask":
                out["requirements"] = s["requirements"]
                out["requirement_prompts"] = s["prompts"]
            return out


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
        with self._lock:
            self._stats["requirements"] += sum(len(r) for r in reqs.values())
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
