"""The AllenAI SciFact corpus, as the CSV release (``corpus_train.csv`` inside a zip) or the original
``corpus.jsonl``.

The CSV has columns ``doc_id, title, abstract, structured``; ``abstract`` is the printed form of a
list of sentences, either a Python list (``['a', 'b']``) or a NumPy array (``['a'\\n 'b']``, no
commas). Each sentence literal is read with :func:`ast.literal_eval` (never ``eval``); anything but
string literals, brackets and commas is rejected. As in BEIR, a document's text is its sentences
joined by one space and its title is kept apart, giving the 5,183-document BEIR SciFact corpus.
"""

from __future__ import annotations

import ast
import csv
import io
import os
import sys
import tokenize
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from harness.concepts.document import Document
from harness.concepts.errors import DataError
from harness.formats.files import open_text
from harness.formats.jsonl import iter_jsonl_objects

DEFAULT_MEMBER = "corpus_train.csv"
_SKIP_TOKENS = frozenset({tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT})


def parse_sentence_list(value: str) -> list[str]:
    """``"['s1' 's2']"`` or ``"['s1', 's2']"`` -> ``['s1', 's2']``; raises ``ValueError`` otherwise."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(value.strip()).readline)
                  if t.type not in _SKIP_TOKENS]
    except (tokenize.TokenError, IndentationError, SyntaxError) as exc:
        raise ValueError(f"cannot tokenize the sentence list ({exc})") from None
    if len(tokens) < 2 or tokens[0].string != "[" or tokens[-1].string != "]":
        raise ValueError("the sentence list is not enclosed in [ ]")
    sentences: list[str] = []
    for tok in tokens[1:-1]:
        if tok.type == tokenize.STRING:
            literal = ast.literal_eval(tok.string)
            if not isinstance(literal, str):  # b'...' literals
                raise ValueError(f"not a text literal: {tok.string[:40]}")
            sentences.append(literal)
        elif tok.string != ",":
            raise ValueError(f"unexpected {tok.string!r} in the sentence list")
    return sentences


def _csv_rows(f: TextIO, path: object) -> Iterator[tuple[int, dict[str, str]]]:
    limit = csv.field_size_limit()
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    try:
        reader = csv.DictReader(f)
        missing = {"doc_id", "title", "abstract"} - set(reader.fieldnames or [])
        if missing:
            raise DataError(f"CSV lacks columns {sorted(missing)} (has {reader.fieldnames})", path, 1)
        start = reader.line_num + 1
        try:
            for row in reader:
                yield start, row
                start = reader.line_num + 1
        except csv.Error as exc:
            raise DataError(f"malformed CSV ({exc})", path, start) from exc
    finally:
        csv.field_size_limit(limit)


def _pick_member(zf: zipfile.ZipFile, member: str | None, path: object) -> str:
    names = [n for n in zf.namelist() if not n.endswith("/")]
    wanted = member or DEFAULT_MEMBER
    matches = [n for n in names if n == wanted or n.rsplit("/", 1)[-1] == wanted]
    if len(matches) == 1:
        return matches[0]
    if not matches and member is None:
        corpora = [n for n in names if n.rsplit("/", 1)[-1].startswith("corpus") and n.endswith(".csv")]
        if len(corpora) == 1:
            return corpora[0]
    raise DataError(f"cannot find {wanted!r} in the zip (members: {', '.join(names)})", path)


def _add(corpus: dict[str, Document], first: dict[str, int], doc: Document, path: object, line: int) -> None:
    if doc.id in first:
        raise DataError(f"document {doc.id!r} repeated (first on line {first[doc.id]})", path, line)
    first[doc.id] = line
    corpus[doc.id] = doc


def _read_csv(f: TextIO, where: str) -> dict[str, Document]:
    corpus: dict[str, Document] = {}
    first: dict[str, int] = {}
    for line, row in _csv_rows(f, where):
        docid = (row.get("doc_id") or "").strip()
        if not docid:
            raise DataError("empty doc_id", where, line)
        try:
            sentences = parse_sentence_list(row.get("abstract") or "")
        except ValueError as exc:
            raise DataError(f"document {docid}: bad abstract: {exc}", where, line) from None
        _add(corpus, first, Document(id=docid, text=" ".join(sentences), title=row.get("title") or ""),
             where, line)
    return corpus


def read_scifact_corpus(path: str | os.PathLike[str], member: str | None = None) -> dict[str, Document]:
    """The SciFact corpus from the CSV release zip (read in place, never extracted), a bare
    ``corpus*.csv``, or the original ``corpus.jsonl`` (``doc_id``, ``title``, ``abstract`` list)."""
    p = Path(path)
    if zipfile.is_zipfile(p):
        with zipfile.ZipFile(p) as zf:
            name = _pick_member(zf, member, p)
            where = f"{p}!{name}"
            with zf.open(name) as raw:
                text = io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
                try:
                    return _read_csv(text, where)
                except UnicodeDecodeError as exc:
                    raise DataError(f"not valid UTF-8 ({exc.reason})", where) from exc
    if p.name.endswith((".jsonl", ".jsonl.gz")):
        return _read_jsonl(p)
    with open_text(p) as f:
        try:
            return _read_csv(f, str(p))
        except UnicodeDecodeError as exc:
            raise DataError(f"not valid UTF-8 ({exc.reason})", p) from exc


def _read_jsonl(path: Path) -> dict[str, Document]:
    corpus: dict[str, Document] = {}
    first: dict[str, int] = {}
    for line, obj in iter_jsonl_objects(path):
        docid = obj.get("doc_id")
        if isinstance(docid, bool) or not isinstance(docid, (int, str)) or not str(docid).strip():
            raise DataError(f"bad or missing 'doc_id': {docid!r}", path, line)
        abstract = obj.get("abstract")
        if not isinstance(abstract, list) or not all(isinstance(s, str) for s in abstract):
            raise DataError("'abstract' must be a list of sentences", path, line)
        _add(corpus, first, Document(id=str(docid).strip(), text=" ".join(abstract),
                                     title=str(obj.get("title") or "")), path, line)
    return corpus
