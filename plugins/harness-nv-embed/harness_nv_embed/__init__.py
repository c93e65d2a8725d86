"""harness-nv-embed: NVIDIA's NV-Embed-v2 as a harness retriever and reranker.

Use it as ``--retriever plugin:nv-embed`` (or ``plugin:nv-embed:model=/path,instruction=...``).
Formats follow the NV-Embed-v2 model card's sentence-transformers usage:

- queries: ``"Instruct: {task_instruction}\\nQuery: "`` as the prompt, then the query, then EOS;
- passages: no prefix, the passage, then EOS;
- ``SentenceTransformer(model, trust_remote_code=True)`` (latent-attention pooling lives in the
  model's remote code), ``max_seq_length = 32768``, tokenizer ``padding_side = "right"``;
- embeddings L2-normalised, so the dot product is the cosine.

Encoding, caching and exact search are the core's ``DenseRetriever``; this module only holds the
format and registers the components. Importing it imports no torch.
"""

from __future__ import annotations

from typing import Any

from harness import ComponentContext, hookimpl
from harness.retrievers.dense import Preset, render

__version__ = "0.1.0"

MODEL = "nvidia/NV-Embed-v2"
#: the model card's example instruction
DEFAULT_INSTRUCTION = "Given a question, retrieve passages that answer the question"
MAX_LENGTH = 32768
DEFAULT_BATCH_SIZE = 8

NV_EMBED_V2 = Preset(
    name="nv-embed-v2",
    model=MODEL,
    query_template="Instruct: {instruction}\nQuery: {text}{eos}",
    doc_template="{text}{eos}",
    normalize=True,
    pooling="latent-attention (inside the model's trust_remote_code implementation)",
    instruction=DEFAULT_INSTRUCTION,
    max_length=MAX_LENGTH,
    trust_remote_code=True,
    padding_side="right",
    reference="https://huggingface.co/nvidia/NV-Embed-v2",
    notes="Query prefix 'Instruct: <task>\\nQuery: ', passages unprefixed, EOS appended to both, "
          "right padding, max_seq_length 32768, L2-normalised.",
)


def query_prefix(instruction: str = DEFAULT_INSTRUCTION) -> str:
    """The prompt put before every query: ``"Instruct: <instruction>\\nQuery: "``."""
    return f"Instruct: {instruction}\nQuery: "


def format_query(text: str, instruction: str = DEFAULT_INSTRUCTION, eos: str = "</s>") -> str:
    """The exact string NV-Embed-v2 encodes for a query (``eos``: the tokenizer's EOS token)."""
    return render(NV_EMBED_V2.templates(instruction)[0], text, eos)


def format_passage(text: str, eos: str = "</s>") -> str:
    """The exact string NV-Embed-v2 encodes for a passage: the text and EOS, no prefix."""
    return render(NV_EMBED_V2.templates()[1], text, eos)


def _options(model: str, instruction: str | None, batch_size: int, max_length: int,
             options: dict[str, Any]) -> dict[str, Any]:
    if "preset" in options:
        raise TypeError("nv-embed has its own format; 'preset' is not an option")
    return {"model": model, "preset": NV_EMBED_V2, "instruction": instruction, "batch_size": batch_size,
            "max_length": max_length, **options}


def nv_embed_retriever(
    model: str = MODEL,
    instruction: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_length: int = MAX_LENGTH,
    context: ComponentContext | None = None,
    **options: Any,
) -> Any:
    """A ``DenseRetriever`` with NV-Embed-v2's format. ``options``: any other ``dense`` option
    (``device``, ``dtype``, ``cache_dir``, ``normalize``, ``revision``, ...); ``context``: the
    evaluation's (its cache folder and progress settings)."""
    from harness.retrievers.dense import DenseRetriever

    options.setdefault("label", "nv-embed")
    return DenseRetriever(context=context, **_options(model, instruction, batch_size, max_length, options))


def nv_embed_reranker(
    model: str = MODEL,
    instruction: str | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_length: int = MAX_LENGTH,
    context: ComponentContext | None = None,
    **options: Any,
) -> Any:
    """A ``DenseReranker`` with NV-Embed-v2's format (re-scores each candidate list)."""
    from harness.retrievers.dense import DenseReranker

    options.setdefault("label", "nv-embed reranker")
    return DenseReranker(context=context, **_options(model, instruction, batch_size, max_length, options))


@hookimpl
def register_retrievers(register):
    register("nv-embed", nv_embed_retriever,
             f"NV-Embed-v2 bi-encoder ({MODEL}, instruction-prefixed queries, exact search)")


@hookimpl
def register_rerankers(register):
    register("nv-embed", nv_embed_reranker, f"Re-score candidate lists with NV-Embed-v2 ({MODEL})")


__all__ = ["DEFAULT_INSTRUCTION", "MAX_LENGTH", "MODEL", "NV_EMBED_V2", "format_passage", "format_query",
           "nv_embed_reranker", "nv_embed_retriever", "query_prefix"]
