"""Files hosted on the Hugging Face Hub, fetched with the Hub's own client (``huggingface_hub``).

A task file whose URL has the canonical Hub form
``https://huggingface.co/datasets/{owner}/{name}/resolve/{revision}/{path}`` (or
``https://huggingface.co/{owner}/{name}/resolve/...`` for a model repository) is fetched with
``huggingface_hub.hf_hub_download``: ``HF_ENDPOINT`` (a mirror), ``HF_TOKEN`` or ``hf auth login``
(gated repositories), the LFS redirect to the CDN and the client's retries all apply, and the
revision travels in the request. The file is downloaded into a staging folder inside the data folder
(``local_dir``, so the same file system), checked (size, sha256 where the task gives them) and
renamed to its data-folder path: never a second copy. ``huggingface_hub`` is imported here only,
when a Hub file is fetched.

Timeouts are the client's own settings: ``HF_HUB_DOWNLOAD_TIMEOUT`` (seconds without a byte of a transfer
or an API answer) and ``HF_HUB_ETAG_TIMEOUT`` (the file's metadata request), 10 s each by default, checked
here (whole seconds, 1 to 86,400) before the client reads them. The client resumes a stalled transfer
itself a few times; after that, a timeout is one message naming the file and the setting (never restarted
again here: the wait stays bounded by a few times the timeout).
"""

from __future__ import annotations

import inspect
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from harness.concepts.errors import DataError
from harness.concepts.task import DataFile
from harness.data.pins import FULL_COMMIT
from harness.formats.files import sha256_file
from harness.runtime.numbers import MAX_SECONDS, whole_number
from harness.runtime.progress import ProgressSettings
from harness.runtime.progress import progress as _progress

HUB_HOST = "huggingface.co"
HUB_URL = re.compile(r"^https://huggingface\.co/(?:(datasets|spaces)/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")
TOKEN_VARS = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
STAGING_PREFIX = ".hub-download-"
ATTEMPTS = 3  # huggingface_hub retries a broken transfer itself; this restarts one it gave up on
TIMEOUT_VARS = ("HF_HUB_DOWNLOAD_TIMEOUT", "HF_HUB_ETAG_TIMEOUT")  # huggingface_hub's own timeout settings


@dataclass(frozen=True)
class HubFile:
    """Where a Hub file lives: ``repo_type`` (``dataset``, ``model`` or ``space``), ``repo_id``,
    ``revision`` (as pinned) and ``path`` in the repository."""

    repo_type: str
    repo_id: str
    revision: str
    path: str

    @property
    def label(self) -> str:
        """``dataset castorini/rank_llm_data@<revision>: <path>``, for messages."""
        return f"{self.repo_type} {self.repo_id}@{self.revision}: {self.path}"


def parse_hub_url(url: str) -> HubFile | None:
    """The Hub file a canonical ``https://huggingface.co/.../resolve/{revision}/{path}`` URL names,
    else None (any other URL is fetched by the plain downloader)."""
    m = HUB_URL.match(url or "")
    if not m:
        return None
    kind = {"datasets": "dataset", "spaces": "space"}.get(m.group(1) or "", "model")
    return HubFile(kind, m.group(2), unquote(m.group(3)), unquote(m.group(4)))


def endpoint() -> str:
    """The Hub endpoint in use: ``$HF_ENDPOINT`` (a mirror), else ``https://huggingface.co``."""
    return (os.environ.get("HF_ENDPOINT") or f"https://{HUB_HOST}").rstrip("/")


def scrub(text: str) -> str:
    """``text`` with any token value of the environment replaced by ``***`` (a message never carries one)."""
    for var in TOKEN_VARS:
        value = os.environ.get(var, "").strip()
        if len(value) >= 4:
            text = text.replace(value, "***")
    return text


def check_hub_timeouts() -> None:
    """``HF_HUB_DOWNLOAD_TIMEOUT`` and ``HF_HUB_ETAG_TIMEOUT``, when set, are whole seconds from 1 to 86,400;
    else one :class:`DataError` (huggingface_hub reads them with ``int()`` when it is imported, and takes 0
    for its default). Call before importing the client."""
    for var in TIMEOUT_VARS:
        raw = os.environ.get(var)
        if raw is not None and raw.strip():
            try:
                whole_number(raw, var, low=1, high=int(MAX_SECONDS))
            except ValueError as exc:
                raise DataError(f"{exc} (huggingface_hub's timeout in seconds)") from None


def timed_out(exc: BaseException) -> bool:
    """True when ``exc``, or an exception it was raised from, is a timeout (the client's, or a socket's)."""
    seen = 0
    cur: BaseException | None = exc
    while cur is not None and seen < 16:
        if isinstance(cur, TimeoutError) or any(c.__name__ == "TimeoutException" for c in type(cur).__mro__):
            return True
        cur, seen = cur.__cause__ or cur.__context__, seen + 1
    return False


