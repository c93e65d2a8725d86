"""From a judge reply to a score, as the authors' released code does it (G-Eval weighting).

1. The JSON object is cut from the first ``{`` to the last ``}`` (a missing closing brace is added)
   and its integer ``"score"`` read. When the JSON does not parse, ``"score": <digits>`` is looked for
   in the text. Nothing found, a non-integer, or a score outside [0, ``max_score``] is a **failed**
   judgment (the released code scores it 0; this harness counts it and drops the position).
2. The generated token holding the score: the token covering the score digits after ``"score":``
   (by character offsets), else, as the released code does, the first generated token equal to the
   score's digits.
3. Its top-logprob alternatives (the token itself included) with probability >= ``min_prob`` (0.01;
   the code drops logprob < ln 0.01) and whose text is a digit 0-5 are kept; the score is
   sum(p * s) / sum(p) over them.
4. No logprobs (Anthropic; a server that omits them): the parsed integer, ``fallback="no-logprobs"``.
   Logprobs present but no score token or no digit alternative: the parsed integer, with the
   ``fallback`` recorded (the released code returns 0.0 there).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

SCORE_RE = re.compile(r'"score"\s*:\s*"?(-?\d+(?:\.\d+)?)')
DIGITS = frozenset(str(i) for i in range(6))  # the released code keeps alternatives "0".."5"


@dataclass
class Parsed:
    score: int | None
    reason: str = ""
    how: str = ""  # "json", "regex" or the failure
    start: int | None = None  # character offset of the score digits in the reply


def parse_reply(text: str, max_score: int = 3) -> Parsed:
    """The integer score and reason of a reply; ``score=None`` when there is none (see module doc)."""
    m = SCORE_RE.search(text or "")
    value, reason, how = _json_score(text)
    if value is None and m is not None:
        value, how = m.group(1), "regex"
    if value is None:
        return Parsed(None, reason, how)
    score = _integer(value)
    if score is None:
        return Parsed(None, reason, "non-integer")
    if not 0 <= score <= max_score:
        return Parsed(None, reason, "out-of-range")
    return Parsed(score, reason, how, m.start(1) if m is not None else None)


def _json_score(text: str) -> tuple[Any, str, str]:
    """``(score, reason, how)`` from the JSON object in a reply (from its first ``{`` to its last ``}``, closed
    when unclosed); ``how`` is "json", "no-score" (an object without a score) or "no-json"."""
    i = (text or "").find("{")
    if i < 0:
        return None, "", "no-json"
    j = text.rfind("}")
    frag = text[i:j + 1] if j > i else text[i:] + "}"
    try:
        obj = json.loads(frag)
    except ValueError:
        obj = None
    if not isinstance(obj, dict):
        return None, "", "no-json"
    return obj.get("score"), str(obj.get("reason", "")), "json" if "score" in obj else "no-score"


def _integer(value: Any) -> int | None:
    """A score value as an integer: an int, an integral float, or a string of one; None for anything else
    (booleans included)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            return None
    if isinstance(value, float):
        if not value.is_integer():
            return None
        value = int(value)
    return value if isinstance(value, int) else None


def _token_text(tok: Any) -> str:
    return tok.token if hasattr(tok, "token") else tok[0]


def find_score_token(logprobs: Sequence[Any], text: str, parsed: Parsed) -> int | None:
    """Index of the generated token holding the score digits (see module doc, step 2)."""
    digits = str(parsed.score)
    if parsed.start is not None and "".join(_token_text(t) for t in logprobs) == text:
        pos = 0
        for idx, tok in enumerate(logprobs):
            end = pos + len(_token_text(tok))
            if pos <= parsed.start < end and _token_text(tok).strip() == digits:
                return idx
            pos = end
    for idx, tok in enumerate(logprobs):
        if _token_text(tok).strip() == digits:
            return idx
    return None


def weighted(alternatives: Sequence[tuple[str, float]],
             min_prob: float = 0.01) -> tuple[float | None, dict[str, float]]:
    """G-Eval weighting of (token, logprob) alternatives: digits 0-5 with p >= ``min_prob``,
    renormalised. Returns (score or None when nothing qualifies, {digit: probability kept})."""
    floor = math.log(min_prob) if min_prob > 0 else -math.inf
    probs: dict[str, float] = {}
    seen: set[str] = set()
    for tok, lp in alternatives:
        if tok in seen:
            continue
        seen.add(tok)
        d = tok.strip()
        if d in DIGITS and lp >= floor:
            probs[d] = probs.get(d, 0.0) + math.exp(lp)
    total = sum(probs.values())
    if total <= 0:
        return None, probs
    return sum(int(d) * p for d, p in probs.items()) / total, probs


@dataclass
class Scored:
    score: float | None
    details: dict[str, Any] = field(default_factory=dict)


def geval_score(text: str, logprobs: Sequence[Any] | None, *, max_score: int = 3, min_prob: float = 0.01) -> Scored:
    """The judgment of one reply: score (None when failed) and its details."""
    parsed = parse_reply(text, max_score)
    details: dict[str, Any] = {"parsed_score": parsed.score, "reason": parsed.reason, "parse": parsed.how}
    if parsed.score is None:
        details["error"] = f"unparseable reply ({parsed.how})"
        return Scored(None, details)
    if not logprobs:
        details["fallback"] = "no-logprobs"
        return Scored(float(parsed.score), details)
    idx = find_score_token(logprobs, text, parsed)
    if idx is None:
        details["fallback"] = "score-token-not-found"
        return Scored(float(parsed.score), details)
    tok = logprobs[idx]
    alts = [(tok.token, tok.logprob)] + [(a.token, a.logprob) for a in tok.top]
    score, probs = weighted(alts, min_prob)
    details["token_index"] = idx
    details["probs"] = {d: round(p, 6) for d, p in sorted(probs.items())}
    if score is None:
        details["fallback"] = "no-digit-alternatives"
        return Scored(float(parsed.score), details)
    return Scored(score, details)
