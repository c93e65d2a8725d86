"""``harness view --bundle OUT``: the same app as a static folder that opens from ``file://`` (or any
static host). Chromium blocks ``fetch()`` of ``file://``, so every payload is a ``.js`` file that
hands its JSON to the page (``HV.put(key, data)``), loaded by ``<script src>``; file names hold only
run ids this module gave and numbers, never a name or id from a results folder."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any

from harness.concepts.errors import HarnessError
from harness.view.catalog import CHUNK, Catalog, _member_task
from harness.view.jsontext import dumps
from harness.view.server import CSP_META, asset

#: the most ordered pairs of runs per task whose comparison the bundle holds
MAX_PAIRS = 30


def _put(path: Path, key: str, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"HV.put({dumps(key)},{dumps(data)});\n", encoding="utf-8")


def _index_html() -> str:
    html = asset("index.html").decode("utf-8")
    meta = f'<meta http-equiv="Content-Security-Policy" content="{CSP_META}">'
    return html.replace("<!--bundle-->", meta + '\n<script src="data/bundle.js"></script>')


def write_bundle(catalog: Catalog, out: str | Path, permutations: int = 10_000) -> Path:
    """Write the app and every payload under ``out`` (created; an existing non-empty folder that is
    not a bundle is refused)."""
    from harness.view.comparison import compare_payload

    root = Path(out)
    if root.exists() and any(root.iterdir()) and not (root / "data" / "bundle.js").is_file():
        raise HarnessError(f"--bundle {root} exists and is not empty; give a new folder")
    if (root / "data").exists():
        shutil.rmtree(root / "data")
    (root / "static").mkdir(parents=True, exist_ok=True)
    for name in ("app.js", "app.css"):
        (root / "static" / name).write_bytes(asset(name))
    (root / "index.html").write_text(_index_html(), encoding="utf-8")
    data = root / "data"
    _put(data / "runs.js", "runs", catalog.runs_payload())
    by_task: dict[str, list[str]] = {}
    for rid, r in catalog.runs.items():
        payload = catalog.run_payload(rid)
        _put(data / "run" / f"{rid}.js", f"run/{rid}", payload)
        if r.stored.is_suite:
            continue
        by_task.setdefault(_member_task(r) if r.suite else r.stored.task_name, []).append(rid)
        n = len(payload["per_query"]["qids"])
        for i, start in enumerate(range(0, n, CHUNK)):
            chunk = catalog.query_chunk(rid, start)
            body = "".join(f"HV.put({dumps(f'query/{rid}/{q}')},{dumps(v)});\n" for q, v in chunk.items())
            (data / "q" / rid).mkdir(parents=True, exist_ok=True)
            (data / "q" / rid / f"{i}.js").write_text(body, encoding="utf-8")
    compared = []
    for ids in by_task.values():
        for a, b in list(itertools.permutations(ids, 2))[:MAX_PAIRS]:
            try:
                payload = compare_payload(catalog, [a, b], permutations=permutations)
            except HarnessError as exc:
                payload = {"error": str(exc)}
            _put(data / "compare" / f"{a}_{b}.js", f"compare/{a}/{b}", payload)
            compared.append(f"{a}/{b}")
    (data / "bundle.js").write_text(f"window.HV_BUNDLE = {dumps({'compare': compared, 'chunk': CHUNK})};\n",
                                    encoding="utf-8")
    return root
