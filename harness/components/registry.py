"""The component registry: what every plugin registered, by kind, with lazy factories."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from harness.components.component_spec import ComponentSpec, parse_spec
from harness.components.kinds import KINDS
from harness.concepts.component_context import ComponentContext
from harness.concepts.errors import AmbiguousComponentError, HarnessError, UnknownComponentError
from harness.runtime.about import CORE_DIST  # the core's distribution name: "harness-ir"


@dataclass(frozen=True)
class Component:
    kind: str
    name: str
    factory: Callable[..., Any]
    description: str
    source: str  # distribution that registered it (CORE_DIST, "harness-ir", for built-ins)

    @property
    def builtin(self) -> bool:
        return self.source == CORE_DIST


@dataclass
class Registry:
    """Components by kind and name; a name may be registered by several sources."""

    components: dict[str, dict[str, list[Component]]] = field(
        default_factory=lambda: {k: {} for k in KINDS}
    )

    def add(self, component: Component) -> None:
        if component.kind not in self.components:
            raise HarnessError(f"unknown component kind {component.kind!r}; kinds: {', '.join(KINDS)}")
        entries = self.components[component.kind].setdefault(component.name, [])
        if any(c.source == component.source for c in entries):
            # the same source registering a name twice: last one wins, as a re-registration
            entries[:] = [c for c in entries if c.source != component.source]
        entries.append(component)

    def names(self, kind: str) -> list[str]:
        return sorted(self.components[kind])

    def all(self, kind: str) -> list[Component]:
        return [c for name in self.names(kind) for c in self.components[kind][name]]

    def lookup(self, kind: str, name: str, source: str | None = None) -> Component:
        """Find one component. ``source`` is ``"plugin"`` (any third-party distribution),
        ``"builtin"`` (or the core's distribution name, ``harness-ir``), a distribution name, or None
        (unique across sources)."""
        entries = self.components[kind].get(name)
        if not entries:
            raise UnknownComponentError(kind, name, self.components[kind])
        if source == "plugin":
            entries = [c for c in entries if not c.builtin]
        elif source in ("builtin", CORE_DIST):
            entries = [c for c in entries if c.builtin]
        elif source is not None:
            entries = [c for c in entries if c.source == source]
        if not entries:
            sources = ", ".join(sorted(c.source for c in self.components[kind][name]))
            raise HarnessError(f"no {kind} {name!r} from {source!r}; it is registered by: {sources}")
        if len(entries) > 1:
            raise AmbiguousComponentError(kind, name, [c.source for c in entries])
        return entries[0]

    def resolve(self, kind: str, spec: str | ComponentSpec) -> tuple[Component, ComponentSpec]:
        """Parse ``spec`` (``[source:]name[:k=v,...]``) and find its component."""
        parsed = spec if isinstance(spec, ComponentSpec) else parse_spec(spec)
        if parsed.source is not None and parsed.source not in ("plugin", "builtin"):
            # "pir:perspectrum" may be a name with a colon rather than a source prefix
            full = f"{parsed.source}:{parsed.name}"
            if full in self.components[kind]:
                parsed = ComponentSpec(full, None, parsed.args, parsed.text)
            else:  # "irds:beir/scifact/test": a component that takes the rest of its spec as one value
                parsed = self._with_tail(kind, parsed)
        return self.lookup(kind, parsed.name, parsed.source), parsed

    def _with_tail(self, kind: str, parsed: ComponentSpec) -> ComponentSpec:
        """``NAME:REST[:k=v,...]`` for a component ``NAME`` whose factory names a :func:`spec_tail`
        parameter: ``REST`` becomes that argument (``irds:ID`` is ``irds:id=ID``); any other spec as it is."""
        entries = self.components[kind].get(parsed.source or "")
        param = spec_tail(entries[0].factory) if entries and len(entries) == 1 else None
        if param is None or param in parsed.args:
            return parsed
        return ComponentSpec(parsed.source or "", None, {param: parsed.name, **parsed.args}, parsed.text)

    def create(self, kind: str, spec: str | ComponentSpec, context: ComponentContext | None = None,
               **extra: Any) -> Any:
        """Resolve ``spec`` and call its factory with the spec's arguments (plus ``extra``), and the
        evaluation's ``context`` when the factory takes one."""
        return self.build(kind, spec, context, **extra)[0]

    def build(self, kind: str, spec: str | ComponentSpec, context: ComponentContext | None = None,
              **extra: Any) -> tuple[Any, Component, ComponentSpec]:
        """Like :meth:`create`, also returning the component found and the parsed spec."""
        component, parsed = self.resolve(kind, spec)
        kwargs = {**extra, **parsed.args}
        if context is not None and accepts_context(component.factory):
            kwargs["context"] = context
        typed = getattr(context, "component_args", None)  # the arguments typed, for the LLM precedence
        try:
            with typed(parsed.args) if callable(typed) else nullcontext():
                return component.factory(**kwargs), component, parsed
        except TypeError as exc:
            raise HarnessError(f"{kind} {parsed.text!r}: bad arguments: {exc}{_hint(component, exc)}") from exc


def spec_tail(factory: Any) -> str | None:
    """The parameter that takes the rest of a ``NAME:REST`` spec: the ``spec_tail`` attribute of the
    factory (of a :func:`harness.lazy` factory's target, imported, as creating it would), or None."""
    resolve = getattr(factory, "resolve", None)
    target = resolve() if callable(resolve) else factory
    tail = getattr(target, "spec_tail", None)
    return tail if isinstance(tail, str) and tail.isidentifier() else None


def accepts_context(factory: Any) -> bool:
    """Whether ``factory`` declares a ``context`` parameter (for a :func:`harness.lazy` factory:
    whether its target does; the target is imported, as the call would import it anyway)."""
    return accepts_parameter(factory, "context")


def accepts_parameter(factory: Any, name: str) -> bool:
    """Whether ``factory`` (or a :func:`harness.lazy` factory's target) declares parameter ``name``."""
    import inspect

    probe = getattr(factory, "accepts", None)
    if callable(probe):
        return bool(probe(name))
    try:
        return name in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def _hint(component: Component, exc: TypeError) -> str:
    """For an unknown keyword argument: the component's close matches, or the arguments it takes."""
    import difflib
    import inspect
    import re

    m = re.search(r"unexpected keyword argument '([^']+)'", str(exc))
    if not m:
        return ""
    resolve = getattr(component.factory, "resolve", None)  # a lazy() factory: its target
    try:
        obj = resolve() if callable(resolve) else component.factory
        sig = inspect.signature(obj).parameters.values()
        params = [p.name for p in sig if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    except (ValueError, TypeError, ImportError, AttributeError):
        return ""
    if not params:
        return "" if any(p.kind is p.VAR_KEYWORD for p in sig) else "; it takes no arguments"
    close = difflib.get_close_matches(m.group(1), params, n=3, cutoff=0.6)
    return f"; did you mean: {', '.join(close)}?" if close else f"; it takes: {', '.join(params)}"
