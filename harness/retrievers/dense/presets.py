"""Published query/document formats of instruction-aware embedding models (pure data).

A :class:`Preset` holds what a model card prescribes: the canonical Hugging Face id, the query and
document templates, whether to L2-normalise, the pooling, and the default task instruction.
Templates use three placeholders, substituted with ``str.replace`` (other braces are literal):

- ``{text}``: the query or document text (a template without it is a prefix);
- ``{instruction}``: the task instruction (the preset's default, or ``instruction=...``);
- ``{eos}``: the tokenizer's EOS token (empty when it has none), for models that want it appended.

Select one with ``dense:preset=e5-mistral`` (the model then defaults to the preset's) or let
:func:`detect_preset` pick it from the model name. Importing this module imports no model library.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from types import MappingProxyType
from typing import Any

from harness.concepts.errors import HarnessError

WEB_SEARCH_TASK = "Given a web search query, retrieve relevant passages that answer the query"


@dataclass(frozen=True)
class Preset:
    """One model family's published usage."""

    name: str
    model: str
    query_template: str = "{text}"
    doc_template: str = "{text}"
    normalize: bool = True
    pooling: str = "mean"
    instruction: str = ""
    #: query template used when the instruction is empty (GritLM drops the user turn then)
    bare_query_template: str | None = None
    #: override the model's Pooling ``include_prompt`` (False: the prefix is not pooled); None keeps it
    include_prompt: bool | None = None
    max_length: int | None = None
    trust_remote_code: bool = False
    padding_side: str | None = None
    #: the pooling applied whatever the checkpoint declares (``cls``, ``pooler``, ``mean``, ``last-token``;
    #: :mod:`harness.retrievers.dense.pooled`); None: the model's own (sentence-transformers)
    pooling_mode: str | None = None
    #: a separate query encoder (DPR); None: the same model encodes queries and documents
    query_model: str | None = None
    #: regular expressions matched (case-insensitively) against a model name or path
    patterns: tuple[str, ...] = field(default=(), compare=False)
    reference: str = field(default="", compare=False)
    notes: str = field(default="", compare=False)

    def templates(self, instruction: str | None = None) -> tuple[str, str]:
        """The (query, document) templates with ``{instruction}`` filled in."""
        instr = self.instruction if instruction is None else instruction
        query = self.query_template
        if not instr and self.bare_query_template is not None:
            query = self.bare_query_template
        return query.replace("{instruction}", instr), self.doc_template.replace("{instruction}", instr)

    def format_query(self, text: str, instruction: str | None = None, eos: str = "") -> str:
        """The exact string the model sees for a query."""
        return render(self.templates(instruction)[0], text, eos)

    def format_document(self, text: str, eos: str = "") -> str:
        """The exact string the model sees for a document."""
        return render(self.templates()[1], text, eos)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("patterns")
        return out


def split_template(template: str, eos: str = "") -> tuple[str, str]:
    """``(prefix, suffix)`` around ``{text}``, with ``{eos}`` filled in; no ``{text}``: all prefix."""
    template = template.replace("{eos}", eos)
    if "{text}" not in template:
        return template, ""
    prefix, suffix = template.split("{text}", 1)
    return prefix, suffix.replace("{text}", "")


def render(template: str, text: str, eos: str = "") -> str:
    """Fill a template's ``{text}`` and ``{eos}`` (``{instruction}`` already substituted)."""
    prefix, suffix = split_template(template, eos)
    return prefix + text + suffix


