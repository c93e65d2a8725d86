"""Turn metric names (CLI ``--metric``, task defaults) into metric objects."""

from __future__ import annotations

from typing import Any

from ..errors import HarnessError, UnknownComponentError
from ..registry import Registry
from ..spec import parse_spec
from .names import STANDARD_ALIASES


def _registered(registry: Registry, text: str) -> tuple[Any, dict[str, Any]] | None:
    """A registered (non-standard) metric named ``text`` or ``family@k``, with factory kwargs."""
    try:
        spec = parse_spec(text)
    except HarnessError:
        return None
    known = registry.components["metric"]
    family, _, cut = spec.name.partition("@")
    for name, extra in ((spec.name, {}), (family, {"cutoff": int(cut)} if cut.isdigit() else None)):
        if extra is None or name not in known or name in STANDARD_ALIASES:
            continue
        comp = registry.lookup("metric", name, spec.source)
        return comp, {**extra, **spec.args}
    return None


def resolve_metrics(registry: Registry, names: list[str]) -> list[Any]:
    """Resolve each name: a registered metric (``WISE``; ``p-recall@10`` is family ``p-recall`` with
    ``cutoff=10``), else a standard measure (``nDCG@10``, ``MRR@10``, any ir-measures syntax).
    All standard measures are merged into one object so they are computed in one pass."""
    from .standard import StandardMetric, parse_measure

    out: list[Any] = []
    standard: StandardMetric | None = None
    for text in dict.fromkeys(n.strip() for n in names if n.strip()):
        found = _registered(registry, text)
        if found is not None:
            comp, kwargs = found
            try:
                out.append(comp.factory(**kwargs))
            except TypeError as exc:
                raise HarnessError(f"metric {text!r}: bad arguments: {exc}") from exc
            continue
        try:
            parse_measure(text)
        except HarnessError:
            known = {n for n in registry.components["metric"] if n not in STANDARD_ALIASES}
            known |= {f"{n}@10" for n in STANDARD_ALIASES}
            raise UnknownComponentError("metric", text, known) from None
        metric = StandardMetric(name=text)
        standard = metric if standard is None else standard.merge(metric)
    if standard is not None:
        out.insert(0, standard)
    return out

