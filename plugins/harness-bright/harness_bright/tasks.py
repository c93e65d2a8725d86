"""BRIGHT's tasks, their files on the Hub, the variants a dataset spec picks, and the ``bright`` suite."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from harness import DataFile, HarnessError, Task

from .instructions import CONCATENATED, FAMILIES

#: the Hub dataset, spelled as the Hub lists it (the official code loads ``xlangai/bright``)
HUB_REPO = "xlangai/BRIGHT"
#: the commit every file is fetched at: the one the facts sheet cites for the file names
#: (``gpt4_reason/biology-00000-of-00001.parquet``; ../shared/notes/field-benchmarks.md §2)
REVISION = "101f939fee95b01aa6317d440d71196334031506"
HUB_URL = "https://huggingface.co/datasets/{repo}/resolve/{revision}/{path}"
#: the twelve splits (= tasks), in the paper's order
SPLITS = ("biology", "earth_science", "economics", "psychology", "robotics", "stackoverflow", "sustainable_living",
          "leetcode", "pony", "aops", "theoremqa_theorems", "theoremqa_questions")
#: the splits with long documents (``gold_ids_long``): the 7 StackExchange splits and pony (MTEB ``DOMAINS_LONG``)
LONG_SPLITS = SPLITS[:7] + ("pony",)
#: the LLM-reasoning query configs (``run.py --reasoning gpt4`` reads ``gpt4_reason``)
REASONING = ("gpt4_reason", "claude-3-opus_reason", "Gemini-1.0_reason", "grit_reason", "llama3-70b_reason")
QUERY_CONFIGS = ("examples", *REASONING)
#: the official metrics (``calculate_retrieval_metrics``: NDCG@10 headline, MAP@10 = map_cut, Recall@100, P@5, MRR)
METRICS = ("nDCG@10", "MAP@10", "Recall@100", "P@5", "MRR")
DEPTH = 1000  # the official runs keep the top 1,000 after removing excluded_ids
TABLE = (("nDCG@10", "nDCG@10", 100), ("MAP@10", "MAP@10", 100), ("Recall@100", "Recall@100", 100),
         ("P@5", "P@5", 100), ("MRR", "MRR", 100))
#: the MTEB v1.1 task of each split (mteb/tasks/retrieval/eng/bright_v1_1_retrieval.py)
MTEB_NAMES = MappingProxyType({
    "biology": "BrightBiology", "earth_science": "BrightEarthScience", "economics": "BrightEconomics",
    "psychology": "BrightPsychology", "robotics": "BrightRobotics", "stackoverflow": "BrightStackoverflow",
    "sustainable_living": "BrightSustainableLiving", "leetcode": "BrightLeetcode", "pony": "BrightPony",
    "aops": "BrightAops", "theoremqa_theorems": "BrightTheoremQATheorems",
    "theoremqa_questions": "BrightTheoremQAQuestions",
})
MTEB_DATASET = "mteb/BRIGHT"
MTEB_REVISION = "c26703e6600d97c579ee2985f16cf307db13ed85"
MTEB_DIFFERS = (f"the harness reads {HUB_REPO} @ {REVISION}; MTEB's BRIGHT(v1.1) tasks read {MTEB_DATASET} @ "
                f"{MTEB_REVISION}, a copy whose contents could not be compared with it here (BRIGHT was re-uploaded "
                "and its counts differ between revisions)")


def hub_path(config: str, split: str) -> str:
    """A file's path in the repository: ``<config>/<split>-00000-of-00001.parquet``."""
    return f"{config}/{split}-00000-of-00001.parquet"


def local_path(config: str, split: str) -> str:
    """Where it goes in the data folder (the commit in the path: two uploads never share a folder)."""
    return f"bright/{REVISION}/{hub_path(config, split)}"


def data_file(config: str, split: str) -> DataFile:
    """A Hub file at the pinned commit (no checksum is published: results.json records its sha256)."""
    return DataFile(path=local_path(config, split),
                    url=HUB_URL.format(repo=HUB_REPO, revision=REVISION, path=hub_path(config, split)))


