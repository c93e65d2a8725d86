"""Escaping text for LaTeX tables (``harness compare --format latex``)."""

from __future__ import annotations

from types import MappingProxyType

_LATEX_SPECIAL = MappingProxyType({"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                                   "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}",
                                   "<": r"\textless{}", ">": r"\textgreater{}"})


def latex_escape(s: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in s)