PRESETS: Mapping[str, Preset] = MappingProxyType({
    p.name: p
    for p in [
        Preset(
            "minilm", "sentence-transformers/all-MiniLM-L6-v2",
            pooling="mean", patterns=(r"all-minilm-l(6|12)-v\d",),
            reference="https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2",
            notes="The default: no prefixes; the model normalises its own output; 256 tokens.",
        ),
        Preset(
            "e5", "intfloat/e5-base-v2", "query: {text}", "passage: {text}",
            pooling="mean", patterns=(r"e5-(small|base|large)(?![\w-]*instruct)",),
            reference="https://huggingface.co/intfloat/e5-base-v2",
            notes="E5 v1/v2 and multilingual-e5 (not -instruct): 'query: ' / 'passage: ' prefixes.",
        ),
        Preset(
            "e5-instruct", "intfloat/multilingual-e5-large-instruct",
            "Instruct: {instruction}\nQuery: {text}", "{text}",
            pooling="mean", instruction=WEB_SEARCH_TASK, patterns=(r"e5-(small|base|large)[\w-]*instruct",),
            reference="https://huggingface.co/intfloat/multilingual-e5-large-instruct",
            notes="Task instruction on the query side only; documents unprefixed.",
        ),
        Preset(
            "bge", "BAAI/bge-base-en-v1.5",
            "Represent this sentence for searching relevant passages: {text}", "{text}",
            pooling="cls", patterns=(r"bge-(small|base|large)-en",),
            reference="https://huggingface.co/BAAI/bge-base-en-v1.5",
            notes="BGE v1/v1.5 English: the instruction on short queries only; CLS pooling.",
        ),
        Preset(
            "e5-mistral", "intfloat/e5-mistral-7b-instruct",
            "Instruct: {instruction}\nQuery: {text}", "{text}",
            pooling="last-token (EOS appended by the tokenizer)", instruction=WEB_SEARCH_TASK,
            max_length=4096, patterns=(r"e5-mistral",),
            reference="https://huggingface.co/intfloat/e5-mistral-7b-instruct",
            notes="7B decoder; the repository's sentence-transformers config does last-token pooling.",
        ),
        Preset(
            "gritlm", "GritLM/GritLM-7B",
            "<|user|>\n{instruction}\n<|embed|>\n{text}", "<|embed|>\n{text}",
            bare_query_template="<|embed|>\n{text}",
            pooling="mean over the text tokens (instruction excluded)", include_prompt=False,
            instruction=WEB_SEARCH_TASK, patterns=(r"gritlm",),
            reference="https://huggingface.co/GritLM/GritLM-7B",
            notes="GritLM embeds with bidirectional attention (the gritlm package); loaded through "
                  "sentence-transformers the attention is the repository's default.",
        ),
        Preset(
            "dpr", "facebook/dpr-ctx_encoder-single-nq-base", pooling="pooler_output (DPR's CLS vector)",
            pooling_mode="pooler", query_model="facebook/dpr-question_encoder-single-nq-base",
            patterns=(r"dpr-(ctx|question)_encoder",),
            reference="https://huggingface.co/facebook/dpr-ctx_encoder-single-nq-base; github colinzhaoust/pir",
            notes="DPR: a question encoder for queries, a context encoder for documents, pooler_output of each; "
                  "compared by cosine as the PIR code does.",
        ),
        Preset(
            "simcse", "princeton-nlp/sup-simcse-bert-base-uncased", pooling="pooler_output (CLS -> dense -> tanh)",
            pooling_mode="pooler", patterns=(r"simcse",),
            reference="https://github.com/princeton-nlp/SimCSE (README: pooler_output); github colinzhaoust/pir",
            notes="SimCSE sup/unsup BERT and RoBERTa: the pooler output, cosine (PIR, BIRCO).",
        ),
        Preset(
            "contriever", "facebook/contriever", pooling="mean over the attended tokens", pooling_mode="mean",
            patterns=(r"contriever",),
            reference="https://github.com/facebookresearch/contriever (mean_pooling)",
            notes="Contriever's own mean pooling; the PIR code took pooler_output for it too (an untrained pooler: "
                  "pass pooling=pooler to reproduce that), and compares by cosine.",
        ),
        Preset(
            "instructor", "hkunlp/instructor-large",
            "{instruction} {text}", "Represent the Wikipedia document for retrieval: {text}",
            pooling="mean over the text tokens (instruction excluded)", include_prompt=False,
            instruction="Represent the Wikipedia question for retrieving supporting documents:",
            patterns=(r"instructor-(base|large|xl)",),
            reference="https://huggingface.co/hkunlp/instructor-large",
            notes="INSTRUCTOR pairs 'Represent the <domain> <text type> for <task>:' with each text; "
                  "the original checkpoints need the InstructorEmbedding module classes.",
        ),
    ]
})


def get_preset(name: str) -> Preset:
    """A preset by name; an unknown name is a :class:`HarnessError` listing the known ones."""
    key = name.strip().lower()
    if key in PRESETS:
        return PRESETS[key]
    close = difflib.get_close_matches(key, PRESETS, n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise HarnessError(f"unknown dense preset {name!r}{hint} (known: {', '.join(PRESETS)}, or 'none')")


def detect_preset(model: str) -> Preset | None:
    """The preset whose name patterns match ``model`` (an id or a path), or None."""
    low = model.lower()
    for preset in PRESETS.values():
        if any(re.search(p, low) for p in preset.patterns):
            return preset
    return None


__all__ = ["PRESETS", "Preset", "WEB_SEARCH_TASK", "detect_preset", "get_preset", "render", "split_template"]
