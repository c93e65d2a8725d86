"""Which files an ``ir_datasets`` dataset reads, where ir_datasets keeps them, and whether they are there.

ir_datasets describes each part of a dataset (docs, queries, qrels, scored docs) as a chain of handler
objects over its downloads: a ``Download`` (a URL with the md5 ir_datasets records, kept at a cache path
under ``IR_DATASETS_HOME``, or a file to be placed by hand, with ir_datasets' instructions), wrapped by
extractors (zip, tar, gzip) and ``Cache`` objects (a file ir_datasets derives once and reads after).
:func:`source_files` walks that chain (each object's own attributes, bounded in depth and count, never
calling into it) and stops at the first file that is present: ir_datasets reads that one, so the ones
behind it are not needed. What it returns is the dataset's identity in ``results.json`` (path, sha256,
size, the md5 ir_datasets records, the URL) and, for the files that are missing, the one message that
names them (:func:`missing_message`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.formats.files import sha256_file

MAX_DEPTH = 24  # handler chains are a few objects deep
MAX_NODES = 5000
ENV_HOME = "IR_DATASETS_HOME"


@dataclass(frozen=True)
class SourceFile:
    """One file a dataset reads: ``path`` (where ir_datasets keeps it), ``present``, the ``url`` it is
    fetched from, the ``md5`` ir_datasets records for it, and ``instructions`` when it must be placed by hand."""

    path: Path
    present: bool
    url: str = ""
    md5: str = ""
    instructions: str = ""
    derived: bool = False  # a file ir_datasets derived from a download (a Cache file)

    def identity(self, home: Path) -> dict[str, Any]:
        """The file in results.json: its path under the home, sha256 and size (a folder: its path only)."""
        out: dict[str, Any] = {"path": _relative(self.path, home)}
        if self.path.is_file():
            out.update(sha256=sha256_file(self.path), size=self.path.stat().st_size)
        elif self.path.is_dir():
            out["directory"] = True
        if self.derived:  # ir_datasets made it from the download below (decompressed, extracted, re-formatted)
            out["derived"] = True
        if self.md5:
            out["md5_recorded"] = self.md5  # the digest ir_datasets' downloads.json records for the download
        if self.url:
            out["url"] = self.url
        return out


def home() -> Path:
    """ir_datasets' data folder: ``$IR_DATASETS_HOME``, else ``~/.ir_datasets`` (ir_datasets.util.home_path)."""
    return Path(os.environ.get(ENV_HOME) or Path.home() / ".ir_datasets").expanduser()


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except (ValueError, OSError):
        return str(path)


def source_files(handlers: list[Any]) -> list[SourceFile]:
    """The files ``handlers`` (a dataset's docs, queries, qrels, scoreddocs handlers) read, in walk order,
    each once."""
    from ir_datasets.util import Cache, Download, TarExtractAll, ZipExtractCache

    kinds = (Cache, Download, TarExtractAll, ZipExtractCache)
    out: dict[Path, SourceFile] = {}
    seen: set[int] = set()
    for handler in handlers:
        _walk(handler, kinds, out, seen, 0, None)
    return list(out.values())


def _walk(obj: Any, kinds: tuple[type, ...], out: dict[Path, SourceFile], seen: set[int], depth: int,
          near: Path | None) -> None:
    if depth > MAX_DEPTH or id(obj) in seen or len(seen) >= MAX_NODES:
        return
    seen.add(id(obj))
    cache, download, tar_all, zip_all = kinds
    if isinstance(obj, download):
        found = _download(obj, near)
        if found is not None:
            out.setdefault(found.path, found)
        return
    if isinstance(obj, cache | tar_all | zip_all):
        path = Path(vars(obj).get("_path") or vars(obj).get("_extract_path") or vars(obj).get("extract_path") or "")
        if str(path) and path.exists():  # read from here: what it was derived from is not needed
            origin = _origin(obj, download)
            out.setdefault(path, SourceFile(path, True, origin.url, origin.md5, derived=True))
            return
        near = path if str(path) else near
    for value in _children(obj):
        _walk(value, kinds, out, seen, depth + 1, near)


def _origin(obj: Any, download: type) -> SourceFile:
    """The first download behind a derived file (its URL and recorded md5, for the identity)."""
    stack, seen = [(obj, 0)], set()
    while stack and len(seen) < MAX_NODES:
        node, depth = stack.pop()
        if id(node) in seen or depth > MAX_DEPTH:
            continue
        seen.add(id(node))
        if isinstance(node, download):
            return _download(node, Path())  # only its URL and md5 are read
        stack.extend((child, depth + 1) for child in reversed(_children(node)))
    return SourceFile(Path(), False)


def _children(obj: Any) -> list[Any]:
    """The parts of a handler worth walking: its own attributes (never ``getattr``, which some
    handlers forward), and the items of lists, tuples and dicts; only ir_datasets' objects are entered."""
    if isinstance(obj, list | tuple):
        return list(obj)
    if isinstance(obj, dict):
        return list(obj.values())
    if not type(obj).__module__.startswith("ir_datasets"):
        return []
    try:
        return list(vars(obj).values())
    except TypeError:  # no __dict__
        return []


def _download(obj: Any, near: Path | None) -> SourceFile | None:
    """A ``Download``: its cache path, or a local copy ir_datasets looks for (``downloads/<md5>``, a file
    placed by hand), or the derived file it would fill (``near``)."""
    attrs = vars(obj)
    mirrors = attrs.get("mirrors") or []
    url = next((vars(m).get("url", "") for m in mirrors if vars(m).get("url")), "")
    local = [m for m in mirrors if "_path" in vars(m)]
    md5 = attrs.get("expected_md5") or ""
    instructions = ""
    if local and not url:  # no URL: a file placed by hand, ir_datasets' message says how
        instructions = " ".join(str(vars(local[0]).get("_message") or "").split())
    cached = attrs.get("_cache_path")
    candidates = [Path(cached)] if cached and cached != os.devnull else []
    candidates += [Path(vars(m)["_path"]) for m in local]
    present = next((p for p in candidates if p.exists()), None)
    if present is not None:
        return SourceFile(present, True, url, md5, instructions)
    path = candidates[0] if candidates else near
    if path is None:
        return None
    return SourceFile(path, False, url, md5, instructions)


def missing_message(dataset_id: str, missing: list[SourceFile], auto_download: bool) -> str:
    """One line: which files ``irds:ID`` lacks under ``IR_DATASETS_HOME``, and what to do."""
    where = f"{ENV_HOME}={home()}"
    by_hand = [f for f in missing if f.instructions]
    if by_hand:
        f = by_hand[0]
        return (f"irds:{dataset_id}: {f.path} is not under {where} and ir_datasets cannot download it; it says: "
                f"{f.instructions}")
    files = "; ".join(f"{f.path}" + (f" (from {f.url})" if f.url else "") for f in missing)
    remedy = ("automatic download is off (HARNESS_AUTO_DOWNLOAD=0): place the files there, or allow downloads"
              if not auto_download else "ir_datasets could not fetch them")
    return f"irds:{dataset_id}: missing under {where}: {files}; {remedy}"
