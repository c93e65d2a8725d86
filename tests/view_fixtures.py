"""Results folders for the ``harness view`` tests: real runs (demo, demo with RankGPT against the
loopback server) and folders whose every string is a script-injection payload."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import harness
from harness.served.reply_cache import LLMCache, key_of
from harness.served.types import Reply
from harness.testing.synthetic import write_results_folder
from harness.view.catalog import Catalog
from harness.view.server import ViewServer

SCRIPT = "<script>window.__pwned=1</script>"
IMG = '"><img/src=x/onerror=window.__pwned=1>'
JS = "javascript:window.__pwned=1"
#: texts (query text, document, reply) may hold spaces; ids and folder names may not hold "/" or spaces
TEXT = f'{SCRIPT} "><img src=x onerror="window.__pwned=1"> {JS}'
QIDS = [SCRIPT, IMG, JS]
#: folder names (no "/")
FOLDER_IMG = '"><img src=x onerror=window.__pwned=1>'


def reversed_window(request: dict[str, Any]) -> str:
    """A RankGPT reply ranking each window's passages in reverse (deterministic)."""
    n = len(request["messages"][3:-1:2])
    return " > ".join(f"[{i}]" for i in range(n, 0, -1))


def demo_rankgpt(out: Path, srv: Any = None, reply=reversed_window) -> tuple[Any, list[dict[str, Any]]]:
    """``harness.evaluate("demo", rerankers=["rankgpt"])`` against the loopback server ``srv`` (a new
    one answering with ``reply`` when None); (result, the request bodies the server received during
    it). Replies go to the cache ``HARNESS_CACHE_DIR`` names."""
    from harness.testing import TestServer

    if srv is None:
        with TestServer(reply=reply) as srv:
            return demo_rankgpt(out, srv)
    before = len(srv.requests)
    res = harness.evaluate("demo", rerankers=["rankgpt"], llm=srv.spec("view-model"), output=str(out),
                           progress=False, overwrite=True)
    return res, list(srv.requests)[before:]


def payload_folder(root: Path, cache: Path, name: str = FOLDER_IMG, shift: float = 0.0) -> Path:
    """A results folder whose folder name, task, component, query ids, query texts, documents, LLM
    prompt and reply are injection payloads (an LLM call stored in the cache ``cache``)."""
    folder = root / name
    per_query = {q: {"nDCG@10": round(0.2 + 0.3 * i + shift * (i - 1), 4)} for i, q in enumerate(QIDS)}
    write_results_folder(folder, SCRIPT, per_query, retriever=SCRIPT, rankings=3)
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as fh:
        for q in QIDS:
            fh.write(json.dumps({"mode": "default", "query_id": q, "text": TEXT, "instruction": JS}) + "\n")
    with open(folder / "qrels.jsonl", "w", encoding="utf-8") as fh:
        for q in QIDS:
            fh.write(json.dumps({"mode": "default", "query_id": q, "doc_id": f"{q}-default-d1", "grade": 1}) + "\n")
    payload = {"provider": "openai-compatible", "model": SCRIPT,
               "messages": [{"role": "user", "content": TEXT}], "options": {}}
    key = key_of(payload)
    LLMCache(cache).set(key, payload, Reply(text=TEXT))
    with open(folder / "llm_calls.jsonl", "w", encoding="utf-8") as fh:
        for q in QIDS:
            fh.write(json.dumps({"query_id": q, "key": key, "cached": True, "error": TEXT,
                                 "component": SCRIPT, "cache": str(cache)}) + "\n")
    return folder


@contextmanager
def serving(paths: list[str | Path], **kwargs: Any) -> Iterator[ViewServer]:
    """A view server on a free loopback port, in a thread, for the block."""
    srv = ViewServer(Catalog(list(paths), **kwargs))
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join()


def read_run(path: Path) -> dict[str, list[tuple[str, int, float]]]:
    """qid -> [(doc, rank, score)] in rank order, read straight from a TREC run file."""
    out: dict[str, list[tuple[str, int, float]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        q, _, d, r, s, _ = line.split()
        out.setdefault(q, []).append((d, int(r), float(s)))
    return {q: sorted(v, key=lambda x: x[1]) for q, v in out.items()}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
