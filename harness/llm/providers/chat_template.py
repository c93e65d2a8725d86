"""A GGUF's chat template, rendered under the call's budget (``--llm local:path=FILE``).

The template is the GGUF's own text (``tokenizer.chat_template``): data from whoever made the file.
llama-cpp-python renders it in this process with jinja2's sandbox, which refuses unsafe attribute
access but bounds neither time nor size (two nested ``range(100000)`` loops run for hours, ``'x' *
10**9`` takes a gigabyte), and a thread cannot be stopped. So the harness renders it itself, in a
worker process (:mod:`harness.llm.providers.template_worker`: the standard library and jinja2, the
same sandboxed environment, filters and variables as llama-cpp-python's ``Jinja2ChatFormatter``):

- **time**: the render gets what is left of the call's budget (:data:`RENDER_LIMIT_S` when the call
  has none); past it the worker is killed (a fresh one serves the next call) and the worker's own
  CPU-time limit ends it even if the harness is gone;
- **size**: the prompt is at most :func:`max_prompt_chars` characters (counted while it is produced),
  and the worker's address space is capped at :data:`WORKER_MEMORY` bytes;
- **errors**: a template error, a sandbox refusal (``SecurityError``), a prompt too long, a time or
  memory limit passed, a ``raise_exception`` from the template: one :class:`HarnessError` naming the
  file (exit status 2), never a traceback.

Workers are started outside the budget (like the model load) and reused; one per call in flight.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness.concepts.errors import HarnessError

#: the render's time limit when the call has no budget, seconds
RENDER_LIMIT_S = 30.0
#: the worker's address-space cap, bytes
WORKER_MEMORY = 512 << 20
#: the time a worker may take to start and compile the template, seconds (not the call's budget)
START_LIMIT_S = 30.0
#: the longest chat template accepted, characters (real ones are a few KB)
MAX_TEMPLATE_CHARS = 1 << 20
#: the most GGUF header bytes read to find the templates, and the most metadata entries
MAX_HEADER_BYTES = 256 << 20
MAX_KV = 1 << 16
WORKER = Path(__file__).with_name("template_worker.py")
# GGUF value type -> bytes
_FIXED = MappingProxyType({0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8})
_STRING, _ARRAY = 8, 9


def max_prompt_chars(n_ctx: int) -> int:
    """The longest prompt a template may render: 1 MiB characters, or 64 per token of the context
    window when that is more (a prompt that fits the window is far shorter)."""
    return max(1 << 20, 64 * int(n_ctx))


class TemplateError(HarnessError):
    """A GGUF chat template that failed, was refused by the sandbox, or passed a bound."""


def gguf_templates(path: str | os.PathLike[str]) -> dict[str, str]:
    """The chat templates a GGUF file holds (``tokenizer.chat_template`` and its named variants), read
    from its header with bounded work (at most :data:`MAX_HEADER_BYTES`, :data:`MAX_KV` entries,
    templates of :data:`MAX_TEMPLATE_CHARS`), before llama-cpp-python sees them. A malformed header
    is left to llama.cpp's own loader (which refuses it); a bad template is a :class:`TemplateError`."""
    import struct

    out: dict[str, str] = {}
    with open(path, "rb") as fh:
        reader = _Reader(fh, min(os.fstat(fh.fileno()).st_size, MAX_HEADER_BYTES))
        try:
            if reader.take(4) != b"GGUF":
                return out
            version, _tensors, kv_count = struct.unpack("<IQQ", reader.take(20))
            if version not in (2, 3) or kv_count > MAX_KV:
                return out
            for _ in range(kv_count):
                key = reader.string(1 << 16).decode("utf-8", "replace")
                (vtype,) = struct.unpack("<I", reader.take(4))
                if key.startswith("tokenizer.chat_template") and vtype == _STRING:
                    raw = reader.string(4 * MAX_TEMPLATE_CHARS, what=f"{key} of {path}")
                    try:
                        text = raw.decode("utf-8")
                    except UnicodeDecodeError:
                        raise TemplateError(f"local: the chat template of {path} ({key}) is not UTF-8 text") from None
                    if len(text) > MAX_TEMPLATE_CHARS:
                        raise TemplateError(f"local: the chat template of {path} ({key}) is {len(text):,} characters "
                                            f"long; at most {MAX_TEMPLATE_CHARS:,} are accepted")
                    out[key] = text
                else:
                    reader.skip_value(vtype)
        except _Short:
            return out  # a truncated header: llama.cpp refuses the file when it loads
    return out


