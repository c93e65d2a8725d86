"""Dataset factories registered by :mod:`harness.plugins.builtin` (``dataset = "beir"`` etc. in a task file).

Each is called as ``factory(**dataset_args, context=...)`` and returns a
:class:`~harness.concepts.dataset.Dataset` with the single mode ``"default"``. Paths are relative to the
context's data folder (:class:`harness.data.folder.DataFolder`) unless absolute. ``identity`` is
``{"name", "files": [{"path", "sha256", "size"}, ...]}``.

Query sets: every topic of the topics file is kept, judged or not; metrics average over the run's
queries that have qrels, as trec_eval does. Two exceptions follow the published protocols: a BEIR
split is the set of queries its ``qrels/<split>`` file names (``queries.jsonl`` often holds every
split's queries), and for candidate files (RankGPT / rank_llm) the queries are those of the file.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from harness.concepts.component_context import ComponentContext
from harness.concepts.dataset import Dataset
from harness.concepts.document import Document
from harness.concepts.errors import DataError
from harness.concepts.qrels import Qrels
from harness.concepts.query import Query
from harness.concepts.run import Run
from harness.context import Context
from harness.data.demo import demo_dir
from harness.data.folder import DataFolder
from harness.formats import beir, topics, trec
from harness.formats.beir import read_beir, read_corpus
from harness.formats.noveleval import read_noveleval
from harness.formats.rankllm import read_rankllm
from harness.formats.scifact import read_scifact_corpus
from harness.formats.trec import read_run

PathArg = str | os.PathLike[str]


def _stem(path: Path) -> str:
    """``topics.dl19-passage.tsv.gz`` -> ``topics.dl19-passage``."""
    name = path.name.removesuffix(".gz")
    return name.rsplit(".", 1)[0] if "." in name else name


def _identity(folder: DataFolder, name: str, files: Iterable[Path], **extra: Any) -> dict[str, Any]:
    return {"name": name, "files": [folder.file_identity(p) for p in files], **extra}


def _require_queries(queries: Mapping[str, Query], path: object, what: str = "queries") -> None:
    if not queries:
        raise DataError(f"no {what} read: the query set is empty", path)


def _finish(
    name: str,
    corpus: Mapping[str, Document],
    queries: Mapping[str, Query],
    qrels: Qrels,
    candidates: Run | None,
    identity: dict[str, Any],
    **meta: Any,
) -> Dataset:
    ds = Dataset.single(name, corpus, queries, qrels, candidates, identity)
    ds.meta.update(meta)
    ds.meta["queries"] = len(queries)
    ds.meta["queries_with_qrels"] = sum(1 for q in queries if qrels.get(q))
    ds.meta["unknown_ids"] = ds.validate()
    return ds


def read_any_qrels(path: Path) -> Qrels:
    """TREC qrels (``qid 0 docid grade``), BEIR ``.tsv`` qrels (with header) or Parquet."""
    if path.name.endswith((".tsv", ".tsv.gz", ".parquet")):
        return beir.read_qrels(path)
    return trec.read_qrels(path)


def read_any_topics(path: Path) -> dict[str, Query]:
    """``qid<TAB>text`` topics, or BEIR ``queries.jsonl`` / Parquet."""
    if path.name.endswith((".jsonl", ".jsonl.gz", ".parquet")):
        return beir.read_queries(path)
    return topics.read_topics(path)


def load_beir_dataset(
    path: PathArg,
    split: str = "test",
    name: str | None = None,
    split_queries: bool = True,
    context: ComponentContext | None = None,
) -> Dataset:
    """A BEIR folder: ``corpus``, ``queries`` and ``qrels/<split>`` (JSONL, gzip or Parquet).

    With ``split_queries`` (default) the queries are those ``qrels/<split>`` names, as BEIR's own
    loader does; ``False`` keeps every query of ``queries.jsonl``.
    """
    where = Context.of(context).data
    folder = where.resolve(path)
    data = read_beir(folder, split)
    queries = data.queries
    _require_queries(queries, data.files[1])
    if split_queries:
        queries = {q: v for q, v in queries.items() if q in data.qrels}
        if not queries:
            raise DataError(f"no query of {data.files[1]} has judgments in {data.files[2]}: "
                            "the query set is empty (query ids must match)")
    label = name or folder.name
    return _finish(label, data.corpus, queries, data.qrels, None,
                   _identity(where, label, data.files, split=split), split=split)


def load_trec_dataset(
    topics: PathArg,
    qrels: PathArg,
    candidates: PathArg | None = None,
    corpus: PathArg | None = None,
    name: str | None = None,
    context: ComponentContext | None = None,
) -> Dataset:
    """TREC topics (``qid<TAB>text``, or BEIR ``queries.jsonl``) and qrels, with an optional TREC
    run file as candidate lists and an optional corpus (BEIR ``corpus.jsonl``, Parquet, or TSV
    ``id<TAB>text`` / ``id<TAB>title<TAB>text``). All topics are kept."""
    where = Context.of(context).data
    topics_path, qrels_path = where.resolve(topics), where.resolve(qrels)
    files = [topics_path, qrels_path]
    queries = read_any_topics(topics_path)
    _require_queries(queries, topics_path)
    judged = read_any_qrels(qrels_path)
    run = None
    if candidates is not None:
        run_path = where.resolve(candidates)
        files.append(run_path)
        run = read_run(run_path)
    docs: dict[str, Document] = {}
    if corpus is not None:
        corpus_path = where.resolve(corpus)
        files.append(corpus_path)
        docs = read_corpus(corpus_path)
    label = name or _stem(topics_path)
    return _finish(label, docs, queries, judged, run, _identity(where, label, files))


def load_rankllm_dataset(
    candidates: PathArg,
    qrels: PathArg,
    topics: PathArg | None = None,
    name: str | None = None,
    context: ComponentContext | None = None,
) -> Dataset:
    """A RankGPT / rank_llm candidate JSON (queries, passages, ranked lists) with TREC qrels.

    The candidate file decides the query set (for DL20: the 54 judged queries of the 200 topics).
    ``topics``, when given, is checked against the file's query text; differences are counted in
    ``meta["topic_text_mismatches"]`` with a warning, and the file's text is kept (it is what the
    published rerankers saw).
    """
    where = Context.of(context).data
    cand_path, qrels_path = where.resolve(candidates), where.resolve(qrels)
    files = [cand_path, qrels_path]
    label = name or _stem(cand_path)
    data = read_rankllm(cand_path, name=label)
    _require_queries(data.queries, cand_path, "candidate lists")
    meta: dict[str, Any] = {}
    if topics is not None:
        topics_path = where.resolve(topics)
        files.append(topics_path)
        given = read_any_topics(topics_path)
        mismatched = [q for q, v in data.queries.items() if q not in given or given[q].text != v.text]
        meta["topic_text_mismatches"] = len(mismatched)
        if mismatched:
            warnings.warn(
                f"{len(mismatched)} queries of {cand_path} are missing from {topics_path} or have other "
                f"text (e.g. {mismatched[0]!r}); using the candidate file's text",
                stacklevel=2,
            )
    return _finish(label, data.corpus, data.queries, read_any_qrels(qrels_path), data.candidates,
                   _identity(where, label, files), **meta)


def load_noveleval_dataset(path: PathArg = "noveleval", name: str = "noveleval",
                           context: ComponentContext | None = None) -> Dataset:
    """NovelEval-2306: 21 queries, 420 passages; each query's 20 passages are its candidates."""
    where = Context.of(context).data
    data = read_noveleval(where.resolve(path))
    _require_queries(data.queries, data.files[1])
    return _finish(name, data.corpus, data.queries, data.qrels, data.candidates, _identity(where, name, data.files))


