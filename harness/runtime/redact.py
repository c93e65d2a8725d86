"""Masking secrets that users put where they do not belong: credentials inside URLs
(``http://user:KEY@host/v1``) and key-like query parameters. Applied to everything written to
results, caches and logs; light (standard library only)."""

from __future__ import annotations

import re
from typing import Any

MASK = "***"
# scheme://userinfo@ : the userinfo may hold a password or token
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/?#@\s\"'<>]+)@")
# ?api_key=... &key=... &token=... &access_token=... &sig=...
_QUERY_SECRET = re.compile(r"(?P<name>[?&](?:api[_-]?key|key|token|access[_-]?token|secret|sig|signature|password)=)"
                           r"(?P<value>[^&#\s\"']+)", re.IGNORECASE)


def redact_url(text: str) -> str:
    """``text`` with URL credentials masked: ``http://u:KEY@h/v1`` -> ``http://***@h/v1``,
    ``...?api_key=KEY`` -> ``...?api_key=***``. Works on any string that contains URLs."""
    if "://" not in text and "=" not in text:
        return text
    text = _USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    return _QUERY_SECRET.sub(lambda m: f"{m['name']}{MASK}", text)


def redact(value: Any) -> Any:
    """:func:`redact_url` applied to every string inside ``value`` (dicts, lists, tuples)."""
    if isinstance(value, str):
        return redact_url(value)
    if isinstance(value, dict):
        return {redact(k): redact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v) for v in value]
    return value
