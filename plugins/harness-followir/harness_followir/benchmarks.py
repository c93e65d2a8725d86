"""The FollowIR tasks: which Hub repository and commit each reads, the paper's score, MTEB's identity.

Data: the MTEB-layout releases ``jhu-clsp/<x>-instructions-mteb`` (configs ``corpus``, ``queries``,
``instruction``, ``default`` (qrels, og and changed rows together), ``top_ranked`` and ``qrel_diff``), at
the commits MTEB's ``<X>InstructionRetrieval`` tasks pinned until embeddings-benchmark/mteb commit
``7037bfeaea4a776bd5acd8d47722f5eefe94e141`` (#4200), read through the core's ``mteb`` dataset.
"""

from __future__ import annotations

from dataclasses import dataclass

from harness import Task

#: the metric that reports p-MRR (registered by this plugin; ``ties=release`` for the release rule)
PMRR_METRIC = "followir-p-MRR"


@dataclass(frozen=True)
class Benchmark:
    """One FollowIR collection: ``name`` (``followir:<name>``), the Hub ``repo`` at ``revision``, the
    paper's score (``score``: the og run's MAP@1000, or nDCG@5 for News21) and MTEB's task name."""

    name: str
    title: str
    repo: str
    revision: str
    score: str
    mteb_task: str

    @property
    def task_name(self) -> str:
        return f"followir:{self.name}"

    def dataset_args(self) -> dict[str, str]:
        return {"task": self.name}

    def task(self) -> Task:
        other = "nDCG@5" if self.score == "MAP@1000" else "MAP@1000"
        key = {"MAP@1000": "map_at_1000", "nDCG@5": "ndcg_at_5"}
        return Task(
            name=self.task_name,
            dataset="followir",
            description=f"FollowIR {self.title}: original vs changed instructions over the given 1,000-document "
                        f"pools; {self.score} (og) and p-MRR",
            dataset_args=self.dataset_args(),
            metrics=[self.score, other, PMRR_METRIC, f"{PMRR_METRIC}:ties=release"],
            first_stage="candidates",
            depth=1000,
            query_format="{text} {instruction}",
            table=[(f"{self.score} (og)", f"{self.score}[og]", 100), ("p-MRR", "p-MRR", 100),
                   ("p-MRR (release ties)", "p-MRR[release]", 100)],
            mteb={
                "task_name": self.mteb_task,
                "dataset": self.repo,
                "dataset_revision": self.revision,
                "split": "test",
                "hf_subset": "default",
                "main_score": "p-MRR",
                "languages": ["eng-Latn"],
                "metrics": {
                    "p-MRR": "p-MRR",
                    **{f"{m}[{mode}]": {mode: key[m]} for m in ("MAP@1000", "nDCG@5") for mode in ("og", "changed")},
                },
            },
        )


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("robust04", "Robust04", "jhu-clsp/robust04-instructions-mteb",
              "0a3efedfcac0a7f859c46cff3a0fac0f8747b28f", "MAP@1000", "Robust04InstructionRetrieval"),
    Benchmark("news21", "News21", "jhu-clsp/news21-instructions-mteb",
              "39db677749b3b783bb277d0e2d4712f5f133f52b", "nDCG@5", "News21InstructionRetrieval"),
    Benchmark("core17", "Core17", "jhu-clsp/core17-instructions-mteb",
              "7030c7efc3585d9020f243b12862997889243b78", "MAP@1000", "Core17InstructionRetrieval"),
)


def benchmark(name: str) -> Benchmark:
    for b in BENCHMARKS:
        if b.name == name:
            return b
    from harness import DataError

    raise DataError(f"no FollowIR collection {name!r}; known: {', '.join(b.name for b in BENCHMARKS)}")


def suite() -> Task:
    return Task(name="followir", description="FollowIR: Robust04, News21, Core17 (paper score and p-MRR)",
                tasks=[b.task_name for b in BENCHMARKS],
                table=[("p-MRR", "p-MRR", 100), ("p-MRR (release ties)", "p-MRR[release]", 100)])
