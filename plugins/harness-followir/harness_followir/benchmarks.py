"""The FollowIR tasks: which Hub repository and commit each reads, the paper's score, MTEB's identity.

Two releases of the same collections:

- ``mteb`` (the default): the MTEB-layout releases ``jhu-clsp/<x>-instructions-mteb`` (configs ``corpus``,
  ``queries``, ``instruction``, ``default`` (qrels, og and changed rows together), ``top_ranked`` and
  ``qrel_diff``), at the commits MTEB's ``<X>InstructionRetrieval`` tasks pinned until
  embeddings-benchmark/mteb commit ``7037bfeaea4a776bd5acd8d47722f5eefe94e141`` (#4200), read through the
  core's ``mteb`` dataset;
- ``mteb1``: the original releases ``jhu-clsp/<x>-instructions`` (``corpus.jsonl``, ``queries.jsonl``,
  ``qrels_og/``, ``qrels_changed/``, ``top_ranked.jsonl``), at the commits mteb 1.x's tasks name (tags
  1.7.27 to 1.39.7), on which MTEB's 1.x result files were computed (:mod:`harness_followir.original`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from harness import HarnessError, Task

#: the metric that reports p-MRR (registered by this plugin; ``ties=release`` for the release rule)
PMRR_METRIC = "followir-p-MRR"
#: the releases a task reads: ``mteb`` (the -mteb layout, the default) and ``mteb1`` (the original layout)
RELEASES = ("mteb", "mteb1")


def release_of(value: Any) -> str:
    """``value`` as a release name (None: the default, ``mteb``); anything else is one :class:`HarnessError`."""
    if value is None:
        return RELEASES[0]
    if value not in RELEASES:
        raise HarnessError(f"followir: release must be mteb (jhu-clsp/<x>-instructions-mteb, the default) or mteb1 "
                           f"(jhu-clsp/<x>-instructions, the data of MTEB's 1.x results), not {str(value)[:80]!r}")
    return str(value)


@dataclass(frozen=True)
class Benchmark:
    """One FollowIR collection: ``name`` (``followir:<name>``), the Hub ``repo`` at ``revision`` (release
    ``mteb``), ``original_repo`` at ``original_revision`` (release ``mteb1``), the paper's score (``score``:
    the og run's MAP@1000, or nDCG@5 for News21) and MTEB's task name."""

    name: str
    title: str
    repo: str
    revision: str
    score: str
    mteb_task: str
    original_repo: str
    original_revision: str

    @property
    def task_name(self) -> str:
        return f"followir:{self.name}"

    def task_name_for(self, release: str) -> str:
        """``followir:<name>`` (release ``mteb``) or ``followir:<name>:mteb1``."""
        return self.task_name if release == "mteb" else f"{self.task_name}:{release}"

    def source(self, release: str) -> tuple[str, str]:
        """The repository and commit the release is read from."""
        return (self.repo, self.revision) if release == "mteb" else (self.original_repo, self.original_revision)

    def dataset_args(self, release: str = "mteb") -> dict[str, str]:
        return {"task": self.name} if release == "mteb" else {"task": self.name, "release": release}

    def task(self, release: str | None = None) -> Task:
        release = release_of(release)
        repo, revision = self.source(release)
        other = "nDCG@5" if self.score == "MAP@1000" else "MAP@1000"
        key = {"MAP@1000": "map_at_1000", "nDCG@5": "ndcg_at_5"}
        if release == "mteb":
            files, where = [], "the -mteb release"
            metrics = {"p-MRR": "p-MRR", **{f"{m}[{mode}]": {mode: key[m]} for m in ("MAP@1000", "nDCG@5")
                                            for mode in ("og", "changed")}}
        else:
            from .original import original_files

            files, where = original_files(repo, revision), "the original release (mteb 1.x's data)"
            # mteb 1.x broke ties with a stable sort by score (the release rule); its individual.original /
            # .changed scores swapped the qrels (docs/followir.md), so only p-MRR is mapped
            metrics = {"p-MRR[release]": "p-MRR"}
        return Task(
            name=self.task_name_for(release),
            dataset="followir",
            description=f"FollowIR {self.title} ({where}): original vs changed instructions over the given "
                        f"1,000-document pools; {self.score} (og) and p-MRR",
            dataset_args=self.dataset_args(release),
            metrics=[self.score, other, PMRR_METRIC, f"{PMRR_METRIC}:ties=release"],
            first_stage="candidates",
            depth=1000,
            query_format="{text} {instruction}",
            files=files,
            table=[(f"{self.score} (og)", f"{self.score}[og]", 100), ("p-MRR", "p-MRR", 100),
                   ("p-MRR (release ties)", "p-MRR[release]", 100)],
            mteb={
                "task_name": self.mteb_task,
                "dataset": repo,
                "dataset_revision": revision,
                "split": "test",
                "hf_subset": "default",
                "main_score": "p-MRR",
                "languages": ["eng-Latn"],
                "metrics": metrics,
            },
        )


BENCHMARKS: tuple[Benchmark, ...] = (
    Benchmark("robust04", "Robust04", "jhu-clsp/robust04-instructions-mteb",
              "0a3efedfcac0a7f859c46cff3a0fac0f8747b28f", "MAP@1000", "Robust04InstructionRetrieval",
              "jhu-clsp/robust04-instructions", "a5a1c4fe2bc528ac12e83f8cdf82178da85d2f1d"),
    Benchmark("news21", "News21", "jhu-clsp/news21-instructions-mteb",
              "39db677749b3b783bb277d0e2d4712f5f133f52b", "nDCG@5", "News21InstructionRetrieval",
              "jhu-clsp/news21-instructions", "e0144086b45fe31ac125e9ac1a83b6a409bb6ca6"),
    Benchmark("core17", "Core17", "jhu-clsp/core17-instructions-mteb",
              "7030c7efc3585d9020f243b12862997889243b78", "MAP@1000", "Core17InstructionRetrieval",
              "jhu-clsp/core17-instructions", "e39ff896cf3efbbdeeb950e6bd7c79f266995b07"),
)
#: FollowIR's own repositories in the original layout (``layout=auto`` reads them as such)
ORIGINAL_REPOS = frozenset(b.original_repo for b in BENCHMARKS)


def benchmark(name: str) -> Benchmark:
    for b in BENCHMARKS:
        if b.name == name:
            return b
    from harness import DataError

    raise DataError(f"no FollowIR collection {name!r}; known: {', '.join(b.name for b in BENCHMARKS)}")


def suite(release: str | None = None) -> Task:
    """``followir`` (release ``mteb``) or ``followir:mteb1``: the three tasks of one release."""
    release = release_of(release)
    label = "" if release == "mteb" else f" (release {release})"
    return Task(name="followir" if release == "mteb" else f"followir:{release}",
                description=f"FollowIR{label}: Robust04, News21, Core17 (paper score and p-MRR)",
                tasks=[b.task_name_for(release) for b in BENCHMARKS],
                table=[("p-MRR", "p-MRR", 100), ("p-MRR (release ties)", "p-MRR[release]", 100)])