class _Short(Exception):
    pass


class _Reader:
    """Bounded little-endian reads of a GGUF header."""

    def __init__(self, fh: Any, limit: int) -> None:
        self.fh, self.left = fh, limit

    def take(self, n: int) -> bytes:
        if n > self.left:
            raise _Short()
        data = self.fh.read(n)
        if len(data) != n:
            raise _Short()
        self.left -= n
        return data

    def skip(self, n: int) -> None:
        if n > self.left:
            raise _Short()
        self.fh.seek(n, os.SEEK_CUR)
        self.left -= n

    def string(self, max_len: int, what: str = "") -> bytes:
        import struct

        (n,) = struct.unpack("<Q", self.take(8))
        if n > max_len:
            if what:
                raise TemplateError(f"local: the chat template {what} is {n:,} bytes long; at most "
                                    f"{MAX_TEMPLATE_CHARS:,} characters are accepted")
            raise _Short()
        return self.take(n)

    def skip_value(self, vtype: int, depth: int = 0) -> None:
        import struct

        if vtype in _FIXED:
            self.skip(_FIXED[vtype])
        elif vtype == _STRING:
            (n,) = struct.unpack("<Q", self.take(8))
            self.skip(n)
        elif vtype == _ARRAY and depth < 4:
            etype, count = struct.unpack("<IQ", self.take(12))
            if etype in _FIXED:
                self.skip(_FIXED[etype] * count)
            else:
                if count > self.left:
                    raise _Short()
                for _ in range(count):
                    self.skip_value(etype, depth + 1)
        else:
            raise _Short()


class ChatTemplate:
    """``template`` (the GGUF's text) from ``source`` (the file, named in every error), rendered in
    worker processes; :meth:`render` is thread-safe (one worker per render in flight)."""

    def __init__(self, template: str, source: str, *, max_chars: int, field: str = "tokenizer.chat_template") -> None:
        self.template, self.source, self.max_chars, self.field = template, source, int(max_chars), field
        self._idle: list[_Worker] = []
        self._lock = threading.Lock()
        self._all: set[_Worker] = set()  # every worker started and not stopped
        weakref.finalize(self, _stop_all, self._all, self._lock)  # also at exit

    def render(self, messages: list[dict[str, Any]], *, bos_token: str, eos_token: str,
               budget: float | None, variables: dict[str, bool] | None = None) -> str:
        """The prompt for ``messages``, within ``budget`` seconds (None: :data:`RENDER_LIMIT_S`);
        ``variables``: the template's switches (``enable_thinking``)."""
        limit = RENDER_LIMIT_S if budget is None else max(0.0, float(budget))
        worker = self._take()
        request = {"messages": messages, "bos_token": bos_token, "eos_token": eos_token,
                   "max_chars": self.max_chars, "seconds": limit, "variables": dict(variables or {})}
        try:
            reply = worker.ask(request, limit, self.max_chars * 12 + 4096)
        except _Timeout:
            self._stop(worker)
            raise self.error(f"rendering did not end within {limit:.3g} s (the call's time budget); the worker "
                             "was stopped") from None
        except _Broken as exc:
            self._stop(worker)
            raise self.error(f"the renderer ended without an answer ({exc})") from None
        self._give_back(worker)
        if "prompt" in reply and isinstance(reply["prompt"], str):
            return reply["prompt"]
        raise self.error(_describe(reply))

    @property
    def thinking_switch(self) -> bool:
        """The template reads ``enable_thinking`` (Qwen3's switch between thinking and answering at once)."""
        return "enable_thinking" in self.template

    def check(self) -> None:
        """Compile the template in a worker now (outside any budget): a syntax error, or a compile
        past the worker's time or memory bound (Jinja folds constants such as ``'x' * 10**9`` while
        compiling), is a :class:`TemplateError` before llama-cpp-python compiles it in this process."""
        self._give_back(self._take())

    def close(self) -> None:
        """Stop the workers (a later render starts a new one)."""
        with self._lock:
            self._idle.clear()
        _stop_all(self._all, self._lock)

    def error(self, what: str) -> TemplateError:
        return TemplateError(f"local: the chat template of {self.source} ({self.field}): {what}")

    def _take(self) -> _Worker:
        while True:
            with self._lock:
                worker = self._idle.pop() if self._idle else None
            if worker is None:
                break
            if worker.alive():
                return worker
            self._stop(worker)  # ended since (killed from outside): reaped
        worker = _Worker(self)
        with self._lock:
            self._all.add(worker)
        return worker

    def _give_back(self, worker: _Worker) -> None:
        with self._lock:
            self._idle.append(worker)

    def _stop(self, worker: _Worker) -> None:
        worker.stop()
        with self._lock:
            self._all.discard(worker)


