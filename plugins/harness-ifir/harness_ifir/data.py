"""Loader for the IFIR-EVAL release layout (one folder per subset, as the authors' code reads it):

- ``<name>-corpus.jsonl``: one document per line, ``{"_id", "title"?, "text"}``; documents with an
  empty text are skipped, as the released code does;
- ``test_data.json``: a list of queries ``{"_id", "text", "corpus": [{"_id", ...}], "instructions":
  [{"level", "instruction", "rel"}]}``; ``rel`` holds indices into that query's ``corpus`` list
  (document ids are accepted too); relevance is per instruction;
- ``<name>-query.jsonl`` and ``<name>-qrel.tsv`` (the hub's names; ``-query.json`` / ``-qrel.jsonl`` in
  the authors' GitHub README): the original queries and qrels; not needed for the evaluation, recorded
  in the dataset identity (path, sha256, size) when present.

The release is the Hugging Face dataset ``songtingyu/IFIR`` (MIT; one folder per subset, the corpora in
LFS). :func:`hub_files` lists a subset's four files at a full commit id, which ``harness data download
ifir:<subset>`` fetches into ``<data folder>/ifir/<subset>/``.

One harness query per instruction: id ``<_id>`` when the query has one instruction, ``<_id>-L<level>``
otherwise. Two modes share the ids and the qrels:

- ``query``: the query text only (``instruction`` empty), the C_q ranking;
- ``instructed``: the query text and the instruction (the task joins them with a space), the C_inst ranking.

Both modes' queries carry what the judge needs in ``meta``: ``judge_instruction`` (query + " " +
instruction, the level text the released code judges against), ``level`` (1-3; 0 where the subset
has no levels), ``ifir_subset`` and ``query_id`` (the release's query id).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness import ComponentContext, Context, DataError, DataFile, DataFolder, Dataset, Document, Qrels, Query
from harness.formats import iter_lines, open_text

MODES = ("query", "instructed")
RELEASE = "IFIR-EVAL (Hugging Face dataset songtingyu/IFIR; SighingSnow/IFIR layout)"
HUB_REPO = "songtingyu/IFIR"
HUB_URL = "https://huggingface.co/datasets/{repo}/resolve/{revision}/{subset}/{file}"
#: the full commit id of ``songtingyu/IFIR`` downloads are pinned to. Empty: no full id could be
#: verified from here (see docs/ifir.md), so the files are declared ``unpinned`` on ``main``: a download
#: resolves ``main`` to its full commit id once (said on stderr) and fetches every file at that commit;
#: results.json records the sha256 of every file read, so runs on two uploads are told apart.
HUB_REVISION = ""
HUB_BRANCH = "main"
UNPINNED = "no full commit id of songtingyu/IFIR could be verified for this release; see docs/ifir.md"
#: identity files besides the corpus and test_data.json: the hub's names, then the GitHub README's
_IDENTITY_SUFFIXES = ("-query.jsonl", "-qrel.tsv", "-query.json", "-qrel.jsonl")


def hub_names(subset: str) -> list[str]:
    """The files of one subset folder of ``songtingyu/IFIR``."""
    return [f"{subset}-corpus.jsonl", f"{subset}-query.jsonl", f"{subset}-qrel.tsv", "test_data.json"]


def subset_folder(subset: str, revision: str | None = None) -> str:
    """The subset's folder in the data folder: ``ifir/<subset>``, or ``ifir/<subset>@<revision>`` for a
    revision other than the pinned one (two snapshots never share a folder)."""
    return f"ifir/{subset}@{revision}" if revision and revision != HUB_REVISION else f"ifir/{subset}"


def hub_files(subset: str, revision: str | None = None) -> list[DataFile]:
    """The subset's four hub files at ``revision`` (default: the pin; with neither, ``main``, resolved to
    its commit when downloaded). No checksum is published: the sha256 of what was read goes into
    results.json's dataset identity."""
    rev = revision or HUB_REVISION
    folder = subset_folder(subset, revision)
    needed = {f"{subset}-corpus.jsonl", "test_data.json"}  # the other two are identity files only
    return [DataFile(path=f"{folder}/{name}", optional=name not in needed, unpinned="" if rev else UNPINNED,
                     url=HUB_URL.format(repo=HUB_REPO, revision=rev or HUB_BRANCH, subset=subset, file=name))
            for name in hub_names(subset)]


def has_subset(folder: Path, subset: str) -> bool:
    """Whether ``folder`` holds what the loader needs (the corpus and test_data.json)."""
    return (folder / f"{subset}-corpus.jsonl").is_file() and (folder / "test_data.json").is_file()


def _download_hint(subset: str) -> str:
    return (f"`harness data download ifir:{subset}` fetches it from the Hugging Face dataset {HUB_REPO} "
            f"(`harness eval` does on first use), or put the subset's folder there")


