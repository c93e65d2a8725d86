"""G-Eval scoring of one judge reply (parse, score token, weighting)."""

from __future__ import annotations

import math

import pytest
from harness.llm import TokenLogprob, TopLogprob

from harness_ifir.geval import find_score_token, geval_score, parse_reply, weighted

ln = math.log


def tokens(text_parts, alts_at=None):
    """TokenLogprobs for the given token texts; ``alts_at``: {index: [(alt, prob), ...]}."""
    out = []
    for i, t in enumerate(text_parts):
        alts = (alts_at or {}).get(i, [])
        top = tuple(TopLogprob(a, ln(p)) for a, p in alts)
        lp = next((ln(p) for a, p in alts if a == t), -0.01)
        out.append(TokenLogprob(t, lp, top))
    return out


def test_worked_example_is_2_50():
    # the notes' example: "3" .60, "2" .30, "1" .05, "0" .03, " " .02 (not a digit: dropped)
    score, probs = weighted([("3", ln(0.60)), ("2", ln(0.30)), ("1", ln(0.05)), ("0", ln(0.03)), (" ", ln(0.02))])
    assert score == pytest.approx(2.45 / 0.98) and round(score, 2) == 2.50
    assert set(probs) == {"0", "1", "2", "3"}


def test_alternatives_below_one_percent_and_non_digits_are_dropped():
    score, probs = weighted([("2", ln(0.5)), ("3", ln(0.495)), ("0", ln(0.005)), ("x", ln(0.3)), ("7", ln(0.2))])
    assert set(probs) == {"2", "3"}
    assert score == pytest.approx((2 * 0.5 + 3 * 0.495) / 0.995)
    assert weighted([("a", -0.1)]) == (None, {})


def test_weighting_at_the_score_token_of_a_reply():
    parts = ['{"', "score", '":', " ", "3", ',"', "reason", '":"', "ok", '"}']
    text = "".join(parts)
    lps = tokens(parts, {4: [("3", 0.60), ("2", 0.30), ("1", 0.05), ("0", 0.03), (" ", 0.02)]})
    s = geval_score(text, lps)
    assert round(s.score, 2) == 2.50 and "fallback" not in s.details
    assert s.details["parsed_score"] == 3 and s.details["token_index"] == 4 and s.details["reason"] == "ok"


def test_score_token_is_the_one_after_the_score_key():
    parts = ['{"', "reason", '":"', "meets", " ", "2", " levels", '","', "score", '":', " ", "2", "}"]
    text = "".join(parts)
    lps = tokens(parts, {11: [("2", 0.5), ("1", 0.5)]})
    parsed = parse_reply(text)
    assert parsed.score == 2 and find_score_token(lps, text, parsed) == 11
    assert geval_score(text, lps).score == pytest.approx(1.5)


def test_parsing():
    assert parse_reply('Sure. {"score": 2, "reason": "x"} done').score == 2
    assert parse_reply('{"score": 1, "reason": "no closing brace"').score == 1
    assert parse_reply('{"score": 3, "reason": "bad "quotes" inside"}').how == "regex"
    assert parse_reply('{"score": 3, "reason": "bad "quotes" inside"}').score == 3
    assert parse_reply('{"score": "2"}').score == 2
    for bad, how in [("I cannot judge this.", "no-json"), ('{"reason": "x"}', "no-score"),
                     ('{"score": 2.5}', "non-integer"), ('{"score": 4}', "out-of-range"),
                     ('{"score": -1}', "out-of-range"),
                     ('{"score": true}', "non-integer")]:
        p = parse_reply(bad)
        assert p.score is None and p.how == how, bad


def test_fallbacks_and_failures():
    text = '{"score": 2, "reason": "x"}'
    s = geval_score(text, None)
    assert s.score == 2.0 and s.details["fallback"] == "no-logprobs"
    s = geval_score(text, tokens(["{", "x", "}"]))
    assert s.score == 2.0 and s.details["fallback"] == "score-token-not-found"
    s = geval_score("no idea", None)
    assert s.score is None and "unparseable" in s.details["error"]
