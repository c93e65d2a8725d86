"""The ``harness view`` server: the standard library's threading HTTP server, read-only.

A URL never names a file: ``/`` and ``/static/<asset>`` come from a fixed list of the package's
assets, ``/api/...`` from the :class:`~harness.view.catalog.Catalog` by run id (ids this server
gave) and query id (looked up in the run's own files). Anything else is 404; every response
carries a strict Content-Security-Policy. On a loopback address, a request whose ``Host`` is not
that address is refused (no DNS rebinding)."""

from __future__ import annotations

import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from types import MappingProxyType
from typing import Any
from urllib.parse import unquote, urlsplit

from harness.concepts.errors import HarnessError
from harness.view.catalog import Catalog
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


def asset(name: str) -> bytes:
    return resources.files("harness.view").joinpath("static", name).read_bytes()


class ViewServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, catalog: Catalog, host: str = "127.0.0.1", port: int = 0, permutations: int = 10_000) -> None:
        self.catalog = catalog
        self.permutations = permutations
        self.compared: dict[tuple[str, ...], Any] = {}
        self.compare_lock = threading.Lock()
        super().__init__((host, port), Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in str(host) else host
        return f"http://{host}:{port}/"


class Handler(BaseHTTPRequestHandler):
    server: ViewServer
    server_version = "harness-view"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  (quiet: the URL is printed once)
        return

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
        if data is None:
            return self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})
        return self._json(HTTPStatus.OK, data)

    def _api(self, parts: list[str]) -> Any:
        c = self.server.catalog
        if parts == ["runs"]:
            return c.runs_payload()
        if len(parts) == 2 and parts[0] == "run":
            payload = c.run_payload(parts[1])
            threading.Thread(target=c.warm, args=(parts[1],), daemon=True).start()  # the query pages' files
            return payload
        if len(parts) == 3 and parts[0] == "query":
            return c.query_payload(parts[1], parts[2])
        if len(parts) >= 3 and parts[0] == "compare":
            from harness.view.comparison import compare_payload

            ids = tuple(parts[1:])
            with self.server.compare_lock:
                if ids not in self.server.compared:
                    self.server.compared[ids] = compare_payload(c, list(ids), permutations=self.server.permutations)
                return self.server.compared[ids]
        return None

    def do_POST(self) -> None:  # noqa: N802
        self._json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": "read-only"})

    do_PUT = do_DELETE = do_PATCH = do_POST  # noqa: N815
