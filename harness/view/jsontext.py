"""JSON text for the page: no NaN (null instead), and no ``<``, ``>``, ``&``, U+2028 or U+2029 left
verbatim, so a payload is inert whatever it is embedded in (a response, a bundle's ``.js`` file)."""

from __future__ import annotations

import json
import math
from typing import Any


def clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {str(k): clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [clean(x) for x in v]
    return v


def dumps(data: Any) -> str:
    text = json.dumps(clean(data), ensure_ascii=False, allow_nan=False, default=str, separators=(",", ":"))
    return (text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029"))
