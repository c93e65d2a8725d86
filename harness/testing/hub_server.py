"""A loopback imitation of the Hugging Face Hub for tests: what ``huggingface_hub`` relies on when it
downloads a file, on two loopback origins (the Hub and its LFS "CDN"), standard library only.

    with HubServer() as hub:
        commit = hub.add_repo("castorini/rank_llm_data", {"a/b.json": b"...", "big.jsonl": Path(...)})
        os.environ["HF_ENDPOINT"] = hub.endpoint
        ...
        assert hub.range_requests("big.jsonl")

Routes (``{type}`` is ``datasets/``, ``spaces/`` or nothing for a model repository):

- ``GET|HEAD /{type}{repo}/resolve/{revision}/{path}``: the file, with ``ETag`` (its git blob id, or
  for an LFS file the sha256), ``X-Repo-Commit`` (the resolved commit) and ``Range`` support (206). An
  LFS file (``lfs_threshold`` bytes or more, or named in ``lfs=``) answers ``302`` to the LFS origin
  (another port) with ``X-Linked-Size`` and ``X-Linked-Etag`` (the sha256), as the Hub's CDN redirect.
  ``revision`` is a branch name or a FULL 40-hex commit id; anything else (an abbreviated id) is
  ``404`` with ``X-Error-Code: RevisionNotFound``, as on the real Hub. A missing file is ``404
  EntryNotFound``, a missing repository ``404 RepoNotFound``; a gated repository asked without
  ``Authorization: Bearer <its token>`` is ``401 GatedRepo`` (a wrong token: ``403 GatedRepo``).
- ``GET /api/{type}{repo}`` and ``/api/{type}{repo}/revision/{revision}``: the repository's info
  (``sha``, ``siblings``; with ``?blobs=true`` their sizes and LFS data);
- ``GET /api/{type}{repo}/tree/{revision}[/{path}]`` (``?recursive=true``): the folder listing.

A file's bytes come from memory (``bytes``/``str``) or from disk (a ``Path``, read per request, never
copied). :meth:`HubServer.cut_once` cuts the next transfer of a file after half of it (the full length
was announced), once; :meth:`HubServer.stall` makes every later request for a file send its headers and
then nothing (or nothing at all) for a while. Every request is recorded in :attr:`HubServer.requests`.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from harness.testing.env import isolated_environment

FULL_COMMIT = re.compile(r"^[0-9a-f]{40}$")
#: the settings that keep huggingface_hub offline (``TRANSFORMERS_OFFLINE`` counts as one for it)
OFFLINE_VARS = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
CHUNK = 1 << 16
_TYPES = MappingProxyType({"datasets": "dataset", "spaces": "space", "models": "model"})


@dataclass
class HubRequest:
    """One request as the server saw it: ``origin`` (``"hub"`` or ``"lfs"``), ``method``, ``path``
    (the URL path, unquoted), ``range`` (the Range header or None), ``status``, ``authorized`` (an
    ``Authorization`` header was sent), for a file ``file`` (its path in the repository), and ``stalled``."""

    origin: str
    method: str
    path: str
    range: str | None
    status: int = 0
    authorized: bool = False
    file: str | None = None
    stalled: bool = False  # the answer stalled (see :meth:`HubServer.stall`)


@dataclass
class _File:
    path: str
    source: bytes | Path
    size: int
    sha256: str
    blob_id: str  # git's blob sha1 (what the Hub sends as ETag of a regular file)
    lfs: bool

    def read(self, start: int, end: int) -> Iterable[bytes]:
        """The bytes ``start`` to ``end`` (exclusive), in chunks."""
        if isinstance(self.source, bytes):
            yield self.source[start:end]
            return
        with open(self.source, "rb") as fh:
            fh.seek(start)
            left = end - start
            while left > 0:
                chunk = fh.read(min(CHUNK, left))
                if not chunk:
                    return
                left -= len(chunk)
                yield chunk


@dataclass
class _Repo:
    repo_type: str
    repo_id: str
    commits: dict[str, dict[str, _File]] = field(default_factory=dict)
    branches: dict[str, str] = field(default_factory=dict)
    token: str | None = None  # a gated repository's accepted token

    def resolve(self, revision: str) -> str | None:
        if revision in self.branches:
            return self.branches[revision]
        return revision if revision in self.commits else None


def _digests(source: bytes | Path) -> tuple[int, str, str]:
    """(size, sha256, git blob sha1) of ``source``."""
    if isinstance(source, bytes):
        size, chunks = len(source), [source]
    else:
        size, chunks = source.stat().st_size, None
    sha, blob = hashlib.sha256(), hashlib.sha1(f"blob {size}\0".encode())
    if chunks is None:
        with open(source, "rb") as fh:  # type: ignore[arg-type]
            while chunk := fh.read(1 << 20):
                sha.update(chunk)
                blob.update(chunk)
    else:
        sha.update(source)  # type: ignore[arg-type]
        blob.update(source)  # type: ignore[arg-type]
    return size, sha.hexdigest(), blob.hexdigest()


class HubServer:
    """The Hub imitation (see the module docstring): ``endpoint`` is the URL to put in ``HF_ENDPOINT``.

    ``lfs_threshold``: files of at least this many bytes are stored "in LFS" (redirected to the LFS
    origin); ``host``: the loopback address to listen on. Use as a context manager, or call
    :meth:`start` and :meth:`close`.
    """

    def __init__(self, lfs_threshold: int = 10 * 1024 * 1024, host: str = "127.0.0.1") -> None:
        self.lfs_threshold = lfs_threshold
        self.requests: list[HubRequest] = []
        self.cuts_done = 0
        self.stalls_done = 0
        self._repos: dict[tuple[str, str], _Repo] = {}
        self._cuts: list[str | None] = []
        self._stalls: dict[str | None, tuple[float, bool, int]] = {}
        self._closing = threading.Event()  # wakes stalled answers when the server closes
        self._lock = threading.Lock()
        self._host = host
        self._hub = _Origin(self, "hub", host)
        self._lfs = _Origin(self, "lfs", host)

    # -- life cycle -------------------------------------------------------------------------------------------
    def start(self) -> HubServer:
        self._closing.clear()
        self._hub.start()
        self._lfs.start()
        return self

    def close(self) -> None:
        self._closing.set()
        self._hub.close()
        self._lfs.close()

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:PORT``: the Hub's origin, for ``HF_ENDPOINT``."""
        return self._hub.url

    @property
    def lfs_endpoint(self) -> str:
        """The LFS origin (another port) that ``302`` redirects point to."""
        return self._lfs.url

    def environ(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """A copy of ``base`` (default ``os.environ``) for a process that downloads from this server:
        ``HF_ENDPOINT`` set to it, and the offline switches (:data:`OFFLINE_VARS`; huggingface_hub also
        reads ``TRANSFORMERS_OFFLINE`` as one) removed, since CI runs with the Hub offline."""
        env = dict(os.environ if base is None else base)
        for var in OFFLINE_VARS:
            env.pop(var, None)
        env["HF_ENDPOINT"] = self.endpoint
        return env

    def shell(self, folder: str | Path) -> Any:
        """A runner of ``harness ...`` in a subprocess, as a user's shell runs it behind this Hub: an empty
        data folder ``folder/data`` (the runner's ``.data``), a session of its own (cache, no keys),
        ``HF_HOME`` in ``folder/hf``, downloads on, no token, no mirror; returns ``CompletedProcess``.
        ``run(*args, env_extra={...})`` adds settings for one command."""
        import subprocess
        import sys


        folder = Path(folder)
        data = folder / "data"
        data.mkdir()
        with isolated_environment(folder / "cache"):
            env = dict(self.environ(), HF_HOME=str(folder / "hf"), HARNESS_DATA=str(data),
                       HARNESS_AUTO_DOWNLOAD="1", HARNESS_PROGRESS="0")
        for var in ("HF_TOKEN", "HARNESS_DATA_URL", "HARNESS_PLUGINS"):
            env.pop(var, None)

        def run(*args: str, env_extra: Mapping[str, str] | None = None) -> subprocess.CompletedProcess:
            return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                                  env={**env, **(env_extra or {})}, cwd=folder, timeout=600)

        run.data = data  # type: ignore[attr-defined]
        return run

    def online(self, monkeypatch: Any) -> None:
        """For downloads in this process (pytest's ``monkeypatch`` undoes it after the test): ``HF_ENDPOINT``
        set to this server and offline mode off, in the environment and in huggingface_hub's settings,
        which it reads once at import."""
        for var in OFFLINE_VARS:
            monkeypatch.delenv(var, raising=False)
        monkeypatch.setenv("HF_ENDPOINT", self.endpoint)
        try:
            from huggingface_hub import constants
        except ImportError:  # no client: nothing read the setting
            return
        if getattr(constants, "HF_HUB_OFFLINE", False):
            monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)

    def downloading(self, monkeypatch: Any, hf_home: str | Path) -> None:
        """:meth:`online`, and a first download as a new user's: huggingface_hub's cache at ``hf_home``, no
        token, automatic download of a task's files on, progress off."""
        self.online(monkeypatch)
        monkeypatch.setenv("HF_HOME", str(hf_home))
        monkeypatch.setenv("HARNESS_AUTO_DOWNLOAD", "1")
        monkeypatch.setenv("HARNESS_PROGRESS", "0")
        monkeypatch.delenv("HF_TOKEN", raising=False)

    # -- content ----------------------------------------------------------------------------------------------
    def add_repo(self, repo_id: str, files: Mapping[str, bytes | str | Path], *, repo_type: str = "dataset",
                 commit: str | None = None, branch: str | None = "main", gated: bool = False,
                 token: str | None = None, lfs: Iterable[str] = ()) -> str:
        """Add a commit holding ``files`` (path in the repository -> ``bytes``, ``str`` (UTF-8) or a
        ``Path`` read from disk when served) to the repository ``repo_id`` (created when new) and
        return the commit id: ``commit`` (a full 40-hex id) or one derived from the content. ``branch``
        (default ``main``) is moved to it (None: reachable by its id only). ``gated``: requests need
        ``Authorization: Bearer <token>``. ``lfs``: paths served through the LFS redirect whatever
        their size."""
        if repo_type not in ("dataset", "model", "space"):
            raise ValueError(f"repo_type must be dataset, model or space, not {repo_type!r}")
        if gated and not token:
            raise ValueError("a gated repository needs the token it accepts")
        if commit is not None and not FULL_COMMIT.match(commit):
            raise ValueError(f"commit must be a full 40-hex id, not {commit!r}")
        forced = set(lfs)
        table: dict[str, _File] = {}
        for path, content in files.items():
            source = content.encode("utf-8") if isinstance(content, str) else content
            if isinstance(source, Path) and not source.is_file():
                raise ValueError(f"{source} is not a file")
            size, sha, blob = _digests(source)
            table[path.strip("/")] = _File(path.strip("/"), source, size, sha, blob,
                                           path in forced or size >= self.lfs_threshold)
        if commit is None:
            h = hashlib.sha1(f"{repo_type}/{repo_id}".encode())
            for path in sorted(table):
                h.update(f"\0{path}\0{table[path].sha256}".encode())
            commit = h.hexdigest()
        with self._lock:
            repo = self._repos.setdefault((repo_type, repo_id), _Repo(repo_type, repo_id))
            repo.commits[commit] = table
            if branch:
                repo.branches[branch] = commit
            if gated:
                repo.token = token
        return commit

    def add_folder(self, repo_id: str, folder: str | Path, **options: Any) -> str:
        """:meth:`add_repo` with every file under ``folder`` (served from disk, paths relative to it)."""
        root = Path(folder)
        files = {p.relative_to(root).as_posix(): p for p in sorted(root.rglob("*")) if p.is_file()}
        return self.add_repo(repo_id, files, **options)

    def file_url(self, repo_id: str, path: str, revision: str = "main", repo_type: str = "dataset") -> str:
        """The ``resolve`` URL of a file under :attr:`endpoint`."""
        return self.endpoint + _resolve_path(repo_id, path, revision, repo_type)

    @staticmethod
    def canonical_url(repo_id: str, path: str, revision: str, repo_type: str = "dataset") -> str:
        """The file's URL on the real Hub (``https://huggingface.co/...``), as a task pins it; with
        ``HF_ENDPOINT`` set to :attr:`endpoint` the client fetches it from this server."""
        return "https://huggingface.co" + _resolve_path(repo_id, path, revision, repo_type)

    # -- faults and counters ----------------------------------------------------------------------------------
    def cut_once(self, path: str | None = None) -> None:
        """Cut the next transfer of ``path`` (a path in a repository; None: of any file) after half of
        the bytes it announced, once (each call arms one more cut)."""
        with self._lock:
            self._cuts.append(path)

    def stall(self, path: str | None = None, *, seconds: float = 100.0, headers: bool = True, after: int = 0) -> None:
        """Make every later request for the file ``path`` (a path in a repository; None: any file) stall:
        with ``headers``, a GET gets its status line and headers (the whole ``Content-Length`` announced),
        the first ``after`` bytes of its body, and then nothing; without, a HEAD or GET gets nothing at all.
        After ``seconds`` (or when the server closes) the connection is closed, so the server side ends by
        itself; :attr:`stalls_done` counts them, and each such request is recorded with ``stalled=True``."""
        with self._lock:
            self._stalls[path] = (seconds, headers, after)

    def _stall_for(self, path: str) -> tuple[float, bool, int] | None:
        with self._lock:
            return self._stalls.get(path, self._stalls.get(None))

    def _stalled(self, seconds: float) -> None:
        with self._lock:
            self.stalls_done += 1
        self._closing.wait(seconds)

    def _take_cut(self, path: str) -> bool:
        with self._lock:
            for i, wanted in enumerate(self._cuts):
                if wanted is None or wanted == path:
                    del self._cuts[i]
                    self.cuts_done += 1
                    return True
        return False

    def file_requests(self, path: str, method: str | None = None) -> list[HubRequest]:
        """The requests for the file ``path`` (on either origin; ``method``: only GET or HEAD)."""
        with self._lock:
            return [r for r in self.requests if r.file == path and (method is None or r.method == method)]

    def range_requests(self, path: str | None = None) -> list[HubRequest]:
        """The GET requests that carried a ``Range`` header (for ``path`` when given)."""
        with self._lock:
            return [r for r in self.requests
                    if r.method == "GET" and r.range and (path is None or r.file == path)]

    def reset_counters(self) -> None:
        with self._lock:
            self.requests.clear()

    def _record(self, req: HubRequest) -> None:
        with self._lock:
            self.requests.append(req)

    # -- lookups used by the handlers -------------------------------------------------------------------------
    def _repo(self, repo_type: str, repo_id: str) -> _Repo | None:
        with self._lock:
            return self._repos.get((repo_type, repo_id))

    def _lfs_file(self, sha: str) -> _File | None:
        with self._lock:
            for repo in self._repos.values():
                for table in repo.commits.values():
                    for f in table.values():
                        if f.lfs and f.sha256 == sha:
                            return f
        return None


