"""A PyTerrier transformer as a harness reranker: ``--reranker pyterrier:MODULE:OBJECT[:key=value,...]``.

How the object is found and built: ``MODULE`` is imported as Python imports any module (an installed
package, or a file on ``sys.path``: ``PYTHONPATH=. harness eval ... --reranker pyterrier:my_pipeline:mono``),
so it runs that module's code, as installing a plugin does: name only modules you trust. ``OBJECT`` is
an attribute of it (dotted for a nested one: ``pipelines.mono``). When the attribute has a ``transform``
method it is the transformer; otherwise it must be callable (a class or a function) and is called with the
spec's other arguments (``pyterrier:my_pipeline:make:batch_size=8`` calls ``make(batch_size=8)``), and what
it returns is the transformer.

For each mode the reranker hands ``transform`` PyTerrier's result frame of the first stage's ranking
(:func:`harness.formats.pyterrier_frames.frame_from_ranking`: qid, query (the task-formed text), docno,
text, title when the corpus has titles, score, rank from 0) and reads the frame it returns back
(:func:`~harness.formats.pyterrier_frames.run_from_frame`: by ``rank`` when present, else ``score``
descending with ties in row order). Java is not needed: only PyTerrier's own Terrier indexes need it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.query import Query
from harness.concepts.run import Run
from harness.formats.pyterrier_frames import frame_from_ranking, run_from_frame
from harness.runtime.extras import available, require


def find_object(target: str, args: Mapping[str, Any]) -> Any:
    """``MODULE:OBJECT`` imported and, when ``OBJECT`` is not a transformer itself, called with ``args``."""
    module_name, sep, attr = str(target).partition(":")
    if not sep or not module_name or not attr:
        raise HarnessError(f"pyterrier:{target}: give MODULE:OBJECT (e.g. pyterrier:my_pipeline:mono)")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise HarnessError(f"pyterrier:{target}: cannot import {module_name!r}: {exc} (the module must be installed "
                           "or on PYTHONPATH)") from exc
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise HarnessError(f"pyterrier:{target}: {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if hasattr(obj, "transform") and not isinstance(obj, type):
        if args:
            raise HarnessError(f"pyterrier:{target} is a transformer already; the arguments "
                               f"{', '.join(sorted(args))} apply to a factory")
        return obj
    if not callable(obj):
        raise HarnessError(f"pyterrier:{target} is a {type(obj).__name__}: neither a transformer (no transform "
                           "method) nor a factory that makes one")
    made = obj(**args)
    if not hasattr(made, "transform"):
        raise HarnessError(f"pyterrier:{target}(...) returned a {type(made).__name__}, which has no transform method")
    return made


class PyTerrierReranker:
    """``pyterrier:MODULE:OBJECT``: see the module docstring."""

    spec_tail = "target"  # pyterrier:MODULE:OBJECT is pyterrier:target=MODULE:OBJECT

    def __init__(self, target: str, **args: Any) -> None:
        require("pandas", "pyterrier", f"reranker pyterrier:{target}", package="pandas")
        self.target, self.args = str(target), dict(args)
        self.transformer = find_object(self.target, self.args)
        self.calls = 0

    def rerank(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Run:
        frame = frame_from_ranking(queries, run, corpus)
        self.calls += 1
        result = self.transformer.transform(frame)
        return run_from_frame(result, name="pyterrier", what=f"what pyterrier:{self.target} returned")

    def config(self) -> dict[str, Any]:
        return {"target": self.target, "factory_args": self.args, "object": repr(self.transformer)[:300],
                "class": f"{type(self.transformer).__module__}.{type(self.transformer).__qualname__}",
                "pyterrier": _version("pyterrier") if available("pyterrier") else None,
                "frame": "qid, query (task-formed), docno, text, title (when any), score, rank (from 0)"}

    def stats(self) -> dict[str, Any]:
        return {"transform_calls": self.calls}


def _version(dist: str) -> str | None:
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None
