"""harness-birco: BIRCO (Wang et al., 2024), benchmark of IR tasks with complex objectives.

Registers

- the dataset ``birco`` (``task=arguana|clinical-trial|relic|wtb|doris-mae``, ``split=test|dev``),
  read from the released pickles through a restricted unpickler;
- tasks ``birco:arguana``, ``birco:clinical-trial``, ``birco:relic``, ``birco:wtb`` (test sets, the
  authors' E5-large-v2 order as the candidates) and ``birco:doris-mae`` (its *dev* set: the test set is
  not distributed here), and the suite ``birco`` (the four test tasks);
- metrics ``birco-ndcg`` (``birco-ndcg@10``) and ``birco-recall`` (``birco-recall@5``): BIRCO's linear-gain
  nDCG and uncapped recall with the bootstrap mean and SE (1,000 resamples, seed 42);
- rerankers ``birco-score``, ``birco-reason``, ``birco-subtask`` (pointwise LLM protocols), ``birco-rank``
  (RankGPT with BIRCO's settings), ``birco-random`` (random-order baseline) and ``birco-ranks`` (a rank
  pickle in BIRCO's submission format, ``path=FILE``).

Importing this module is light: no numpy, no LLM layer, no SDK; the factories import on use.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from harness import hookimpl, lazy

__version__ = "0.1.0"

#: test tasks in the paper's table order (DORIS-MAE's test set is not available: dev only)
TEST_TASKS = ("arguana", "wtb", "clinical-trial", "relic")
TASKS = ("doris-mae", *TEST_TASKS)
DEV_ONLY = ("doris-mae",)
#: dev sets distributed here (ArguAna's and RELIC's are not)
DEV_TASKS = ("clinical-trial", "doris-mae", "wtb")

SOURCE = "BIRCO-benchmark/BIRCO @84b2b05c862cff6f6a80c06a6a11e6a7cd12e838 : datasets/"
BASE_URL = "https://raw.githubusercontent.com/BIRCO-benchmark/BIRCO/84b2b05c862cff6f6a80c06a6a11e6a7cd12e838/datasets"

#: data-folder-relative path -> (sha256, size), from the shared data's SHA256SUMS
FILES: Mapping[str, tuple[str, int]] = MappingProxyType({
    "birco/arguana/test_set.pickle": ("86d9f5838c8db84b63a61e670ba8fe4259cd7cc6176d5587c2c2289e3ceab6ab", 3879322),
    "birco/arguana/e5_rank.pickle": ("bdeeb655892717ecd8b2978e6909067e545c42c96fb943f17499bece72611fb2", 151023),
    "birco/clinical-trial/test_set.pickle": (
        "f772fc44bf18c6e60c1d14d8306013457bb2dbcace14316467b9ea8abf224da8", 4088592),
    "birco/clinical-trial/e5_rank.pickle": (
        "32a3df4542a6cbb3dfc40fc666c8f2f29686e2f9106b46d2fc306dd539710b01", 50923),
    "birco/clinical-trial/dev_set.pickle": (
        "bf0bccefdb56c580a286e281f5db92bb67ef3c2e6b86cf9171d57d52def6a6b8", 282372),
    "birco/doris-mae/dev_set.pickle": ("cdb392ae3a895bd30a19cbc9cd4268fb5eeac0b9667fc52db5fe44ff15f9733c", 3629616),
    "birco/relic/test_set.pickle": ("dcaffab34e76d7b919fd7b4f87aa972ddc43beeee82f8c84e00596e9bc2473b5", 2635130),
    "birco/relic/e5_rank.pickle": ("3150f2d0e3a3c973c534610dd58b15c68dca8c3194020bebf47c9c06d8f13d1a", 65724),
    "birco/wtb/test_set.pickle": ("c6325cfc315407016250aefa366c43d319c406ffa8ee6e882aa7d7b9ec007f13", 2101382),
    "birco/wtb/e5_rank.pickle": ("a91e173606cca8e1bd4dca012b5afd808ac971e9083a90727f13a0e29e3c3f86", 50856),
    "birco/wtb/dev_set.pickle": ("07b764e2122d620a20180beadd222eadc82c71162f489f494c567388e33f3253", 3516769),
})

DEFAULT_METRICS = ("birco-ndcg@10", "birco-recall@5")
#: the summary row `harness eval` prints (Task.table), as the paper: the bootstrap mean x100 (± SE)
TABLE = (("nDCG@10", "birco-ndcg@10:estimate", 100), ("R@5", "birco-recall@5:estimate", 100))

_DESCRIPTIONS = MappingProxyType({
    "doris-mae": "DORIS-MAE (dev set): abstracts meeting a multi-part CS research need",
    "arguana": "ArguAna: the best counter-argument",
    "wtb": "WhatsThatBook: the book from a fuzzy, half-remembered description",
    "clinical-trial": "Clinical-Trial: trials a patient case qualifies for",
    "relic": "RELIC: the quotation for the [masked sentence(s)] of a literary analysis",
})


def default_split(task: str) -> str:
    return "dev" if task in DEV_ONLY else "test"


def task_files(task: str, split: str | None = None) -> list[Any]:
    """The task's files (data-folder relative) with source URL, sha256 and size."""
    from harness import DataFile

    split = split or default_split(task)
    names = [f"birco/{task}/{split}_set.pickle"]
    if split == "test":
        names.append(f"birco/{task}/e5_rank.pickle")
    out = []
    for rel in names:
        sha, size = FILES[rel]
        out.append(DataFile(path=rel, url=f"{BASE_URL}/{rel.removeprefix('birco/')}", sha256=sha, size=size))
    return out