def subset_dir(subset: str, path: str | None = None, data: DataFolder | None = None) -> Path:
    """The subset's folder: ``path`` when given (absolute, or relative to the data folder), else
    ``<data folder>/ifir/<subset>``. Raises :class:`DataError` saying where it looked."""
    data = data or Context.of(None).data
    rel = path if path else f"ifir/{subset}"
    full = data.locate(rel)
    if not full.is_dir():
        absolute = Path(rel).expanduser().is_absolute()
        how = "put the subset's folder there" if absolute else _download_hint(subset)
        remedy = f"{how} ({subset}-corpus.jsonl and test_data.json, as released; see docs/ifir.md)"
        if not absolute:
            remedy += f", or point to a data folder that holds ifir/{subset}/ with {data.point_elsewhere}"
        msg = data.missing_message(rel, full, what=f"IFIR-EVAL subset {subset!r}", remedy=remedy + ".")
        raise DataError(msg + (f". {remedy}." if absolute else ""))
    return full


def read_corpus(path: Path) -> dict[str, Document]:
    corpus: dict[str, Document] = {}
    for lineno, line in iter_lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            doc_id, text = str(row["_id"]), row.get("text") or ""
        except (ValueError, KeyError, TypeError) as exc:
            raise DataError(f"bad corpus line ({exc})", path, lineno) from exc
        if not text:
            continue
        corpus[doc_id] = Document(doc_id, text, row.get("title") or "")
    return corpus


def _levels(levels: Any) -> set[int] | None:
    if levels is None or levels == "":
        return None
    if isinstance(levels, int):
        return {levels}
    if isinstance(levels, str):
        return {int(x) for x in levels.replace("+", ",").split(",") if x.strip()}
    return {int(x) for x in levels}


def _rel_ids(rel: Iterable[Any], corpus_ids: list[str], where: str) -> list[str]:
    out = []
    for r in rel:
        if isinstance(r, int) and not isinstance(r, bool):
            if not 0 <= r < len(corpus_ids):
                raise DataError(f"{where}: rel index {r} outside the query's corpus list ({len(corpus_ids)} ids)")
            out.append(corpus_ids[r])
        else:
            out.append(str(r))
    return out


def read_test_data(path: Path, subset: str, levels: set[int] | None = None
                   ) -> tuple[dict[str, dict[str, Query]], Qrels]:
    with open_text(path) as f:
        try:
            data = json.load(f)
        except ValueError as exc:
            raise DataError(f"not valid JSON ({exc})", path) from exc
    if not isinstance(data, list):
        raise DataError("expected a list of queries", path)
    queries: dict[str, dict[str, Query]] = {m: {} for m in MODES}
    qrels: dict[str, dict[str, float]] = {}
    for i, item in enumerate(data):
        try:
            qid0, text = str(item["_id"]), item.get("text") or ""
            corpus_ids = [str(c["_id"]) if isinstance(c, dict) else str(c) for c in item.get("corpus", [])]
            instructions = item["instructions"]
        except (KeyError, TypeError) as exc:
            raise DataError(f"query #{i}: missing field {exc}", path) from exc
        for inst in instructions:
            level = int(inst.get("level") or 0)
            if levels is not None and level not in levels:
                continue
            instruction = (inst.get("instruction") or "").strip()
            qid = qid0 if len(instructions) == 1 else f"{qid0}-L{level}"
            n = 2
            while qid in queries["query"]:
                qid = f"{qid0}-L{level}-{n}"
                n += 1
            meta = {"level": level, "judge_instruction": f"{text} {instruction}".strip(), "ifir_subset": subset,
                    "query_id": qid0}
            queries["query"][qid] = Query(qid, text, "", dict(meta))
            queries["instructed"][qid] = Query(qid, text, instruction, dict(meta))
            rel = _rel_ids(inst.get("rel") or [], corpus_ids, f"{path}: query {qid0!r} level {level}")
            qrels[qid] = {d: 1 for d in rel}
    return queries, Qrels(qrels)


def load_ifir(subset: str, path: str | None = None, levels: Any = None, name: str | None = None,
              context: ComponentContext | None = None, revision: str | None = None) -> Dataset:
    """Load one IFIR-EVAL subset (``levels``: e.g. ``3`` or ``"2,3"`` keeps those levels only;
    ``revision``: the folder of that hub snapshot, ``ifir/<subset>@<revision>``, when ``path`` is not given)."""
    data = Context.of(context).data
    if revision and not path:
        path = subset_folder(subset, revision)
    folder = subset_dir(subset, path, data)
    corpus_file = folder / f"{subset}-corpus.jsonl"
    test_file = folder / "test_data.json"
    for f in (corpus_file, test_file):
        if not f.is_file():
            raise DataError(f"IFIR-EVAL subset {subset!r}: {f.name} missing in {folder}")
    corpus = read_corpus(corpus_file)
    queries, qrels = read_test_data(test_file, subset, _levels(levels))
    if not queries["query"]:
        raise DataError(f"IFIR-EVAL subset {subset!r}: no instructions{' at levels ' + str(levels) if levels else ''}",
                        test_file)
    files = [corpus_file, test_file] + [p for p in (folder / f"{subset}{sfx}" for sfx in _IDENTITY_SUFFIXES)
                                        if p.is_file()]
    found_levels = sorted({q.meta["level"] for q in queries["query"].values()})
    return Dataset(
        name=name or f"ifir:{subset}",
        corpus=corpus,
        queries=queries,
        qrels={m: qrels for m in MODES},
        identity={"release": RELEASE, "subset": subset, "files": [data.file_identity(p) for p in files],
                  **({"revision": revision} if revision else {}),
                  **({"levels": sorted(_levels(levels) or [])} if levels else {})},
        meta={"ifir_subset": subset, "levels": found_levels},
    )
