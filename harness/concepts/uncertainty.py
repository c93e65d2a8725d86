"""How sure a metric's value is: a standard error, a 95% interval, the number of units (queries) it
averages and, where the method gives one, its own estimate (e.g. a bootstrap mean).

A metric reports it beside its value (``MetricResult.uncertainty[name]``); results.json stores it
under ``"uncertainty"`` (``to_dict``/``from_dict``), never as extra metric names."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

FIELDS = ("se", "ci95", "n", "estimate", "method")


def _number(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"uncertainty {what} must be a number or null, not {value!r}")
    value = float(value)
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class Uncertainty:
    """``se``: standard error of the value; ``ci95``: a 95% interval (low, high); ``n``: the number of
    units (queries) behind the value; ``estimate``: the method's own estimate when it differs from the
    reported value (a bootstrap mean); ``method``: how it was obtained, in words. Every field may be
    None; non-finite numbers become None."""

    se: float | None = None
    ci95: tuple[float, float] | None = None
    n: int | None = None
    estimate: float | None = None
    method: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "se", _number(self.se, "se"))
        object.__setattr__(self, "estimate", _number(self.estimate, "estimate"))
        if self.ci95 is not None:
            try:
                lo, hi = self.ci95
            except (TypeError, ValueError):
                raise ValueError(f"uncertainty ci95 must be a pair (low, high), not {self.ci95!r}") from None
            lo, hi = _number(lo, "ci95"), _number(hi, "ci95")
            object.__setattr__(self, "ci95", None if lo is None or hi is None else (lo, hi))
        if self.n is not None:
            n = _number(self.n, "n")
            if n is None or n < 0 or n != int(n):
                raise ValueError(f"uncertainty n must be a whole number >= 0, not {self.n!r}")
            object.__setattr__(self, "n", int(n))
        if self.method is not None and not isinstance(self.method, str):
            raise ValueError(f"uncertainty method must be text, not {self.method!r}")

    @property
    def empty(self) -> bool:
        return all(getattr(self, f) is None for f in FIELDS)

    def interval(self, value: float | None = None) -> tuple[float, float] | None:
        """The error bar: the 95% interval when there is one, else ``value`` ± SE (None without either)."""
        if self.ci95 is not None:
            return self.ci95
        if self.se is not None and value is not None and math.isfinite(value):
            return value - self.se, value + self.se
        return None

    def to_dict(self) -> dict[str, Any]:
        """Every field, null when absent (the results.json form)."""
        return {"se": self.se, "ci95": None if self.ci95 is None else list(self.ci95), "n": self.n,
                "estimate": self.estimate, "method": self.method}

    @classmethod
    def from_dict(cls, data: Any) -> Uncertainty:
        """The inverse of :meth:`to_dict`; missing fields are None, unknown ones an error (ValueError)."""
        if not isinstance(data, dict):
            raise ValueError(f"an uncertainty is an object with {', '.join(FIELDS)}, not {data!r}")
        unknown = sorted(set(data) - set(FIELDS))
        if unknown:
            raise ValueError(f"unknown uncertainty field(s) {', '.join(map(str, unknown))}; known: {', '.join(FIELDS)}")
        ci = data.get("ci95")
        return cls(se=data.get("se"), ci95=None if ci is None else tuple(ci) if isinstance(ci, list) else ci,
                   n=data.get("n"), estimate=data.get("estimate"), method=data.get("method"))

    def format(self, value: float | None, digits: int = 4, scale: float = 1.0, n: bool = False) -> str:
        """``value ± SE`` (``0.4361 ± 0.0318``), or ``value [lo, hi]`` with only an interval; ``n=True``
        appends ``(n=100)``. ``scale`` multiplies every number (x100 tables)."""
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            text = "nan" if value is not None else "-"
        else:
            text = f"{value * scale:.{digits}f}"
        if self.se is not None:
            text += f" ± {self.se * scale:.{digits}f}"
        elif self.ci95 is not None:
            text += f" [{self.ci95[0] * scale:.{digits}f}, {self.ci95[1] * scale:.{digits}f}]"
        if n and self.n is not None:
            text += f" (n={self.n})"
        return text
