"""Where a local model's weights are, for every component that runs a model in this process (the dense
encoders, the cross-encoder, monoT5, TART, RankLLaMA, the true/false scorers): a folder, a snapshot in the
Hugging Face cache found without network access, or a download; never the network when downloads are off
(``HF_HUB_OFFLINE``, ``TRANSFORMERS_OFFLINE``, ``local_files_only``), then one message naming the model and
how to supply it. Also the content fingerprint of a folder, which enters every cache identity."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from harness.concepts.errors import HarnessError

_SAMPLE = 256 * 1024


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def hub_offline() -> bool:
    """True when Hugging Face downloads are disabled (``HF_HUB_OFFLINE``/``TRANSFORMERS_OFFLINE``)."""
    if _truthy(os.environ.get("HF_HUB_OFFLINE")) or _truthy(os.environ.get("TRANSFORMERS_OFFLINE")):
        return True
    try:
        from huggingface_hub import constants
    except ImportError:
        return False
    return bool(getattr(constants, "HF_HUB_OFFLINE", False))


def cached_snapshot(repo_id: str, revision: str | None) -> Path | None:
    """The local snapshot folder of a hub model, looked up without any network access."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    for rid in dict.fromkeys([repo_id] + ([f"sentence-transformers/{repo_id}"] if "/" not in repo_id else [])):
        try:
            path = Path(snapshot_download(rid, revision=revision, local_files_only=True,
                                          cache_dir=os.environ.get("SENTENCE_TRANSFORMERS_HOME")))
        except Exception:  # not cached, or not a valid repo id
            continue
        if (path / "modules.json").is_file() or (path / "config.json").is_file():
            return path
    return None


def fingerprint_dir(path: Path) -> str:
    """Content fingerprint of a model folder: every file's name and size, the content of small
    files, and three 256 KiB samples (start, middle, end) of large ones. Cheap for 7B models,
    and it changes when weights are retrained even at the same size."""
    h = hashlib.sha256()
    skip_dirs = {".git", ".cache", "__pycache__", "onnx", "openvino"}
    files = []
    seen = {os.path.realpath(path)}  # a symlink loop is walked once, not forever
    for root, dirs, names in os.walk(path, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in skip_dirs and os.path.realpath(os.path.join(root, d)) not in seen)
        seen.update(os.path.realpath(os.path.join(root, d)) for d in dirs)
        files += [Path(root, n) for n in names if not n.endswith((".md", ".gitattributes", ".lock"))]
    for f in sorted(files, key=lambda p: p.relative_to(path).as_posix()):
        size = f.stat().st_size
        h.update(f"{f.relative_to(path).as_posix()}\0{size}\0".encode())
        with open(f, "rb") as fh:
            if size <= 4 * _SAMPLE:
                h.update(fh.read())
            else:
                for offset in (0, size // 2, size - _SAMPLE):
                    fh.seek(offset)
                    h.update(fh.read(_SAMPLE))
    return h.hexdigest()[:32]


def find(name: str, revision: str | None, label: str) -> Path | None:
    """The folder of model ``name`` on this machine: ``name`` itself when it is a folder, else a snapshot
    of the hub model already in the cache; None when it must be downloaded. A name that reads as a path but
    is no folder is an error."""
    expanded = Path(name).expanduser()
    if expanded.is_dir():
        return expanded.resolve()
    if name.startswith((".", "/", "~")) or os.sep in name.replace("/", "") or name.count("/") > 1:
        raise HarnessError(f"{label}: model path {name!r} is not a folder; pass model=<folder> or a "
                           f"Hugging Face model id")
    return cached_snapshot(name, revision)


def downloads_off(local_files_only: bool = False) -> str | None:
    """Why a missing model cannot be downloaded now, or None when it can."""
    if hub_offline():
        return "HF_HUB_OFFLINE is set"
    return "local_files_only is set" if local_files_only else None


def unavailable(label: str, name: str, why: str, detail: str = "", cause: BaseException | None = None) -> HarnessError:
    """The one message for a model whose weights this machine does not have and cannot fetch now."""
    msg = (f"{label}: the weights of model {name!r}{detail} are not available on this machine ({why}). "
           f"Download them while online (`hf download {name}`, or run once with network access and without "
           f"HF_HUB_OFFLINE), or pass model=/local/path/to/model (the model's folder).")
    if cause is not None:
        msg += f" Cause: {type(cause).__name__}: {str(cause).strip().splitlines()[0][:300] if str(cause) else ''}"
    return HarnessError(msg)


def locate(name: str, revision: str | None, label: str, local_files_only: bool = False) -> Path | None:
    """:func:`find`, or :func:`unavailable` raised when the model is absent and downloads are off."""
    found = find(name, revision, label)
    why = downloads_off(local_files_only) if found is None else None
    if why is not None:
        raise unavailable(label, name, why)
    return found


def download(name: str, revision: str | None, label: str) -> Path:
    """The model's snapshot folder, downloaded from the hub (one message when that fails)."""
    from huggingface_hub import snapshot_download  # the hub client: only when a download is needed

    try:
        return Path(snapshot_download(name, revision=revision))
    except Exception as exc:  # network, missing repo, gated: one message
        raise HarnessError(f"{label}: could not download model {name!r}: "
                           f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}") from exc
