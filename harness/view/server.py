"""The ``harness view`` server: the standard library's threading HTTP server, read-only.

A URL never names a file: ``/`` and ``/static/<asset>`` come from a fixed list of the package's
assets, ``/api/...`` from the :class:`~harness.view.catalog.Catalog` by run id (ids this server
gave) and query id (looked up in the run's own files). Anything else is 404; every response
carries a strict Content-Security-Policy. A request carries exactly one ``Host`` header (else 400);
on a loopback address, one whose ``Host`` is not that address is refused (no DNS rebinding).

Clients cannot hold the server: a request (its line and headers) must arrive whole within
:data:`REQUEST_TIMEOUT` seconds (a deadline on the whole request, not per read, so a client that
trickles a byte at a time is cut too) and a response be taken within :data:`WRITE_TIMEOUT`; at most
:data:`MAX_CONNECTIONS` connections are open at once, and a new one beyond that closes the oldest
connection still sending its request (or, when none is, is itself closed with a 503). A client that
resets or closes its connection prints nothing; any other failure is one line on stderr, never a
traceback."""

from __future__ import annotations

import io
import socket
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from types import MappingProxyType
from typing import Any
from urllib.parse import unquote, urlsplit

from harness.concepts.errors import HarnessError
from harness.view.catalog import Catalog
from harness.view.comparison import compare_payload
from harness.view.jsontext import dumps

#: the policy a ``<meta>`` tag can carry (the bundle's)
CSP_META = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
            "base-uri 'none'; form-action 'none'")
