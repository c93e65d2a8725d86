"""The RankGPT listwise reranker: back-to-front sliding window of permutation-generation calls."""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Mapping
from typing import Any

from harness import ComponentContext, Context, Document, Query, Run

from . import __version__
from .parsing import parse_permutation, windows
from .prompts import build_messages, escape_brackets, get_template, passage_text, template_hash, text_hash

#: reply-quality failures: a reply came but cannot be applied (the window keeps its incoming order);
#: transport failures (no usable reply) are counted apart, as ``transport_failures``
FAILURES = ("unparseable", "refused", "truncated")
QUERY_FIELDS = ("auto", "formed", "raw")


def permutation_cap(window: int) -> int:
    """Reply tokens a full permutation of ``window`` passages takes, with room: ``[12] > `` is at most
    about five tokens in the common tokenizers; 6 per passage plus 32 for a preamble."""
    return 6 * int(window) + 32


class RankGPT:
    """RankGPT (Sun et al., EMNLP 2023), faithful to the official code by default.

    Options (spec arguments, ``--reranker rankgpt:window=20,step=10``):

    - ``llm``: LLM spec; default the eval-wide ``--llm``. The client is created here, so a missing
      key fails before any work.
    - ``window`` (20), ``step`` (10), ``depth`` (100): re-rank the top ``depth`` with windows of
      ``window`` moving up by ``step``, back to front; ``passes`` (1) repeats the whole slide.
    - ``prompt``: ``code`` (the official code's strings), ``paper`` (App. A.5), ``single`` (one
      user message, InfoSearch Table 16 / rank_llm form).
    - ``objective``: BIRCO's "+O" task description; the literal text, or ``instruction`` to use each
      query's own instruction. ``query``: which query text goes in the prompt: ``formed`` (the task's
      query format, instruction included when the task puts it there), ``raw`` (the query alone), or
      ``auto`` (``raw`` when ``objective=instruction``, else ``formed``).
    - ``zero_based`` (False): ids ``[0]..[n-1]`` (BIRCO). ``escape_brackets`` (False): ``[``/``]``
      in the query and passages become ``(``/``)`` (BIRCO).
    - ``max_words`` (300): each passage's word cap. ``temperature`` (0). ``max_tokens``: the reply
      cap, by default :func:`permutation_cap` of the window (6 per passage + 32: a full permutation
      fits, a model that never ends its turn stops there); ``0`` sends none. The LLM spec's
      ``temperature``/``max_tokens`` beat these defaults, a value given here beats the LLM spec's.
    - ``parser``: ``digits`` (the official parser: every digit counts) or ``brackets`` (only ``[n]``).
    - ``shuffle``: an integer seed to shuffle each candidate list first (NovelEval's protocol).
    """

    def __init__(
        self,
        llm: str | None = None,
        window: int = 20,
        step: int = 10,
        depth: int = 100,
        passes: int = 1,
        prompt: str = "code",
        objective: str | None = None,
        query: str = "auto",
        zero_based: bool = False,
        escape_brackets: bool = False,
        max_words: int | None = 300,
        temperature: float | None = None,
        max_tokens: int | None = None,
        parser: str = "digits",
        shuffle: int | None = None,
        context: ComponentContext | None = None,
    ):
        if window < 1 or step < 1 or depth < 1 or passes < 1:
            raise ValueError("rankgpt: window, step, depth and passes must be >= 1")
        if query not in QUERY_FIELDS:
            raise ValueError(f"rankgpt: query must be one of {QUERY_FIELDS}, got {query!r}")
        if parser not in ("digits", "brackets"):
            raise ValueError(f"rankgpt: parser must be 'digits' or 'brackets', got {parser!r}")
        self.template = get_template(prompt)
        self.window, self.step, self.depth, self.passes = int(window), int(step), int(depth), int(passes)
        self.objective = str(objective) if objective not in (None, "") else None
        self.query_field = ("raw" if self.objective == "instruction" else "formed") if query == "auto" else query
        self.zero_based = bool(zero_based)
        self.escape = bool(escape_brackets)
        self.max_words = int(max_words) if max_words else None
        self.parser = parser
        self.shuffle = shuffle
        given = {k: conv(v) for k, v, conv in (("temperature", temperature, float), ("max_tokens", max_tokens, int))
                 if v is not None}  # what was typed beats the LLM spec; the LLM spec beats the defaults
        self.client = Context.of(context).llm.client(
            llm, component_defaults={"temperature": 0.0, "max_tokens": permutation_cap(self.window)}, **given)
        self.temperature, self.max_tokens = self.client.defaults.temperature, self.client.defaults.max_tokens
        self._lock = threading.Lock()
        self._stats: Counter[str] = Counter()
        self._failures: dict[str, int] = {}
        self._transport: dict[str, int] = {}
        self._windows_per_query: Counter[int] = Counter()

    # -- prompt pieces -------------------------------------------------------------------------
    def query_and_objective(self, query: Query) -> tuple[str, str | None]:
        text = query.meta.get("query", query.text) if self.query_field == "raw" else query.text
        objective = self.objective
        if objective == "instruction":
            objective = query.instruction or None
        if self.escape:
            text = escape_brackets(text)
            objective = escape_brackets(objective) if objective else objective
        return text, objective

    def passage(self, doc: Document | None) -> str:
        if doc is None:
            return ""
        content = passage_text(doc.text, doc.title, self.max_words)
        return escape_brackets(content) if self.escape else content

    def messages(self, query: Query, docs: list[Document | None]) -> list[dict[str, str]]:
        """The messages of one window over ``docs`` (in their current order)."""
        text, objective = self.query_and_objective(query)
        return build_messages(text, [self.passage(d) for d in docs], self.template, zero_based=self.zero_based,
                              objective=objective)

    # -- ranking -------------------------------------------------------------------------------
    def windows(self, n: int) -> list[tuple[int, int]]:
        """The window plan for a list of ``n``: back to front (subclasses change the plan here)."""
        return windows(n, self.window, self.step)

    def rank_list(self, query: Query, doc_ids: list[str], corpus: Mapping[str, Document], chat: Any
                  ) -> tuple[list[str], Counter[str]]:
        """One query: the top ``depth`` re-ranked by the sliding window, the rest appended as they were."""
        from harness.llm import LLMError

        st: Counter[str] = Counter()
        head, tail = list(doc_ids[: self.depth]), list(doc_ids[self.depth:])
        if self.shuffle is not None:
            random.Random(f"{self.shuffle}:{query.id}").shuffle(head)
        for _ in range(self.passes):
            for start, end in self.windows(len(head)):
                win = head[start:end]
                st["windows"] += 1
                try:
                    reply = chat(self.messages(query, [corpus.get(d) for d in win]))
                except LLMError:  # no usable reply: the method was not applied to this window
                    st["transport_failures"] += 1
                    continue
                st["cache_hits" if reply.cached else "calls"] += 1
                if reply.dry_run:
                    st["dry_run"] += 1
                    continue
                if reply.refused:
                    st["refused"] += 1
                    continue
                if reply.finish_reason == "length":
                    st["truncated"] += 1
                    continue
                parsed = parse_permutation(reply.text, len(win), zero_based=self.zero_based, parser=self.parser)
                if parsed.unparseable:
                    st["unparseable"] += 1
                    continue
                st["partial"] += parsed.missing > 0
                st["missing_ids"] += parsed.missing
                st["duplicate_ids"] += parsed.duplicates
                st["out_of_range_ids"] += parsed.out_of_range
                head[start:end] = [win[i] for i in parsed.order]
        return head + tail, st

    def rerank(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Run:
        qids = list(run)

        def one(qid: str, chat: Any) -> tuple[list[str], Counter[str]]:
            query = queries.get(qid) or Query(qid, "")
            return self.rank_list(query, run.doc_ids(qid), corpus, chat)

        results = self.client.run_sequences(one, qids)
        order: dict[str, list[str]] = {}
        for qid, res in zip(qids, results):
            if isinstance(res, Exception):  # cannot happen (rank_list catches LLMError); keep the input
                order[qid] = run.doc_ids(qid)
                res = (None, Counter({"transport_failures": 1}))
            else:
                order[qid] = res[0]
            st = res[1]
            with self._lock:
                self._stats.update(st)
                self._stats["queries"] += 1
                self._windows_per_query[st["windows"]] += 1
                self._failures[qid] = self._failures.get(qid, 0) + sum(st[k] for k in FAILURES)
                if st["transport_failures"]:
                    self._transport[qid] = self._transport.get(qid, 0) + st["transport_failures"]
        return Run.from_order(order, run.name)

    # -- reporting -----------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        return {
            "method": "rankgpt",
            "plugin": f"harness-rankgpt {__version__}",
            "llm": self.client.describe(),
            "window": self.window, "step": self.step, "depth": self.depth, "passes": self.passes,
            "windows_per_query": len(windows(self.depth, self.window, self.step)) * self.passes,
            "prompt": self.template.name,
            "prompt_source": self.template.source,
            "prompt_template_sha256": template_hash(self.template),
            "objective": None if self.objective in (None, "instruction") else self.objective,
            "objective_from": "instruction" if self.objective == "instruction" else (
                "text" if self.objective else None),
            "objective_sha256": text_hash(self.objective) if self.objective not in (None, "instruction") else None,
            "query": self.query_field,
            "zero_based": self.zero_based, "escape_brackets": self.escape,
            "max_words": self.max_words, "temperature": self.temperature, "max_tokens": self.max_tokens,
            "parser": self.parser, "shuffle": self.shuffle,
        }

    def stats(self) -> dict[str, Any]:
        """Counts over every ``rerank`` call so far: windows, calls sent, cache hits, windows whose
        reply could not be applied by kind (each kept its incoming order), ids the parser fixed, failed
        windows per query, and transport failures (windows that got no reply at all) per query."""
        with self._lock:
            s = self._stats
            return {
                "queries": s["queries"], "windows": s["windows"], "calls": s["calls"], "cache_hits": s["cache_hits"],
                "windows_per_query": {str(k): v for k, v in sorted(self._windows_per_query.items())},
                "failed_windows": sum(s[k] for k in FAILURES),
                **{k: s[k] for k in FAILURES},
                "dry_run": s["dry_run"],
                "partial_windows": s["partial"], "missing_ids": s["missing_ids"],
                "duplicate_ids": s["duplicate_ids"], "out_of_range_ids": s["out_of_range_ids"],
                "failures_per_query": dict(self._failures),
                "transport_failures": s["transport_failures"],
                "transport_failures_per_query": dict(self._transport),
            }
