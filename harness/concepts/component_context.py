"""What a component may use of the evaluation it runs in: :class:`ComponentContext`, the protocol
every factory's ``context`` parameter is typed with. :class:`harness.Context` implements it; a
component asks it for registry lookups, an LLM client, files of the data folder, the cache folder
and the progress settings, and for nothing else. Each member is typed by a protocol of this module
(the classes that implement them live in the layers above: the registry, the data folder, the LLM
session), so a component written against this page needs nothing else of the harness."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from harness.concepts.task import Task


class Registered(Protocol):
    """One registration: its kind, name, factory and the distribution that registered it."""

    kind: str
    name: str
    factory: Callable[..., Any]
    source: str


class ComponentLookup(Protocol):
    """The registry, as components see it: names of a kind, one registration by name, and components
    built from a spec (a ``[source:]name[:key=value,...]`` string) with the evaluation's context."""

    def names(self, kind: str) -> list[str]: ...

    def lookup(self, kind: str, name: str, source: str | None = None) -> Registered: ...

    def create(self, kind: str, spec: Any, context: ComponentContext | None = None, **extra: Any) -> Any: ...


class DataFiles(Protocol):
    """The data folder: ``locate`` (a path under it, present or not), ``resolve`` (present, or one
    :class:`~harness.DataError` naming the file and how to get it), ``file_identity`` (path, size, sha256)."""

    path: Path

    def locate(self, relpath: str | os.PathLike[str]) -> Path: ...

    def resolve(self, relpath: str | os.PathLike[str]) -> Path: ...

    def file_identity(self, path: str | os.PathLike[str]) -> dict[str, Any]: ...


class ChatReply(Protocol):
    """One reply: its ``text``, why it ended, whether it came from the cache, was a dry-run placeholder
    or a refusal (the full type: :class:`harness.llm.Reply`)."""

    text: str
    finish_reason: str | None
    cached: bool
    dry_run: bool

    @property
    def refused(self) -> bool: ...


class ChatClient(Protocol):
    """A cached, retried, counted chat client (the full type: :class:`harness.llm.Client`): one call,
    independent calls concurrently (a failed one holds its :class:`harness.llm.LLMError`), sequences of
    dependent calls per item, and a description for results.json."""

    def chat(self, messages: Any, options: Any = None, /, **overrides: Any) -> ChatReply: ...

    def map(self, requests: Iterable[Any], *, max_concurrency: int | None = None,
            on_result: Callable[[int, Any], None] | None = None,
            query_ids: Iterable[str | None] | None = None) -> Sequence[Any]: ...

    def run_sequences(self, fn: Callable[[Any, Callable[..., ChatReply]], Any], items: Iterable[Any], *,
                      max_workers: int | None = None, on_result: Callable[[int, Any], None] | None = None
                      ) -> Sequence[Any]: ...

    def describe(self) -> dict[str, Any]: ...


class LLMClients(Protocol):
    """The LLM session: ``client(spec, component_defaults=..., **chat_options)``, a cached, retried,
    counted client (``spec`` a ``provider:model[:key=value,...]`` string, None for ``--llm``)."""

    def client(self, spec: Any = None, *, component_defaults: Mapping[str, Any] | None = None,
               **options: Any) -> ChatClient: ...


class ProgressView(Protocol):
    """How long work reports progress: ``mode`` (``auto``, ``off``, ``bar``, ``lines``) and ``interval``."""

    mode: str
    interval: float


@runtime_checkable
class ComponentContext(Protocol):
    """What a component factory receives as ``context``: see the module docstring."""

    @property
    def registry(self) -> ComponentLookup: ...

    data: DataFiles
    cache_dir: Path
    llm: LLMClients
    progress: ProgressView

    def fetch(self, task: Task) -> list[Path]: ...

    def versions(self) -> Mapping[str, str]: ...
