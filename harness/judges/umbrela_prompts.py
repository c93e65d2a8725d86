"""UMBRELA's prompts and reply parsing, as released (castorini/umbrela, Upadhyay et al., 2024).

Templates (``prompts/umbrela_*.txt``, each the ``prefix_user`` of the release's YAML file, byte for byte;
tests/test_umbrela.py checks them against the release's files):

- ``zeroshot-bing`` (the release's default: ``prompt_type="bing"``, ``few_shot_count=0``):
  ``src/umbrela/prompts/prompt_templates/qrel_zeroshot_bing.yaml``;
- ``fewshot-bing``: ``qrel_fewshot_bing.yaml`` (four fixed examples of one query, written in the file);
- ``zeroshot-basic``: ``qrel_zeroshot_basic.yaml``;
- ``instruction``: this project's variant of ``zeroshot-bing`` for instruction-following benchmarks
  (FollowIR, InfoSearch, BRIGHT): the same text with the searcher's instruction on its own line after the
  query, the first sentence and the first step naming it, and one sentence saying a passage that does not
  satisfy it does not answer the query. Not part of the release.

All at castorini/umbrela commit e2c4e4126bf7b568d9230008b465a58445cabc30 (the prompt texts are unchanged
since the paper's code, 16cba3e, June 2024). The release fills a template with ``str.format`` (``examples``
empty for these, ``query``, ``passage``: ``PromptTemplate.render`` in ``prompts/template_loader.py``) and
sends it as the user turn after the system turn ``"You are a helpful assistant."`` (``gpt_judge.py``).

Parsing (``parse_fewshot_response`` in ``src/umbrela/utils/common_utils.py``): the reply stripped and
lowercased; the patterns tried in order, the first that matches anywhere wins and its *last* match gives the
grade. ``release`` is the list at e2c4e41; ``paper`` the list at 16cba3e (the code of the paper's figures),
which lacks the "score of N" / "score: N" patterns. A reply no pattern matches has no grade: the release
records 0 with ``result_status`` 0; the judge leaves it without a score and counts it (``no_score=zero``
writes the release's 0).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib.resources import files
from types import MappingProxyType

UMBRELA_COMMIT = "e2c4e4126bf7b568d9230008b465a58445cabc30"
PAPER_COMMIT = "16cba3e"
SYSTEM_MESSAGE = "You are a helpful assistant."

_RELEASE_FILES = MappingProxyType({
    "zeroshot-bing": "src/umbrela/prompts/prompt_templates/qrel_zeroshot_bing.yaml",
    "fewshot-bing": "src/umbrela/prompts/prompt_templates/qrel_fewshot_bing.yaml",
    "zeroshot-basic": "src/umbrela/prompts/prompt_templates/qrel_zeroshot_basic.yaml",
})
TEMPLATE_NAMES = ("zeroshot-bing", "fewshot-bing", "zeroshot-basic", "instruction")
DEFAULT_TEMPLATE = "zeroshot-bing"


@dataclass(frozen=True)
class UmbrelaTemplate:
    """One prompt template: its text (``{query}``, ``{passage}``, the variant's ``{instruction}``) and source."""

    name: str
    text: str
    source: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    @property
    def takes_instruction(self) -> bool:
        return "{instruction}" in self.text

    def render(self, query: str, passage: str, instruction: str = "") -> str:
        """The user turn, filled as the release fills it (``str.format``; ``examples`` empty)."""
        fields = {"examples": "", "query": query, "passage": passage}
        if self.takes_instruction:
            fields["instruction"] = instruction
        return self.text.format(**fields)


def load_template(name: str) -> UmbrelaTemplate:
    """The template ``name`` (one of :data:`TEMPLATE_NAMES`); ValueError naming the choices otherwise."""
    if name not in TEMPLATE_NAMES:
        raise ValueError(f"unknown UMBRELA template {name!r}; choose one of {', '.join(TEMPLATE_NAMES)}")
    stem = name.replace("-", "_")
    text = files("harness.judges").joinpath(f"prompts/umbrela_{stem}.txt").read_bytes().decode("utf-8")
    source = (f"castorini/umbrela@{UMBRELA_COMMIT}:{_RELEASE_FILES[name]} (prefix_user)" if name in _RELEASE_FILES
              else f"this project's variant of {DEFAULT_TEMPLATE} (harness/judges/prompts/umbrela_{stem}.txt)")
    return UmbrelaTemplate(name, text, source)


_HEAD = (r'"o"\s*[:-=]?\s*(0|1|2|3)', r"\'o\'\s*[:-=]?\s*(0|1|2|3)", r"o\s*[:-=]?\s*(0|1|2|3)",
         r'"overall_score"\s*[:-=]?\s*(0|1|2|3)', r'"overall"\s*[:-=]?\s*(0|1|2|3)',
         r'"overall score"\s*[:-=]?\s*(0|1|2|3)', r'"final score"\s*[:-=]?\s*(0|1|2|3)',
         r"final score\s*[:-=]?\s*(0|1|2|3)", r"final score is (0|1|2|3)", r'"final_score"\s*[:-=]?\s*(0|1|2|3)',
         r'"score"\s*[:-=]?\s*(0|1|2|3)', r'"o_score"\s*[:-=]?\s*(0|1|2|3)', r"output score is (0|1|2|3)",
         r"score is (0|1|2|3)")
#: added after the paper (e2c4e41 has them between "score is N" and "[a-z]+ is N")
_SCORE_OF = (r"score of\s+(0|1|2|3)", r"assign(?:ing)?\s+(?:it\s+)?(?:a\s+)?score of\s+(0|1|2|3)",
             r"conclude(?:s|d)?\s+with\s+(?:a\s+)?score of\s+(0|1|2|3)",
             r"give(?:n)?\s+(?:it\s+)?(?:a\s+)?score of\s+(0|1|2|3)",
             r"i (?:would )?(?:give|assign)\s+(?:it\s+)?(?:a\s+)?score of\s+(0|1|2|3)", r"score:\s*(0|1|2|3)")
_TAIL = (r"[a-zA-Z]+\s+is\s+(0|1|2|3)\s", r"relevance category\s*[:-=]?\s*(0|1|2|3)",
         r"relevance category\s*[:-=]?\s*(0|1|2|3)", r"relevance category is (0|1|2|3)",
         r"it falls into the category (0|1|2|3)", r"category\s*(0|1|2|3)", r"relevance category (0|1|2|3)",
         r"relevance category for this passage would be (0|1|2|3)", r"the relevance category would be (0|1|2|3)",
         r"\n*(0|1|2|3)")
_FLAGS = re.IGNORECASE | re.MULTILINE | re.DOTALL
#: parser name -> the release's patterns, in order
PARSERS = MappingProxyType({
    "release": tuple(re.compile(p, _FLAGS) for p in (*_HEAD, *_SCORE_OF, *_TAIL)),
    "paper": tuple(re.compile(p, _FLAGS) for p in (*_HEAD, *_TAIL)),
})
DEFAULT_PARSER = "release"


@dataclass(frozen=True)
class ParsedGrade:
    """A reply's grade (None: no pattern matched) and the pattern that gave it (its index in the list)."""

    grade: int | None
    pattern: int | None = None


def parse_grade(reply: str, parser: str = DEFAULT_PARSER) -> ParsedGrade:
    """The grade of ``reply`` by the release's rule (module docstring)."""
    text = reply.strip().lower()
    for i, pattern in enumerate(PARSERS[parser]):
        last = None
        for found in pattern.finditer(text):
            last = found
        if last is not None:
            return ParsedGrade(int(last.group(1)), i)
    return ParsedGrade(None)
