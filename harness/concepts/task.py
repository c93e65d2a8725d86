"""Tasks: declarative definitions (TOML files in ``tasks/``) naming a dataset, its default
metrics, its first stage (given candidates, retrieval over the corpus, or ``auto``: the candidates when
the dataset carries them) and the query format."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.concepts.errors import DataError
from harness.concepts.mteb_block import check_mteb_block
from harness.concepts.query import DEFAULT_QUERY_FORMAT

FIRST_STAGES = ("candidates", "retrieve", "auto")


@dataclass(frozen=True)
class DataFile:
    """A file a task needs, relative to the data folder, with where to fetch it and its checksum.
    ``optional``: the source may not publish it (a 404 / ``EntryNotFound`` skips it, with one line).
    ``unpinned``: why no commit of the source is pinned (empty for a pinned file). Only a Hub file may be
    unpinned: its URL names a branch, which is resolved to its full commit id once per download (said on
    stderr) and the file fetched at that commit; results.json's dataset identity then tells uploads
    apart by sha256."""

    path: str
    url: str = ""
    sha256: str = ""
    size: int | None = None
    optional: bool = False
    unpinned: str = ""


@dataclass
class Task:
    """One evaluation setting, or a suite of them (``tasks``: e.g. every InfoSearch dimension);
    a suite runs each member with the same components and also reports the mean over members."""

    name: str
    dataset: str = ""
    description: str = ""
    dataset_args: dict[str, Any] = field(default_factory=dict)
    metrics: list[str] = field(default_factory=lambda: ["nDCG@10"])
    # "candidates" (the dataset's lists), "retrieve" (``retriever`` over the corpus) or "auto" (the candidates
    # when the dataset carries them, else ``retriever``: what a plain ``--dataset`` runs)
    first_stage: str = "candidates"
    retriever: str = "bm25"  # default first stage when first_stage is "retrieve" (or "auto" without candidates)
    depth: int = 100
    query_format: str = DEFAULT_QUERY_FORMAT
    files: list[DataFile] = field(default_factory=list)
    source: str = ""  # where the definition came from
    tasks: list[str] = field(default_factory=list)  # a suite's member tasks
    # the summary row `harness eval` prints, as the benchmark's paper lays it out:
    # [column header, metric key, scale], e.g. ["WISE", "WISE", 100]
    table: list[tuple[str, str, float]] = field(default_factory=list)
    # the MTEB task this task corresponds to (docs/mteb.md): task_name, dataset, dataset_revision, split,
    # hf_subset, main_score, metrics (harness key -> MTEB key), optional languages and differs
    mteb: dict[str, Any] = field(default_factory=dict)

    @property
    def is_suite(self) -> bool:
        return bool(self.tasks)

    def __post_init__(self) -> None:
        if not self.dataset and not self.tasks:
            raise DataError(f"task {self.name!r} names neither a dataset nor member tasks", self.source or None)
        if self.first_stage not in FIRST_STAGES:
            raise DataError(
                f"task {self.name!r}: first_stage must be 'candidates', 'retrieve' or 'auto', not "
                f"{self.first_stage!r}",
                self.source or None,
            )
        if self.mteb:
            check_mteb_block(self.mteb, f"task {self.name!r}", self.source or None)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "dataset": self.dataset,
            "dataset_args": self.dataset_args,
            "metrics": self.metrics,
            "first_stage": self.first_stage,
            "retriever": self.retriever,
            "depth": self.depth,
            "query_format": self.query_format,
            "source": self.source,
            **({"tasks": self.tasks} if self.tasks else {}),
            **({"table": [list(c) for c in self.table]} if self.table else {}),
            **({"mteb": self.mteb} if self.mteb else {}),
        }


_KNOWN_KEYS = {f for f in Task.__dataclass_fields__} - {"source"}


def load_task_file(path: Path) -> Task:
    """Read one task TOML; unknown keys and missing required keys are errors naming the file."""
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise DataError(f"invalid TOML: {exc}", path) from exc
    unknown = set(raw) - _KNOWN_KEYS
    if unknown:
        raise DataError(f"unknown task keys {sorted(unknown)}; allowed: {sorted(_KNOWN_KEYS)}", path)
    for key in ("name",) if raw.get("tasks") else ("name", "dataset"):
        if key not in raw:
            raise DataError(f"task definition lacks required key {key!r}", path)
    files = []
    for i, f in enumerate(raw.pop("files", [])):
        if "path" not in f:
            raise DataError(f"files[{i}] lacks 'path'", path)
        unknown_file_keys = set(f) - set(DataFile.__dataclass_fields__)
        if unknown_file_keys:
            raise DataError(f"files[{i}]: unknown keys {sorted(unknown_file_keys)}; allowed: "
                            f"{sorted(DataFile.__dataclass_fields__)}", path)
        if "unpinned" in f and not isinstance(f["unpinned"], str):
            raise DataError(f"files[{i}]: unpinned must be a string (why no commit is pinned)", path)
        if "optional" in f and not isinstance(f["optional"], bool):
            raise DataError(f"files[{i}]: optional must be true or false, not {f['optional']!r}", path)
        files.append(DataFile(**f))
    return Task(**raw, files=files, source=str(path))


def task_dirs() -> list[Path]:
    """Where built-in task TOMLs live: inside the installed package (wheel) or the repo's ``tasks/``
    (editable install)."""
    package = Path(__file__).resolve().parents[1]  # harness/
    return [d for d in (package / "tasks", package.parent / "tasks") if d.is_dir()]
