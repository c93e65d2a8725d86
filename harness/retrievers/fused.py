"""A first stage that fuses first stages in one evaluation: ``fuse:retrievers=[bm25,dense],method=rrf,k=60``.

Each input is a retriever spec (``bm25:k1=0.9``, ``dense:model=...``, ``run-file:path=run.trec``, a
plugin's), built through the registry with the evaluation's context; each indexes the corpus and
retrieves ``depth`` documents per query (default: a run file its lists whole, any other retriever as
deep as the first stage is asked for), and the
lists are fused by :func:`harness.retrievers.fusion.fuse` (ranx's formulas, ``docs/runs.md``).
The first stage gives the fused run's top ``k`` per query, so a reranker can follow. When every input is
a ranking made elsewhere (run files: what ``harness fuse`` evaluates), the fused lists are given whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from harness.components.component_spec import split_top
from harness.concepts.component_context import ComponentContext
from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.protocols import (
    CandidateRetriever,
    GivenRanking,
    QueryObjectRetriever,
    Retriever,
    counted,
    describe,
)
from harness.concepts.run import Run
from harness.context import Context
from harness.retrievers.fusion import DEFAULT_K, check_fusion, fuse


def spec_list(value: str | Sequence[str]) -> list[str]:
    """``[bm25,dense:model=x]`` (or a list) -> the specs; an item with a comma inside is quoted:
    ``['bm25:k1=0.9,b=0.4',dense]``."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1]
        items = [i.strip() for i in split_top(text, ",")]
    elif isinstance(value, Sequence):
        items = [str(i).strip() for i in value]
    else:
        raise HarnessError(f"fuse: retrievers must be a list of retriever specs, not {type(value).__name__}")
    specs = [i[1:-1] if len(i) >= 2 and i[0] == i[-1] and i[0] in "\"'" else i for i in items if i]
    if len(specs) < 2:
        raise HarnessError(f"fuse: give two or more retrievers to fuse (retrievers=[bm25,dense]), got {value!r}")
    return specs


class FusionRetriever:
    """``fuse:retrievers=[A,B,...][,method=rrf][,k=60][,weights=[...]][,norm=minmax|zscore|none][,depth=N]``.
    ``depth``: how many documents each input retrieves per query (default: a run file's lists whole, any
    other retriever the first stage's depth)."""

    def __init__(self, retrievers: str | Sequence[str], method: str = "rrf", k: float = DEFAULT_K,
                 weights: Any = None, norm: str | None = None, depth: int | None = None,
                 context: ComponentContext | None = None) -> None:
        ctx = Context.of(context)
        self.specs = spec_list(retrievers)
        self.method, self.k, self.weights, self.norm = check_fusion(len(self.specs), method, k, _weights(weights),
                                                                    norm)
        if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 1):
            raise HarnessError(f"fuse: depth must be a whole number >= 1, got {depth!r}")
        self.depth = depth
        self.inputs = [self._input(ctx, spec) for spec in self.specs]

    @staticmethod
    def _input(ctx: Context, spec: str) -> Any:
        obj = ctx.registry.create("retriever", spec, ctx)
        if isinstance(obj, CandidateRetriever) or not isinstance(obj, Retriever):
            kind = "ranks the dataset's candidate lists" if isinstance(obj, CandidateRetriever) else (
                "needs the query objects" if isinstance(obj, QueryObjectRetriever) else "is not a retriever")
            raise HarnessError(f"fuse: the input {spec!r} {kind}; fuse retrievers over the corpus or run files "
                               "(run-file:path=...)")
        return obj

    def index(self, corpus: Mapping[str, Document]) -> None:
        for obj in self.inputs:
            obj.index(corpus)

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        runs = [obj.search(queries, self._input_depth(obj, k)) for obj in self.inputs]
        fused = fuse(runs, self.method, self.k, self.weights, self.norm, name=f"fuse-{self.method}")
        return Run({q: fused[q][:k] if q in fused else [] for q in queries}, name=fused.name)

    def _input_depth(self, obj: Any, k: int) -> int:
        """``depth`` when given; else a run file's lists whole; else the first stage's depth ``k``."""
        given = obj.given_depth() if isinstance(obj, GivenRanking) else None
        return self.depth or given or k

    def given_depth(self) -> int | None:
        """Run files only (``harness fuse``): the fused lists whole (at most the inputs' lengths added up)."""
        depths = [obj.given_depth() if isinstance(obj, GivenRanking) else None for obj in self.inputs]
        return None if self.depth or None in depths else sum(depths)

    def config(self) -> dict[str, Any]:
        return {"method": self.method, "k": self.k if self.method == "rrf" else None, "weights": self.weights,
                "norm": self.norm, "depth": self.depth, "formulas": "ranx (docs/runs.md, The formulas)",
                "tie_rule": "ranks and the fused order: score descending, then document id descending",
                "inputs": [{"spec": s, **describe(o)} for s, o in zip(self.specs, self.inputs, strict=True)]}

    def stats(self) -> dict[str, Any]:
        """Each input's counts; their transport failures added up, so the failure report sees them."""
        per_input = {s: st for s, o in zip(self.specs, self.inputs, strict=True) if (st := counted(o)) is not None}
        out: dict[str, Any] = {"inputs": per_input} if per_input else {}
        failures = [st for st in per_input.values() if st.get("transport_failures")]
        if failures:
            out["transport_failures"] = sum(int(st["transport_failures"]) for st in failures)
            per_query: dict[str, int] = {}
            for st in failures:
                for q, n in (st.get("transport_failures_per_query") or {}).items():
                    per_query[q] = per_query.get(q, 0) + int(n)
            out["transport_failures_per_query"] = per_query
        return out


def _weights(value: Any) -> list[Any] | None:
    """``weights=[0.7,0.3]`` (parsed as JSON) or ``weights=0.7;0.3``."""
    if value is None or isinstance(value, list | tuple):
        return None if value is None else list(value)
    if isinstance(value, str):
        try:
            return [float(x) for x in value.replace(";", ",").strip("[]").split(",") if x.strip()]
        except ValueError:
            raise HarnessError(f"fuse: weights must be numbers, got {value!r}") from None
    raise HarnessError(f"fuse: weights must be a list of numbers, got {value!r}")