#: MTEB's BIRCO tasks (mteb/tasks/retrieval/eng/birco_*.py @ a905523d, v2.20.0): task name and dataset revision
MTEB_TASKS = MappingProxyType({
    "arguana": ("BIRCO-ArguAna", "0229bee36500c92028874b55b5a1d08e5ee37bb9"),
    "clinical-trial": ("BIRCO-ClinicalTrial", "ef7b3a7f08dd2f0f7bdf0cf23391f8a1a26ad477"),
    "relic": ("BIRCO-Relic", "3d593fde907860102a282b4a6ea7fb1e1f1f83dd"),
    "wtb": ("BIRCO-WTB", "ea824f8065fa62e2e770a8a201c20b03abf87540"),
})


def mteb_block(name: str) -> dict[str, Any]:
    """The MTEB task a BIRCO test task corresponds to, and why its scores are not MTEB's (docs/mteb.md)."""
    task_name, revision = MTEB_TASKS[name]
    return {
        "task_name": task_name, "dataset": f"mteb/{task_name}-Test", "dataset_revision": revision,
        "split": "test", "main_score": "ndcg_at_10", "metrics": {"birco-ndcg@10": "ndcg_at_10"},
        "differs": f"MTEB's {task_name} retrieves from one corpus, the union of every query's pool (no top_ranked, "
                   "mteb/descriptive_stats/Retrieval), and scores nDCG@10 once; the harness ranks each query's own "
                   "BIRCO pool and reports BIRCO's bootstrap nDCG@10",
    }


def birco_task(name: str) -> Any:
    from harness import Task

    split = default_split(name)
    return Task(
        name=f"birco:{name}",
        dataset="birco",
        dataset_args={"task": name, "split": split},
        description=f"BIRCO {_DESCRIPTIONS[name]}" + (" (dev set: the test set is not distributed here)"
                                                      if split == "dev" else ""),
        metrics=list(DEFAULT_METRICS),
        table=list(TABLE),
        first_stage="candidates",
        depth=100_000,  # whole pools (Clinical-Trial up to 153, DORIS-MAE up to 138): never cut
        query_format="{text}",  # the objective travels in Query.instruction, for the +O protocols
        files=task_files(name, split),
        mteb=mteb_block(name) if name in MTEB_TASKS and split == "test" else {},
    )