class _Origin:
    """One listening origin (the Hub or the LFS store) in its own thread."""

    def __init__(self, hub: HubServer, role: str, host: str) -> None:
        self.hub, self.role, self.host = hub, role, host
        self.httpd: ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None

    def start(self) -> None:
        handler = type("Handler", (_Handler,), {"hub": self.hub, "role": self.role})
        self.httpd = ThreadingHTTPServer((self.host, 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True, name=f"hub-{self.role}")
        self.thread.start()

    @property
    def url(self) -> str:
        if self.httpd is None:
            raise RuntimeError("the HubServer is not started (use it as a context manager or call start())")
        return f"http://{self.host}:{self.httpd.server_address[1]}"

    def close(self) -> None:
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            if self.thread is not None:
                self.thread.join(5)
            self.httpd = None


def _resolve_path(repo_id: str, path: str, revision: str, repo_type: str) -> str:
    prefix = "" if repo_type == "model" else f"{repo_type}s/"
    return f"/{prefix}{repo_id}/resolve/{revision}/{path}"


_RESOLVE = re.compile(r"^/(?:(datasets|spaces|models)/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")
_API = re.compile(r"^/api/(datasets|spaces|models)/([^/]+/[^/]+)(?:/(revision|tree)/([^/]+)(?:/(.*))?)?$")
_LFS = re.compile(r"^/lfs/([0-9a-f]{64})$")


class _Handler(BaseHTTPRequestHandler):
    hub: HubServer
    role: str
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    # -- dispatch -----------------------------------------------------------------------------------------------
    def do_HEAD(self) -> None:
        self._dispatch(body=False)

    def do_GET(self) -> None:
        self._dispatch(body=True)

    def _dispatch(self, body: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        self.rec = HubRequest(self.role, self.command, path, self.headers.get("Range"),
                              authorized=bool(self.headers.get("Authorization")))
        # recorded before the answer is written (its status is set before its first byte), so a client
        # that has read the answer always finds its request here
        self.hub._record(self.rec)
        try:
            if self.role == "lfs":
                m = _LFS.match(path)
                f = self.hub._lfs_file(m.group(1)) if m else None
                if f is None:
                    self._error(404, "EntryNotFound", "Entry not found")
                elif not self._stall(f.path, headers_sent=False):
                    self.rec.file = f.path
                    self._send_file(f, body, {})
            elif m := _RESOLVE.match(path):
                self._resolve(_TYPES[m.group(1) or "models"], m.group(2), m.group(3), m.group(4), body)
            elif path == "/api/agent-harnesses":  # the client's agent registry (huggingface_hub >= 2)
                self._json({"standardEnvVars": [], "harnesses": {}}, body, None)
            elif m := _API.match(path):
                self._api(_TYPES[m.group(1)], m.group(2), m.group(3), m.group(4), m.group(5) or "", body)
            else:
                self._error(404, None, "Not found")
        except Exception:
            if not self.rec.status:
                self.rec.status = 500
            raise

    # -- answers ------------------------------------------------------------------------------------------------
    def _stall(self, path: str, headers_sent: bool, body: tuple[_File, int, int] | None = None) -> bool:
        """Stall this answer when :meth:`HubServer.stall` asked for it at this point (before the headers, or
        after them and the first bytes of ``body``: the file, and the range ``start`` to ``end`` it was
        answering): wait, then close the connection. True when it stalled."""
        mode = self.hub._stall_for(path)
        if mode is None or mode[1] != headers_sent:
            return False
        self.rec.file, self.rec.stalled = path, True
        if body is not None and mode[2]:
            f, start, end = body
            for chunk in f.read(start, min(end, start + mode[2])):
                self.wfile.write(chunk)
        self.wfile.flush()
        self.hub._stalled(mode[0])
        self.close_connection = True
        return True

    def _error(self, status: int, code: str | None, message: str) -> None:
        data = json.dumps({"error": message}).encode()
        self.rec.status = status
        self.send_response(status)
        if code:
            self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _json(self, value: Any, body: bool, commit: str | None) -> None:
        data = json.dumps(value).encode()
        self.rec.status = 200
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        if commit:
            self.send_header("X-Repo-Commit", commit)
        self.end_headers()
        if body:
            self.wfile.write(data)

    def _lookup(self, repo_type: str, repo_id: str, revision: str) -> tuple[_Repo, str] | None:
        """The repository and resolved commit, or None after sending the Hub's error."""
        repo = self.hub._repo(repo_type, repo_id)
        kind = "dataset" if repo_type == "dataset" else repo_type
        if repo is None:
            self._error(404, "RepoNotFound", f"Repository not found: {kind} {repo_id}")
            return None
        if repo.token is not None:
            auth = self.headers.get("Authorization") or ""
            if not auth:
                self._error(401, "GatedRepo", f"Access to {kind} {repo_id} is restricted. You must have access "
                                              "to it and be authenticated to access it. Please log in.")
                return None
            if auth != f"Bearer {repo.token}":
                self._error(403, "GatedRepo", f"Access to {kind} {repo_id} is restricted and you are not in "
                                              "the authorized list.")
                return None
        commit = repo.resolve(revision)
        if commit is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
            return None
        return repo, commit

    def _resolve(self, repo_type: str, repo_id: str, revision: str, path: str, body: bool) -> None:
        self.rec.file = path  # the file asked for, whatever the answer
        if self._stall(path, headers_sent=False):
            return
        found = self._lookup(repo_type, repo_id, revision)
        if found is None:
            return
        repo, commit = found
        f = repo.commits[commit].get(path)
        if f is None:
            self._error(404, "EntryNotFound", f"{path} does not exist on \"{revision}\"")
            return
        headers = {"X-Repo-Commit": commit}
        if f.lfs:
            self.rec.status = 302
            self.send_response(302)
            self.send_header("Location", f"{self.hub.lfs_endpoint}/lfs/{f.sha256}")
            self.send_header("X-Repo-Commit", commit)
            self.send_header("X-Linked-Size", str(f.size))
            self.send_header("X-Linked-Etag", f'"{f.sha256}"')
            self.send_header("ETag", f'"{f.blob_id}"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        headers["ETag"] = f'"{f.blob_id}"'
        self._send_file(f, body, headers)

    def _send_file(self, f: _File, body: bool, headers: dict[str, str]) -> None:
        start, end, status = 0, f.size, 200
        rng = self.headers.get("Range")
        if rng:
            m = re.fullmatch(r"bytes=(\d+)-(\d*)", rng.strip())
            if m:
                start = int(m.group(1))
                end = min(int(m.group(2)) + 1, f.size) if m.group(2) else f.size
                if start >= f.size or start >= end:
                    self.rec.status = 416
                    self.send_response(416)
                    self.send_header("Content-Range", f"bytes */{f.size}")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                status = 206
        self.rec.status = status
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        if self.role == "lfs":
            self.send_header("ETag", f'"{f.sha256}"')
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{f.size}")
        self.end_headers()
        if not body or self._stall(f.path, headers_sent=True, body=(f, start, end)):
            return
        limit = end
        cut = self.hub._take_cut(f.path)
        if cut:
            limit = start + (end - start) // 2
            self.close_connection = True
        for chunk in f.read(start, limit):
            self.wfile.write(chunk)
        self.wfile.flush()

    def _api(self, repo_type: str, repo_id: str, route: str | None, revision: str | None, path: str,
             body: bool) -> None:
        found = self._lookup(repo_type, repo_id, revision or "main")
        if found is None:
            return
        repo, commit = found
        table = repo.commits[commit]
        query = parse_qs(urlsplit(self.path).query)
        if route == "tree":
            entries = _tree(table, path.strip("/"), query.get("recursive", ["false"])[0] == "true")
            if path.strip("/") and not entries:
                self._error(404, "EntryNotFound", f"{path} does not exist on \"{revision}\"")
            else:
                self._json(entries, body, commit)
            return
        blobs = query.get("blobs", ["false"])[0] == "true"
        siblings = [_sibling(f, blobs) for _, f in sorted(table.items())]
        info = {"id": repo_id, "sha": commit, "private": False, "gated": "auto" if repo.token else False,
                "disabled": False, "siblings": siblings, "tags": [], "cardData": {}}
        self._json(info, body, commit)


def _sibling(f: _File, blobs: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"rfilename": f.path}
    if blobs:
        out.update(size=f.size, blobId=f.blob_id)
        if f.lfs:
            out["lfs"] = {"sha256": f.sha256, "size": f.size, "pointerSize": 134}
    return out


def _tree(table: Mapping[str, _File], folder: str, recursive: bool) -> list[dict[str, Any]]:
    """The entries under ``folder`` ('' is the root): files and (implied) directories."""
    prefix = folder + "/" if folder else ""
    out: list[dict[str, Any]] = []
    dirs: set[str] = set()
    for path in sorted(table):
        if not path.startswith(prefix):
            continue
        rest = path[len(prefix):]
        parts = rest.split("/")
        for i in range(1, len(parts)):
            d = prefix + "/".join(parts[:i])
            if (recursive or i == 1) and d not in dirs:
                dirs.add(d)
                out.append({"type": "directory", "oid": hashlib.sha1(d.encode()).hexdigest(), "size": 0,
                            "path": d})
        if recursive or len(parts) == 1:
            f = table[path]
            entry: dict[str, Any] = {"type": "file", "oid": f.blob_id, "size": f.size, "path": path}
            if f.lfs:
                entry["lfs"] = {"oid": f.sha256, "size": f.size, "pointerSize": 134}
            out.append(entry)
    return out


def parquet_bytes(rows: list[dict[str, Any]]) -> bytes:
    """The bytes of a Parquet file holding ``rows`` (one table, columns from the records), as
    ``push_to_hub`` writes a shard: content for :meth:`HubServer.add_repo`. Needs pyarrow (extra ``parquet``)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows), buf)
    return buf.getvalue()