def variant(task: Any, query: Any = "examples", documents: Any = "short", instructions: Any = "none",
            where: str = "bright") -> dict[str, Any]:
    """The checked arguments of one BRIGHT setting: ``task`` (a split), ``query`` (``examples`` or a
    ``*_reason`` config; ``gpt4`` is ``gpt4_reason`` as in ``run.py --reasoning``), ``documents``
    (``short`` or ``long``), ``instructions`` (``none`` or a concatenating family). One
    :class:`HarnessError` naming the accepted values otherwise."""
    if task not in SPLITS:
        raise HarnessError(f"{where}: task must be one of {', '.join(SPLITS)}, not {task!r:.80}")
    query = "examples" if query in ("examples", "original") else query
    if isinstance(query, str) and f"{query}_reason" in REASONING:
        query = f"{query}_reason"
    if query not in QUERY_CONFIGS:
        raise HarnessError(f"{where}: query must be examples (the original queries) or one of {', '.join(REASONING)} "
                           f"(the LLM reasoning as the query), not {query!r:.80}")
    if documents not in ("short", "long"):
        raise HarnessError(f"{where}: documents must be short or long, not {documents!r:.80}")
    if documents == "long" and task not in LONG_SPLITS:
        raise HarnessError(f"{where}: task={task} has no long documents; documents=long exists for "
                           f"{', '.join(LONG_SPLITS)}")
    instructions = "none" if instructions in (None, "", "none") else instructions
    if instructions != "none" and instructions not in CONCATENATED:
        why = (f"the official code gives {instructions} its instructions as model prompts (pooled without "
               "them, with document instructions), which a query prefix cannot reproduce; docs/bright.md lists "
               "the texts") if instructions in FAMILIES else f"unknown family {instructions!r:.80}"
        raise HarnessError(f"{where}: instructions must be none or one of {', '.join(CONCATENATED)} (prepended to "
                           f"the query as the official code does): {why}")
    return {"task": task, "query": query, "documents": documents, "instructions": instructions}


def variant_files(args: dict[str, Any]) -> list[DataFile]:
    """Exactly the files one setting reads: its queries config and its documents config."""
    corpus = "long_documents" if args["documents"] == "long" else "documents"
    return [data_file(args["query"], args["task"]), data_file(corpus, args["task"])]


def bright_task(split: str, query: Any = "examples", documents: Any = "short", instructions: Any = "none") -> Task:
    """``bright:<split>`` (variant arguments as in the dataset spec: ``--task bright:biology:query=gpt4``)."""
    args = variant(split, query, documents, instructions, where=f"bright:{split}")
    plain = args == variant(split)
    mteb = {"task_name": f"{MTEB_NAMES[split]}Retrieval", "dataset": MTEB_DATASET, "dataset_revision": MTEB_REVISION,
            "split": "standard", "main_score": "ndcg_at_10", "differs": MTEB_DIFFERS,
            "metrics": {"nDCG@10": "ndcg_at_10", "MAP@10": "map_at_10", "Recall@100": "recall_at_100",
                        "P@5": "precision_at_5"}}
    setting = "" if plain else " (" + ", ".join(f"{k}={v}" for k, v in args.items() if k != "task") + ")"
    return Task(
        name=f"bright:{split}",
        dataset="bright",
        description=f"BRIGHT {split}{setting}: reasoning-intensive retrieval, excluded_ids removed",
        dataset_args={k: v for k, v in args.items() if k == "task" or v != variant(split)[k]},
        metrics=list(METRICS),
        first_stage="retrieve",
        retriever="bm25",
        depth=DEPTH,
        files=variant_files(args),
        table=list(TABLE),
        mteb=mteb if plain else {},
    )


def suite_task() -> Task:
    """``bright``: the twelve tasks; the suite reports the unweighted mean over them."""
    return Task(name="bright", description="BRIGHT: 12 reasoning-intensive retrieval tasks; per-task and mean figures",
                tasks=[f"bright:{s}" for s in SPLITS], table=list(TABLE))