CSP = CSP_META + "; frame-ancestors 'none'"
#: the page's files: URL path -> (package file, content type)
ASSETS = MappingProxyType({
    "/": ("index.html", "text/html; charset=utf-8"),
    "/index.html": ("index.html", "text/html; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/app.css": ("app.css", "text/css; charset=utf-8"),
})
LOOPBACK = ("127.0.0.1", "localhost", "::1")
#: seconds a client has to send a whole request (request line and headers)
REQUEST_TIMEOUT = 10.0
#: seconds a response may take to be taken by the client
WRITE_TIMEOUT = 60.0
#: connections open at once
MAX_CONNECTIONS = 64
_BUSY = b"HTTP/1.0 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def asset(name: str) -> bytes:
    return resources.files("harness.view").joinpath("static", name).read_bytes()


class _Deadline(io.RawIOBase):
    """A connection's bytes, each read given only what is left before ``deadline`` (monotonic)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.deadline = sock, time.monotonic()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive in time")
        self.sock.settimeout(left)
        return self.sock.recv_into(buffer)


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = MAX_CONNECTIONS  # the listen backlog (5 by default drops connections in a burst)

    def __init__(self, catalog: Catalog, host: str = "127.0.0.1", port: int = 0, permutations: int = 10_000,
                 request_timeout: float = REQUEST_TIMEOUT, write_timeout: float = WRITE_TIMEOUT,
                 max_connections: int = MAX_CONNECTIONS) -> None:
        self.catalog = catalog
        self.permutations = permutations
        self.request_timeout, self.write_timeout, self.max_connections = request_timeout, write_timeout, max_connections
        self.compared: dict[tuple[str, ...], Any] = {}
        self.compare_lock = threading.Lock()
        self.warmed: set[str] = set()
        self.connections: dict[socket.socket, tuple[float, bool]] = {}  # -> (opened, still sending its request)
        self.connections_lock = threading.Lock()
        super().__init__((host, port), Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in str(host) else host
        return f"http://{host}:{port}/"

    def process_request(self, request: Any, client_address: Any) -> None:
        if self._admit(request):
            return super().process_request(request, client_address)
        try:
            request.setblocking(False)
            request.send(_BUSY)
        except OSError:
            pass
        self.shutdown_request(request)

    def _admit(self, conn: socket.socket) -> bool:
        """Count ``conn`` in; at :attr:`max_connections`, close the oldest connection still sending its
        request to make room (False when every open one is being answered)."""
        with self.connections_lock:
            if len(self.connections) >= self.max_connections:
                slow = [(opened, c) for c, (opened, sending) in self.connections.items() if sending]
                if not slow:
                    return False
                victim = min(slow, key=lambda x: x[0])[1]
                del self.connections[victim]
                try:
                    victim.shutdown(socket.SHUT_RDWR)  # its thread reads the end and leaves
                except OSError:
                    pass
            self.connections[conn] = (time.monotonic(), True)
            return True

    def received(self, conn: socket.socket) -> None:
        """``conn``'s request has arrived: it is being answered, no longer a slow client."""
        with self.connections_lock:
            if conn in self.connections:
                self.connections[conn] = (self.connections[conn][0], False)

    def close_request(self, request: Any) -> None:
        with self.connections_lock:
            self.connections.pop(request, None)
        super().close_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line on stderr, never a traceback; nothing for a client that reset, closed or stalled."""
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError | TimeoutError):
            return
        print(f"harness view: a request from {client_address[0]} failed: {type(exc).__name__}: {exc}",
              file=sys.stderr)


class Handler(BaseHTTPRequestHandler):
    server: ViewServer
    server_version = "harness-view"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (quiet: the URL is printed once)
        return

    def setup(self) -> None:
        super().setup()
        self._reader = _Deadline(self.connection)
        self.rfile = io.BufferedReader(self._reader)

    def handle_one_request(self) -> None:
        self._reader.deadline = time.monotonic() + self.server.request_timeout
        super().handle_one_request()

    def parse_request(self) -> bool:
        """The request line and headers, whole within the deadline; exactly one ``Host`` header."""
        if not super().parse_request():
            return False
        self.server.received(self.connection)
        self.connection.settimeout(self.server.write_timeout)
        if len(self.headers.get_all("Host") or []) != 1:
            self._json(HTTPStatus.BAD_REQUEST, {"error": "a request carries exactly one Host header"})
            return False
        return True

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", CSP)
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, data: Any) -> None:
        self._send(status, dumps(data).encode("utf-8"), "application/json; charset=utf-8")

    def _host_ok(self) -> bool:
        bound = str(self.server.server_address[0])
        if bound not in LOOPBACK:
            return True
        host = (self.headers.get("Host") or "").rsplit(":", 1)[0].strip("[]")
        return host in LOOPBACK

    def do_HEAD(self) -> None:  # noqa: N802
        self.do_GET()

    def do_GET(self) -> None:  # noqa: N802
        if not self._host_ok():
            return self._json(HTTPStatus.FORBIDDEN, {"error": "unexpected Host header"})
        path = urlsplit(self.path).path
        if path in ASSETS:
            name, ctype = ASSETS[path]
            return self._send(HTTPStatus.OK, asset(name), ctype)
        if not path.startswith("/api/") or not path.endswith(".json"):
            return self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})
        parts = [unquote(p) for p in path[len("/api/"):-len(".json")].split("/")]
        try:
            data = self._api(parts)
        except KeyError:
            return self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})
        except HarnessError as exc:
            return self._json(HTTPStatus.UNPROCESSABLE_ENTITY, {"error": str(exc)})
        except Exception as exc:  # a defect: one message on the page and one line on stderr, serving goes on
            self.server.handle_error(self.request, self.client_address)
            return self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": f"{type(exc).__name__}: {exc}"})
        if data is None:
            return self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})
        return self._json(HTTPStatus.OK, data)

    def _api(self, parts: list[str]) -> Any:
        c = self.server.catalog
        if parts == ["runs"]:
            return c.runs_payload()
        if len(parts) == 2 and parts[0] == "run":
            payload = c.run_payload(parts[1])
            with self.server.connections_lock:
                warm = parts[1] not in self.server.warmed
                self.server.warmed.add(parts[1])
            if warm:  # the query pages' files, read once in the background
                threading.Thread(target=c.warm, args=(parts[1],), daemon=True).start()
            return payload
        if len(parts) == 3 and parts[0] == "query":
            return c.query_payload(parts[1], parts[2])
        if len(parts) >= 3 and parts[0] == "compare":
            ids = tuple(parts[1:])
            with self.server.compare_lock:
                if ids not in self.server.compared:
                    self.server.compared[ids] = compare_payload(c, list(ids), permutations=self.server.permutations)
                return self.server.compared[ids]
        return None

    def do_POST(self) -> None:  # noqa: N802
        self._json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": "read-only"})

    do_PUT = do_DELETE = do_PATCH = do_POST  # noqa: N815
