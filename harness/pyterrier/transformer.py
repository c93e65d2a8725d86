"""Any harness reranker as a PyTerrier transformer: ``harness.pyterrier.Reranker("rankgpt:window=20",
llm="openai:gpt-4o-mini")``. It takes PyTerrier's result frame (``qid``, ``query``, ``docno``, ``text``,
and ``score``/``rank`` when a first stage made them; an ``instruction`` and a ``title`` column are used when
present) and returns it re-ranked: the same rows and columns, ``score`` the reranker's (made strictly
decreasing by the rule ``harness eval`` applies), ``rank`` from 0, rows by query and rank. The reranker is
built through the registry in a harness context, so its spec, its LLM client (cache, retries, usage,
prices) and its ``config()`` are those of ``harness eval --reranker SPEC``: the same ranking for the same
input."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from harness.runtime.extras import require

require("pyterrier", "pyterrier", "harness.pyterrier", package="python-terrier")

import pyterrier as pt  # noqa: E402  (after the check: a missing extra is one line)

from harness.concepts.errors import HarnessError  # noqa: E402
from harness.concepts.protocols import Reranker as RerankerProtocol  # noqa: E402
from harness.concepts.protocols import counted, describe  # noqa: E402
from harness.concepts.query import DEFAULT_QUERY_FORMAT  # noqa: E402
from harness.context import Context  # noqa: E402
from harness.formats.pyterrier_frames import frame_with_ranking, ranking_from_frame  # noqa: E402


class Reranker(pt.Transformer):
    """``Reranker(spec_or_object, llm=None, context=None, query_format="{text} {instruction}", **args)``:
    ``spec_or_object`` a reranker spec (``"rankgpt"``, ``"true-false:template=followir"``, ``"dense"``,
    ``"llm-double"``...) built with ``args`` as extra spec arguments, or an object implementing
    :class:`harness.Reranker`; ``llm``: the LLM it uses when its spec names none (``--llm``); ``context``:
    the plugins, caches and LLM settings (default: the environment's); ``query_format``: how the query
    text is formed from ``query`` and an ``instruction`` column, as a task's ``query_format``."""

    def __init__(self, spec_or_object: Any, *, llm: str | None = None, context: Context | None = None,
                 query_format: str = DEFAULT_QUERY_FORMAT, **args: Any) -> None:
        ctx = Context.of(context).for_evaluation(llm=llm)
        self.context, self.query_format = ctx, query_format
        if isinstance(spec_or_object, str):
            self.reranker, self.component, _ = ctx.registry.build("reranker", spec_or_object, ctx, **args)
            self.spec = spec_or_object
        else:
            if args:
                raise HarnessError("arguments apply to a reranker spec, not to an object")
            self.reranker, self.component, self.spec = spec_or_object, None, f"object:{type(spec_or_object).__name__}"
        if not isinstance(self.reranker, RerankerProtocol):
            raise HarnessError(f"{self.spec!r} is a {type(self.reranker).__name__}, not a reranker (no rerank method)")

    def transform(self, inp: Any) -> Any:
        """PyTerrier's frame re-ranked (see the module docstring)."""
        if len(inp) == 0:
            return inp.assign(score=[], rank=[])
        queries, run, corpus = ranking_from_frame(inp, self.query_format, what="the frame given to the reranker")
        ranked = self.reranker.rerank(queries, run, corpus)
        if not ranked.is_strictly_decreasing():  # the one rule harness eval applies after each reranker
            ranked = ranked.with_strict_scores()
        return frame_with_ranking(inp, ranked)

    def config(self) -> dict[str, Any]:
        """The reranker's spec and ``config()``, as results.json records them."""
        return {"spec": self.spec, **describe(self.reranker)}

    def stats(self) -> dict[str, Any] | None:
        return counted(self.reranker)

    def usage(self) -> Mapping[str, Any]:
        """The LLM usage so far (calls, cache hits, tokens, cost), as results.json's ``usage``."""
        return self.context.llm.report()

    def __repr__(self) -> str:
        return f"harness.pyterrier.Reranker({self.spec!r})"