def _timeout_reason(exc: BaseException, metadata: bool) -> str:
    """What timed out (``metadata``: the file's metadata request), with the setting that bounds it."""
    from huggingface_hub import constants
    from huggingface_hub.errors import LocalEntryNotFoundError

    if metadata or isinstance(exc, LocalEntryNotFoundError):  # LocalEntryNotFound: the client gave up on it
        return (f"the Hub sent no answer to the file's metadata request for {constants.HF_HUB_ETAG_TIMEOUT} s "
                "(HF_HUB_ETAG_TIMEOUT)")
    return f"no bytes arrived for {constants.HF_HUB_DOWNLOAD_TIMEOUT} s (HF_HUB_DOWNLOAD_TIMEOUT)"


def _error(hub: HubFile, exc: BaseException, metadata: bool = False) -> DataError:
    """One message for a failed Hub download: repository, revision, file, and what went wrong
    (``metadata``: the failure was the file's metadata request)."""
    from huggingface_hub.errors import (
        EntryNotFoundError,
        GatedRepoError,
        HfHubHTTPError,
        LocalEntryNotFoundError,
        OfflineModeIsEnabled,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    where = f"{hub.repo_type} repository {hub.repo_id}, revision {hub.revision}, file {hub.path} (from {endpoint()})"
    if isinstance(exc, GatedRepoError):
        why = ("the repository is gated: accept its conditions on the Hub, then set HF_TOKEN to a token of that "
               "account or run `hf auth login`" + (" (the token given was refused)" if _token_set() else ""))
    elif isinstance(exc, RepositoryNotFoundError):
        why = ("the repository does not exist there, or it is private (then set HF_TOKEN or run `hf auth login`)")
    elif isinstance(exc, RevisionNotFoundError):
        why = ("the revision is unknown to the Hub; a commit must be its full 40-hex id (the Hub does not resolve "
               "abbreviated ids) or a branch name")
    elif isinstance(exc, EntryNotFoundError) and not isinstance(exc, LocalEntryNotFoundError):
        why = "the file is missing at that revision"
    elif isinstance(exc, OfflineModeIsEnabled) or os.environ.get("HF_HUB_OFFLINE", "").strip() in ("1", "true"):
        why = "HF_HUB_OFFLINE is set: downloads are off"
    elif isinstance(exc, HfHubHTTPError):
        status = getattr(getattr(exc, "response", None), "status_code", "?")
        why = f"the Hub answered HTTP {status}"
    elif timed_out(exc):
        why = (f"{_timeout_reason(exc, metadata)}; run the command again (it starts the file over), or raise the "
               "setting for a slow connection")
    else:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        why = f"the transfer failed ({reason}); run the command again"
    return DataError(scrub(f"cannot download from the Hugging Face Hub: {where}: {why}"))


def _transient(exc: BaseException) -> bool:
    """A transfer that broke (connection, timeout, a short body), not an answer of the Hub."""
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled

    if isinstance(exc, (HfHubHTTPError, LocalEntryNotFoundError, OfflineModeIsEnabled, PermissionError)):
        return False
    return isinstance(exc, OSError) or type(exc).__module__.split(".")[0] in ("httpx", "httpx2", "httpcore", "h11")


def _token_set() -> bool:
    return any(os.environ.get(v, "").strip() for v in TOKEN_VARS)


def is_missing(exc: BaseException) -> bool:
    """True for the Hub's ``EntryNotFound`` (the file does not exist at that revision)."""
    from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError

    return isinstance(exc, EntryNotFoundError) and not isinstance(exc, LocalEntryNotFoundError)


class MissingUpstream(DataError):
    """The Hub has no such file at that revision (``EntryNotFound``): for an optional file, not an error."""


def _ask_metadata(hub: HubFile) -> None:
    """Ask the Hub for the file's metadata once, within ``HF_HUB_ETAG_TIMEOUT``: a timeout, or an answer that
    the file, revision or repository is unknown or gated, is one error now. (``hf_hub_download`` asks
    again; when its own request times out it retries with a fixed 60 s timeout, five times, whatever the
    setting, so a Hub that never answers would hold a download for minutes.) Other failures are left to
    ``hf_hub_download``'s own handling."""
    from huggingface_hub import constants, get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import HfHubHTTPError

    url = hf_hub_url(hub.repo_id, hub.path, repo_type=hub.repo_type, revision=hub.revision, endpoint=endpoint())
    try:
        get_hf_file_metadata(url, timeout=constants.HF_HUB_ETAG_TIMEOUT, endpoint=endpoint())
    except Exception as exc:  # the client's errors, its transport errors
        if is_missing(exc):
            raise MissingUpstream(scrub(f"{hub.label} is not on the Hub ({endpoint()}): the file is missing at "
                                        "that revision")) from None
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if timed_out(exc) or (isinstance(exc, HfHubHTTPError) and isinstance(status, int) and 400 <= status < 500):
            raise _error(hub, exc, metadata=True) from None


def download_hub_file(f: DataFile, hub: HubFile, target: Path, progress: ProgressSettings | None = None) -> Path:
    """Fetch ``hub`` with ``huggingface_hub`` into ``target`` (``root / f.path``), check its size and
    sha256 (those ``f`` gives) and return ``target``. Errors are one :class:`DataError`
    (:class:`MissingUpstream` for a file absent at the revision)."""
    check_hub_timeouts()
    from huggingface_hub import hf_hub_download

    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=STAGING_PREFIX, dir=target.parent))
    options: dict[str, Any] = {}
    if "tqdm_class" in inspect.signature(hf_hub_download).parameters:
        options["tqdm_class"] = _bar_factory(f.path, progress)
    try:
        _ask_metadata(hub)
        for attempt in range(1, ATTEMPTS + 1):
            try:
                got = Path(hf_hub_download(hub.repo_id, hub.path, repo_type=hub.repo_type, revision=hub.revision,
                                           local_dir=staging, endpoint=endpoint(), **options))
                break
            except Exception as exc:  # the client's errors, its transport errors: one message
                if is_missing(exc):
                    raise MissingUpstream(scrub(f"{hub.label} is not on the Hub ({endpoint()}): the file is "
                                                "missing at that revision")) from None
                if attempt == ATTEMPTS or not _transient(exc) or timed_out(exc):  # the client retried a timeout
                    raise _error(hub, exc) from None
                reason = scrub(str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
                print(f"[harness] {f.path}: the transfer failed ({reason}); starting it again ({attempt + 1}/"
                      f"{ATTEMPTS})", file=sys.stderr, flush=True)
        _check(got, f, hub)
        os.replace(got, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _check(path: Path, f: DataFile, hub: HubFile) -> None:
    """The downloaded file has ``f``'s size and sha256 (those given), else a DataError naming both."""
    size = path.stat().st_size
    if f.size is not None and size != f.size:
        raise DataError(f"size mismatch for {f.path} downloaded from {hub.label}: expected {f.size} bytes, got "
                        f"{size}; the Hub (or the mirror in HF_ENDPOINT) serves other content than the task expects")
    if f.sha256:
        actual = sha256_file(path)
        if actual != f.sha256.lower():
            raise DataError(f"checksum mismatch for {f.path} downloaded from {hub.label}: expected sha256 "
                            f"{f.sha256.lower()}, actual {actual} ({size} bytes); the Hub (or the mirror in "
                            "HF_ENDPOINT) serves other content than the task expects")


def _bar_factory(label: str, settings: ProgressSettings | None) -> Any:
    """A ``tqdm_class`` for ``huggingface_hub``: harness's own progress (bar, lines or nothing)."""

    def make(*_args: Any, total: int | None = None, initial: int = 0, **_kwargs: Any) -> Any:
        return _progress(total, label, settings=settings, unit="B", unit_scale=True, initial=initial,
                         stream=sys.stderr)

    return make


def resolve_hub_revision(repo_id: str, revision: str = "main", repo_type: str = "dataset") -> str:
    """The full 40-hex commit id that ``revision`` (a branch or tag) of a Hub repository names now,
    asked of the Hub in use (``HF_ENDPOINT``, ``HF_TOKEN``). For a repository no commit of which could be
    pinned: resolve once, download that exact commit, record it. Errors are one :class:`DataError`
    naming the repository and revision."""
    if FULL_COMMIT.match(revision or ""):
        return revision
    check_hub_timeouts()
    from huggingface_hub import HfApi, constants

    hub = HubFile(repo_type, repo_id, revision, "(repository info)")
    try:  # the client sets no timeout of its own on API calls: HF_HUB_DOWNLOAD_TIMEOUT bounds this one
        info = HfApi(endpoint=endpoint()).repo_info(repo_id, repo_type=repo_type, revision=revision,
                                                     timeout=constants.HF_HUB_DOWNLOAD_TIMEOUT)
    except Exception as exc:  # the client's errors, its transport errors: one message
        raise _error(hub, exc) from None
    sha = getattr(info, "sha", None) or ""
    if not FULL_COMMIT.match(sha):
        raise DataError(scrub(f"cannot resolve {hub.label}: the Hub ({endpoint()}) answered no full commit id "
                              f"({sha!r})"))
    return sha


__all__ = ["HubFile", "MissingUpstream", "check_hub_timeouts", "download_hub_file", "endpoint", "parse_hub_url",
           "resolve_hub_revision", "scrub", "timed_out"]