def load_scifact_dataset(
    corpus: PathArg = "scifact/scifact_csv.zip",
    topics: PathArg = "scifact/topics.beir-v1.0.0-scifact.test.tsv.gz",
    qrels: PathArg = "scifact/qrels.beir-v1.0.0-scifact.test.txt",
    name: str = "scifact",
    member: str | None = None,
    context: ComponentContext | None = None,
) -> Dataset:
    """BEIR SciFact test: the AllenAI CSV corpus (converted on load: title kept apart, text = the
    abstract's sentences joined by a space; 5,183 documents) with Anserini's BEIR topics and qrels
    (300 queries, 339 judgments). ``member`` picks the CSV inside the zip (default
    ``corpus_train.csv``)."""
    where = Context.of(context).data
    corpus_path, topics_path, qrels_path = where.resolve(corpus), where.resolve(topics), where.resolve(qrels)
    queries = read_any_topics(topics_path)
    _require_queries(queries, topics_path)
    docs = read_scifact_corpus(corpus_path, member=member)
    return _finish(name, docs, queries, read_any_qrels(qrels_path), None,
                   _identity(where, name, [corpus_path, topics_path, qrels_path]))


def load_demo_dataset(name: str = "demo", context: ComponentContext | None = None) -> Dataset:
    """The packaged demo (no download): 40 documents, 10 queries with instructions, graded qrels."""
    return load_beir_dataset(demo_dir(), split="test", name=name, context=context)
