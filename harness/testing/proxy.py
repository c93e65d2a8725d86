"""A counting reverse proxy for tests and benchmarks against a real LLM server (llama.cpp, vLLM):
every request is forwarded unchanged to ``target`` and counted, so a test can say how many times each
distinct request reached the server, how many were in flight at once, and how many tokens the
server reported.

    with CountingProxy("http://127.0.0.1:8080") as proxy:
        client = get_client(f"openai-compatible:m:base_url={proxy.url}/v1")
        ...
        assert proxy.posts == proxy.distinct_posts          # each distinct request sent once
        assert proxy.usage == {"prompt_tokens": ..., "completion_tokens": ...}
"""

from __future__ import annotations

import hashlib
import json
import threading
import urllib.error
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer
from typing import Any


class CountingProxy:
    """Counters, over the completion and embedding requests (``POST .../completions``, ``POST
    .../embeddings``; probes and tokenize calls pass uncounted): ``posts``, ``counts`` (sha256 of the body -> times),
    ``distinct_posts``, ``max_in_flight``, ``usage`` (the ``usage`` token counts of the JSON replies,
    summed), ``statuses`` (HTTP status -> count), ``bodies`` (the POST bodies, in order)."""

    __test__ = False

    def __init__(self, target: str, host: str = "127.0.0.1", port: int = 0, timeout: float = 3600.0) -> None:
        self.target = target.rstrip("/")
        self.host, self.port, self.timeout = host, int(port), float(timeout)
        self._lock = threading.Lock()
        self._httpd: _Server | None = None
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.posts = 0
            self.counts: Counter[str] = Counter()
            self.in_flight = self.max_in_flight = 0
            self.usage: Counter[str] = Counter()
            self.statuses: Counter[int] = Counter()
            self.bodies: list[dict[str, Any]] = []

    @property
    def distinct_posts(self) -> int:
        return len(self.counts)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> CountingProxy:
        self._httpd = _Server((self.host, self.port), _Handler)
        self._httpd.owner = self
        self.port = self._httpd.server_address[1]
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True,
                         name="counting-proxy").start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> CountingProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- called from handler threads -------------------------------------------------------------
    def _begin(self, body: bytes) -> None:
        with self._lock:
            self.posts += 1
            self.counts[hashlib.sha256(body).hexdigest()] += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            try:
                self.bodies.append(json.loads(body))
            except ValueError:
                self.bodies.append({})

    def _end(self, status: int, reply: bytes) -> None:
        with self._lock:
            self.in_flight -= 1
            self.statuses[status] += 1
            try:
                usage = json.loads(reply).get("usage") or {}
            except (ValueError, AttributeError):
                usage = {}
            for key in ("prompt_tokens", "completion_tokens"):
                if isinstance(usage.get(key), int):
                    self.usage[key] += usage[key]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: CountingProxy

    def server_bind(self) -> None:  # no reverse DNS lookup
        TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _forward(self, method: str) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        counted = method == "POST" and self.path.split("?")[0].rstrip("/").endswith(("/completions", "/embeddings"))
        if counted:
            owner._begin(body)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length", "connection")}
        req = urllib.request.Request(owner.target + self.path, data=body if method == "POST" else None,
                                     headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=owner.timeout) as resp:  # noqa: S310 - loopback target
                status, reply, ctype = resp.status, resp.read(), resp.headers.get("Content-Type", "application/json")
        except urllib.error.HTTPError as exc:
            status, reply, ctype = exc.code, exc.read(), exc.headers.get("Content-Type", "application/json")
        except OSError as exc:
            status, reply, ctype = 502, json.dumps({"error": {"message": f"proxy: {exc}"}}).encode(), "application/json"
        if counted:
            owner._end(status, reply)
        try:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)
        except OSError:  # the client gave up (a timeout): nothing to send it
            self.close_connection = True

    def do_GET(self) -> None:
        self._forward("GET")

    def do_POST(self) -> None:
        self._forward("POST")
