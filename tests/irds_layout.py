"""Datasets placed in ``IR_DATASETS_HOME`` in ir_datasets' own layout (ir_datasets 0.6: the cache paths of
``ir_datasets/etc/downloads.json`` and the derived files of ``ir_datasets/datasets/{beir,msmarco_passage}.py``),
so ``--dataset irds:ID`` runs offline: ir_datasets reads a file that is present at its cache path and
downloads nothing."""

from __future__ import annotations

import json
import shutil
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from harness.context import Context
from harness.datasets.loaders import load_scifact_dataset
from harness.formats.rankllm import read_rankllm


def write_beir_zip(zip_path: Path, folder: str, docs: Iterable[Mapping], queries: Iterable[Mapping],
                   qrels: Mapping[str, Mapping[str, int]], split: str = "test") -> Path:
    """A BEIR archive as BEIR publishes it: ``FOLDER/corpus.jsonl``, ``queries.jsonl``, ``qrels/SPLIT.tsv``."""
    zip_path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(zip_path, "w") as z:
        z.writestr(f"{folder}/corpus.jsonl", "".join(json.dumps(d) + "\n" for d in docs))
        z.writestr(f"{folder}/queries.jsonl", "".join(json.dumps(q) + "\n" for q in queries))
        z.writestr(f"{folder}/qrels/{split}.tsv", "query-id\tcorpus-id\tscore\n" + "".join(
            f"{q}\t{d}\t{g}\n" for q, docs in qrels.items() for d, g in docs.items()))
    return zip_path


def place_scifact(home: Path, data_dir: Path) -> None:
    """``beir/scifact``: BEIR's archive (``beir/scifact/source.zip``) built from the shared SciFact files
    (the AllenAI corpus with the title apart, Anserini's BEIR topics and qrels)."""
    ds = load_scifact_dataset(context=Context.create(data_dir=data_dir))
    write_beir_zip(home / "beir" / "scifact" / "source.zip", "scifact",
                   ({"_id": d.id, "title": d.title, "text": d.text, "metadata": {}} for d in ds.corpus.values()),
                   ({"_id": q.id, "text": q.text, "metadata": {}} for q in ds.queries["default"].values()),
                   ds.qrels["default"])


def place_dl19(home: Path, data_dir: Path) -> None:
    """``msmarco-passage/trec-dl-2019``: NIST's qrels at ir_datasets' cache path (the same bytes: ir_datasets
    records their md5), the 43 judged topics and the BM25 top-100 as the derived files ir_datasets reads
    (``trec-dl-2019/queries.tsv``, ``trec-dl-2019/ms.run`` as ``qid did score``), and a collection of the
    candidates' passages (``collection.tsv``, with the version file its migrator checks)."""
    base = home / "msmarco-passage"
    (base / "trec-dl-2019").mkdir(parents=True, exist_ok=True)
    (base / "irds_version.txt").write_text("v2")
    data = read_rankllm(data_dir / "trec-dl" / "bm25_top100.dl19.json")
    run = data.candidates
    with open(base / "trec-dl-2019" / "ms.run", "w", encoding="utf-8") as f:
        for q in run:
            for d, s in run[q]:
                f.write(f"{q} {d} {s!r}\n")
    (base / "collection.tsv").write_text("".join(f"{d}\t{' '.join(doc.text.split())}\n"
                                                 for d, doc in data.corpus.items()), encoding="utf-8")
    shutil.copyfile(data_dir / "trec-dl" / "qrels.dl19-passage.txt", base / "trec-dl-2019" / "qrels")
    shutil.copyfile(data_dir / "trec-dl" / "topics.dl19-passage.tsv", base / "trec-dl-2019" / "queries.tsv")


#: a tiny Touché-style dataset: argument queries with a description and a narrative (BEIR's metadata)
TOUCHE_DOCS = [
    {"_id": "a1", "title": "School uniforms", "text": "Uniforms reduce bullying and cost little for families.",
     "metadata": {"stance": "PRO", "url": "u1"}},
    {"_id": "a2", "title": "Uniforms", "text": "Uniforms limit the expression of pupils at school.",
     "metadata": {"stance": "CON", "url": "u2"}},
    {"_id": "a3", "title": "Homework", "text": "Homework load harms sleep and family time of children.",
     "metadata": {"stance": "CON", "url": "u3"}},
    {"_id": "a4", "title": "Homework helps", "text": "Practice at home improves memory of lessons.",
     "metadata": {"stance": "PRO", "url": "u4"}},
    {"_id": "a5", "title": "Energy", "text": "Nuclear power is reliable and low in carbon emissions.",
     "metadata": {"stance": "PRO", "url": "u5"}},
    {"_id": "a6", "title": "Nuclear waste", "text": "Waste storage and accidents make nuclear energy risky.",
     "metadata": {"stance": "CON", "url": "u6"}},
]
TOUCHE_QUERIES = [
    {"_id": "1", "text": "Should schools require uniforms?",
     "metadata": {"description": "Arguments about bullying costs and expression", "narrative": "Pro or con."}},
    {"_id": "2", "text": "Is homework beneficial?",
     "metadata": {"description": "Effects on sleep memory and family time", "narrative": "Any stance."}},
    {"_id": "3", "text": "Should we use nuclear energy?",
     "metadata": {"description": "Reliability carbon waste and accidents", "narrative": "Both sides."}},
]
TOUCHE_QRELS = {"1": {"a1": 2, "a2": 1, "a3": 0}, "2": {"a3": 2, "a4": 1}, "3": {"a5": 1, "a6": 2}}


def place_touche(home: Path) -> Path:
    """``beir/webis-touche2020/v2``: BEIR's archive at ``beir/webis-touche2020/v2/source.zip``."""
    return write_beir_zip(home / "beir" / "webis-touche2020" / "v2" / "source.zip", "webis-touche2020",
                          TOUCHE_DOCS, TOUCHE_QUERIES, TOUCHE_QRELS)


def beir_folder(root: Path, query_field: str) -> Path:
    """The same Touché data as a plain BEIR folder, with ``query_field`` as each query's text (for the
    BEIR loader: the independent path the irds one is checked against)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "qrels").mkdir(exist_ok=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({k: d[k] for k in ("_id", "title", "text")}) + "\n"
                                               for d in TOUCHE_DOCS))
    field = (lambda q: q["text"]) if query_field == "text" else (lambda q: q["metadata"][query_field])
    (root / "queries.jsonl").write_text("".join(json.dumps({"_id": q["_id"], "text": field(q)}) + "\n"
                                                for q in TOUCHE_QUERIES))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"{q}\t{d}\t{g}\n" for q, docs in TOUCHE_QRELS.items() for d, g in docs.items()))
    return root
