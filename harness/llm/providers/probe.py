"""Quick, bounded probes of an OpenAI-compatible server (never an error): its JSON routes, and which
llama.cpp-family server it is (what :mod:`harness.llm.providers.openai` and
:mod:`harness.llm.providers.completion` ask)."""

from __future__ import annotations

from typing import Any

from harness.served.transport import BadReply, HTTPStatusError, reply_json
from harness.served.transport import post as http_post


def probe_server(root: str) -> tuple[str, int | None]:
    """Which llama.cpp-family server answers at ``root`` (the base URL without ``/v1``; one or two quick
    GETs, never an error): ``("llama-server", total_slots)`` where ``/props`` reports its slots,
    ``("llama-cpp-python", 1)`` where the OpenAPI title names llama.cpp, else ``("", None)``."""
    props = get_json(f"{root}/props", 2.0)
    slots = props.get("total_slots") if isinstance(props, dict) else None
    if isinstance(slots, int) and not isinstance(slots, bool) and slots >= 1:
        return "llama-server", slots
    spec = get_json(f"{root}/openapi.json", 2.0)
    info = spec.get("info") if isinstance(spec, dict) else None
    title = info.get("title") if isinstance(info, dict) else None
    if isinstance(title, str) and "llama.cpp" in title.lower():
        return "llama-cpp-python", 1
    return "", None


def get_json(url: str, timeout: float, post: dict[str, Any] | None = None) -> Any:
    """GET (or POST ``post``) ``url``; the JSON reply (whole within ``timeout``, at most 1 MiB, bounded
    JSON), or None on any failure (a probe, never an error)."""
    import http.client
    import json

    data = None if post is None else json.dumps(post).encode()
    try:
        return reply_json(http_post(url, data, {"Content-Type": "application/json"} if data else {}, timeout,
                                    limit=2**20))
    except (OSError, ValueError, BadReply, HTTPStatusError, http.client.HTTPException):
        return None
