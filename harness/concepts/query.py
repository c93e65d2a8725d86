"""A query: its text and, kept apart, its instruction."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Query:
    """One query of one mode.

    ``instruction`` is never merged into ``text`` by the data layer: forming the string a model
    sees is the task's or the retriever's choice (see :func:`format_query`).
    ``meta`` holds whatever a benchmark attaches (instruction level, dimension, perspective, root id).
    """

    id: str
    text: str
    instruction: str = ""
    meta: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)


DEFAULT_QUERY_FORMAT = "{text} {instruction}"


def format_query(query: Query, template: str = DEFAULT_QUERY_FORMAT) -> str:
    """Render ``template`` with the query's fields and strip the result.

    The default joins text and instruction with one space, as InfoSearch and IFIR do;
    an empty instruction leaves just the text.
    """
    fields = {"text": query.text, "instruction": query.instruction, "id": query.id, **query.meta}
    return " ".join(template.format(**fields).split(" ")).strip()
