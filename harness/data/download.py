"""Fetching a task's data files into the data folder.

Files on the Hugging Face Hub (a canonical ``https://huggingface.co/.../resolve/{commit}/{path}``
URL) are fetched with ``huggingface_hub`` (:mod:`harness.data.hub`: ``HF_ENDPOINT``, ``HF_TOKEN``);
every other file, and every file when a mirror is given, with the standard library's ``urllib``.

A ``urllib`` download goes to ``<file>.part``; an interrupted transfer leaves the ``.part`` and the
next attempt resumes it with an HTTP ``Range`` request (or starts over when the server ignores
the range). The sha256 is checked before the file is renamed into place, so a final file always
has the expected content. A transfer that sends no byte for ``$HARNESS_DOWNLOAD_TIMEOUT`` seconds
(default 60; connecting and waiting for the answer count too) is resumed the same way, up to
:data:`ATTEMPTS` times in all, then one message names the file, the URL and the timeout; a Hub file has
the client's own timeouts instead (``HF_HUB_DOWNLOAD_TIMEOUT``, :mod:`harness.data.hub`).

A mirror (``base_url``, or the data folder's ``mirror`` from ``$HARNESS_DATA_URL``) replaces each file's
source URL by ``base_url + "/" + path``: that is how a mirror, or a local test server, serves the files.
"""

from __future__ import annotations

import hashlib
import os
import sys
import urllib.error
import urllib.request
from collections.abc import Iterable
from dataclasses import replace
from http.client import HTTPException
from pathlib import Path
from typing import Any

from harness.concepts.errors import DataError
from harness.concepts.task import DataFile, Task
from harness.data.folder import ENV_AUTO_DOWNLOAD, ENV_DATA_URL, POINT_ELSEWHERE, DataFolder
from harness.data.hub import (
    HubFile,
    MissingUpstream,
    check_hub_timeouts,
    download_hub_file,
    parse_hub_url,
    resolve_hub_revision,
)
from harness.formats.files import sha256_file
from harness.runtime.about import __version__
from harness.runtime.numbers import MAX_SECONDS, finite_number
from harness.runtime.progress import ProgressSettings
from harness.runtime.progress import progress as _progress

CHUNK = 1 << 16
TIMEOUT_S = 60.0  # the default read timeout of a plain download
ENV_TIMEOUT = "HARNESS_DOWNLOAD_TIMEOUT"
ATTEMPTS = 3  # tries of a plain download that stalls (each resumes the .part)
USER_AGENT = f"harness/{__version__} (data download)"


def source_url(f: DataFile, base_url: str | None, root: Path) -> str:
    """Where ``f`` is fetched from: ``base_url/path`` when a mirror is given, else the task's URL
    (``root``: the data folder, for the message when there is neither)."""
    if base_url:
        return base_url.rstrip("/") + "/" + f.path.lstrip("/")
    if not f.url:
        raise DataError(
            f"no download URL for {f.path}; give a mirror with ${ENV_DATA_URL}=URL (or "
            f"`harness data download TASK --base-url URL`), or put the file in the data folder yourself, "
            f"as {root / f.path}"
        )
    return f.url


def file_ok(path: Path, f: DataFile) -> bool:
    """True when ``path`` exists and matches ``f``'s size and sha256 (those that are given)."""
    if not path.is_file():
        return False
    if f.size is not None and path.stat().st_size != f.size:
        return False
    return not f.sha256 or sha256_file(path) == f.sha256.lower()


def checksum_problem(path: Path, f: DataFile) -> str | None:
    """Why the existing file ``path`` is not ``f`` (``checksum mismatch in PATH: expected sha256 X,
    actual Y (N bytes)``, or a size mismatch when ``f`` gives no sha256), or None when it matches."""
    size = path.stat().st_size
    if f.sha256:
        actual = sha256_file(path)
        if actual != f.sha256.lower():
            expected_size = f", {f.size} bytes" if f.size is not None and f.size != size else ""
            return (f"checksum mismatch in {path}: expected sha256 {f.sha256.lower()}{expected_size}, "
                    f"actual {actual} ({size} bytes)")
    elif f.size is not None and size != f.size:
        return f"size mismatch in {path}: expected {f.size} bytes, found {size}"
    return None


