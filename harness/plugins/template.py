"""``harness new-plugin NAME --kind KIND``: a plugin distribution whose own tests pass.

One skeleton per kind of component (``retriever``, ``reranker``, ``judge``, ``metric``, ``dataset``,
``llm-provider``): ``pyproject.toml`` (depending on the core distribution ``harness-ir``, with the
``harness`` entry point), the package (light ``__init__`` registering a lazy factory, the component
in its own module), a README and tests. The generated code uses only the public surface:
``from harness import ...``, ``from harness.llm import ...`` and ``from harness.testing import ...``.

Placeholders in the templates below are ``@NAME@`` (the component name, e.g. ``word-overlap``),
``@DIST@`` (``harness-word-overlap``), ``@MODULE@`` (``harness_word_overlap``) and ``@ENV@`` /
``@ENV_URL@`` (an LLM provider's variables). They appear only where a long name cannot push a line
past ruff's 120 characters: the code uses ``NAME``/``DIST`` constants, ``import @MODULE@ as plugin``
and ``lazy(f"{__name__}.module:Class")``; the classes are named after what they do.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import MappingProxyType

from harness.concepts.errors import HarnessError
from harness.runtime.extras import CORE_DIST

KINDS = ("retriever", "reranker", "judge", "metric", "dataset", "llm-provider")

# -- shared files ------------------------------------------------------------------------------
PYPROJECT = """\
[build-system]
requires = ["hatchling>=1.21"]
build-backend = "hatchling.build"

[project]
name = "@DIST@"
version = "0.1.0"
description = "@DESCRIPTION@"
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["@CORE@"]

[project.optional-dependencies]
test = ["pytest>=8"]

[project.entry-points.harness]
@NAME@ = "@MODULE@"

[tool.hatch.build.targets.wheel]
packages = ["@MODULE@"]

[tool.hatch.build.targets.sdist]
include = ["@MODULE@", "tests", "README.md", "pyproject.toml"]

[tool.pytest.ini_options]
pythonpath = ["."]
testpaths = ["tests"]

[tool.ruff]
line-length = 120
target-version = "py311"

[tool.ruff.lint]
select = ["E", "F", "W", "I", "B", "UP"]
"""

CONFTEST = '''\
"""A test session of its own: private cache folder, no downloads, no LLM keys from the shell."""

import pytest
from harness.testing import isolated_environment


@pytest.fixture(scope="session", autouse=True)
def _isolated(tmp_path_factory):
    with isolated_environment(tmp_path_factory.mktemp("harness-cache"), clear_llm=True):
        yield
'''

HELPERS = '''\
def registered(hook):
    """What one of the plugin's hooks registers: ``{name: (factory, description)}``."""
    found = {}
    hook(register=lambda name, factory, description="": found.setdefault(name, (factory, description)))
    return found


def installed():
    """Whether this distribution is installed (``pip install -e .``), so its entry point is seen."""
    try:
        metadata.distribution(DIST)
    except metadata.PackageNotFoundError:
        return False
    return True


needs_install = pytest.mark.skipif(not installed(), reason="pip install -e . to test through the entry point")
'''

README = """\
# @DIST@

A plugin for harness (`pip install @CORE@`; command and import package `harness`), the evaluation
harness for instruction-following retrieval. It registers @WHAT@.

## Install

```bash
pip install @DIST@          # or, from this folder: pip install -e .
harness list-plugins        # shows @DIST@ and what it registers
```

## Use

```bash
@USAGE@
```

## Develop

```bash
pip install -e ".[test]"
python -m pytest            # offline; the entry-point tests run once the plugin is installed
python -m build             # sdist and wheel into dist/, ready for `twine upload`
```

The package's `__init__` is imported by every `harness` command, so it only registers a lazy
factory (`harness.lazy(f"{__name__}.@IMPL@:@CLASS@")`); the component's module, and anything
heavy it imports, loads when the component is used. Everything that decides a number belongs in the
component's `config()`: it is written to `results.json`.
"""

# -- retriever ---------------------------------------------------------------------------------
RETRIEVER_INIT = '''\
"""Registers a retriever.

Plugin: @DIST@
Example: harness eval --task demo --retriever @NAME@

Imported by every `harness` command: keep it light (the component's module loads on use)."""

from harness import hookimpl, lazy

__version__ = "0.1.0"
NAME = "@NAME@"


@hookimpl
def register_retrievers(register):
    register(NAME, lazy(f"{__name__}.retriever:OverlapRetriever"),
             "Ranks documents by the number of query words they contain")
'''

RETRIEVER = '''\
"""The retriever: scores each document by how many distinct query words it contains. Replace the
scoring with yours (and the class name with what it does); keep `index`, `search` and `config`."""

from __future__ import annotations

import re
from collections.abc import Mapping

from harness import Document, Run

TOKEN = re.compile(r"\\w+")


def tokenize(text: str, lowercase: bool = True) -> list[str]:
    return TOKEN.findall(text.lower() if lowercase else text)


