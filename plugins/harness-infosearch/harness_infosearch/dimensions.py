"""InfoSearch dimensions, their tasks, the ``infosearch`` suite and the extension mechanism.

A :class:`Dimension` names one InfoSearch dataset (``Language-v1``) and where its files live. The
plugin registers the six published dimensions with :func:`register_dimension`; another package
adds a dimension by calling the same helper from its own ``register_tasks`` hook (see
``docs/infosearch.md`` and ``plugins/harness-infosearch-example``). Every call records the
dimension, and the ``infosearch`` suite lists the recorded dimensions when its factory is called
(after every plugin has registered), so ``--task infosearch`` covers every installed dimension.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness import Context, DataFile, Task

from .layout import has_tables
from .table1 import TABLE1

#: the hub files of one dimension (BEIR-style layout of the FollowIR family), relative to its folder
HUB_FILES = (
    "corpus.jsonl",
    "queries.jsonl",
    "qrels_og/test.jsonl",
    "qrels_changed/test.jsonl",
    "qrels_reversed/test.jsonl",
    "top_ranked.jsonl",
)
HUB_OWNER = "jianqunZ"
HUB_URL = "https://huggingface.co/datasets/{repo}/resolve/{revision}/{file}"
#: Table 1 metrics, in the paper's column order (nDCG@10 and MRR@1 are the core's standard measures)
DEFAULT_METRICS = ["nDCG@10", "MRR@1", "Robustness@10", "p-MRR", "WISE", "SICR", "gold-rank"]


@dataclass(frozen=True)
class Dimension:
    """One InfoSearch dimension.

    ``name`` is what users type (``--task infosearch:<name>``); ``hub_name`` the released dataset's
    name (``Clarity-v1`` for Keyword). ``path``: the folder holding the tables, absolute (data
    shipped inside a package) or relative to the harness data folder; default
    ``infosearch/<hub_name>``. ``repo``: the Hugging Face dataset to download from when the files
    are missing (default ``jianqunZ/<hub_name>``; ``""`` for no download).
    """

    name: str
    hub_name: str
    description: str = ""
    conditions: tuple[str, ...] = ()
    path: str | None = None
    repo: str | None = None
    revision: str = "main"
    metrics: list[str] = field(default_factory=lambda: list(DEFAULT_METRICS))
    retriever: str = "bm25"
    depth: int = 1000
    query_format: str = "{text} {instruction}"

    @property
    def task_name(self) -> str:
        return f"infosearch:{self.name}"

    @property
    def folder(self) -> str:
        return self.path if self.path is not None else f"infosearch/{self.hub_name}"

    @property
    def hub_repo(self) -> str:
        return f"{HUB_OWNER}/{self.hub_name}" if self.repo is None else self.repo

    def hub_files(self) -> list[DataFile]:
        """The files to fetch (no checksum is published for the hub files: size and sha256 are
        recorded in results.json's dataset identity instead)."""
        if not self.hub_repo or Path(self.folder).expanduser().is_absolute():
            return []
        return [DataFile(path=f"{self.folder}/{f}",
                         url=HUB_URL.format(repo=self.hub_repo, revision=self.revision, file=f))
                for f in HUB_FILES]

    def task(self, context: Context | None = None) -> Task:
        """The task; its ``files`` are the hub files only while the folder (in the context's data
        folder) lacks a complete set of tables (JSONL or Parquet), so a local Parquet export is never
        overwritten by a download."""
        files = [] if has_tables(Context.of(context).data.locate(self.folder)) else self.hub_files()
        cond = f" ({', '.join(self.conditions)})" if self.conditions else ""
        return Task(
            name=self.task_name,
            dataset="infosearch",
            table=[tuple(c) for c in TABLE1],
            description=self.description or f"InfoSearch {self.name}{cond}: og / changed / reversed",
            dataset_args={"path": self.folder, "name": self.task_name},
            metrics=list(self.metrics),
            first_stage="retrieve",
            retriever=self.retriever,
            depth=self.depth,
            query_format=self.query_format,
            files=files,
        )


BUILTIN_DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("audience", "Audience-v1", "InfoSearch Audience (layman / expert; BioASQ, SciFact)",
              ("Layman", "Expert")),
    Dimension("keyword", "Clarity-v1", "InfoSearch Keyword, released as Clarity-v1 (MS MARCO)", ("Keyword",)),
    Dimension("format", "Format-v1", "InfoSearch Format (post / code snippet / manual)",
              ("StackOverflow Post", "Code Snippet", "Official Manual")),
    Dimension("language", "Language-v1", "InfoSearch Language (Chinese / English; publichealth-qa)",
              ("Chinese", "English")),
    Dimension("length", "Length-v1", "InfoSearch Length (sentence / paragraph / article)",
              ("Sentence", "Paragraph", "Article")),
    Dimension("source", "Source-v1", "InfoSearch Source (blog / forum post / news article)",
              ("Blog", "Forum Post", "News Article")),
)

def register_dimension(register: Callable[..., Any], dimension: Dimension) -> None:
    """Register ``infosearch:<name>`` through a ``register_tasks`` hook's ``register``; the task's
    factory carries the dimension, so the ``infosearch`` suite finds it in the registry. This is the
    extension point for third-party packages::

        @hookimpl
        def register_tasks(register):
            register_dimension(register, Dimension("tone", "Tone-v1", path=str(DATA), repo=""))
    """
    if not dimension.name or ":" in dimension.name:
        raise ValueError(f"a dimension name must be non-empty and contain no ':' (got {dimension.name!r})")

    def factory(context: Context | None = None) -> Task:
        return dimension.task(context)

    factory.dimension = dimension  # type: ignore[attr-defined]
    register(dimension.task_name, factory, dimension.description or f"InfoSearch dimension {dimension.name}")


def registered_dimensions(registry: Any) -> list[Dimension]:
    """The dimensions registered in ``registry``: the six published ones first, then the others by name."""
    found = {}
    for component in registry.all("task"):
        dim = getattr(component.factory, "dimension", None)
        if isinstance(dim, Dimension):
            found.setdefault(dim.name, dim)
    builtin = [d.name for d in BUILTIN_DIMENSIONS]
    order = [n for n in builtin if n in found] + sorted(n for n in found if n not in builtin)
    return [found[n] for n in order]


def suite_task(context: Context | None = None) -> Task:
    """The ``infosearch`` suite over every dimension the evaluation's registry holds."""
    dims = registered_dimensions(Context.of(context).registry)
    return Task(
        name="infosearch",
        table=[tuple(c) for c in TABLE1],
        description=f"InfoSearch: {len(dims)} dimensions in three modes; per-dimension and mean figures",
        tasks=[d.task_name for d in dims],
    )
