"""A fixed pool of worker threads pulling from one iterator: bounded concurrency without one thread
or task per item, results in input order, Ctrl-C honoured."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def _progress_bar(total: int | None, label: str | None, settings: Any = None) -> Any:
    """Progress of a batch on stderr (:func:`harness.runtime.progress.progress`: a bar in a terminal, a line
    every 15 s in a log; mode ``off`` shows nothing), or None."""
    if not label or not total or total < 2:
        return None
    from harness.runtime.progress import progress

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
    results: dict[int, Any] = {}
    if workers == 1:
        for i, item in enumerate(items):
            results[i] = r = fn(item)
            if on_result is not None:
                on_result(i, r)
        return [results[i] for i in range(len(results))]

    it = enumerate(items)
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[BaseException] = []

    def worker() -> None:
        while not stop.is_set():
            with lock:
                try:
                    i, item = next(it)
                except StopIteration:
                    return
                except BaseException as exc:  # the iterator itself failed
                    errors.append(exc)
                    stop.set()
                    return
            try:
                r = fn(item)
                results[i] = r
                if on_result is not None:
                    on_result(i, r)
            except BaseException as exc:
                errors.append(exc)
                stop.set()
                return

    threads = [threading.Thread(target=worker, daemon=True, name=f"llm-worker-{k}") for k in range(workers)]
    for t in threads:
        t.start()
    try:
        for t in threads:
            while t.is_alive():
                t.join(0.25)
    except BaseException:
        stop.set()  # workers finish the call in hand (its reply is cached) and take no more
        raise
    if errors:
        raise errors[0]
    return [results[i] for i in range(len(results))]
