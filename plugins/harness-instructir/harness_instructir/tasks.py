"""The InstructIR tasks: MTEB's copy of the data at MTEB's pin, the two query forms, MTEB's identity.

Data: ``mteb/InstructIR-mteb`` at ``42c3afabe480643b755a7099dbf0f9ebeedaf6ca`` (MTEB task ``InstructIR``,
embeddings-benchmark/mteb ``mteb/tasks/instruction_retrieval/eng/instruct_ir.py``), read through the core's
``mteb`` dataset: configs ``corpus``, ``queries`` (the base query), ``instruction`` (the user-specific
instruction), ``default`` (qrels, split ``test``). Full-corpus retrieval (MTEB type
``InstructionRetrieval``: no ``top_ranked``).
"""

from __future__ import annotations

from types import MappingProxyType

from harness import Task

REPO = "mteb/InstructIR-mteb"
REVISION = "42c3afabe480643b755a7099dbf0f9ebeedaf6ca"
MTEB_TASK = "InstructIR"
#: the metric that reports Robustness@k (registered by this plugin; ``group=text`` for the authors' grouping)
ROBUSTNESS_METRIC = "instructir-Robustness"

#: query text per form: the authors' (kaistAI/InstructIR ``eval/src/beir_utils.py`` builds
#: ``"{0} [SEP] {1}".format(instruction, query)``; ``eval/robust_eval.py`` splits on ``[SEP]``, instruction
#: first) and MTEB's (``_combine_queries_with_instruction_text``: ``text + " " + instruction``)
FORMS = MappingProxyType({"authors": "{instruction} [SEP] {text}", "mteb": "{text} {instruction}"})
TASK_NAMES = MappingProxyType({"authors": "instructir", "mteb": "instructir:mteb"})

DIFFERS = ("the query text is the authors' 'instruction [SEP] query'; MTEB's InstructIR joins 'query instruction' "
           "(task instructir:mteb, which exports)")


def task(form: str = "authors") -> Task:
    """``instructir`` (``form="authors"``, the default) or ``instructir:mteb`` (MTEB's query text)."""
    name = TASK_NAMES[form]
    said = {"authors": "the authors' 'instruction [SEP] query'", "mteb": "MTEB's 'query instruction'"}[form]
    return Task(
        name=name,
        dataset="mteb",
        description=f"InstructIR: 9,906 instruction-specific queries over 16,072 passages, query text {said}; "
                    "nDCG@10 and Robustness@10",
        dataset_args={"repo": REPO, "revision": REVISION, "split": "test", "name": "instructir", "task": name},
        metrics=["nDCG@10", f"{ROBUSTNESS_METRIC}@10"],
        first_stage="retrieve",
        retriever="bm25",
        depth=100,
        query_format=FORMS[form],
        table=[("nDCG@10", "nDCG@10", 100), ("Robustness@10", "Robustness@10", 100)],
        mteb={
            "task_name": MTEB_TASK,
            "dataset": REPO,
            "dataset_revision": REVISION,
            "split": "test",
            "hf_subset": "default",
            "main_score": "robustness_at_10",
            "languages": ["eng-Latn"],
            "metrics": {"nDCG@10": "ndcg_at_10", "Robustness@10": "robustness_at_10"},
            **({"differs": DIFFERS} if FORMS[form] != FORMS["mteb"] else {}),
        },
    )
