"""The instructions BRIGHT's official code gives instruction-following retrievers.

Transcribed from xlang-ai/BRIGHT ``d99e8391d967d4c2b3a74732530d2309e2fc92b6``, ``configs/<model>/<task>.json``
(``instructions`` for the short documents, ``instructions_long`` for ``--long_context``; ``{task}`` is
filled with the raw split key, e.g. ``earth_science``: ``retrievers.py`` formats ``task=args.task``, its
``TASK_MAP`` is unused). ``bm25``, ``sbert``, ``openai``, ``cohere``, ``voyage`` and ``google`` have none.

How the official code applies them (``retrievers.py``):

- ``e5``, ``sf``, ``qwen``, ``qwen2`` (``retrieval_sf_qwen_e5``) and ``bge`` (``retrieval_sbert_bge``):
  ``add_instruct_concatenate``: the query text becomes ``instruction.format(task=task) + query``; documents
  get nothing. The ``instructions=`` dataset argument reproduces exactly this.
- ``inst-l``, ``inst-xl`` (``retrieval_instructor``): the query and document instructions are given to
  sentence-transformers as ``prompt=``; ``grit`` (``retrieval_grit``): GritLM's ``encode(instruction=)``.
  These models pool over the text without the instruction's tokens, which a text prefix cannot do, so
  ``instructions=`` refuses them; their texts are here (and in docs/bright.md) for a retriever that takes
  prompts.
"""

from __future__ import annotations

from types import MappingProxyType

#: the split kinds whose instructions differ
_KIND = MappingProxyType({
    **dict.fromkeys(("biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow",
                     "sustainable_living"), "post"),
    "pony": "pony",
    "leetcode": "coding",
    "aops": "math-examples",
    "theoremqa_questions": "math-examples",
    "theoremqa_theorems": "math-theorems",
})

_E5 = MappingProxyType({
    "post": ("Instruct: Given a {task} post, retrieve relevant passages that help answer the post\nQuery: ",
             "Instruct: Given a {task} post, retrieve relevant documents that help answer the post\nQuery: "),
    "pony": ("Instruct: Given a {task} question, retrieve relevant passages that help answer the question\nQuery: ",
             "Instruct: Given a {task} question, retrieve relevant documents that help answer the question\nQuery: "),
    "coding": ("Instruct: Given a coding problem, retrieve relevant examples that help answer the problem\nQuery: ",
               None),
    "math-examples": ("Instruct: Given a Math problem, retrieve relevant examples that help answer the problem\n"
                      "Query: ", None),
    "math-theorems": ("Instruct: Given a Math problem, retrieve relevant theorems that help answer the problem\n"
                      "Query: ", None),
})
_BGE = MappingProxyType({
    "post": ("Represent this {task} post for searching relevant passages: ",
             "Represent this {task} post for searching relevant documents: "),
    "pony": ("Represent this Pony question for searching relevant passages: ",
             "Represent this Pony question for searching relevant documents: "),
    "coding": ("Represent this Coding problem for searching relevant examples: ", None),
    "math-examples": ("Represent this Math problem for searching relevant examples: ", None),
    "math-theorems": ("Represent this Math problem for searching relevant theorems: ", None),
})
_INSTRUCTOR_QUERY = MappingProxyType({
    "post": ("Represent the {task} post for retrieving relevant paragraphs: ",
             "Represent the {task} post for retrieving relevant documents: "),
    "pony": ("Represent the Pony question for retrieving relevant paragraphs: ",
             "Represent the Pony question for retrieving relevant documents: "),
    "coding": ("Represent the Coding problem for retrieving relevant examples: ", None),
    "math-examples": ("Represent the Math problem for retrieving relevant examples: ", None),
    "math-theorems": ("Represent the Math problem for retrieving relevant theorems: ", None),
})
_INSTRUCTOR_DOC = MappingProxyType({
    "post": ("Represent the {task} paragraph for retrieval: ", "Represent the {task} document for retrieval: "),
    "pony": ("Represent the Pony paragraph for retrieval: ", "Represent the Pony document for retrieval: "),
    "coding": ("Represent the Coding example for retrieval: ", None),
    "math-examples": ("Represent the Math example for retrieval: ", None),
    "math-theorems": ("Represent the Math theorem for retrieval: ", None),
})
_GRIT = MappingProxyType({
    "post": ("<|user|>\nGiven a {task} post, retrieve relevant passages that help answer the post\n<|embed|>\n",
             "<|user|>\nGiven a {task} post, retrieve relevant documents that help answer the post\n<|embed|>\n"),
    "pony": ("<|user|>\nGiven a {task} question, retrieve relevant passages that help answer the question\n<|embed|>\n",
             "<|user|>\nGiven a {task} question, retrieve relevant documents that help answer the question\n"
             "<|embed|>\n"),
    "coding": ("<|user|>\nGiven a coding problem, retrieve relevant examples that help answer the problem\n<|embed|>\n",
               None),
    "math-examples": ("<|user|>\nGiven a Math problem, retrieve relevant examples that help answer the problem\n"
                      "<|embed|>\n", None),
    "math-theorems": ("<|user|>\nGiven a Math problem, retrieve relevant theorems that help answer the problem\n"
                      "<|embed|>\n", None),
})
_GRIT_DOC = MappingProxyType({kind: ("<|embed|>\n", "<|embed|>\n" if kind in ("post", "pony") else None)
                              for kind in _E5})

#: family -> (query templates, document templates or None); each template table: kind -> (short, long)
_FAMILIES = MappingProxyType({
    "e5": (_E5, None), "sf": (_E5, None), "qwen": (_E5, None), "qwen2": (_E5, None),
    "bge": (_BGE, None),
    "inst-l": (_INSTRUCTOR_QUERY, _INSTRUCTOR_DOC), "inst-xl": (_INSTRUCTOR_QUERY, _INSTRUCTOR_DOC),
    "grit": (_GRIT, _GRIT_DOC),
})
#: the families whose instruction the official code concatenates before the query text
CONCATENATED = ("e5", "sf", "qwen", "qwen2", "bge")
#: every family with instructions
FAMILIES = tuple(_FAMILIES)


def instruction(family: str, split: str, role: str = "query", long: bool = False) -> str | None:
    """The official instruction of ``family`` for ``split`` (``role`` ``query`` or ``document``; the long
    wording with ``long``), ``{task}`` filled with the split key; None where the official config has none
    (document instructions of the concatenating families; the long setting of splits without long
    documents). Unknown names raise ``KeyError``."""
    queries, docs = _FAMILIES[family]
    table = queries if role == "query" else docs
    if table is None:
        return None
    template = table[_KIND[split]][1 if long else 0]
    return None if template is None else template.format(task=split)


def instruction_table() -> dict[str, dict[str, dict[str, str | None]]]:
    """``{family: {split: {"query", "document", "query_long", "document_long"}}}``: every official text."""
    return {family: {split: {"query": instruction(family, split), "document": instruction(family, split, "document"),
                             "query_long": instruction(family, split, long=True),
                             "document_long": instruction(family, split, "document", long=True)}
                     for split in _KIND}
            for family in _FAMILIES}
