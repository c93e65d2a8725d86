"""RankGPT's prompts, verbatim, and the passage formatting.

Three variants of the permutation-generation (PG) prompt:

- ``code`` (default): the strings of the official code (github.com/sunnweiwei/RankGPT, rank_gpt.py);
- ``paper``: the wording printed in the paper's Appendix A.5 (``Received passage [i]`` without a period,
  ``Rank them ...``, a different closing instruction);
- ``single``: one user message holding every passage, as printed in InfoSearch's Table 16 (the form
  rank_llm-style listwise rerankers use), kept character for character, ``[ ]`` spacing included.

``code`` and ``paper`` are the multi-turn layout: system, user prefix, assistant "Okay, please
provide the passages.", then one user turn per passage answered by a fabricated assistant turn, then
the closing user turn: ``2 * num + 4`` messages.

The optional task objective (BIRCO's "+O") goes in two places, as in BIRCO's run_exp_RankGPT.py:
``"Task Description: {objective} "`` before the system line, and ``"\\n\\nTask Description:
{objective}\\n\\n"`` between ``"Search Query: {query}."`` and the closing instruction.

Every template is a constant here; :func:`template_hash` is the sha256 of a variant's templates
(recorded in results.json through the reranker's ``config()``), so any edit changes the hash.
Nothing here imports the LLM layer or an SDK.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Any

#: version of the templates below; bump with any edit (the hash changes anyway)
TEMPLATE_VERSION = "1"


@dataclass(frozen=True)
class PGTemplate:
    """One PG prompt variant. ``layout``: ``multi`` (one user turn per passage) or ``single``."""

    name: str
    layout: str
    system: str
    prefix: str
    prefix_ack: str
    passage: str
    passage_ack: str
    post_head: str
    post_sep: str
    post_body: str
    objective_system: str = "Task Description: {objective} "
    objective_post: str = "\n\nTask Description: {objective}\n\n"
    source: str = ""


SYSTEM = "You are RankGPT, an intelligent assistant that can rank passages based on their relevancy to the query."
PREFIX_ACK = "Okay, please provide the passages."

CODE = PGTemplate(
    name="code",
    layout="multi",
    system=SYSTEM,
    prefix="I will provide you with {num} passages, each indicated by number identifier []. \n"
           "Rank the passages based on their relevance to query: {query}.",
    prefix_ack=PREFIX_ACK,
    passage="[{id}] {content}",
    passage_ack="Received passage [{id}].",
    post_head="Search Query: {query}.",
    post_sep=" \n",
    post_body="Rank the {num} passages above based on their relevance to the search query. The passages should be "
              "listed in descending order using identifiers. The most relevant passages should be listed first. "
              "The output format should be [] > [], e.g., [1] > [2]. Only response the ranking results, do not say "
              "any word or explain.",
    source="github.com/sunnweiwei/RankGPT rank_gpt.py (HEAD 0d62bc3): get_prefix_prompt, "
           "create_permutation_instruction, get_post_prompt",
)

PAPER = PGTemplate(
    name="paper",
    layout="multi",
    system=SYSTEM,
    prefix="I will provide you with {num} passages, each indicated by number identifier []. "
           "Rank them based on their relevance to query: {query}.",
    prefix_ack=PREFIX_ACK,
    passage="[{id}] {content}",
    passage_ack="Received passage [{id}]",
    post_head="Search Query: {query}.",
    post_sep="\n",
    post_body="Rank the {num} passages above based on their relevance to the search query. The passages should be "
              "listed in descending order using identifiers, and the most relevant passages should be listed first, "
              "and the output format should be [] > [], e.g., [1] > [2]. Only response the ranking results, do not "
              "say any word or explain.",
    source="Sun et al. 2023, Appendix A.5 (instruction for gpt-3.5-turbo / gpt-4)",
)

SINGLE = PGTemplate(
    name="single",
    layout="single",
    system="You are RankGPT, an intelligent assistant that ranks passages based on their relevance to a query.",
    prefix="I will provide you with {num} passages, each indicated by a number identifier [ ]. "
           "Rank the passages based on their relevance to the query: {query}.",
    prefix_ack="",
    passage="[{id}] {content}",
    passage_ack="",
    post_head="Search Query: {query}.",
    post_sep="\n",
    post_body="Rank the {num} passages above based on their relevance to the search query. The passages should be "
              "listed in descending order using identifiers. The most relevant passages should be listed first. "
              "The output format should be [ ] >[ ], e.g., [1] >[2]. Only respond with the ranking results, do not "
              "say any word or explain.",
    source="InfoSearch (Table 16), single user message as used through rank_llm",
)

VARIANTS: Mapping[str, PGTemplate] = MappingProxyType({t.name: t for t in (CODE, PAPER, SINGLE)})


def get_template(name: str) -> PGTemplate:
    try:
        return VARIANTS[name]
    except KeyError:
        raise ValueError(f"unknown RankGPT prompt variant {name!r}; choose one of {sorted(VARIANTS)}") from None


def _sha256(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, ensure_ascii=False).encode("utf-8")).hexdigest()


def template_hash(template: PGTemplate) -> str:
    """sha256 of the variant's templates (canonical JSON); recorded in results.json."""
    return _sha256({"version": TEMPLATE_VERSION, **asdict(template)})


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def passage_text(text: str, title: str = "", max_words: int | None = 300) -> str:
    """The passage as RankGPT shows it: ``Title: {title} Content: {text}`` when there is a title (the
    code's BEIR form), else the text; ``"Title: Content: "`` removed, whitespace collapsed, and the
    first ``max_words`` whitespace-separated words kept (``None`` or 0: no cap)."""
    content = f"Title: {title} Content: {text}" if title else text
    content = content.replace("Title: Content: ", "").strip()
    words = content.split()
    if max_words:
        words = words[: int(max_words)]
    return " ".join(words)


