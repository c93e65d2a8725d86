"""The kinds of component, defined once: everything else (the hook specifications, the host's
hook-to-kind map, the registry's tables, the scaffolds of ``harness new-plugin``, the docs) is
derived from :data:`KIND_TABLE`."""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class Kind:
    """``name``: the kind (``retriever``); ``hook``: its ``register_*`` hook; ``doc``: the hook's
    documentation (what its factories return); ``scaffold``: ``harness new-plugin --kind`` writes one."""

    name: str
    hook: str
    doc: str
    scaffold: bool = True

    @property
    def cli_name(self) -> str:
        """The spelling on the command line (``llm-provider``)."""
        return self.name.replace("_", "-")


KIND_TABLE: tuple[Kind, ...] = (
    Kind("dataset", "register_datasets", "Register dataset loaders: ``factory(**args) -> harness.Dataset``."),
    Kind("task", "register_tasks",
         "Register tasks: ``factory() -> harness.Task`` (dataset, modes, default metrics, first stage).",
         scaffold=False),
    Kind("retriever", "register_retrievers",
         "Register first-stage retrievers: ``factory(**args) -> Retriever`` (``index``, ``search``)."),
    Kind("reranker", "register_rerankers", "Register rerankers: ``factory(**args) -> Reranker`` (``rerank``)."),
    Kind("judge", "register_judges", "Register judges: ``factory(**args) -> Judge`` (``judge``)."),
    Kind("metric", "register_metrics", "Register metrics: ``factory(**args) -> Metric`` (``compute``)."),
    Kind("llm_provider", "register_llm_providers",
         "Register LLM providers: ``factory(**args) -> provider`` used by LLM-backed components."),
)

KINDS: tuple[str, ...] = tuple(k.name for k in KIND_TABLE)
HOOK_KIND = MappingProxyType({k.hook: k.name for k in KIND_TABLE})
BY_NAME = MappingProxyType({k.name: k for k in KIND_TABLE})


def kind_named(text: str) -> Kind | None:
    """The kind spelled ``text`` (``llm-provider`` or ``llm_provider``), or None."""
    return BY_NAME.get(text.replace("-", "_"))
