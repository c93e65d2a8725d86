"""Turn metric names (CLI ``--metric``, task defaults) into metric objects."""

from __future__ import annotations

import re
from typing import Any

from harness.components.component_spec import parse_spec
from harness.components.registry import Registry
from harness.concepts.errors import HarnessError, UnknownComponentError
from harness.metrics.names import MAX_NAME_CHARS, STANDARD_ALIASES, check_cutoff
from harness.metrics.standard import StandardMetric, parse_measure

_AT_K = re.compile(r"(?P<family>.+)@(?P<k>[+-]?[0-9]+)")


def _registered(registry: Registry, text: str) -> tuple[Any, dict[str, Any]] | None:
    """A registered (non-standard) metric named ``text`` or ``family@k``, with factory kwargs."""
    try:
        spec = parse_spec(text)
    except HarnessError:
        return None
    known = registry.components["metric"]
    at_k = _AT_K.fullmatch(spec.name)
    family = at_k["family"] if at_k else None
    for name, extra in ((spec.name, {}), (family, {"cutoff": at_k["k"]} if at_k else None)):
        if extra is None or name not in known or name in STANDARD_ALIASES:
            continue
        comp = registry.lookup("metric", name, spec.source)
        kwargs = {**extra, **spec.args}
        if kwargs.get("cutoff") is not None:  # from @k or cutoff=k: 1 <= k <= MAX_CUTOFF
            kwargs["cutoff"] = check_cutoff(text, kwargs["cutoff"])
        return comp, kwargs
    return None


def _is_standard(name: str) -> bool:
    try:
        parse_measure(name, check=False)
    except HarnessError:
        return False
    return True


def check_names(names: list[str]) -> None:
    """Every name is a non-empty text of at most :data:`~.names.MAX_NAME_CHARS` characters (``-m ''``
    is an error, not an empty table)."""
    for name in names:
        if not isinstance(name, str) or not name.strip():
            raise HarnessError(f"empty metric name {name!r}: name a metric, e.g. -m nDCG@10")
        if len(name) > MAX_NAME_CHARS:
            raise HarnessError(f"metric name {name[:40]!r}... is {len(name):,} characters long; at most "
                               f"{MAX_NAME_CHARS} are allowed")


def resolve_metrics(registry: Registry, names: list[str]) -> list[Any]:
    """Resolve each name: a registered metric (``WISE``; ``p-recall@10`` is family ``p-recall`` with
    ``cutoff=10``), else a standard measure (``nDCG@10``, ``MRR@10``, any ir-measures syntax).
    A cutoff (``@k``, ``cutoff=k``) must be a whole number from 1 to :data:`~.names.MAX_CUTOFF`.
    All standard measures are merged into one object so they are computed in one pass."""
    out: list[Any] = []
    standard: StandardMetric | None = None
    check_names(names)
    for text in dict.fromkeys(n.strip() for n in names):
        found = _registered(registry, text)
        if found is not None:
            comp, kwargs = found
            try:
                out.append(comp.factory(**kwargs))
            except TypeError as exc:
                raise HarnessError(f"metric {text!r}: bad arguments: {exc}") from exc
            continue
        try:
            parse_measure(text, check=False)
        except HarnessError:
            at_k = _AT_K.fullmatch(text)
            if at_k and _is_standard(at_k["family"]):  # nDCG@-1: a known measure, a bad k
                check_cutoff(text, at_k["k"])
            known = {n for n in registry.components["metric"] if n not in STANDARD_ALIASES}
            known |= {f"{n}@10" for n in STANDARD_ALIASES}
            raise UnknownComponentError("metric", text, known) from None
        metric = StandardMetric(name=text)
        standard = metric if standard is None else standard.merge(metric)
    if standard is not None:
        out.insert(0, standard)
    return out

