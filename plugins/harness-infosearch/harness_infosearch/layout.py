"""Where the tables of one InfoSearch dimension live on disk: the modes, and which files make a table."""

from __future__ import annotations

from pathlib import Path

#: the modes of every InfoSearch dataset, in the order the pipeline runs them
MODES = ("og", "changed", "reversed")
_SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet")


def shards(folder: Path, stem: str, suffixes: tuple[str, ...] = _SUFFIXES) -> list[Path]:
    """The file(s) of table ``stem``: ``stem.jsonl`` / ``.jsonl.gz`` / ``.parquet`` (first found), else
    the Parquet shards ``stem/*.parquet`` or ``stem-*.parquet``; empty when absent."""
    for suffix in suffixes:
        p = folder / f"{stem}{suffix}"
        if p.is_file():
            return [p]
    shards = sorted((folder / stem).glob("*.parquet")) if (folder / stem).is_dir() else []
    return shards or sorted(folder.glob(f"{stem}-*.parquet"))


def qrels_files(folder: Path, mode: str, split: str) -> list[Path]:
    sub = folder / f"qrels_{mode}"
    return shards(sub, split, (*_SUFFIXES, ".tsv")) if sub.is_dir() else shards(folder, f"qrels_{mode}")


def has_tables(folder: Path, split: str = "test") -> bool:
    """True when ``folder`` holds corpus, queries and the three qrels tables in some accepted format."""
    if not folder.is_dir():
        return False
    return bool(shards(folder, "corpus") and shards(folder, "queries")
                and all(qrels_files(folder, m, split) for m in MODES))