def escape_brackets(text: str) -> str:
    """BIRCO's pre-processing: ``[``/``]`` become ``(``/``)`` so a text cannot fake an identifier."""
    return text.replace("[", "(").replace("]", ")")


def build_messages(
    query: str,
    passages: list[str],
    variant: str | PGTemplate = "code",
    *,
    zero_based: bool = False,
    objective: str | None = None,
) -> list[dict[str, str]]:
    """The chat messages for one window. ``passages`` are already formatted (:func:`passage_text`);
    ids are local to the window: ``[1]..[n]`` (``[0]..[n-1]`` with ``zero_based``)."""
    t = variant if isinstance(variant, PGTemplate) else get_template(variant)
    num = len(passages)
    first = 0 if zero_based else 1
    system = t.system
    post_mid = t.post_sep
    if objective:
        system = t.objective_system.format(objective=objective) + system
        post_mid = t.objective_post.format(objective=objective)
    post = t.post_head.format(query=query) + post_mid + t.post_body.format(num=num)
    prefix = t.prefix.format(num=num, query=query)
    if t.layout == "single":
        lines = [prefix, *(t.passage.format(id=first + i, content=c) for i, c in enumerate(passages)), post]
        return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(lines)}]
    msgs = [{"role": "system", "content": system}, {"role": "user", "content": prefix},
            {"role": "assistant", "content": t.prefix_ack}]
    for i, content in enumerate(passages):
        msgs.append({"role": "user", "content": t.passage.format(id=first + i, content=content)})
        msgs.append({"role": "assistant", "content": t.passage_ack.format(id=first + i)})
    msgs.append({"role": "user", "content": post})
    return msgs


# -- relevance generation (HELM, 4-shot; paper Appendix A.2) -------------------------------------

RG_INSTRUCTION = ("Given a passage and a query, predict whether the passage includes an answer to the query by "
                  "producing either 'Yes' or 'No'.")
RG_BLOCK = "Passage: {passage}\nQuery: {query}\nDoes the passage answer the query?\nAnswer:"
RG_DEMOS: tuple[tuple[str, str, str], ...] = (
    ("Its 25 drops per ml, you guys are all wrong. If it is water, the standard was changed 15 - 20 years ago to "
     "make 20 drops = 1mL. The viscosity of most things is temperature dependent, so this would be at room "
     "temperature. Hope this helps.", "how many eye drops per ml", "Yes"),
    ("RE: How many eyedrops are there in a 10 ml bottle of Cosopt? My Kaiser pharmacy insists that 2 bottles should "
     "last me 100 days but I run out way before that time when I am using 4 drops per day. In the past other "
     "pharmacies have given me 3 10-ml bottles for 100 days. E: How many eyedrops are there in a 10 ml bottle of "
     "Cosopt? My Kaiser pharmacy insists that 2 bottles should last me 100 days but I run out way before that time "
     "when I am using 4 drops per day.", "how many eye drops per ml", "No"),
    ("You can transfer money to your checking account from other Wells Fargo. accounts through Wells Fargo Mobile "
     "Banking with the mobile app, online, at any. Wells Fargo ATM, or at a Wells Fargo branch. 1 Money in — "
     "deposits.", "can you open a wells fargo account online", "No"),
    ("You can open a Wells Fargo banking account from your home or even online. It is really easy to do, provided "
     "you have all of the appropriate documentation. Wells Fargo has so many bank account options that you will "
     "be sure to find one that works for you. They offer free checking accounts with free online banking.",
     "can you open a wells fargo account online", "Yes"),
)


def rg_prompt(query: str, passage: str, shots: int = 4) -> str:
    """The HELM relevance-generation prompt: the instruction, ``shots`` demonstrations (0 gives the
    zero-shot form of App. A.3), then the test block ending in ``Answer:``; blocks are separated by a
    blank line."""
    if not 0 <= shots <= len(RG_DEMOS):
        raise ValueError(f"shots must be between 0 and {len(RG_DEMOS)}")
    blocks = [RG_BLOCK.format(passage=p, query=q) + " " + a for p, q, a in RG_DEMOS[:shots]]
    blocks.append(RG_BLOCK.format(passage=passage, query=query))
    return RG_INSTRUCTION + "\n\n" + "\n\n".join(blocks)


def rg_template_hash(shots: int = 4) -> str:
    return _sha256({"version": TEMPLATE_VERSION, "instruction": RG_INSTRUCTION, "block": RG_BLOCK,
                    "demos": [list(d) for d in RG_DEMOS[:shots]]})
