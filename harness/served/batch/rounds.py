"""Sequential work in rounds: ``fn(item, chat)`` for every item, where call N of an item needs reply
N-1 (RankGPT's sliding window), batched across items.

Every item runs in a thread of its own (up to ``width`` at once). A call the cache answers returns at
once; any other waits until every running item is waiting too, and then all the waiting requests go
out together as one round (one stage of the batch API). DL19's 43 queries of 9 windows each take 9
rounds, not 387 round trips.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from harness.served.request_errors import LLMError

T = TypeVar("T")
R = TypeVar("R")
#: most items in flight at once (each waits in a thread of its own)
MAX_WIDTH = 1024


class _Slot:
    __slots__ = ("pending", "result", "done")

    def __init__(self, pending: Any) -> None:
        self.pending = pending
        self.result: Any = None
        self.done = threading.Event()


class Rounds:
    """``lookup(messages, options, overrides)`` gives a cached :class:`Reply` or a request to send;
    ``answer(requests)`` sends one round and returns the replies (or errors) in request order."""

    def __init__(self, lookup: Callable[[Any, Any, dict[str, Any]], Any],
                 answer: Callable[[list[Any]], list[Any]]) -> None:
        self.lookup, self.answer = lookup, answer
        self._cond = threading.Lock()
        self._active = 0
        self._waiting: list[_Slot] = []
        self.rounds = 0

    def chat(self, messages: Any, options: Any = None, /, **overrides: Any) -> Any:
        """The ``chat`` an item's function receives: returns a reply, raises its :class:`LLMError`."""
        found = self.lookup(messages, options, overrides)
        if not hasattr(found, "key"):  # a cached reply
            return found
        slot = _Slot(found)
        with self._cond:
            self._waiting.append(slot)
            self._active -= 1
            batch = self._take()
        if batch:
            self._flush(batch)
        slot.done.wait()
        if isinstance(slot.result, BaseException):
            raise slot.result
        return slot.result

    def _take(self) -> list[_Slot]:
        """The waiting requests, when no item is running any more (called under the lock)."""
        if self._active > 0 or not self._waiting:
            return []
        batch, self._waiting = self._waiting, []
        return batch

    def _flush(self, batch: list[_Slot]) -> None:
        try:
            results: list[Any] = self.answer([s.pending for s in batch])
        except BaseException as exc:  # a fatal error, a pending batch, Ctrl-C: every waiting item gets it
            results = [exc] * len(batch)
        self.rounds += 1
        with self._cond:
            self._active += len(batch)  # before any item wakes, so none flushes a partial round
        for slot, result in zip(batch, results, strict=True):
            slot.result = result
            slot.done.set()

    def _leave(self) -> None:
        with self._cond:
            self._active -= 1
            batch = self._take()
        if batch:
            self._flush(batch)

    def run(self, fn: Callable[[T, Any], R], items: Iterable[T], width: int | None = None,
            on_result: Callable[[int, R | LLMError], None] | None = None) -> list[R | LLMError]:
        """``[fn(item, self.chat) for item in items]``, items in parallel and their requests in rounds.
        An item whose ``fn`` lets an :class:`LLMError` escape holds it; any other exception stops
        the run (no new item starts) and is raised."""
        todo = list(items)
        if not todo:
            return []
        workers = max(1, min(len(todo), width or MAX_WIDTH))
        results: dict[int, Any] = {}
        errors: list[BaseException] = []
        it = iter(enumerate(todo))
        lock = threading.Lock()
        self._active = workers  # all of them, before any starts: none may flush a partial first round

        def worker() -> None:
            try:
                while not errors:
                    with lock:
                        nxt = next(it, None)
                    if nxt is None:
                        return
                    i, item = nxt
                    try:
                        results[i] = fn(item, self.chat)
                    except LLMError as error:
                        results[i] = error
                    except BaseException as exc:
                        errors.append(exc)
                        return
                    if on_result is not None:
                        on_result(i, results[i])
            finally:
                self._leave()

        threads = [threading.Thread(target=worker, daemon=True, name=f"llm-round-{k}") for k in range(workers)]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.25)
        if errors:
            raise errors[0]
        return [results[i] for i in range(len(todo))]


def deliver(requests: list[Any], answers: Mapping[str, Any], on_duplicate: Callable[[Any], Any]) -> list[Any]:
    """Each request's answer, in order; a key asked again in the same round gets
    ``on_duplicate(reply)`` (a reply marked as a cache hit) after the first."""
    seen: set[str] = set()
    out = []
    for p in requests:
        answer = answers[p.key]
        if p.key in seen and not isinstance(answer, BaseException):
            answer = on_duplicate(answer)
        seen.add(p.key)
        out.append(answer)
    return out