def _describe(reply: dict[str, Any]) -> str:
    kind, message = str(reply.get("error", "error")), str(reply.get("message", ""))[:300]
    return {
        "sandbox": f"refused by the sandbox: {message}",
        "size": message,
        "memory": message,
        "recursion": message,
        "syntax": f"not a valid Jinja template: {message}",
        "constant": f"refused: {message}",
        "refused": f"the template refused the messages: {message}",
    }.get(kind, f"rendering failed: {message}")


class _Timeout(Exception):
    pass


class _Broken(Exception):
    pass


class _Worker:
    """One worker process, started and given the template (outside any call's budget)."""

    def __init__(self, owner: ChatTemplate) -> None:
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "SYSTEMROOT", "LANG", "LC_ALL", "TMPDIR")}
        self.proc = subprocess.Popen([sys.executable, "-I", str(WORKER)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
        try:
            ready = self.ask({"template": owner.template, "memory": WORKER_MEMORY, "max_chars": owner.max_chars},
                             START_LIMIT_S, 1 << 16)
        except (_Timeout, _Broken) as exc:
            self.stop()
            why = str(exc) or f"no answer within {START_LIMIT_S:g} s"
            raise owner.error(f"compiling it did not end in a bounded worker ({why})") from None
        if not ready.get("ready"):
            self.stop()
            raise owner.error(_describe(ready))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def ask(self, request: dict[str, Any], seconds: float, max_bytes: int) -> dict[str, Any]:
        """Send one line and read one line back within ``seconds`` (and ``max_bytes``)."""
        deadline = time.monotonic() + seconds
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(request, ensure_ascii=False).encode("utf-8") + b"\n")
            self.proc.stdin.flush()
        except (OSError, ValueError) as exc:
            raise _Broken(f"cannot send: {exc}") from None
        out = self.proc.stdout
        assert out is not None
        data = bytearray()
        with selectors.DefaultSelector() as sel:
            sel.register(out, selectors.EVENT_READ)
            while not data.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise _Timeout()
                chunk = os.read(out.fileno(), 1 << 16)
                if not chunk:
                    raise _Broken(f"exit status {self.proc.poll()}")
                data += chunk
                if len(data) > max_bytes:
                    raise _Broken("an answer over its size bound")
        try:
            reply = json.loads(bytes(data))
        except ValueError:
            raise _Broken("an answer that is not JSON") from None
        if not isinstance(reply, dict):
            raise _Broken("an answer that is not an object")
        return reply

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a kill is not refused
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


def _stop_all(workers: set[_Worker], lock: threading.Lock) -> None:
    with lock:
        stopping = list(workers)
        workers.clear()
    for worker in stopping:
        worker.stop()
