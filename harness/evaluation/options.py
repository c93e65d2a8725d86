"""How one evaluation runs, in one typed, immutable object (as inspect_ai's ``EvalConfig``):
:class:`EvalOptions`, checked when it is made; and :class:`ComponentSpecs`, the components asked for.

The environment an evaluation runs in (plugins, data folder, caches, LLM settings, progress) is the
:class:`harness.Context`; the LLM overrides of a run (``--llm``, ``--dry-run``, ``--llm-batch``...) are
settings of the context's LLM session (``context.for_evaluation(llm=...)``), never options here."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any

from harness.concepts.errors import HarnessError
from harness.concepts.protocols import Metric
from harness.served.failure_policy import check_share

#: a component as given: a spec string (``"bm25:k1=0.9"``, resolved through the registry) or an object
ComponentArg = str | Any


def check_limits(limit: int | None = None, depth: int | None = None) -> None:
    """``limit`` (queries) and ``depth`` (first-stage depth) are None or whole numbers >= 1."""
    for name, value in (("limit", limit), ("depth", depth)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise HarnessError(f"{name} must be a whole number >= 1 (or None for the task's default), got {value!r}")


@dataclass(frozen=True)
class EvalOptions:
    """The settings of one evaluation (``harness eval``'s options that are neither components nor LLM
    settings).

    ``metrics``: names (or :class:`~harness.Metric` objects) instead of the task's; ``limit``: the first
    N queries; ``depth``: the first stage's depth instead of the task's; ``output``: the results folder
    (created and probed before any data is read; one already holding ``results.json`` is refused unless
    ``overwrite``); ``progress``: progress lines on stderr; ``command``: the command line recorded in
    results.json; ``max_llm_failures``: the share of LLM requests in [0, 1] that may get no usable reply
    before the result is INCOMPLETE; ``qrels``: a TREC qrels file scored against instead of the dataset's
    (LLM-filled qrels, ``harness judge fill``; a single-mode task only; its identity goes to results.json)."""

    metrics: tuple[str | Metric, ...] | None = None
    limit: int | None = None
    depth: int | None = None
    output: str | None = None
    overwrite: bool = False
    progress: bool = True
    command: tuple[str, ...] | None = None
    max_llm_failures: float = 0.0
    qrels: str | None = None

    def __post_init__(self) -> None:
        check_limits(limit=self.limit, depth=self.depth)
        try:
            object.__setattr__(self, "max_llm_failures", check_share(self.max_llm_failures))
        except (TypeError, ValueError) as exc:
            raise HarnessError(str(exc)) from None
        if self.metrics is not None:
            object.__setattr__(self, "metrics", tuple(self.metrics))
        if self.command is not None:
            object.__setattr__(self, "command", tuple(str(c) for c in self.command))
        if self.output is not None:
            object.__setattr__(self, "output", str(self.output))
        if self.qrels is not None:
            object.__setattr__(self, "qrels", str(self.qrels))

    def replace(self, **changes: Any) -> EvalOptions:
        """A copy with ``changes`` (checked again)."""
        return replace(self, **changes)

    @classmethod
    def names(cls) -> frozenset[str]:
        return frozenset(f.name for f in fields(cls))


@dataclass(frozen=True)
class ComponentSpecs:
    """The components an evaluation is asked to run: the first stage (None: the task's), the rerankers in
    order, the judge; each a spec string or an object implementing its protocol."""

    retriever: ComponentArg | None = None
    rerankers: tuple[ComponentArg, ...] = field(default_factory=tuple)
    judge: ComponentArg | None = None

    def __post_init__(self) -> None:
        rerankers = self.rerankers
        if isinstance(rerankers, str) or not isinstance(rerankers, Sequence):
            raise HarnessError(f"rerankers must be a list of specs or objects, not {type(rerankers).__name__}")
        object.__setattr__(self, "rerankers", tuple(rerankers))


#: ``evaluate()`` keywords of plugin API 1.0 that set LLM session settings: deprecated for the context
LLM_KEYWORDS = MappingProxyType({"llm": "llm", "max_concurrency": "max_concurrency", "dry_run": "dry_run",
                                 "llm_batch": "batch", "llm_batch_wait": "batch_wait"})


def split_keywords(settings: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """``evaluate(**settings)`` -> (:class:`EvalOptions` fields, LLM session changes, a registry or None).
    The LLM keywords and ``registry`` still work, with a :class:`DeprecationWarning` naming the context
    way; any other keyword is a ``TypeError`` as Python gives one."""
    options = {k: v for k, v in settings.items() if k in EvalOptions.names()}
    llm = {LLM_KEYWORDS[k]: v for k, v in settings.items() if k in LLM_KEYWORDS}
    unknown = sorted(set(settings) - EvalOptions.names() - set(LLM_KEYWORDS) - {"registry"})
    if unknown:
        raise TypeError(f"evaluate() got an unexpected keyword argument {unknown[0]!r} (options: "
                        f"{', '.join(sorted(EvalOptions.names()))})")
    if llm or "registry" in settings:
        given = ", ".join(sorted(k for k in settings if k in LLM_KEYWORDS or k == "registry"))
        warnings.warn(f"evaluate({given}=...) is deprecated: LLM settings and the registry belong to the context "
                      f"(evaluate(..., context=Context.create(registry=..., llm=LLMSettings(llm=...))), or "
                      f"context.for_evaluation(llm=..., dry_run=...))", DeprecationWarning, stacklevel=4)
    return options, {k: v for k, v in llm.items() if v is not None}, settings.get("registry")
