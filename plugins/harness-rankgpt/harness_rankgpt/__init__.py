"""harness-rankgpt: RankGPT (Sun et al., EMNLP 2023) as harness rerankers.

- ``rankgpt``: the listwise permutation-generation reranker with the back-to-front sliding window
  (``--reranker rankgpt`` or ``rankgpt:llm=openai:gpt-4o-mini,window=20,step=10``);
- ``relevance-generation``: the paper's pointwise baseline (HELM 4-shot yes/no, scored by p(Yes)).

Importing this module imports no SDK (openai, anthropic) and no torch: the factories import the
implementation, and the LLM client is created when a component is.
"""

from __future__ import annotations

from typing import Any

from harness import ComponentContext, hookimpl

__version__ = "0.1.0"


def make_rankgpt(context: ComponentContext | None = None, **options: Any) -> Any:
    """Factory of the ``rankgpt`` reranker (see :class:`harness_rankgpt.rankgpt.RankGPT`); ``context``
    is the evaluation's (its LLM session)."""
    from .rankgpt import RankGPT

    return RankGPT(context=context, **options)


def make_relevance_generation(context: ComponentContext | None = None, **options: Any) -> Any:
    """Factory of the ``relevance-generation`` reranker (:class:`harness_rankgpt.relevance.RelevanceGeneration`)."""
    from .relevance import RelevanceGeneration

    return RelevanceGeneration(context=context, **options)


@hookimpl
def register_rerankers(register):
    register("rankgpt", make_rankgpt,
             "RankGPT listwise LLM reranker: sliding window 20/10 over the top 100 (Sun et al. 2023)")
    register("relevance-generation", make_relevance_generation,
             "RankGPT paper's relevance-generation baseline: HELM 4-shot yes/no, scored by p(Yes) from logprobs")


# (the factories are not named ``rankgpt``/``relevance``: importing the submodules
# ``harness_rankgpt.rankgpt`` and ``.relevance`` sets those attributes on this package)
__all__ = ["__version__", "make_rankgpt", "make_relevance_generation", "register_rerankers"]