def read_timeout() -> float:
    """Seconds without a byte after which a plain download stalls: ``$HARNESS_DOWNLOAD_TIMEOUT`` (a finite
    number above 0, at most a day), default :data:`TIMEOUT_S`; else one :class:`DataError`."""
    raw = os.environ.get(ENV_TIMEOUT, "").strip()
    if not raw:
        return TIMEOUT_S
    try:
        return finite_number(raw, ENV_TIMEOUT, low=0.0, high=MAX_SECONDS, low_open=True)
    except ValueError as exc:
        raise DataError(str(exc)) from None


class _Stalled(Exception):
    """No byte arrived for the read timeout (while connecting, waiting for the answer or reading it)."""


def _open(url: str, start: int, timeout: float) -> Any:
    headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
    if start:
        headers["Range"] = f"bytes={start}-"
    return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=timeout)


def _http_error(exc: urllib.error.HTTPError, url: str) -> DataError:
    kind = MissingUpstream if exc.code == 404 else DataError
    return kind(f"download failed: HTTP {exc.code} {exc.reason} for {url}")


def _open_or_fail(url: str, start: int, timeout: float) -> Any:
    """Open ``url`` (from byte ``start``); network failures become :class:`DataError` (a timeout
    :class:`_Stalled`), an HTTP 416 for a ranged request is passed on as :class:`urllib.error.HTTPError`."""
    try:
        return _open(url, start, timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and start:
            raise
        raise _http_error(exc, url) from exc
    except (urllib.error.URLError, OSError, HTTPException) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(exc, TimeoutError) or isinstance(reason, TimeoutError):
            raise _Stalled() from exc
        raise DataError(f"download failed: cannot reach {url} ({reason})") from exc


def _content_range_start(value: str | None) -> int | None:
    # "bytes 100-199/200"
    if not value or not value.startswith("bytes "):
        return None
    try:
        return int(value[6:].split("-", 1)[0])
    except ValueError:
        return None


def download_file(f: DataFile, target: Path, url: str, progress: ProgressSettings | None = None,
                  timeout: float | None = None) -> Path:
    """Fetch one file to ``target`` through ``target.part`` (resuming it), verify, rename. A transfer with
    no byte for ``timeout`` seconds (default :func:`read_timeout`) is resumed, :data:`ATTEMPTS` tries in
    all, then one :class:`DataError` names the file, the URL and the timeout."""
    seconds = read_timeout() if timeout is None else timeout
    part = target.with_name(target.name + ".part")
    target.parent.mkdir(parents=True, exist_ok=True)
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return _attempt(f, target, part, url, progress, seconds)
        except _Stalled:
            kept = part.stat().st_size if part.is_file() else 0
            if attempt == ATTEMPTS:
                raise DataError(
                    f"download of {f.path} from {url} stalled: no bytes for {seconds:g} s (${ENV_TIMEOUT}) in "
                    f"{ATTEMPTS} tries; {kept} bytes kept in {part}: run the download again to resume, or raise "
                    f"${ENV_TIMEOUT} for a slow connection") from None
            print(f"[harness] {f.path}: no bytes for {seconds:g} s; resuming from byte {kept} ({attempt + 1}/"
                  f"{ATTEMPTS})", file=sys.stderr, flush=True)
    raise AssertionError("unreachable")  # pragma: no cover


def _attempt(f: DataFile, target: Path, part: Path, url: str, progress: ProgressSettings | None,
             timeout: float) -> Path:
    """One try of :func:`download_file`, from where ``part`` ends."""
    start = part.stat().st_size if part.is_file() else 0
    if f.size is not None and start > f.size:
        part.unlink()
        start = 0
    resp, start = _open_resumed(url, start, timeout)
    digest = hashlib.sha256()
    if resp is not None:
        _receive(resp, part, start, f, url, digest, progress)
    else:
        _hash_file(part, digest)
    return _finalize(part, target, f, url, digest.hexdigest(), resumed=start > 0)


def _open_resumed(url: str, start: int, timeout: float) -> tuple[Any | None, int]:
    """Open ``url`` from byte ``start`` and say where the body really starts: 0 when the server sends the
    whole file; no response when the range lies past the end (the ``.part`` may already be complete)."""
    try:
        resp = _open_or_fail(url, start, timeout)
    except urllib.error.HTTPError as exc:
        if exc.code != 416 or not start:
            raise _http_error(exc, url) from exc
        return None, start
    if not start:
        return resp, start
    status = getattr(resp, "status", 200)
    if status == 206 and _content_range_start(resp.headers.get("Content-Range")) != start:
        resp.close()  # a range other than the one asked for: fetch the whole file instead
        return _open_or_fail(url, 0, timeout), 0
    if status != 206:
        return resp, 0  # the server ignored the range and sends the whole file: start over
    return resp, start


def _receive(resp: Any, part: Path, start: int, f: DataFile, url: str, digest: Any,
             progress: ProgressSettings | None) -> None:
    """Append the body of ``resp`` to ``part`` (written afresh when ``start`` is 0), hashing the whole file;
    a body shorter than its Content-Length is an interrupted download."""
    with resp:
        length = resp.headers.get("Content-Length")
        expected = int(length) if length and length.isdigit() else None
        total = start + expected if expected is not None else f.size
        if start:
            _hash_file(part, digest)
        bar = _progress(total, f.path, settings=progress, unit="B", unit_scale=True, initial=start)
        try:
            received = _copy_body(resp, part, start, url, digest, bar)
        finally:
            bar.close()
        if expected is not None and received < expected:
            raise DataError(
                f"download of {url} interrupted: got {start + received} of {start + expected} bytes; "
                f"run the download again to resume from {part}"
            )


def _copy_body(resp: Any, part: Path, start: int, url: str, digest: Any, bar: Any) -> int:
    """Copy the body chunk by chunk into ``part``; return the number of bytes received. A read timeout
    keeps the bytes that arrived before it in ``part`` and raises :class:`_Stalled`."""
    received = 0
    with open(part, "ab" if start else "wb") as out:
        while True:
            try:
                chunk, stalled = _read_chunk(resp)
            except (OSError, HTTPException) as exc:
                raise DataError(
                    f"download of {url} interrupted after {start + received} bytes ({exc}); "
                    f"run the download again to resume from {part}"
                ) from exc
            if chunk:
                out.write(chunk)
                digest.update(chunk)
                received += len(chunk)
                bar.update(len(chunk))
            if stalled:
                raise _Stalled()
            if not chunk:
                break
    return received


def _read_chunk(resp: Any) -> tuple[bytes, bool]:
    """Up to :data:`CHUNK` bytes of the body (fewer at its end), and whether the read timed out after them:
    read as they arrive (``read1``), so a stalled transfer keeps what it got."""
    if not hasattr(resp, "read1"):
        try:
            return resp.read(CHUNK), False
        except TimeoutError:
            return b"", True
    buf = bytearray()
    while len(buf) < CHUNK:
        try:
            piece = resp.read1(CHUNK - len(buf))
        except TimeoutError:
            return bytes(buf), True
        if not piece:
            break
        buf += piece
    return bytes(buf), False


def _hash_file(path: Path, digest: Any) -> None:
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            digest.update(chunk)


def _finalize(part: Path, target: Path, f: DataFile, url: str, actual: str, resumed: bool = False) -> Path:
    size = part.stat().st_size
    again = ("run the download again to fetch it from the start" if resumed else
             "the source (or the mirror) serves other content than the task expects")
    if f.sha256 and actual != f.sha256.lower():
        part.unlink(missing_ok=True)
        raise DataError(
            f"checksum mismatch for {f.path} downloaded from {url}: expected sha256 {f.sha256.lower()}, "
            f"actual {actual} ({size} bytes{', partly resumed from an earlier download' if resumed else ''}); "
            f"{part} was deleted; {again}"
        )
    if f.size is not None and size != f.size:
        part.unlink(missing_ok=True)
        raise DataError(
            f"size mismatch for {f.path} downloaded from {url}: expected {f.size} bytes, got {size}; "
            f"{part} was deleted; {again}"
        )
    os.replace(part, target)
    return target


def download_task_files(
    task: Task,
    dest: str | os.PathLike[str],
    base_url: str | None = None,
    progress: ProgressSettings | None = None,
    files: Iterable[DataFile] | None = None,
) -> list[Path]:
    """Fetch ``task``'s files (or just ``files``) into the folder ``dest``, from ``base_url`` (a
    mirror) when given.

    A file on the Hugging Face Hub is fetched with ``huggingface_hub`` (``HF_ENDPOINT``, ``HF_TOKEN``),
    any other with ``urllib`` from its URL or the mirror, which serves files by their data-folder
    paths (Hub files too, when ``HF_ENDPOINT`` is not set).
    Files already present with the right size and checksum are skipped; a present file with another
    size or checksum is reported on stderr ("checksum mismatch in ..., expected sha256 X, actual Y")
    and fetched again. An ``optional`` file the source does not have (404, ``EntryNotFound``) is
    skipped with one line on stderr. Returns the local paths of the requested files (all the task's
    by default) that are in place, in order.
    """
    root = Path(dest).expanduser()
    quiet = progress is not None and progress.mode == "off"
    wanted = list(files) if files is not None else list(task.files)
    timeout = read_timeout()  # the settings are checked before any transfer
    check_hub_timeouts()
    paths: list[Path] = []
    resolved: dict[tuple[str, str, str], str] = {}  # an unpinned (repo, branch): its commit, asked once
    for f in wanted:
        target = root / f.path
        problem = checksum_problem(target, f) if target.is_file() else None
        if target.is_file() and problem is None:
            paths.append(target)
            continue
        # a Hub file goes through huggingface_hub unless a data-folder mirror is given and HF_ENDPOINT is not
        hub = parse_hub_url(f.url) if not base_url or os.environ.get("HF_ENDPOINT") else None
        if hub is not None and f.unpinned:
            hub = _at_commit(hub, f, resolved, quiet)
        url = source_url(f, base_url, root)
        if problem is not None:
            print(f"{problem}; downloading it again", file=sys.stderr, flush=True)
        if not quiet:
            print(f"downloading {f.path} from {hub.label if hub else url}", file=sys.stderr, flush=True)
        try:
            if hub is not None:
                paths.append(download_hub_file(f, hub, target, progress=progress))
            else:
                paths.append(download_file(f, target, url, progress=progress, timeout=timeout))
        except MissingUpstream as exc:
            if not f.optional:
                raise
            print(f"[harness] {f.path}: not published at its source, skipped (an optional file): {exc}",
                  file=sys.stderr, flush=True)
        except PermissionError as exc:
            raise DataError(
                f"cannot write {target} ({exc.strerror}); choose a writable data folder with --data-dir"
            ) from exc
    return paths


def _at_commit(hub: HubFile, f: DataFile, resolved: dict[tuple[str, str, str], str], quiet: bool) -> HubFile:
    """An unpinned Hub file at the full commit its branch names now (asked once per download, said on
    stderr), so every file of one download comes from one commit."""
    key = (hub.repo_type, hub.repo_id, hub.revision)
    if key not in resolved:
        resolved[key] = resolve_hub_revision(hub.repo_id, hub.revision, hub.repo_type)
        print(f"[harness] {hub.repo_id}: no commit is pinned in this release ({f.unpinned}); {hub.revision} is "
              f"commit {resolved[key]} now: fetching that commit", file=sys.stderr, flush=True)
    return replace(hub, revision=resolved[key])


def missing_task_files(task: Task, root: Path) -> list[DataFile]:
    """The task's files absent from the folder ``root`` (present files are not re-hashed)."""
    return [f for f in task.files if not (root / f.path).exists()]


def ensure_task_files(task: Task, folder: DataFolder, progress: ProgressSettings | None = None) -> list[Path]:
    """Make sure the task's files are in the data folder before first use.

    Missing files are downloaded unless ``$HARNESS_AUTO_DOWNLOAD=0``, in which case the error
    says where it looked and how to point elsewhere or download. A data folder given by
    ``--data-dir`` must exist (it is never created here); another one is created, and said so.
    A present file whose checksum differs from the task's is used as it is, with a warning on stderr.
    Returns the files' paths.
    """
    root = folder.path
    quiet = progress is not None and progress.mode == "off"
    absent = missing_task_files(task, root)
    missing = [f for f in absent if not f.optional]
    fetch = f"`harness data download {task.name}`"
    if missing:
        first = missing[0]
        more = f" and {len(missing) - 1} more of {task.name}'s files" if len(missing) > 1 else ""
        if not folder.auto_download:
            raise DataError(folder.missing_message(
                first.path, root / first.path, note=more,
                remedy=f"Automatic download is off (${ENV_AUTO_DOWNLOAD}=0): fetch the files with {fetch}, "
                       f"or point to a folder that holds them with {POINT_ELSEWHERE}"))
        if not root.is_dir():
            if folder.origin in ("option", "api"):  # a mistyped --data-dir is reported, never created
                raise DataError(f"the data folder {root} ({folder.source}) does not exist; check the path, "
                                f"or create it and fetch {task.name}'s files with `harness data download {task.name} "
                                f"--data-dir {root}`")
            if not quiet:
                print(f"[harness] creating the data folder {root} ({folder.source}) for {task.name}'s files",
                      file=sys.stderr, flush=True)
        try:
            download_task_files(task, root, base_url=folder.mirror, progress=progress, files=missing)
        except DataError as exc:
            raise DataError(
                f"{exc}\n{task.name}: fetching its files into the data folder {root} ({folder.source}) failed; "
                f"run {fetch} to try again (from a mirror: ${ENV_DATA_URL}=URL), or point to a folder that holds "
                f"them with {POINT_ELSEWHERE}") from exc
    optional = [f for f in absent if f.optional]
    if optional and folder.auto_download and root.is_dir():
        try:  # a file the source may not publish: its absence is the loader's business
            download_task_files(task, root, base_url=folder.mirror, progress=progress, files=optional)
        except DataError as exc:
            print(f"[harness] warning: {task.name}: an optional file could not be fetched ({exc}); going on "
                  "without it", file=sys.stderr, flush=True)
    for f in task.files:
        if f not in absent:
            problem = checksum_problem(root / f.path, f) if (root / f.path).is_file() else None
            if problem:
                print(f"[harness] warning: {problem}; using the file as it is ({fetch} fetches the "
                      "published file again)", file=sys.stderr, flush=True)
    return [root / f.path for f in task.files]


def task_file_status(task: Task, root: Path) -> list[dict[str, Any]]:
    """Per file under ``root``: ``path``, ``present``, ``ok`` (size and sha256 match; None when absent), ``url``."""
    base = root
    out = []
    for f in task.files:
        p = base / f.path
        out.append({"path": f.path, "local": str(p), "present": p.is_file(),
                    "ok": file_ok(p, f) if p.is_file() else None, "url": f.url})
    return out


__all__ = [
    "checksum_problem",
    "download_file",
    "download_task_files",
    "ensure_task_files",
    "file_ok",
    "missing_task_files",
    "read_timeout",
    "source_url",
    "task_file_status",
]
