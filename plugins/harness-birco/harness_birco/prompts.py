"""BIRCO's pointwise prompts, verbatim where the paper gives them (notes §3), and the score parser.

- ``SCORE_O``: Score+O, Fig. 12. ``REASON_O``: Reason+O, Fig. 13 (Score+O with the "think step by step"
  sentence replaced). ``SUBTASK``: Fig. 14 (the subtask prompt has no objective; "+O" reaches Subtask
  through the criteria it is built from).
- The paper prints no prompt *without* the objective for the pointwise protocols. ``SCORE`` and
  ``REASON`` (``objective=false``) are ours: the same text with the objective sentence left out and
  "Given the above IR task description, think/determine" turned into "Think/Determine".
- ``CRITERIA_SUFFIX``: the released Llama/StripedHyena Reason variant's output format (``*_subtask_pre``),
  appended to the Reason prompt for the once-per-query criteria call (``{passage}`` is the query's top
  passage in the incoming order).
- ``WITH_CRITERIA``: how the query's criteria are handed to each per-passage Reason call (ours; the
  paper says only that one set of criteria is used across all passages).
- ``SUBTASK_FORMAT``: the output format appended to Fig. 14 (ours; the paper gives none; the parser
  looks for ``SCORE:``).

:func:`template_hash` is the sha256 of all of these (recorded in each reranker's ``config()``).
"""

from __future__ import annotations

import hashlib
import json
import re
from types import MappingProxyType

TEMPLATE_VERSION = "1"

INTRO = "In an information retrieval task setting, you have a query and a candidate pool of passages."
PRESENT = "Now, you are presented with a query and a single passage from its candidate pool."
SCALE = (
    "A lower score would mean the passage is less likely to be the passage the IR task wanted, whereas a higher "
    "score would mean the passage is more likely to be the passage the IR task wanted. In addition, after the symbol "
    "\"QUOTES:\", list all *direct quotes*, in a python list, verbatim from the passage that definitively suggests or "
    "supports why this passage is what the IR task is looking for. A high score would potentially indicate a large "
    "amount of supportive quotes from the passage being listed whereas a low score would potentially indicate no or "
    "very few quotes from the passage being listed. I need to parse your answer in a certain format, so in the end, "
    "only output the score in this format. SCORE:"
)
QP = "Query: {query}\n\nPassage: {passage}"

SCORE_STEP_O = ("Given the above IR task description, think step by step, and then output a single score on a "
                "scale of 0-10.")
REASON_STEP_O = (
    "Given the above IR task description, determine the appropriate criteria to make your decision about whether "
    "this passage is what the IR task is looking for. After you have written your decision criteria, you need to "
    "follow this decision criteria by thinking step by step, and then output a single score on a scale of 0-10."
)
SCORE_STEP = "Think step by step, and then output a single score on a scale of 0-10."
REASON_STEP = (
    "Determine the appropriate criteria to make your decision about whether "
    "this passage is what the IR task is looking for. After you have written your decision criteria, you need to "
    "follow this decision criteria by thinking step by step, and then output a single score on a scale of 0-10."
)

SCORE_O = INTRO + " {objective}\n\n" + PRESENT + " " + SCORE_STEP_O + " " + SCALE + "\n\n" + QP
REASON_O = INTRO + " {objective}\n\n" + PRESENT + " " + REASON_STEP_O + " " + SCALE + "\n\n" + QP
SCORE = INTRO + "\n\n" + PRESENT + " " + SCORE_STEP + " " + SCALE + "\n\n" + QP
REASON = INTRO + "\n\n" + PRESENT + " " + REASON_STEP + " " + SCALE + "\n\n" + QP

CRITERIA_SUFFIX = (
    "\n\nI need to parse your answer in a certain format:\n\nDecision Criteria:\n…\nStep-by-step reasoning:\n…\n"
    "SCORE: ?/10\nIMPORTANT: Make sure that your decision criteria contain specific details about the query. "
    "Do not write generic criteria. The criteria should be tailored to the specific query."
)
WITH_CRITERIA = "\n\nDecision Criteria:\n{criteria}"

