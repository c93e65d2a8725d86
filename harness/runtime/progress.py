"""Progress of long work (encoding, downloads, LLM batches) on stderr, true in a terminal and in a log.

- In a terminal: a tqdm bar.
- Elsewhere (a log file, CI): one plain line every ``$HARNESS_PROGRESS_INTERVAL`` seconds (default
  15) with done/total, percentage, rate and ETA, e.g.
  ``dense: encoding: 2048/5183 texts (39.5%), 17.1 texts/s, ETA 3m03s``, and a last line when the
  work ends, if any line was printed (work shorter than the interval prints nothing).
- ``HARNESS_PROGRESS=0`` (or ``--quiet``: a :class:`ProgressSettings` with ``mode="off"`` in the
  evaluation's context) prints neither; ``HARNESS_PROGRESS=1`` forces the bar (``plain`` the lines).

:func:`progress` returns an object with ``update(n)`` and ``close()`` (also a context manager);
``enabled`` is False when nothing is shown. tqdm is imported only when a bar is shown, so importing
this module costs nothing. An update adds to a counter and reads a monotonic clock; nothing else
happens between lines.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TextIO

ENV_PROGRESS = "HARNESS_PROGRESS"
ENV_INTERVAL = "HARNESS_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 15.0

_OFF = ("0", "false", "no", "off")
_BAR = ("1", "true", "yes", "on", "bar")
_LINES = ("plain", "lines", "line", "log")


@dataclass(frozen=True)
class ProgressSettings:
    """``mode``: ``"auto"`` (a bar in a terminal, lines elsewhere), ``"off"``, ``"bar"`` or
    ``"lines"``; ``interval``: seconds between plain lines. Part of an evaluation's context."""

    mode: str = "auto"
    interval: float = DEFAULT_INTERVAL

    def __post_init__(self) -> None:
        if self.mode not in ("auto", "off", "bar", "lines"):
            raise ValueError(f"progress mode must be auto, off, bar or lines, not {self.mode!r}")
        if self.interval < 0:
            raise ValueError(f"progress interval must be >= 0 seconds, not {self.interval}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, quiet: bool = False) -> ProgressSettings:
        """From ``$HARNESS_PROGRESS`` and ``$HARNESS_PROGRESS_INTERVAL``; ``quiet`` turns it off."""
        env = os.environ if environ is None else environ
        value = env.get(ENV_PROGRESS, "").strip().lower()
        how = ("off" if quiet or value in _OFF else "bar" if value in _BAR else "lines" if value in _LINES
               else "auto")
        return cls(how, _interval(env.get(ENV_INTERVAL, "")))

    def resolve(self, stream: TextIO | None = None) -> str:
        """``"off"``, ``"bar"`` or ``"lines"`` for output on ``stream`` (default stderr)."""
        if self.mode != "auto":
            return self.mode
        stream = stream if stream is not None else sys.stderr
        try:
            tty = bool(stream.isatty())
        except (AttributeError, ValueError):  # no isatty, or a closed stream
            tty = False
        return "bar" if tty else "lines"


def _interval(raw: str) -> float:
    """Seconds between plain lines: a number >= 0, else the default (15)."""
    try:
        value = float(raw.strip()) if raw.strip() else DEFAULT_INTERVAL
    except ValueError:
        return DEFAULT_INTERVAL
    return value if value >= 0 else DEFAULT_INTERVAL


class NullProgress:
    """Shows nothing."""

    enabled = False

    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self) -> NullProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LineProgress:
    """A plain line on ``stream`` at most every ``every`` seconds (``clock`` is injectable for tests)."""

    enabled = True

    def __init__(self, total: int | None, label: str, unit: str = "it", unit_scale: bool = False,
                 initial: int = 0, stream: TextIO | None = None, every: float | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.total, self.label, self.unit, self.unit_scale = total, label, unit, unit_scale
        self.n = self._start_n = initial
        self.stream = stream if stream is not None else sys.stderr
        self.every = DEFAULT_INTERVAL if every is None else float(every)
        self.clock = clock
        self._t0 = clock()
        self._next = self._t0 + self.every
        self._lock = threading.Lock()
        self.lines = 0
        self._last_n = initial
        self._closed = False

    def update(self, n: int = 1) -> None:
        with self._lock:
            self.n += n
            now = self.clock()
            if now >= self._next:
                self._next = now + self.every
                self._emit(now)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self.lines and self.n != self._last_n:  # something was said: say how it ended
                self._emit(self.clock(), final=True)

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def format(self, now: float, final: bool = False) -> str:
        """The line for the state at ``now``: done/total, percentage, rate, ETA (or the time taken)."""
        elapsed = max(now - self._t0, 0.0)
        rate = (self.n - self._start_n) / elapsed if elapsed > 0 else 0.0
        if self.unit_scale:  # 1.2MB/3.85MB, 328kB/s
            done = f"{_scaled(self.n)}{self.unit}"
            total = f"{_scaled(self.total)}{self.unit}" if self.total else ""
            speed = f"{_scaled(rate)}{self.unit}/s"
        else:  # 2048/5183 texts, 17.3 texts/s
            unit = _plural(self.unit)
            done = str(self.n) if self.total else f"{self.n} {unit}"
            total = f"{self.total} {unit}" if self.total else ""
            speed = f"{rate:.1f} {unit}/s"
        if self.total:
            done = f"{done}/{total} ({100 * self.n / self.total:.1f}%)"
        if final:
            return f"{self.label}: {done} in {_duration(elapsed)}, {speed}"
        eta = ""
        if self.total and rate > 0 and self.n < self.total:
            eta = f", ETA {_duration((self.total - self.n) / rate)}"
        return f"{self.label}: {done}, {speed}{eta}"

    def _emit(self, now: float, final: bool = False) -> None:
        self.lines += 1
        self._last_n = self.n
        try:
            print(self.format(now, final), file=self.stream, flush=True)
        except (OSError, ValueError):  # a closed or broken stream never stops the work
            pass


def progress(total: int | None, label: str, *, settings: ProgressSettings | None = None, unit: str = "it",
             unit_scale: bool = False, initial: int = 0, enabled: bool = True, min_total: int = 0,
             leave: bool = False, stream: TextIO | None = None, clock: Callable[[], float] | None = None,
             every: float | None = None) -> Any:
    """Progress over ``total`` units (None: unknown) labelled ``label``.

    ``settings`` (the evaluation's; None: from the environment now), ``enabled=False`` (the
    caller's own off switch) and mode ``off`` show nothing. An automatic terminal bar is skipped for
    work under ``min_total`` units (a forced one is not); plain lines need no such limit, since work
    shorter than the interval prints none. ``unit_scale`` shows ``unit`` with SI prefixes (``1.2MB``)."""
    if not enabled:
        return NullProgress()
    settings = settings if settings is not None else ProgressSettings.from_env()
    stream = stream if stream is not None else sys.stderr
    how = settings.resolve(stream)
    if how == "off":
        return NullProgress()
    if how == "bar":
        if settings.mode != "bar" and total is not None and total < min_total:
            return NullProgress()
        try:
            from tqdm import tqdm
        except ImportError:  # pragma: no cover - tqdm is a dependency
            how = "lines"
        else:
            bar = tqdm(total=total, initial=initial, desc=label, unit=unit, unit_scale=unit_scale, file=stream,
                       leave=leave)
            bar.enabled = True
            return bar
    return LineProgress(total, label, unit=unit, unit_scale=unit_scale, initial=initial, stream=stream,
                        every=settings.interval if every is None else every, clock=clock or time.monotonic)


def _plural(unit: str) -> str:
    return unit if not unit or unit.endswith("s") or unit == "B" else unit + "s"


def _scaled(value: float) -> str:
    """``1234567`` -> ``1.23M``: three significant digits and an SI prefix, as tqdm's ``unit_scale``."""
    for prefix in ("", "k", "M", "G", "T"):
        if abs(value) < 999.5:
            return f"{value:.3g}{prefix}"
        value /= 1000.0
    return f"{value:.3g}P"


def _duration(seconds: float) -> str:
    """``75`` -> ``1m15s``; ``3725`` -> ``1h02m05s``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    m, s = divmod(s, 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m{s:02d}s"


__all__ = ["DEFAULT_INTERVAL", "ENV_INTERVAL", "ENV_PROGRESS", "LineProgress", "NullProgress", "ProgressSettings",
           "progress"]