class OverlapRetriever:
    """Retriever protocol: `index(corpus)` once, then `search(queries, k)` -> Run."""

    def __init__(self, lowercase: bool = True):
        self.lowercase = bool(lowercase)
        self.doc_words: dict[str, set[str]] = {}

    def index(self, corpus: Mapping[str, Document]) -> None:
        self.doc_words = {doc_id: set(tokenize(doc.full_text(), self.lowercase)) for doc_id, doc in corpus.items()}

    def search(self, queries: Mapping[str, str], k: int) -> Run:
        scores = {}
        for qid, text in queries.items():
            words = set(tokenize(text, self.lowercase))
            hits = {d: float(len(words & dw)) for d, dw in self.doc_words.items()}
            scores[qid] = {d: s for d, s in hits.items() if s > 0}
        return Run.from_scores(scores).top(k)  # sorted as trec_eval sorts: score, then doc id

    def config(self) -> dict:
        return {"lowercase": self.lowercase}
'''

RETRIEVER_TEST = '''\
"""Tests of @DIST@.

Registration, the retriever on a toy corpus, and on the packaged `demo` task."""

from importlib import metadata

import harness
import pytest
from harness import Document, format_query

import @MODULE@ as plugin
from @MODULE@.retriever import OverlapRetriever

NAME, DIST = plugin.NAME, "@DIST@"

@HELPERS@

def demo_run(retriever):
    """Index the packaged demo corpus and search its queries as the `demo` task forms them."""
    task = harness.load_task("demo")
    dataset = harness.load_dataset("demo")
    queries = {qid: format_query(q, task.query_format) for qid, q in dataset.queries["default"].items()}
    retriever.index(dataset.corpus)
    return retriever.search(queries, k=task.depth), dataset


def test_registers_the_retriever():
    factory, description = registered(plugin.register_retrievers)[NAME]
    assert description
    assert isinstance(factory(lowercase=False), OverlapRetriever)


def test_ranks_a_toy_corpus():
    retriever = OverlapRetriever()
    retriever.index({"a": Document("a", "Cats purr softly."), "b": Document("b", "Dogs bark loudly at night.")})
    run = retriever.search({"q": "why do dogs bark", "none": "volcano"}, k=10)
    assert run.doc_ids("q") == ["b"]
    assert run.doc_ids("none") == []
    assert retriever.config() == {"lowercase": True}


def test_demo_task():
    run, dataset = demo_run(OverlapRetriever())
    result = harness.score(dataset.qrels["default"], run, ["nDCG@10", "Recall@100"])
    assert 0.3 < result.aggregate["nDCG@10"] <= 1.0


@needs_install
def test_listed_and_evaluated_through_the_entry_point():
    plugins = {p["distribution"]: p for p in harness.list_plugins()}
    assert NAME in plugins[DIST]["components"]["retriever"]
    result = harness.evaluate("demo", retriever=NAME, metrics=["nDCG@10"], progress=False)
    run, dataset = demo_run(OverlapRetriever())
    direct = harness.score(dataset.qrels["default"], run, ["nDCG@10"]).aggregate["nDCG@10"]
    assert result.metrics["nDCG@10"] == pytest.approx(direct)
'''

# -- reranker ----------------------------------------------------------------------------------
RERANKER_INIT = '''\
"""Registers a reranker.

Plugin: @DIST@
Example: harness eval --task demo --reranker @NAME@

Imported by every `harness` command: keep it light (the component's module loads on use)."""

from harness import hookimpl, lazy

__version__ = "0.1.0"
NAME = "@NAME@"


@hookimpl
def register_rerankers(register):
    register(NAME, lazy(f"{__name__}.reranker:OverlapReranker"),
             "Re-orders each candidate list by the share of query words a document contains")
'''

RERANKER = '''\
"""The reranker: re-orders each query's candidates by the share of the query's words a document
contains; equal shares keep the incoming order. Replace the scoring with yours."""

from __future__ import annotations

import re
from collections.abc import Mapping

from harness import Document, Query, Run

TOKEN = re.compile(r"\\w+")


def words(text: str) -> set[str]:
    return set(TOKEN.findall(text.lower()))


