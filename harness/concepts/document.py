"""A corpus document."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Document:
    id: str
    text: str
    title: str = ""

    def full_text(self, sep: str = " ") -> str:
        """Title and text joined, as BEIR models see a document; just the text when untitled."""
        return f"{self.title}{sep}{self.text}" if self.title else self.text
