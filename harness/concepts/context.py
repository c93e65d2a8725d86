"""What a component may use of the evaluation it runs in: :class:`ComponentContext`, the protocol
every factory's ``context`` parameter is typed with. :class:`harness.Context` implements it; a
component asks it for registry lookups, an LLM client, files of the data folder, the cache folder
and the progress settings, and for nothing else."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


class ComponentLookup(Protocol):
    """The registry, as components see it: names of a kind, and components built from a spec."""

    def names(self, kind: str) -> list[str]: ...

    def create(self, kind: str, spec: Any, context: ComponentContext | None = None, **extra: Any) -> Any: ...


class DataFiles(Protocol):
    """The data folder: ``locate`` (a path under it, present or not), ``resolve`` (present, or one
    :class:`~harness.DataError` naming the file and how to get it), ``file_identity`` (path, size, sha256)."""

    def locate(self, relpath: str | os.PathLike[str]) -> Path: ...

    def resolve(self, relpath: str | os.PathLike[str]) -> Path: ...

    def file_identity(self, path: str | os.PathLike[str]) -> dict[str, Any]: ...


class LLMClients(Protocol):
    """The LLM session: ``client(spec, **defaults)``, a cached, retried, counted client."""

    def client(self, spec: Any = None, **options: Any) -> Any: ...


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

    def fetch(self, task: Any) -> list[Path]: ...

    def versions(self) -> Mapping[str, str]: ...