SUBTASK = (
    "Here is the passage: {passage}\n\nHere is the requirement extracted from the query: {req}\n\n"
    "Here is the query: {query}\n\nYou are a helpful assistant. A user wants to find a passage that satisfies a "
    "particular requirement from a query. You are shown the query so that you understand this particular "
    "requirement's context, but your objective is to focus solely on the requirement and the passage. Based on the "
    "passage, you will determine whether the requirement is met."
)
SUBTASK_FORMAT = ("\n\nThink step by step, and then output a single score on a scale of 0-10 for how well the "
                  "passage meets the requirement, in this format: SCORE: ?/10")

TEMPLATES = MappingProxyType({
    "score+o": SCORE_O, "reason+o": REASON_O, "score": SCORE, "reason": REASON,
    "criteria_suffix": CRITERIA_SUFFIX, "with_criteria": WITH_CRITERIA,
    "subtask": SUBTASK, "subtask_format": SUBTASK_FORMAT,
})


def template_hash(names: list[str] | None = None) -> str:
    """sha256 of the named templates (all by default), canonical JSON with the template version."""
    chosen = {k: TEMPLATES[k] for k in (names or sorted(TEMPLATES))}
    blob = json.dumps({"version": TEMPLATE_VERSION, **chosen}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def score_prompt(query: str, passage: str, objective: str | None) -> str:
    if objective:
        return SCORE_O.format(objective=objective, query=query, passage=passage)
    return SCORE.format(query=query, passage=passage)


def reason_prompt(query: str, passage: str, objective: str | None, criteria: str | None = None) -> str:
    text = (REASON_O.format(objective=objective, query=query, passage=passage) if objective
            else REASON.format(query=query, passage=passage))
    if criteria:
        text += WITH_CRITERIA.format(criteria=criteria)
    return text


def criteria_prompt(query: str, passage: str, objective: str | None) -> str:
    return reason_prompt(query, passage, objective) + CRITERIA_SUFFIX


def subtask_prompt(query: str, passage: str, req: str) -> str:
    return SUBTASK.format(passage=passage, req=req, query=query) + SUBTASK_FORMAT


# -- parsing ------------------------------------------------------------------------------------

SCORE_KEYS = ("SCORE: ", "Score: ", "score of ")
_CUT = re.compile(r"[ \n/]")


def parse_score(text: str | None) -> float | None:
    """The released parser: the number after ``SCORE: ``, else ``Score: ``, else ``score of ``, cut at a
    space, newline or ``/``. The last occurrence of a key is read (the answer comes last); a key whose
    value is not a number falls through to the next key. ``None`` when nothing parses (scored 0)."""
    if not text:
        return None
    for key in SCORE_KEYS:
        pos = text.rfind(key)
        if pos < 0:
            continue
        head = _CUT.split(text[pos + len(key):].lstrip(" "), maxsplit=1)[0].strip("*.,;:)(`'\"")
        try:
            value = float(head)
        except ValueError:
            continue
        if value == value and abs(value) != float("inf"):
            return value
    return None


_HEAD = re.compile(r"decision criteria\s*:?", re.I)
_TAIL = re.compile(r"step[- ]by[- ]step reasoning\s*:?|\bSCORE\s*:", re.I)
_BULLET = re.compile(r"^\s*(?:\(?\d+[.):]|[-*•]|[a-z][.)])\s+")


def parse_criteria(text: str | None) -> str:
    """The decision criteria of a criteria reply: the text after ``Decision Criteria:`` up to
    ``Step-by-step reasoning:`` (or ``SCORE:``); the whole reply up to that point when the header is missing."""
    if not text:
        return ""
    m = _HEAD.search(text)
    body = text[m.end():] if m else text
    t = _TAIL.search(body)
    if t:
        body = body[: t.start()]
    return body.strip(" \n…")


def split_requirements(criteria: str, limit: int = 5) -> list[str]:
    """Criteria to requirements: one per distinct non-empty line, numbering/bullets removed, at most ``limit``."""
    reqs = []
    for line in criteria.splitlines():
        line = _BULLET.sub("", line).strip()
        if line and line not in ("…", "...") and line not in reqs:
            reqs.append(line)
    return reqs[:limit] if limit else reqs
