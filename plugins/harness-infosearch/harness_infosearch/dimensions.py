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
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness import ComponentContext, Context, DataError, DataFile, Task

from .layout import has_tables
from .table1 import TABLE1

#: the files fetched for one dimension, relative to its folder: what the official loader reads (corpus,
#: queries, the three qrels; the hub repositories hold no ``top_ranked.jsonl``; their ``qrels_*/test.tsv``,
#: ``empty_scores.json`` and README are not read, so not fetched)
HUB_FILES = (
    "corpus.jsonl",
    "queries.jsonl",
    "qrels_og/test.jsonl",
    "qrels_changed/test.jsonl",
    "qrels_reversed/test.jsonl",
)
HUB_OWNER = "jianqunZ"
HUB_URL = "https://huggingface.co/datasets/{repo}/resolve/{revision}/{file}"
#: the commit each published dimension is pinned to: the ``revision`` of the official task metadata
#: (EIT-NLP/InfoSearch ``25179c1905defcabe51a724bff79dc05bd3d8ae8``,
#: ``mteb_infosearch/mteb/tasks/InstructionRetrieval/eng/<Dim>InstructionRetrieval.py``). Length's metadata
#: names Language-v1's commit (``d4915806...``), an upstream copy error: a commit of one repository is
#: not one of another, so the Hub cannot serve Length-v1 at it. Length is therefore not pinned: its files
#: are fetched at the commit ``main`` names when downloaded (said on stderr; see docs/infosearch.md).
REVISIONS = MappingProxyType({
    "Audience-v1": "9bc73db6f3ca419c3fdb4d98e1f0864411756fc8",
    "Clarity-v1": "4c1892c874d09877c00243fac16452f3353039aa",
    "Format-v1": "63b53c9e117fa16a469026650861db77f25ab823",
    "Language-v1": "d4915806662132e118e8df242aee059ef5669578",
    "Source-v1": "67dad8949d168785706d82f93e6794e88c8fcd2e",
})
#: the published dimensions without a usable pin, and why
UNPINNED = MappingProxyType({
    "Length-v1": "the official task metadata names Language-v1's commit for Length-v1, which the Hub cannot "
                 "serve; see docs/infosearch.md",
})
#: Table 1 metrics, in the paper's column order (nDCG@10 and MRR@1 are the core's standard measures)
DEFAULT_METRICS = ("nDCG@10", "MRR@1", "Robustness@10", "p-MRR", "WISE", "SICR", "gold-rank")


@dataclass(frozen=True)
class Dimension:
    """One InfoSearch dimension.

    ``name`` is what users type (``--task infosearch:<name>``); ``hub_name`` the released dataset's
    name (``Clarity-v1`` for Keyword). ``path``: the folder holding the tables, absolute (data
    shipped inside a package) or relative to the harness data folder; default
    ``infosearch/<hub_name>`` (``infosearch/<hub_name>@<revision>`` when ``revision`` is not the pinned
    one, so two snapshots never share a folder). ``repo``: the Hugging Face dataset to download from
    when the files are missing (default ``jianqunZ/<hub_name>``; ``""`` for no download).
    ``revision``: the full commit id to download (default: the pin in :data:`REVISIONS`; a dimension
    with another ``repo`` must name its own).
    """

    name: str
    hub_name: str
    description: str = ""
    conditions: tuple[str, ...] = ()
    path: str | None = None
    repo: str | None = None
    revision: str | None = None
    metrics: list[str] = field(default_factory=lambda: list(DEFAULT_METRICS))
    retriever: str = "bm25"
    depth: int = 1000
    query_format: str = "{text} {instruction}"

    @property
    def task_name(self) -> str:
        return f"infosearch:{self.name}"

    @property
    def hub_repo(self) -> str:
        return f"{HUB_OWNER}/{self.hub_name}" if self.repo is None else self.repo

    @property
    def pinned_revision(self) -> str | None:
        """The commit this dimension is pinned to by default (None for a repository not pinned here)."""
        return REVISIONS.get(self.hub_name) if self.hub_repo == f"{HUB_OWNER}/{self.hub_name}" else None

    @property
    def hub_revision(self) -> str | None:
        """The commit to download: ``revision`` when given, else the pin."""
        return self.revision or self.pinned_revision

    @property
    def folder(self) -> str:
        if self.path is not None:
            return self.path
        rev = self.hub_revision
        suffix = f"@{rev}" if self.revision and rev != self.pinned_revision else ""
        return f"infosearch/{self.hub_name}{suffix}"

    def at_revision(self, revision: str | None) -> Dimension:
        """This dimension at another commit (``None`` or ``""``: unchanged)."""
        return replace(self, revision=revision) if revision else self

    def hub_files(self) -> list[DataFile]:
        """The files to fetch (no checksum is published for the hub files: size and sha256 are
        recorded in results.json's dataset identity instead)."""
        if not self.hub_repo or Path(self.folder).expanduser().is_absolute():
            return []
        revision = self.hub_revision
        unpinned = UNPINNED.get(self.hub_name, "") if not revision and self.repo is None else ""
        if unpinned:
            return [DataFile(path=f"{self.folder}/{f}", unpinned=unpinned,
                             url=HUB_URL.format(repo=self.hub_repo, revision="main", file=f))
                    for f in HUB_FILES]
        if not revision:
            raise DataError(f"InfoSearch dimension {self.name!r}: the hub dataset {self.hub_repo} has no pinned "
                            f"revision; give the full commit id to download (Dimension(revision=...), or "
                            f"--task {self.task_name}:revision=COMMIT)")
        return [DataFile(path=f"{self.folder}/{f}",
                         url=HUB_URL.format(repo=self.hub_repo, revision=revision, file=f))
                for f in HUB_FILES]

    def task(self, context: ComponentContext | None = None) -> Task:
        """The task; its ``files`` are the hub files only while the folder (in the context's data
        folder) lacks a complete set of tables (JSONL or Parquet), so a local Parquet export is never
        overwritten by a download."""
        files = [] if has_tables(Context.of(context).data.locate(self.folder)) else self.hub_files()
        cond = f" ({', '.join(self.conditions)})" if self.conditions else ""
        source = {"repo": self.hub_repo, "revision": self.hub_revision} if self.hub_repo and self.path is None else {}
        return Task(
            name=self.task_name,
            dataset="infosearch",
            table=[tuple(c) for c in TABLE1],
            description=self.description or f"InfoSearch {self.name}{cond}: og / changed / reversed",
            dataset_args={"path": self.folder, "name": self.task_name, **source},
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

    def factory(context: ComponentContext | None = None, revision: str | None = None) -> Task:
        return dimension.at_revision(revision).task(context)

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


def suite_task(context: ComponentContext | None = None) -> Task:
    """The ``infosearch`` suite over every dimension the evaluation's registry holds."""
    dims = registered_dimensions(Context.of(context).registry)
    return Task(
        name="infosearch",
        table=[tuple(c) for c in TABLE1],
        description=f"InfoSearch: {len(dims)} dimensions in three modes; per-dimension and mean figures",
        tasks=[d.task_name for d in dims],
    )