class OverlapReranker:
    """Reranker protocol: `rerank(queries, run, corpus)` -> Run with strictly decreasing scores.

    `queries[qid].text` is the query as the task formed it (query and instruction); the raw query
    is `queries[qid].meta["query"]` and the instruction `queries[qid].instruction`."""

    def __init__(self, depth: int = 100):
        self.depth = int(depth)

    def rerank(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Run:
        order = {}
        for qid in run:
            ids = run.doc_ids(qid)
            head, tail = ids[: self.depth], ids[self.depth :]
            query = words(queries[qid].text) if qid in queries else set()
            share = {d: self.share(query, corpus.get(d)) for d in head}
            # sorted() is stable: equal shares keep the first stage's order; the tail stays below
            order[qid] = sorted(head, key=share.__getitem__, reverse=True) + tail
        return Run.from_order(order)  # scores n, n-1, ..., 1: strictly decreasing

    @staticmethod
    def share(query: set[str], doc: Document | None) -> float:
        """The share of the query's words in the document (0 for a document not in the corpus)."""
        return len(query & words(doc.full_text())) / len(query) if doc is not None and query else 0.0

    def config(self) -> dict:
        return {"depth": self.depth}
'''

RERANKER_TEST = '''\
"""Tests of @DIST@.

Registration, re-ordering rules, and a gain on the packaged `demo` task."""

from importlib import metadata

import harness
import pytest
from harness import Document, Query, Run, format_query

import @MODULE@ as plugin
from @MODULE@.reranker import OverlapReranker

NAME, DIST = plugin.NAME, "@DIST@"

@HELPERS@

def test_registers_the_reranker():
    factory, description = registered(plugin.register_rerankers)[NAME]
    assert description
    assert isinstance(factory(depth=5), OverlapReranker)


def test_reorders_keeps_every_document_and_scores_strictly_decrease():
    corpus = {"a": Document("a", "volcanoes erupt"), "b": Document("b", "dogs bark"), "c": Document("c", "dogs")}
    queries = {"q": Query("q", "why do dogs bark")}
    run = Run.from_order({"q": ["a", "c", "b", "missing"]})
    out = OverlapReranker().rerank(queries, run, corpus)
    assert out.doc_ids("q") == ["b", "c", "a", "missing"]
    scores = [s for _, s in out["q"]]
    assert all(x > y for x, y in zip(scores, scores[1:], strict=False))
    assert OverlapReranker(depth=2).rerank(queries, run, corpus).doc_ids("q") == ["c", "a", "b", "missing"]


def test_demo_task_improves_on_corpus_order():
    task = harness.load_task("demo")
    dataset = harness.load_dataset("demo")
    queries = {qid: Query(qid, format_query(q, task.query_format), q.instruction, {**q.meta, "query": q.text})
               for qid, q in dataset.queries["default"].items()}
    given = Run.from_order({qid: list(dataset.corpus) for qid in queries})  # every document, corpus order
    reranked = OverlapReranker().rerank(queries, given, dataset.corpus)
    qrels = dataset.qrels["default"]
    before = harness.score(qrels, given, ["nDCG@10"]).aggregate["nDCG@10"]
    after = harness.score(qrels, reranked, ["nDCG@10"]).aggregate["nDCG@10"]
    assert after > before


@needs_install
def test_listed_and_evaluated_through_the_entry_point():
    plugins = {p["distribution"]: p for p in harness.list_plugins()}
    assert NAME in plugins[DIST]["components"]["reranker"]
    result = harness.evaluate("demo", retriever="bm25", rerankers=[NAME], metrics=["nDCG@10"], progress=False)
    assert 0.0 < result.metrics["nDCG@10"] <= 1.0
'''

# -- judge -------------------------------------------------------------------------------------
JUDGE_INIT = '''\
"""Registers a judge.

Plugin: @DIST@
Example: harness eval --task demo --judge @NAME@

Imported by every `harness` command: keep it light (the component's module loads on use)."""

from harness import hookimpl, lazy

__version__ = "0.1.0"
NAME = "@NAME@"


@hookimpl
def register_judges(register):
    register(NAME, lazy(f"{__name__}.judge:OverlapJudge"),
             "Grades 0-3 by the share of query words in the document (no LLM)")
'''

JUDGE = '''\
"""The judge: grades each (query, document) pair of a run 0-3 by the share of the query's words
the document contains (0: none ... 3: all). No model, no network: a baseline, and the shape
every judge has.

Judging with an LLM instead: send a prompt per pair through the harness LLM layer (`harness.llm`,
see docs/llm.md in the harness repository), never an SDK directly: it brings the disk cache (a warm
rerun sends nothing), retries, the concurrency bound, cost in results.json and `--dry-run`. Record
the prompt's hash in `config()`, and give a failed call `score=None` (it is counted, not hidden).
The `instfol` judge of the harness-ifir plugin is a complete example.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from harness import Document, Judgment, Judgments, Query, Run

TOKEN = re.compile(r"\\w+")
MAX_GRADE = 3


def words(text: str) -> set[str]:
    return set(TOKEN.findall(text.lower()))


class OverlapJudge:
    """Judge protocol: `judge(queries, run, corpus)` -> Judgments, one per judged pair."""

    def __init__(self, depth: int = 10):
        self.depth = int(depth)

    def grade(self, query: str, document: str) -> tuple[int, float]:
        q = words(query)
        share = len(q & words(document)) / len(q) if q else 0.0
        return round(MAX_GRADE * share), share

    def judge(self, queries: Mapping[str, Query], run: Run, corpus: Mapping[str, Document]) -> Judgments:
        out = Judgments()
        for qid in run:
            for doc_id in run.doc_ids(qid)[: self.depth]:
                if qid not in queries or doc_id not in corpus:
                    out.add(Judgment(qid, doc_id, None, {"error": "unknown query or document"}))
                    continue
                grade, share = self.grade(queries[qid].text, corpus[doc_id].full_text())
                out.add(Judgment(qid, doc_id, float(grade), {"overlap": round(share, 4)}))
        return out

    def config(self) -> dict:
        return {"depth": self.depth, "scale": f"0-{MAX_GRADE}"}
'''

JUDGE_TEST = '''\
"""Tests of @DIST@.

Registration, grades on a toy run, and judging a run of the packaged `demo` task."""

from importlib import metadata

import harness
import pytest
from harness import Document, Query, Run

import @MODULE@ as plugin
from @MODULE@.judge import OverlapJudge

NAME, DIST = plugin.NAME, "@DIST@"

@HELPERS@

def test_registers_the_judge():
    factory, description = registered(plugin.register_judges)[NAME]
    assert description
    assert isinstance(factory(depth=3), OverlapJudge)


def test_grades_zero_to_three():
    corpus = {"all": Document("all", "Dogs bark at night"), "half": Document("half", "dogs sleep"),
              "none": Document("none", "volcanoes erupt")}
    queries = {"q": Query("q", "dogs bark")}
    run = Run.from_order({"q": ["all", "half", "none", "gone"]})
    judgments = OverlapJudge().judge(queries, run, corpus)
    assert {d: j.score for (_, d), j in judgments.items()} == {"all": 3.0, "half": 2.0, "none": 0.0, "gone": None}
    assert judgments.n_failed == 1
    assert len(OverlapJudge(depth=2).judge(queries, run, corpus)) == 2


@needs_install
def test_listed_and_evaluated_through_the_entry_point():
    plugins = {p["distribution"]: p for p in harness.list_plugins()}
    assert NAME in plugins[DIST]["components"]["judge"]
    result = harness.evaluate("demo", retriever="bm25", judge=f"{NAME}:depth=5", metrics=["nDCG@10"], progress=False)
    judgments = result.judgments["default"]
    assert len(judgments) == 5 * len(result.dataset.queries["default"])
    assert {j.score for j in judgments.values()} <= {0.0, 1.0, 2.0, 3.0}
'''

# -- metric ------------------------------------------------------------------------------------
METRIC_INIT = '''\
"""Registers a metric: `NAME@k` on the command line.

Plugin: @DIST@
Example: --metric @NAME@@10

Imported by every `harness` command: keep it light (the component's module loads on use)."""

from harness import hookimpl, lazy

__version__ = "0.1.0"
NAME = "@NAME@"


@hookimpl
def register_metrics(register):
    register(NAME, lazy(f"{__name__}.metric:MeanGainMetric"),
             f"{NAME}@k: mean grade of the top k, as a share of the query's best grade")
'''

METRIC = '''\
"""The metric: `NAME@k` is the mean grade of a query's top k documents divided by the best grade in
its qrels (unjudged documents count 0; a ranking shorter than k is padded with 0s), averaged over
the queries that have a positive grade."""

from __future__ import annotations

from harness import MetricInput, MetricResult

NAME = "@NAME@"


class MeanGainMetric:
    """Metric protocol: `names`, `per_mode`, `compute(MetricInput) -> MetricResult`. `NAME@k` on the
    command line creates it with `cutoff=k`."""

    per_mode = True  # computed on each mode's run on its own (False: it compares modes)

    def __init__(self, cutoff: int = 10):
        self.cutoff = int(cutoff)
        self.names = [f"{NAME}@{self.cutoff}"]

    def compute(self, inp: MetricInput) -> MetricResult:
        (mode,) = inp.runs  # a per-mode metric gets one mode at a time
        run, qrels = inp.runs[mode], inp.qrels[mode]
        name = self.names[0]
        per_query = {}
        for qid, grades in qrels.items():
            best = max(grades.values(), default=0)
            if best <= 0:
                continue  # nothing relevant: the query does not count
            top = run.doc_ids(qid)[: self.cutoff] if qid in run else []
            gained = sum(max(grades.get(d, 0), 0) for d in top)
            per_query[qid] = {name: gained / (best * self.cutoff)}
        mean = sum(v[name] for v in per_query.values()) / len(per_query) if per_query else float("nan")
        return MetricResult({name: mean}, per_query)
'''

METRIC_TEST = '''\
"""Tests of @DIST@.

Registration, values on a hand-made run, and on the packaged `demo` task."""

from importlib import metadata

import harness
import pytest
from harness import Dataset, MetricInput, Qrels, Run

import @MODULE@ as plugin
from @MODULE@.metric import MeanGainMetric

NAME, DIST = plugin.NAME, "@DIST@"

@HELPERS@

def compute(metric, run, qrels):
    dataset = Dataset.single("toy", {}, {}, qrels)
    return metric.compute(MetricInput({"default": run}, {"default": qrels}, dataset))


def test_registers_the_metric():
    factory, description = registered(plugin.register_metrics)[NAME]
    assert description
    assert factory(cutoff=5).names == [f"{NAME}@5"]


def test_values():
    qrels = Qrels({"q1": {"a": 2, "b": 1, "c": 0}, "q2": {"x": 1}, "q3": {"y": 0}})
    run = Run.from_order({"q1": ["b", "a", "z"], "q2": ["w"]})
    result = compute(MeanGainMetric(cutoff=2), run, qrels)
    assert result.per_query == {"q1": {f"{NAME}@2": 0.75}, "q2": {f"{NAME}@2": 0.0}}  # q3: nothing relevant
    assert result.aggregate == {f"{NAME}@2": 0.375}
    assert compute(MeanGainMetric(cutoff=4), run, qrels).per_query["q1"][f"{NAME}@4"] == 3 / 8


@needs_install
def test_listed_and_evaluated_through_the_entry_point():
    plugins = {p["distribution"]: p for p in harness.list_plugins()}
    assert NAME in plugins[DIST]["components"]["metric"]
    result = harness.evaluate("demo", metrics=[f"{NAME}@10", "nDCG@10"], progress=False)
    assert 0.0 < result.metrics[f"{NAME}@10"] <= 1.0
'''

# -- dataset (and a task using it) -------------------------------------------------------------
DATASET_INIT = '''\
"""Registers a dataset and a task of the same name that evaluates on it.

Plugin: @DIST@
Example: harness eval --task @NAME@

Imported by every `harness` command: keep it light (the data is read when the dataset is used)."""

from harness import hookimpl, lazy

__version__ = "0.1.0"
NAME = "@NAME@"


@hookimpl
def register_datasets(register):
    register(NAME, lazy(f"{__name__}.dataset:load_dataset"),
             "A small packaged dataset: 8 documents, 3 queries with instructions, graded qrels")


@hookimpl
def register_tasks(register):
    register(NAME, lazy(f"{__name__}.dataset:make_task"), "BM25 over the packaged dataset; nDCG@10, Recall@10")
'''

DATASET = '''\
"""The dataset, read from `data/NAME.json` inside this package (so it works offline, with no
download), and the task of the same name that evaluates on it.

A real dataset usually lives in the user's data folder instead: give the task `files=[DataFile(...)]`
(path, url, sha256) and `harness data download NAME` fetches and checks them.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources

from harness import DataError, Dataset, Document, Qrels, Query, Task

NAME = "@NAME@"
DATA_FILE = f"data/{NAME}.json"


def load_dataset(name: str = NAME) -> Dataset:
    """Dataset factory: `harness eval --dataset NAME`, or the task NAME."""
    path = resources.files(__package__).joinpath(DATA_FILE)
    raw = path.read_bytes()
    try:
        data = json.loads(raw)
        corpus = {d["id"]: Document(d["id"], d["text"], d.get("title", "")) for d in data["corpus"]}
        queries = {q["id"]: Query(q["id"], q["text"], q.get("instruction", "")) for q in data["queries"]}
        qrels = Qrels()
        for qid, doc_id, grade in data["qrels"]:
            qrels.add(qid, doc_id, grade)
    except (ValueError, KeyError, TypeError) as exc:
        raise DataError(f"not a valid {NAME} data file: {exc!r}", str(path)) from exc
    file = {"path": f"{__package__}/{DATA_FILE}", "sha256": hashlib.sha256(raw).hexdigest(), "size": len(raw)}
    identity = {"name": name, "files": [file]}  # results.json records exactly which bytes were used
    return Dataset.single(name, corpus, queries, qrels, identity=identity)


def make_task() -> Task:
    """Task factory: `harness eval --task NAME`."""
    return Task(
        name=NAME,
        description=f"BM25 over the packaged {NAME} dataset",
        dataset=NAME,
        metrics=["nDCG@10", "Recall@10"],
        first_stage="retrieve",  # retrieve over the corpus ("candidates": re-rank given lists)
        retriever="bm25",
        depth=100,
        query_format="{text} {instruction}",
    )
'''

DATASET_JSON = """\
{
  "corpus": [
    {"id": "d1", "title": "Tea", "text": "Green tea is steeped for two to three minutes in water below boiling."},
    {"id": "d2", "title": "Tea", "text": "Black tea needs boiling water and about four minutes of steeping."},
    {"id": "d3", "title": "Tea", "text": "Tea was first drunk in China, where it was used as a medicine."},
    {"id": "d4", "title": "Bread", "text": "A sourdough starter is flour and water fermented by wild yeast."},
    {"id": "d5", "title": "Bread", "text": "Knead bread dough for ten minutes, then let it rise for an hour."},
    {"id": "d6", "title": "Bread", "text": "Bread is one of the oldest prepared foods, baked for thousands of years."},
    {"id": "d7", "title": "Bicycles", "text": "Pump bicycle tyres to the pressure printed on their sidewall."},
    {"id": "d8", "title": "Bicycles", "text": "The safety bicycle of the 1880s made cycling popular."}
  ],
  "queries": [
    {"id": "q1", "text": "how to make tea", "instruction": "I only drink green tea."},
    {"id": "q2", "text": "bread", "instruction": "I want to bake it at home: steps, not history."},
    {"id": "q3", "text": "history of the bicycle", "instruction": ""}
  ],
  "qrels": [
    ["q1", "d1", 2], ["q1", "d2", 1], ["q1", "d3", 0],
    ["q2", "d4", 2], ["q2", "d5", 2], ["q2", "d6", 0],
    ["q3", "d8", 2], ["q3", "d7", 0]
  ]
}
"""

DATASET_TEST = '''\
"""Tests of @DIST@.

The packaged data file, the dataset and the task registered with it."""

from importlib import metadata

import harness
import pytest
from harness import Dataset, Task

import @MODULE@ as plugin
from @MODULE@.dataset import load_dataset, make_task

NAME, DIST = plugin.NAME, "@DIST@"

@HELPERS@

def test_registers_a_dataset_and_a_task():
    datasets = registered(plugin.register_datasets)
    tasks = registered(plugin.register_tasks)
    assert isinstance(datasets[NAME][0](), Dataset)
    task = tasks[NAME][0]()
    assert isinstance(task, Task) and task.dataset in datasets


def test_the_dataset():
    dataset = load_dataset()
    assert (len(dataset.corpus), len(dataset.queries["default"])) == (8, 3)
    assert all(count == 0 for count in dataset.validate().values())  # every qrels id is known
    assert dataset.queries["default"]["q1"].instruction
    assert len(dataset.identity["files"][0]["sha256"]) == 64


def test_the_task():
    task = make_task()
    assert (task.dataset, task.first_stage) == (NAME, "retrieve")


@needs_install
def test_listed_and_evaluated_through_the_entry_point():
    plugins = {p["distribution"]: p for p in harness.list_plugins()}
    assert plugins[DIST]["components"] == {"dataset": [NAME], "task": [NAME]}
    result = harness.evaluate(NAME, progress=False)
    assert 0.0 < result.metrics["nDCG@10"] <= 1.0
'''

# -- LLM provider ------------------------------------------------------------------------------
PROVIDER_INIT = '''\
"""Registers an LLM provider: `--llm NAME:MODEL` on the command line.

Plugin: @DIST@
Example: --llm @NAME@:my-model

Imported by every `harness` command: keep it light (an SDK, if you use one, is imported in the
provider's module)."""

from harness import hookimpl, lazy

__version__ = "0.1.0"
NAME = "@NAME@"
# the variables holding the API key and the base URL (or base_url=... in the spec)
KEY_ENV = "@ENV@"
URL_ENV = "@ENV_URL@"


@hookimpl
def register_llm_providers(register):
    register(NAME, lazy(f"{__name__}.provider:HttpChatProvider"),
             f"An OpenAI-shaped chat API over plain HTTP (no SDK); ${KEY_ENV}, ${URL_ENV} or base_url=...")
'''

PROVIDER = '''\
"""The LLM provider: one HTTP POST per call to an OpenAI-shaped `/chat/completions` endpoint, with
the standard library only (no SDK). Adapt `request_body` and `parse` to your API.

A provider makes ONE request per `chat()` and raises the typed errors of `harness.llm`; the client
around it does caching, retries (of `RateLimited`, `ServerError`, `LLMTimeout`, `ConnectionFailed`),
concurrency, usage and dry runs. `AuthError`, `ModelNotFound` and `MissingKey` stop the run.
"""

from __future__ import annotations

import ipaddress
import json
import os
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

from harness.llm import (
    AuthError,
    BadRequest,
    ChatOptions,
    ConnectionFailed,
    LLMTimeout,
    MalformedReply,
    Message,
    MissingKey,
    ModelNotFound,
    RateLimited,
    Reply,
    ServerError,
    TokenCounts,
)

from . import KEY_ENV, NAME, URL_ENV

DEFAULT_URL = "https://api.example.com/v1"  # your API's base URL


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    try:
        return host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class HttpChatProvider:
    """What the client needs: `name`, `model`, `base_url`, `supports_logprobs`,
    `normalize_options(options)` and `chat(messages, options, *, timeout=None) -> Reply`.

    The factory gets `model`, `require_key` (False in dry runs), `timeout` and `connect_timeout`,
    `base_url` when the spec has one, and the spec's other arguments (`max_tokens=256` in a spec is a
    chat option, not a provider argument)."""

    name = NAME
    supports_logprobs = False

    def __init__(self, model: str, base_url: str | None = None, require_key: bool = True, timeout: float = 60.0,
                 connect_timeout: float = 10.0, default_max_tokens: int = 512):
        self.model = model
        self.base_url = (base_url or os.environ.get(URL_ENV) or DEFAULT_URL).rstrip("/")
        self.timeout, self.connect_timeout = float(timeout), float(connect_timeout)
        self.default_max_tokens = int(default_max_tokens)
        self._key = os.environ.get(KEY_ENV, "").strip() or None
        if self._key is None and require_key and not _loopback(self.base_url):
            # raised when the component is created, before any work starts
            raise MissingKey(f"{KEY_ENV} is not set: export {KEY_ENV}=...", provider=self.name)

    def __repr__(self) -> str:  # never shows the key
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def normalize_options(self, options: ChatOptions) -> ChatOptions:
        """Fill this provider's defaults, so the cache key holds the values in effect."""
        return options if options.max_tokens is not None else options.merged(max_tokens=self.default_max_tokens)

    def request_body(self, messages: list[Message], options: ChatOptions) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": list(messages), "temperature": options.temperature,
                                "max_tokens": options.max_tokens}
        if options.stop:
            body["stop"] = list(options.stop)
        if options.seed is not None:
            body["seed"] = options.seed
        return body

    def parse(self, data: dict[str, Any]) -> Reply:
        try:
            choice = data["choices"][0]
            usage = data.get("usage") or {}
            return Reply(text=choice["message"]["content"] or "", finish_reason=choice.get("finish_reason"),
                         usage=TokenCounts(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))),
                         model=data.get("model") or self.model, provider=self.name)
        except (KeyError, IndexError, TypeError, ValueError) as exc:
            raise MalformedReply(f"unexpected reply body: {exc!r}", provider=self.name, model=self.model) from exc

    def chat(self, messages: list[Message], options: ChatOptions, *, timeout: float | None = None) -> Reply:
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        request = urllib.request.Request(f"{self.base_url}/chat/completions", method="POST", headers=headers,
                                         data=json.dumps(self.request_body(messages, options)).encode())
        read = self.timeout if timeout is None else min(float(timeout), self.timeout)
        where = {"provider": self.name, "model": self.model}
        try:
            with urllib.request.urlopen(request, timeout=read) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            status, message = exc.code, exc.read().decode("utf-8", "replace")[:500]
            retry_after = exc.headers.get("Retry-After")
            if status == 429:
                seconds = float(retry_after) if retry_after and retry_after.isdigit() else None
                raise RateLimited(message, status=status, retry_after=seconds, **where) from None
            if status >= 500:
                raise ServerError(message, status=status, **where) from None
            if status in (401, 403):
                raise AuthError(f"{message} (key from ${KEY_ENV})", status=status, **where) from None
            if status == 404:
                raise ModelNotFound(message, status=status, **where) from None
            raise BadRequest(message, status=status, **where) from None
        except TimeoutError:  # socket.timeout too
            raise LLMTimeout(f"no reply within {read:g} s", **where) from None
        except (urllib.error.URLError, OSError) as exc:
            raise ConnectionFailed(f"connection to {self.base_url} failed: {exc}", **where) from None
        try:
            data = json.loads(raw)
        except ValueError as exc:
            raise MalformedReply(f"reply is not JSON: {exc}", **where) from None
        return self.parse(data)