def birco_dev_task(name: str) -> Any:
    """``birco-dev:<name>``: the dev set, pool order as candidates, pairwise accuracy on its triplets."""
    from harness import Task

    return Task(name=f"birco-dev:{name}", dataset="birco", dataset_args={"task": name, "split": "dev"},
                description=f"BIRCO dev set of {name}: triplet pairwise accuracy", first_stage="candidates",
                metrics=["birco-pairwise", *DEFAULT_METRICS], depth=100_000, query_format="{text}",
                files=task_files(name, "dev"))


def birco_suite() -> Any:
    from harness import Task

    files = [f for t in TEST_TASKS for f in task_files(t)]
    return Task(name="birco", tasks=[f"birco:{t}" for t in TEST_TASKS], metrics=list(DEFAULT_METRICS),
                table=list(TABLE), first_stage="candidates", depth=100_000, query_format="{text}", files=files,
                description="BIRCO test suite: ArguAna, WhatsThatBook, Clinical-Trial, RELIC (DORIS-MAE's test set "
                            "is not available); unweighted mean over tasks")


@hookimpl
def register_datasets(register):
    register("birco", lazy("harness_birco.data:load_birco"),
             "BIRCO pickles (restricted unpickler): task=arguana|clinical-trial|relic|wtb|doris-mae, split=test|dev")


@hookimpl
def register_tasks(register):
    for name in TASKS:
        register(f"birco:{name}", (lambda n=name: birco_task(n)), f"BIRCO {_DESCRIPTIONS[name]}")
    register("birco", birco_suite, "BIRCO suite: the four test tasks, mean over tasks")
    for name in DEV_TASKS:
        register(f"birco-dev:{name}", (lambda n=name: birco_dev_task(n)),
                 f"BIRCO dev set of {name}: pairwise accuracy on the dev triplets (prompt tuning)")


@hookimpl
def register_metrics(register):
    register("birco-ndcg", lazy("harness_birco.metrics:BircoNDCG"),
             "BIRCO nDCG@k: linear gain on raw grades, ideal from the whole pool; bootstrap mean/SE (1000, seed 42)")
    register("birco-recall", lazy("harness_birco.metrics:BircoRecall"),
             "BIRCO Recall@k: relevance >= 1, not capped, queries without relevant docs skipped; bootstrap mean/SE")
    register("birco-pairwise", lazy("harness_birco.triplets:PairwiseAccuracy"),
             "BIRCO dev triplets (released extraction rules): pairwise accuracy of a run; rule=auto, sample=N")


@hookimpl
def register_rerankers(register):
    register("birco-score", lazy("harness_birco.pointwise:ScoreReranker"),
             "BIRCO Score(+O): one LLM call per (query, passage), 0-10 after SCORE:, ties by incoming (E5) order")
    register("birco-reason", lazy("harness_birco.pointwise:ReasonReranker"),
             "BIRCO Reason(+O): decision criteria written once per query, then pointwise scoring with them")
    register("birco-subtask", lazy("harness_birco.pointwise:SubtaskReranker"),
             "BIRCO Subtask(+O): criteria become requirements; mean of per-(requirement, passage) scores")
    register("birco-rank", lazy("harness_birco.rank:make_birco_rank"),
             "BIRCO Rank(+O): RankGPT, window 10, step 5, one bottom-up pass from E5, ids from 0, [ ] -> ( )")
    register("birco-random", lazy("harness_birco.baselines:RandomOrder"),
             "Random order of each pool (BIRCO's random baseline), seed=N")
    register("birco-ranks", lazy("harness_birco.baselines:RankFile"),
             "A ranking pickle in BIRCO's submission format {qid: [cid, ...]} (path=FILE), read safely")


__all__ = ["DEFAULT_METRICS", "DEV_TASKS", "FILES", "TASKS", "TEST_TASKS", "birco_dev_task", "birco_suite",
           "birco_task", "task_files"]
