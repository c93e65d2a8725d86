"""A deadline on a whole reply, and bounded reading of untrusted reply bodies.

A read timeout (the socket's, httpx's) bounds each wait for the next bytes, not the reply: a server that
sends one byte a second keeps a request with a 3 s read timeout open for as long as it likes. So an
HTTP attempt of the LLM layer runs under :func:`reply_deadline`: every read and write of its connection
(the status line, the headers and the body) waits at most what is left of the attempt's timeout, and
none starts once it has passed. A thread-local deadline, honoured by

- the official SDKs' HTTP client (:func:`http_client`: httpx's connection pools get a network backend
  whose streams cap each timeout; the SDK's ``APITimeoutError`` follows, mapped to ``LLMTimeout``);
- :func:`post`, plain ``urllib`` with connections whose socket reads do the same (the rerank APIs and
  the servers' probes), raising :class:`TimeoutError`.

Outside :func:`reply_deadline` nothing changes (a batch file download keeps its per-read timeout).

Reply bodies are untrusted: :func:`reply_json` parses one with the bounds of a results folder's JSON
(:func:`harness.formats.bounded.loads`), :func:`number` and :func:`count` accept a JSON number only (not a
boolean, not text such as ``"1_00"``, finite); each failure is a :class:`BadReply` saying where.
"""

from __future__ import annotations

import functools
import http.client
import importlib
import io
import math
import threading
import time
import urllib.request
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from harness.concepts.errors import HarnessError
from harness.formats.bounded import loads

#: the most bytes read of one reply (an embeddings reply of 2,048 inputs of 3,072 dimensions is ~140 MB)
MAX_REPLY_BYTES = 256 * 2**20

_local = threading.local()


@contextmanager
def reply_deadline(seconds: float | None) -> Iterator[None]:
    """Every HTTP read and write made by this thread inside the block ends ``seconds`` from now (None: no
    deadline); nested blocks keep the earlier deadline."""
    before = getattr(_local, "deadline", None)
    if seconds is not None:
        end = time.monotonic() + max(0.0, float(seconds))
        _local.deadline = end if before is None else min(before, end)
    try:
        yield
    finally:
        _local.deadline = before


def time_left() -> float | None:
    """Seconds left before this thread's deadline (None: none is set; <= 0: it has passed)."""
    end = getattr(_local, "deadline", None)
    return None if end is None else end - time.monotonic()


def capped(timeout: float | None, expired: type[BaseException]) -> float | None:
    """``timeout`` cut to what is left of the deadline; ``expired`` raised once it has passed."""
    left = time_left()
    if left is None:
        return timeout
    if left <= 0:
        raise expired("the reply did not come whole within the call's timeout")
    return left if timeout is None else min(timeout, left)