'''

PROVIDER_TEST = '''\
"""Tests of @DIST@.

A chat round trip against harness.testing.TestServer (a loopback server speaking the OpenAI
protocol), error mapping, and the client (cache included) through the entry point."""

from importlib import metadata

import pytest
from harness.llm import AuthError, ChatOptions, MissingKey, RateLimited, get_client, system, user
from harness.testing import ScriptedReply, TestServer

import @MODULE@ as plugin
from @MODULE@.provider import KEY_ENV, HttpChatProvider

NAME, DIST = plugin.NAME, "@DIST@"
ELSEWHERE = "https://api.example.com/v1"

@HELPERS@

def test_registers_the_provider():
    factory, description = registered(plugin.register_llm_providers)[NAME]
    assert description
    assert isinstance(factory(model="m", base_url="http://127.0.0.1:9/v1"), HttpChatProvider)


def test_chat_round_trip():
    seen = []

    def reply(request):
        seen.append(request)
        return "Paris."

    with TestServer(reply=reply) as server:
        provider = HttpChatProvider("tiny", base_url=server.openai_base_url)
        options = provider.normalize_options(ChatOptions(temperature=0.0, stop=("\\n",)))
        answer = provider.chat([system("Answer briefly."), user("Capital of France?")], options)
    assert answer.text == "Paris." and answer.finish_reason == "stop"
    assert answer.usage.input_tokens > 0 and answer.usage.output_tokens > 0
    (request,) = seen
    assert request["model"] == "tiny" and request["max_tokens"] == 512 and request["stop"] == ["\\n"]
    assert [m["role"] for m in request["messages"]] == ["system", "user"]


