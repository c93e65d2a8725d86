"""A fixed pool of worker threads pulling from one iterator: bounded concurrency without one thread
or task per item, results in input order, Ctrl-C honoured."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from harness.runtime.progress import progress

T = TypeVar("T")
R = TypeVar("R")


def _progress_bar(total: int | None, label: str | None, settings: Any = None) -> Any:
    """Progress of a batch on stderr (:func:`harness.runtime.progress.progress`: a bar in a terminal, a line
    every 15 s in a log; mode ``off`` shows nothing), or None."""
    if not label or not total or total < 2:
        return None

    bar = progress(total, label, settings=settings, unit="call", stream=sys.stderr)
    return bar if bar.enabled else None


def bounded_map(
    fn: Callable[[T], R],
    items: Iterable[T],
    workers: int,
    on_result: Callable[[int, R], None] | None = None,
    progress: str | None = None,
    settings: Any = None,
) -> list[R]:
    """``[fn(x) for x in items]`` on at most ``workers`` threads. ``items`` is consumed lazily (an
    iterator of millions is fine). An exception raised by ``fn`` or ``on_result`` stops the pool
    (no new items start) and is re-raised. ``on_result(index, result)`` runs in a worker thread.
    ``progress`` labels a progress display (``settings``: a
    :class:`harness.runtime.progress.ProgressSettings`) shown when the number of items is known."""
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    try:
        n: int | None = len(items)  # type: ignore[arg-type]
    except TypeError:
        n = None
    if n == 0:
        return []
    bar = _progress_bar(n, progress, settings)
    if bar is not None:
        user_callback = on_result

        def on_result(i: int, r: Any) -> None:  # noqa: F811 - the user's callback, then the bar
            if user_callback is not None:
                user_callback(i, r)
            bar.update(1)

        try:
            return _bounded_map(fn, items, workers, n, on_result)
        finally:
            bar.close()
    return _bounded_map(fn, items, workers, n, on_result)


def _bounded_map(
    fn: Callable[[T], R],
    items: Iterable[T],
    workers: int,
    n: int | None,
    on_result: Callable[[int, R], None] | None,
) -> list[R]:
    if n is not None:
        workers = min(workers, n)
    if workers == 1:
        return _serial_map(fn, items, on_result)
    return _Pool(fn, items, on_result).run(workers)


def _serial_map(fn: Callable[[T], R], items: Iterable[T], on_result: Callable[[int, R], None] | None) -> list[R]:
    """The one-worker case, in the calling thread."""
    results: dict[int, Any] = {}
    for i, item in enumerate(items):
        results[i] = r = fn(item)
        if on_result is not None:
            on_result(i, r)
    return [results[i] for i in range(len(results))]


class _Pool:
    """The state the worker threads of one :func:`_bounded_map` call share: the input iterator (behind a
    lock), the results by index, the first errors, and the stop signal."""

    def __init__(self, fn: Callable[[Any], Any], items: Iterable[Any],
                 on_result: Callable[[int, Any], None] | None) -> None:
        self.fn = fn
        self.on_result = on_result
        self.it = enumerate(items)
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.errors: list[BaseException] = []
        self.results: dict[int, Any] = {}

    def _fail(self, exc: BaseException) -> None:
        self.errors.append(exc)
        self.stop.set()

    def _next(self) -> tuple[int, Any] | None:
        """The next ``(index, item)``, or None when the input is exhausted or failed."""
        with self.lock:
            try:
                return next(self.it)
            except StopIteration:
                return None
            except BaseException as exc:  # the iterator itself failed
                self._fail(exc)
                return None

    def _worker(self) -> None:
        while not self.stop.is_set():
            job = self._next()
            if job is None:
                return
            i, item = job
            try:
                r = self.fn(item)
                self.results[i] = r
                if self.on_result is not None:
                    self.on_result(i, r)
            except BaseException as exc:
                self._fail(exc)
                return

    def run(self, workers: int) -> list[Any]:
        """Run ``workers`` threads to the end; re-raise the first error (or a Ctrl-C) after stopping them."""
        threads = [threading.Thread(target=self._worker, daemon=True, name=f"llm-worker-{k}")
                   for k in range(workers)]
        for t in threads:
            t.start()
        try:
            for t in threads:
                while t.is_alive():
                    t.join(0.25)
        except BaseException:
            self.stop.set()  # workers finish the call in hand (its reply is cached) and take no more
            raise
        if self.errors:
            raise self.errors[0]
        return [self.results[i] for i in range(len(self.results))]
