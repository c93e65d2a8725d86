"""A task's ``mteb`` block: which MTEB task it corresponds to (``docs/mteb.md``), checked field by field.

The block is also read back from ``results.json`` and from MTEB result files, so the checks are bounded and
name the field that is wrong."""

from __future__ import annotations

import re
from typing import Any

from harness.concepts.errors import DataError

#: the keys a block may hold; ``task_name``, ``dataset``, ``dataset_revision`` and ``metrics`` are required
MTEB_KEYS = ("task_name", "dataset", "dataset_revision", "split", "hf_subset", "main_score", "metrics",
             "languages", "differs")
REQUIRED = ("task_name", "dataset", "dataset_revision", "metrics")
#: the keys that say which MTEB task and data a block is (the others say how its scores are written)
IDENTITY_KEYS = ("task_name", "dataset", "dataset_revision", "split", "hf_subset")
_COMMIT = re.compile(r"^[0-9a-f]{7,40}$")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.()\-]{0,199}$")
_KEY = re.compile(r"^[A-Za-z0-9_@.\-\[\]:]{1,100}$")


def _text(block: dict[str, Any], key: str, where: str, source: object) -> None:
    value = block.get(key)
    if value is not None and (not isinstance(value, str) or not value or len(value) > 1000):
        raise DataError(f"{where}: mteb.{key} must be non-empty text (at most 1000 characters), not {value!r:.80}",
                        source)


def check_metric_map(metrics: Any, where: str, source: object = None) -> None:
    """``metrics``: harness metric key -> MTEB score key (``"nDCG@10" = "ndcg_at_10"``), or -> a one-entry
    table naming the sub-object the key lives in (``"MAP@1000[og]" = {og = "map_at_1000"}``, FollowIR)."""
    if not isinstance(metrics, dict) or not metrics or len(metrics) > 200:
        raise DataError(f"{where}: mteb.metrics must be a non-empty table of harness metric -> MTEB key", source)
    for name, target in metrics.items():
        if not isinstance(name, str) or not name or len(name) > 100:
            raise DataError(f"{where}: mteb.metrics has a key that is not a metric name: {name!r:.80}", source)
        if isinstance(target, dict):
            if len(target) != 1:
                raise DataError(f"{where}: mteb.metrics[{name!r}] must name one sub-object (e.g. {{og = "
                                f"\"map_at_1000\"}}), not {target!r:.80}", source)
            (section, key), = target.items()
            if not (isinstance(section, str) and _KEY.match(section) and isinstance(key, str) and _KEY.match(key)):
                raise DataError(f"{where}: mteb.metrics[{name!r}] = {target!r:.80} is not {{section = \"key\"}}",
                                source)
        elif not (isinstance(target, str) and _KEY.match(target)):
            raise DataError(f"{where}: mteb.metrics[{name!r}] must be an MTEB score key such as \"ndcg_at_10\", "
                            f"not {target!r:.80}", source)


def check_mteb_block(block: Any, where: str, source: object = None) -> None:
    """Raise :class:`DataError` unless ``block`` is a valid ``mteb`` block (see :data:`MTEB_KEYS`)."""
    if not isinstance(block, dict):
        raise DataError(f"{where}: mteb must be a table, not {type(block).__name__}", source)
    unknown = sorted(str(k) for k in set(block) - set(MTEB_KEYS))
    if unknown:
        raise DataError(f"{where}: unknown mteb keys {unknown}; allowed: {list(MTEB_KEYS)}", source)
    missing = [k for k in REQUIRED if k not in block]
    if missing:
        raise DataError(f"{where}: the mteb block lacks {missing}", source)
    for key in ("task_name", "dataset", "dataset_revision", "split", "hf_subset", "main_score", "differs"):
        _text(block, key, where, source)
    if not _NAME.match(block["task_name"]):
        raise DataError(f"{where}: mteb.task_name {block['task_name']!r:.80} is not an MTEB task name", source)
    if not _COMMIT.match(block["dataset_revision"]):
        raise DataError(f"{where}: mteb.dataset_revision must be the commit id MTEB's task metadata names (hex, "
                        f"7 to 40 digits: a few MTEB tasks give abbreviated ids), not "
                        f"{block['dataset_revision']!r:.80}",
                        source)
    check_metric_map(block["metrics"], where, source)
    main = block.get("main_score")
    if main is not None and main not in mteb_keys(block):
        raise DataError(f"{where}: mteb.main_score {main!r} is none of the MTEB keys mteb.metrics maps to", source)
    langs = block.get("languages")
    if langs is not None and (not isinstance(langs, list) or not langs or len(langs) > 100
                              or not all(isinstance(x, str) and 0 < len(x) <= 40 for x in langs)):
        raise DataError(f"{where}: mteb.languages must be a list of language codes such as \"eng-Latn\"", source)


def mteb_keys(block: dict[str, Any]) -> list[str]:
    """The top-level MTEB keys ``metrics`` maps to (nested ones as ``section.key``)."""
    out = []
    for target in block["metrics"].values():
        if isinstance(target, dict):
            (section, key), = target.items()
            out.append(f"{section}.{key}")
        else:
            out.append(target)
    return out


def defaults(block: dict[str, Any]) -> dict[str, Any]:
    """The block with its defaults filled in: split ``test``, hf_subset ``default``, languages ``eng-Latn``,
    main_score ``ndcg_at_10`` where the map has it, else the first key."""
    out = dict(block)
    out.setdefault("split", "test")
    out.setdefault("hf_subset", "default")
    out.setdefault("languages", ["eng-Latn"])
    if "main_score" not in out:
        keys = mteb_keys(block)
        out["main_score"] = "ndcg_at_10" if "ndcg_at_10" in keys else keys[0]
    return out


def block_disagreements(claim: dict[str, Any], registered: dict[str, Any], where: str = "mteb") -> list[str]:
    """Where a claimed block (read back from results.json) says another MTEB task or data than the registered
    one: each :data:`IDENTITY_KEYS` key that differs (defaults filled in), and ``differs`` set on one side only;
    as ``"<where>.<key> is X, not Y"``. The metric map, main score and languages may differ (the registered
    block's apply)."""
    c, r = defaults(claim), defaults(registered)
    out = [f"{where}.{k} is {c.get(k)!r:.100}, not {r.get(k)!r:.100}" for k in IDENTITY_KEYS if c.get(k) != r.get(k)]
    if bool(c.get("differs")) != bool(r.get("differs")):
        said = "set" if c.get("differs") else "absent"
        out.append(f"{where}.differs is {said}, not as the registered block has it")
    return out