# -- the SDKs' httpx client --------------------------------------------------------------------------
def _stream_class(core: Any) -> type:
    class DeadlineStream(core.NetworkStream):  # type: ignore[misc, name-defined]
        """A network stream whose reads and writes end at the thread's deadline."""

        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self._inner.read(max_bytes, capped(timeout, core.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._inner.write(buffer, capped(timeout, core.WriteTimeout))

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
            return DeadlineStream(self._inner.start_tls(ssl_context, server_hostname,
                                                        capped(timeout, core.ConnectTimeout)))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    return DeadlineStream


@functools.lru_cache(maxsize=4)
def _backend_class(core: Any) -> type:
    stream = _stream_class(core)

    class DeadlineBackend(core.NetworkBackend):  # type: ignore[misc, name-defined]
        """Connections whose streams end at the thread's deadline."""

        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                        socket_options: Any = None) -> Any:
            return stream(self._inner.connect_tcp(host, port, capped(timeout, core.ConnectTimeout), local_address,
                                                  socket_options))

        def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
            return stream(self._inner.connect_unix_socket(path, capped(timeout, core.ConnectTimeout),
                                                          socket_options))

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    return DeadlineBackend


def http_client(sdk: Any, **kwargs: Any) -> Any:
    """The SDK's default httpx client (``sdk.DefaultHttpxClient(**kwargs)``) with every connection pool
    (direct and proxies) honouring :func:`reply_deadline`. An SDK whose client is built otherwise is an
    error here, never a client without the deadline."""
    client = sdk.DefaultHttpxClient(**kwargs)
    transports = [getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()]
    wrapped = 0
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        inner = getattr(pool, "_network_backend", None)
        if inner is None:
            continue
        core = importlib.import_module(type(pool).__module__.split(".")[0])  # httpcore or httpcore2
        pool._network_backend = _backend_class(core)(inner)
        wrapped += 1
    if not wrapped:
        raise HarnessError(f"{sdk.__name__} {getattr(sdk, '__version__', '?')}: its HTTP client has no connection "
                           "pool the harness can bound (a whole-reply timeout); install a supported version")
    return client


def response_type(client: Any) -> type:
    """The ``Response`` class of an httpx client's package (httpx or httpx2): what an SDK's ``post`` is
    given as ``cast_to`` to return the reply unparsed."""
    for cls in type(client).__mro__:
        root = cls.__module__.split(".")[0]
        if root in ("httpx", "httpx2"):
            return importlib.import_module(root).Response
    raise TypeError(f"{type(client).__name__} is not an httpx client")


def http_failure(exc: BaseException) -> str | None:
    """What an httpx exception raised while reading a body means: ``timeout``, ``connection`` (the
    connection failed or the reply was cut), ``malformed`` (a body that cannot be decoded); None for
    anything else."""
    root = type(exc).__module__.split(".")[0]
    if root not in ("httpx", "httpx2"):
        return None
    mod = importlib.import_module(root)
    if isinstance(exc, mod.TimeoutException):
        return "timeout"
    if isinstance(exc, mod.DecodingError):
        return "malformed"
    if isinstance(exc, mod.TransportError):
        return "connection"
    return None


# -- plain urllib ------------------------------------------------------------------------------------
class _DeadlineReader(io.RawIOBase):
    """A socket's reads (through its own ``makefile``, so closing the connection leaves the reply
    readable, as ``urllib`` expects), each waiting at most what is left of the thread's deadline."""

    def __init__(self, sock: Any) -> None:
        super().__init__()
        self._sock = sock
        self._raw = sock.makefile("rb", buffering=0)
        self._timeout = sock.gettimeout()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        self._sock.settimeout(capped(self._timeout, TimeoutError))
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _Socket:
    """What :class:`http.client.HTTPResponse` asks of a socket: a reader bound by the deadline."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock

    def makefile(self, mode: str, *args: Any, **kwargs: Any) -> Any:
        return io.BufferedReader(_DeadlineReader(self._sock))


class _Response(http.client.HTTPResponse):
    def __init__(self, sock: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(_Socket(sock), *args, **kwargs)  # type: ignore[arg-type]


class _HTTPConnection(http.client.HTTPConnection):
    response_class = _Response


class _HTTPSConnection(http.client.HTTPSConnection):
    response_class = _Response


class _HTTPHandler(urllib.request.HTTPHandler):
    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(_HTTPConnection, req, **kwargs)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> Any:
        return super().do_open(_HTTPSConnection, req, **kwargs)


_opener = urllib.request.build_opener(_HTTPHandler(), _HTTPSHandler())


class ReplyTooLarge(ValueError):
    """A reply body over :data:`MAX_REPLY_BYTES`."""


class HTTPStatusError(Exception):
    """A reply with an HTTP error status: ``status``, ``headers`` and the first 64 KiB of the body."""

    def __init__(self, status: int, headers: Any, body: bytes) -> None:
        super().__init__(f"HTTP {status}")
        self.status, self.headers, self.body = status, headers, body


def post(url: str, data: bytes | None, headers: Mapping[str, str], timeout: float,
         limit: int = MAX_REPLY_BYTES) -> bytes:
    """``POST`` ``data`` (``GET`` when None) to ``url`` with ``urllib`` (the environment's proxies
    included) and return the body, all of it within ``timeout`` seconds (connecting, sending and the
    whole reply: :class:`TimeoutError` past it) and at most ``limit`` bytes (:class:`ReplyTooLarge`).
    An error status raises :class:`HTTPStatusError`; other failures raise as ``urllib`` does
    (``URLError``, ``OSError``, :class:`http.client.HTTPException` for a cut reply)."""
    import urllib.error

    req = urllib.request.Request(url, data=data, headers=dict(headers), method="GET" if data is None else "POST")
    with reply_deadline(timeout):
        try:
            with _opener.open(req, timeout=timeout) as resp:
                return read_limited(resp, limit)
        except urllib.error.HTTPError as exc:
            try:
                body = read_limited(exc, 65536, cut=True)
            except (OSError, http.client.HTTPException):
                body = b""
            raise HTTPStatusError(exc.code, exc.headers, body) from None


def read_limited(resp: Any, limit: int = MAX_REPLY_BYTES, cut: bool = False) -> bytes:
    """A ``urllib`` response's body read in chunks (the deadline is checked between them): past ``limit``
    bytes :class:`ReplyTooLarge`, or (``cut``) its first ``limit`` bytes."""
    read = resp.read1 if hasattr(resp, "read1") else resp.read
    body = collect(iter(lambda: read(65536), b""), limit, cut)
    left = getattr(resp, "length", None)  # what the Content-Length still promised: read1 ends quietly at EOF
    if not cut and isinstance(left, int) and left > 0:
        raise http.client.IncompleteRead(body, left)
    return body


def collect(chunks: Iterable[bytes], limit: int = MAX_REPLY_BYTES, cut: bool = False) -> bytes:
    """The chunks of a body joined, stopped past ``limit`` bytes: :class:`ReplyTooLarge`, or (``cut``)
    the first ``limit`` bytes."""
    out = bytearray()
    for chunk in chunks:
        out += chunk
        if len(out) > limit:
            if cut:
                return bytes(out[:limit])
            raise ReplyTooLarge(f"the reply is longer than {limit:,} bytes")
    return bytes(out)


# -- untrusted reply bodies ------------------------------------------------------------------------------
class BadReply(ValueError):
    """A reply that is not what the API documents (the message says where)."""


def reply_json(raw: bytes) -> Any:
    """A reply body as JSON, with bounded work: UTF-8, nesting at most 64 deep, integers of at most 19
    digits, no key twice in an object (:func:`harness.formats.bounded.loads`)."""
    try:
        return loads(raw, "the reply")
    except HarnessError as exc:
        raise BadReply(str(exc)) from None


def number(value: Any, what: str) -> float:
    """``value`` if it is a JSON number (an int or a float, not a boolean, not text) and finite."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        shown = repr(value) if isinstance(value, bool | int | float | str) else type(value).__name__
        raise BadReply(f"{what} is not a number ({shown[:40]})")
    try:
        x = float(value)
    except OverflowError:  # an int beyond float (a reply not read by reply_json)
        raise BadReply(f"{what} is not finite (an integer beyond a float's range)") from None
    if not math.isfinite(x):
        raise BadReply(f"{what} is not finite ({x})")
    return x


def count(value: Any, what: str) -> int:
    """A usage count: absent (None) is 0, else a finite number >= 0 (whole, or rounded down)."""
    if value is None:
        return 0
    x = number(value, what)
    if x < 0:
        raise BadReply(f"{what} is negative ({x:g})")
    return int(x)