def test_errors_are_typed():
    script = [ScriptedReply(status=429, error="slow down", headers={"Retry-After": "2"}),
              ScriptedReply(status=401, error="bad key")]
    with TestServer(reply=script) as server:
        provider = HttpChatProvider("tiny", base_url=server.openai_base_url)
        with pytest.raises(RateLimited) as limited:
            provider.chat([user("hi")], provider.normalize_options(ChatOptions()))
        assert limited.value.retry_after == 2
        with pytest.raises(AuthError):
            provider.chat([user("hi")], provider.normalize_options(ChatOptions()))


def test_a_missing_key_fails_at_creation(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(MissingKey, match=KEY_ENV):
        HttpChatProvider("tiny", base_url=ELSEWHERE)
    HttpChatProvider("tiny", base_url=ELSEWHERE, require_key=False)  # dry runs need no key


@needs_install
def test_client_through_the_entry_point(tmp_path):
    with TestServer(reply="Paris.") as server:
        client = get_client(f"{NAME}:tiny:base_url={server.openai_base_url}", cache_dir=tmp_path)
        assert client.chat([user("Capital of France?")]).text == "Paris."
        again = client.chat([user("Capital of France?")])
        assert again.text == "Paris." and again.cached  # the client's disk cache answered
        assert server.requests_total == 1
'''

# -- what each kind writes -----------------------------------------------------------------------
_SPEC = MappingProxyType({
    "retriever": dict(cls="OverlapRetriever", impl="retriever", init=RETRIEVER_INIT, code=RETRIEVER,
                      test=RETRIEVER_TEST, what="the retriever `@NAME@`",
                      usage="harness eval --task demo --retriever @NAME@\n"
                            "harness eval --task demo --retriever @DIST@:@NAME@:lowercase=false   # by distribution"),
    "reranker": dict(cls="OverlapReranker", impl="reranker", init=RERANKER_INIT, code=RERANKER, test=RERANKER_TEST,
                     what="the reranker `@NAME@`",
                     usage="harness eval --task demo --retriever bm25 --reranker @NAME@:depth=20"),
    "judge": dict(cls="OverlapJudge", impl="judge", init=JUDGE_INIT, code=JUDGE, test=JUDGE_TEST,
                  what="the judge `@NAME@` (grades 0-3, no LLM)",
                  usage="harness eval --task demo --judge @NAME@:depth=10 --output runs/judged   # judgments.jsonl"),
    "metric": dict(cls="MeanGainMetric", impl="metric", init=METRIC_INIT, code=METRIC, test=METRIC_TEST,
                   what="the metric `@NAME@` (`@NAME@@k`: mean grade of the top k, as a share of the best grade)",
                   usage="harness eval --task demo --metric @NAME@@10 --metric nDCG@10"),
    "dataset": dict(cls="load_dataset", impl="dataset", init=DATASET_INIT, code=DATASET, test=DATASET_TEST,
                    what="the dataset `@NAME@` and the task `@NAME@` that uses it (data packaged, no download)",
                    usage="harness eval --task @NAME@\n"
                          "harness eval --task @NAME@ --retriever dense          # with harness-ir[dense]"),
    "llm-provider": dict(cls="HttpChatProvider", impl="provider", init=PROVIDER_INIT, code=PROVIDER,
                         test=PROVIDER_TEST, what="the LLM provider `@NAME@` (an OpenAI-shaped HTTP API, no SDK)",
                         usage="export @ENV@=...        # and @ENV_URL@, or base_url= in the spec\n"
                               "harness eval --task trec-dl19 --reranker rankgpt --llm @NAME@:MODEL   # with "
                               "harness-rankgpt"),
})


def plugin_files(name: str, kind: str = "retriever") -> dict[str, str]:
    """``{relative path: text}`` of the plugin ``harness-NAME`` for ``kind``."""
    if kind not in _SPEC:
        raise HarnessError(f"unknown plugin kind {kind!r}; kinds: {', '.join(KINDS)}")
    name = check_name(name)
    spec = _SPEC[kind]
    module = "harness_" + name.replace("-", "_")
    env = re.sub(r"\W", "_", name).upper()
    fields = {
        "@NAME@": name, "@DIST@": f"harness-{name}", "@MODULE@": module, "@KIND@": kind,
        "@CLASS@": spec["cls"],
        "@IMPL@": spec["impl"], "@CORE@": CORE_DIST, "@ENV@": f"{env}_API_KEY", "@ENV_URL@": f"{env}_BASE_URL",
    }
    files = {
        "pyproject.toml": PYPROJECT.replace("@DESCRIPTION@", f"{name}: a harness plugin ({kind})"),
        "README.md": README.replace("@WHAT@", spec["what"]).replace("@USAGE@", spec["usage"]),
        f"{module}/__init__.py": spec["init"],
        f"{module}/{spec['impl']}.py": spec["code"],
        "tests/conftest.py": CONFTEST,
        f"tests/test_{module}.py": spec["test"].replace("@HELPERS@", "\n" + HELPERS),
    }
    if kind == "dataset":
        files[f"{module}/data/{name}.json"] = DATASET_JSON
    out = {}
    for rel, text in files.items():
        for key, value in fields.items():
            text = text.replace(key, value)
        out[rel] = text
    return out


def check_name(name: str) -> str:
    """The component name (``harness-`` prefix dropped); a bad name raises :class:`HarnessError`."""
    name = name.removeprefix("harness-")
    if not re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", name):
        raise HarnessError(f"plugin name {name!r}: use lowercase letters, digits and single '-' between words "
                           "(e.g. my-retriever)")
    return name


def write_plugin(name: str, parent: str | Path = ".", kind: str = "retriever") -> Path:
    """Write ``harness-NAME/`` under ``parent`` for a component of ``kind`` and return its path."""
    files = plugin_files(name, kind)
    root = Path(parent) / f"harness-{check_name(name)}"
    if root.exists():
        raise HarnessError(f"{root} already exists")
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
