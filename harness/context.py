"""The context of an evaluation: everything it runs with, in one object passed explicitly.

A :class:`Context` holds the plugin host and its registry, the data folder, the cache folder, the
LLM session (defaults, clients, endpoints, usage) and the progress settings. The CLI builds one from
its options and the environment; ``harness.evaluate`` builds one when none is given. Components that
need any of it take an optional ``context`` argument in their factory, and the registry passes it
(see :meth:`harness.components.registry.Registry.build`). Nothing lives in module globals, so two
evaluations in one process never see each other's components, settings or counters.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.components.registry import Registry
from harness.concepts.component_context import ComponentContext
from harness.concepts.errors import HarnessError
from harness.concepts.task import Task
from harness.data.folder import DataFolder
from harness.llm.client import Client
from harness.llm.session import LLMSession
from harness.plugins.host import PluginHost
from harness.runtime.cachedir import default_cache_dir
from harness.runtime.progress import ProgressSettings
from harness.served.settings import LLMSettings


@dataclass
class Context:
    """``host``: the plugin host (its ``registry`` finds components; its report gives versions);
    ``data``: the data folder; ``cache_dir``: the cache root (``llm/`` replies, ``embeddings/``);
    ``llm``: the LLM session of this evaluation; ``progress``: how long work reports progress."""

    host: PluginHost
    data: DataFolder
    cache_dir: Path
    llm: LLMSession
    progress: ProgressSettings = field(default_factory=ProgressSettings)

    @property
    def registry(self) -> Registry:
        return self.host.registry

    @classmethod
    def create(
        cls,
        *,
        host: PluginHost | None = None,
        registry: Registry | None = None,
        data_dir: str | os.PathLike[str] | None = None,
        data_dir_given_by: str = "Context(data_dir=...)",
        cache_dir: str | os.PathLike[str] | None = None,
        llm: LLMSettings | None = None,
        progress: ProgressSettings | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Context:
        """A context from explicit values, the rest from the environment (read now, once):
        ``HARNESS_DATA``, ``HARNESS_CACHE_DIR``, ``HARNESS_LLM`` and the other LLM variables,
        ``HARNESS_PROGRESS``. ``registry``: use this registry (a host is made around it); ``host``:
        a loaded plugin host; neither: load the installed plugins."""
        env = os.environ if environ is None else environ
        if host is None:
            host = PluginHost.around(registry) if registry is not None else PluginHost(environ=env)
        cache = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir(env)
        settings = llm if llm is not None else LLMSettings.from_env(env)
        if settings.cache_dir is None:
            settings = replace(settings, cache_dir=str(cache))
        prog = progress if progress is not None else ProgressSettings.from_env(env)
        data = DataFolder.from_env(data_dir, data_dir_given_by, env)
        return cls(host, data, cache, LLMSession(settings, host.registry, prog), prog)

    def for_evaluation(self, stop: threading.Event | None = None, **llm_changes: Any) -> Context:
        """A copy with a fresh LLM session (settings changed by ``llm_changes``, None values ignored):
        each evaluation counts its own calls and creates its own clients. ``stop``: the event that ends
        the session's batch waits (a suite's members waiting together); default this session's."""
        settings = self.llm.settings.merged(**llm_changes)
        stop = stop if stop is not None else self.llm.stop
        return replace(self, llm=LLMSession(settings, self.host.registry, self.progress, stop=stop))

    def component_args(self, typed: Mapping[str, Any]) -> AbstractContextManager[None]:
        """While the registry builds a component: the arguments typed in its spec, so the LLM settings
        the user typed there beat the LLM spec's, and the LLM spec's beat the component's defaults."""
        return self.llm.component_args(typed)

    @classmethod
    def of(cls, context: ComponentContext | None) -> Context:
        """The one fallback for code that runs without a context: ``context`` itself (the evaluation's,
        passed to a factory as a :class:`~harness.ComponentContext`), or a new one from the environment
        when None (a component used outside an evaluation: ``RankGPT(llm=...)`` in a notebook)."""
        if context is None:
            return cls.create()
        if isinstance(context, Context):
            return context
        raise HarnessError(f"expected a harness.Context (or None: the environment's), not {type(context).__name__}")

    def fetch(self, task: Task) -> list[Path]:
        """The paths of ``task``'s files (a :class:`~harness.Task`) in the data folder, the missing ones
        fetched first as ``harness eval`` fetches a task's files (``$HARNESS_AUTO_DOWNLOAD``, mirrors, Hub
        files through ``huggingface_hub``; one :class:`~harness.DataError` when that fails): for a dataset
        factory whose arguments decide which files it reads (a benchmark's variants)."""
        from harness.data.download import ensure_task_files  # lazy: urllib and ssl only when files are fetched

        return ensure_task_files(task, self.data, self.progress)

    def versions(self) -> dict[str, str]:
        """Versions of the core, each loaded plugin's distribution and key libraries, for results."""
        return self.host.versions()

    def __repr__(self) -> str:
        return (f"Context(data={str(self.data.path)!r}, cache_dir={str(self.cache_dir)!r}, "
                f"llm={self.llm.settings.llm!r}, dry_run={self.llm.settings.dry_run}, progress={self.progress.mode!r})")


def get_client(spec: str | None = None, *, settings: LLMSettings | None = None, registry: Registry | None = None,
               **kwargs: Any) -> Client:
    """A client for code outside an evaluation (a notebook, a script, a plugin's tests; components get theirs
    from ``context.llm.client(...)``): the LLM session of a context made from the environment (the one
    fallback: :meth:`Context.create`, its plugins' providers included), with ``settings`` as its LLM settings
    when given (else the environment's) and ``registry`` as its registry when given.
    ``get_client("openai:gpt-4o-mini", cache_dir=tmp, temperature=0)``; ``kwargs`` are
    :meth:`~harness.llm.LLMSession.client`'s."""
    return Context.create(registry=registry, llm=settings).llm.client(spec, **kwargs)
