"""Any retrieval dataset in MTEB's layout on the Hugging Face Hub (``--dataset mteb:repo=OWNER/NAME,...``).

The repository's card (README YAML ``configs:``) names the files of each config; the configs and their
reading follow MTEB's ``RetrievalDatasetLoader`` (``mteb/abstasks/retrieval_dataset_loaders.py``):

| role | config (subset ``default``) | config (subset ``S``) | fields |
|---|---|---|---|
| corpus | ``corpus`` | ``S-corpus`` | ``_id``/``id``, ``text``, optional ``title`` |
| queries | ``query`` if declared, else ``queries`` | ``S-queries`` | ``_id``/``id``, ``text`` |
| qrels | ``default``, else ``qrels`` | ``S-qrels`` | ``query-id``, ``corpus-id``, ``score`` (a whole number) |
| top_ranked (optional) | ``top_ranked`` | ``S-top_ranked`` | ``query-id``, ``corpus-ids`` (list) |
| instruction (optional) | ``instruction`` | ``S-instruction`` | ``query-id``, ``instruction`` |
| qrel_diff (optional) | ``qrel_diff`` | ``S-qrel_diff`` | ``query-id``, ``corpus-ids`` (FollowIR's p-MRR) |

A config's split is ``split`` when it has one, else its only split. Ids are strings; queries without
qrels are dropped; a title is kept apart (``Document.full_text()`` is MTEB's ``title + " " + text``).
A card without ``configs`` is read as a BEIR folder (``corpus.jsonl``, ``queries.jsonl``,
``qrels/<split>.tsv``). Files (JSONL, gzip or Parquet) are fetched with the Hub client
(``HF_ENDPOINT``, ``HF_TOKEN``) into ``mteb/<owner>/<name>/<revision>/`` in the data folder.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.concepts.component_context import ComponentContext
from harness.concepts.dataset import Dataset
from harness.concepts.errors import DataError
from harness.concepts.qrels import Qrels
from harness.concepts.query import Query
from harness.concepts.run import Run
from harness.concepts.task import DataFile, Task
from harness.context import Context
from harness.data.download import ensure_task_files
from harness.data.hub import HubFile, _error, check_hub_timeouts, endpoint, resolve_hub_revision
from harness.data.hub_configs import Configs, match_files, read_card_configs
from harness.formats.beir import as_id, iter_parquet, qrels_table, read_shards
from harness.formats.jsonl import iter_jsonl_objects
from harness.formats.shards import Table, merge_shards, merge_tables

REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}/[A-Za-z0-9][A-Za-z0-9_.\-]{0,95}$")
FULL_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_SAFE_PATH = re.compile(r"^[A-Za-z0-9_.=+\- ]+(/[A-Za-z0-9_.=+\- ]+)*$")
_SUBSET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")
LISTING = ".harness-listing.json"
MAX_FILES = 100_000
CARD = "README.md"
ROLES = ("corpus", "queries", "qrels", "top_ranked", "instruction", "qrel_diff")
OPTIONAL = ("top_ranked", "instruction", "qrel_diff")
HUB = "https://huggingface.co/datasets/{repo}/resolve/{revision}/{path}"


@dataclass(frozen=True)
class Listed:
    """One file of the repository at the revision: path, size, LFS sha256 when the Hub gives one."""

    path: str
    size: int | None = None
    sha256: str = ""


def check_source(repo: str, revision: str | None) -> str:
    """``revision`` when it is a full 40-hex commit id, else one :class:`DataError` saying so (with the
    commit the branch names now, when the Hub can tell)."""
    if not isinstance(repo, str) or not REPO.match(repo) or ".." in repo:
        raise DataError(f"mteb: repo must be OWNER/NAME as the Hub spells it, not {str(repo)[:100]!r}")
    if isinstance(revision, int) and not isinstance(revision, bool) and 0 <= revision < 10**40:
        revision = str(revision).zfill(40)  # an all-digit id, read as a number by the spec parser
    if isinstance(revision, str) and FULL_COMMIT.match(revision):
        return revision
    branch = str(revision) if revision else "main"
    hint = ""
    try:
        hint = f"; {branch} is commit {resolve_hub_revision(repo, branch)} now: add revision=<that id> to pin it"
    except DataError:
        hint = f"; the Hub in use could not say which commit {branch} names"
    raise DataError(f"mteb:repo={repo}: revision must be a full 40-hex commit id (a result must name the exact "
                    f"bytes it read), not {branch!r}{hint}")


def _listing_from_hub(repo: str, revision: str) -> list[Listed]:
    """The files of ``repo`` at ``revision`` with sizes and LFS digests: one info request bounded by
    ``HF_HUB_DOWNLOAD_TIMEOUT`` (the client's tree listing takes no timeout, so a stalled Hub could hold it)."""
    check_hub_timeouts()  # before the client is imported: it reads them with int() at import
    from huggingface_hub import HfApi, constants

    try:
        info = HfApi(endpoint=endpoint()).repo_info(repo, revision=revision, repo_type="dataset",
                                                    files_metadata=True, timeout=constants.HF_HUB_DOWNLOAD_TIMEOUT)
        siblings = list(info.siblings or [])
        if len(siblings) > MAX_FILES:
            raise DataError(f"dataset {repo}@{revision} holds more than {MAX_FILES:,} files; too many to list")
        out = []
        for e in siblings:
            if getattr(e, "size", None) is None:
                raise DataError(f"dataset {repo}@{revision}: the Hub gave no size for {e.rfilename!r}")
            lfs = getattr(e, "lfs", None)
            sha = getattr(lfs, "sha256", "") if lfs is not None else ""
            out.append(Listed(str(e.rfilename), int(e.size), str(sha or "")))
    except DataError:
        raise
    except Exception as exc:  # the client's errors, its transport errors: one message
        raise _error(HubFile("dataset", repo, revision, "(file listing)"), exc) from None
    return out


def _read_listing(path: Path) -> list[Listed]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        files = raw["files"]
        if not isinstance(files, list) or len(files) > MAX_FILES:
            raise ValueError("files")
        return [Listed(str(f["path"]), f.get("size"), str(f.get("sha256") or "")) for f in files]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DataError(f"unreadable file listing ({exc}); delete it to list the repository again", path) from None


def _write_listing(path: Path, repo: str, revision: str, files: list[Listed]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps({"repo": repo, "revision": revision,
                               "files": [{"path": f.path, "size": f.size, "sha256": f.sha256} for f in files]}),
                   encoding="utf-8")
    os.replace(tmp, path)


def repository_files(context: ComponentContext, repo: str, revision: str, rel: str) -> list[Listed]:
    """The files of ``repo`` at ``revision``: the listing saved in the data folder (a commit's files never
    change), else asked of the Hub and saved; with downloads off, the files already in the folder."""
    data = context.data
    root = data.path
    saved = root / rel / LISTING
    if saved.is_file():
        return _read_listing(saved)
    if not data.auto_download:
        local = root / rel
        found = [Listed(p.relative_to(local).as_posix()) for p in sorted(local.rglob("*"))
                 if p.is_file() and p.name != LISTING and not p.name.endswith(".part")] if local.is_dir() else []
        if not found:
            raise DataError(data.missing_message(rel, root / rel, what="MTEB dataset folder",
                                                 note=f" (dataset {repo}@{revision})"))
        return found
    if not root.is_dir() and data.origin in ("option", "api"):
        raise DataError(f"the data folder {root} ({data.source}) does not exist; check the path, or create it")
    files = _listing_from_hub(repo, revision)
    _write_listing(saved, repo, revision, files)
    return files


def _fallback_configs(names: list[str], split: str) -> Configs:
    """A card without configs: the BEIR layout (``corpus.jsonl``, ``queries.jsonl``, ``qrels/<split>.*``)."""
    out: Configs = {}
    for role, stems in (("corpus", ("corpus",)), ("queries", ("queries",)), ("default", (f"qrels/{split}",))):
        for stem in stems:
            hit = [n for n in names if n in (f"{stem}.jsonl", f"{stem}.jsonl.gz", f"{stem}.parquet", f"{stem}.tsv")]
            if hit:
                out[role] = {"corpus" if role == "corpus" else ("queries" if role == "queries" else split): hit[:1]}
    return out


def role_configs(configs: Configs, subset: str | None) -> dict[str, str]:
    """Which config plays each role (MTEB's names); optional roles only when declared."""
    prefix = f"{subset}-" if subset and subset != "default" else ""
    names = {"corpus": f"{prefix}corpus", "queries": f"{prefix}queries", "top_ranked": f"{prefix}top_ranked",
             "instruction": f"{prefix}instruction", "qrel_diff": f"{prefix}qrel_diff"}
    if "query" in configs:
        names["queries"] = "query"
    names["qrels"] = f"{prefix}qrels" if prefix else ("default" if "default" in configs else "qrels")
    out = {}
    for role in ROLES:
        if names[role] in configs:
            out[role] = names[role]
        elif role not in OPTIONAL:
            declared = ", ".join(sorted(configs)) or "none"
            raise DataError(f"the dataset declares no {names[role]!r} config for its {role} (configs: {declared})")
    return out


def pick_split(configs: Configs, config: str, split: str) -> str:
    splits = list(configs[config])
    if split in splits:
        return split
    if len(splits) == 1:
        return splits[0]
    raise DataError(f"config {config!r} has no split {split!r} (splits: {', '.join(splits)}); give split=NAME")


def _safe(path: str) -> str:
    if not _SAFE_PATH.match(path) or any(part in ("", ".", "..") for part in path.split("/")):
        raise DataError(f"the repository names a file {path[:200]!r} that cannot be stored in the data folder")
    return path


def _download(context: ComponentContext, label: str, rel: str, repo: str, revision: str, wanted: list[Listed]) -> None:
    files = [DataFile(path=f"{rel}/{_safe(f.path)}", url=HUB.format(repo=repo, revision=revision, path=f.path),
                      sha256=f.sha256, size=f.size) for f in wanted]
    ensure_task_files(Task(name=label, dataset="mteb", files=files), context.data, context.progress)


# -- tables -----------------------------------------------------------------------------------------------
def _records(path: Path):
    if path.name.endswith(".parquet"):
        return iter_parquet(path), "row"
    return iter_jsonl_objects(path), "line"


def _id_lists(paths: list[Path], list_field: str, legacy: str) -> dict[str, list[str]]:
    """``query-id`` -> list of doc ids (``top_ranked``, ``qrel_diff``); one pair per record also read."""
    out: dict[str, list[str]] = {}
    for path in paths:
        records, unit = _records(path)
        for loc, rec in records:
            qid = as_id(rec.get("query-id", rec.get("qid")), "'query-id'", path, loc, unit)
            docs = rec.get(list_field, rec.get(legacy))
            docs = docs if isinstance(docs, list) else [docs]
            out.setdefault(qid, []).extend(as_id(d, f"{list_field!r}", path, loc, unit) for d in docs)
    return out


def _instructions(paths: list[Path]) -> tuple[dict[str, str], int]:
    """``query-id`` -> instruction; a query given twice: as for the other tables (``harness.formats.shards``)."""
    def table(path: Path) -> Table[str, str]:
        records, unit = _records(path)
        out: dict[str, str] = {}
        first: dict[str, int] = {}
        for loc, rec in records:
            qid = as_id(rec.get("query-id"), "'query-id'", path, loc, unit)
            text = rec.get("instruction")
            if not isinstance(text, str):
                raise DataError(f"{unit} {loc}: 'instruction' must be a string, got {type(text).__name__}", path)
            if qid in first:
                raise DataError(f"{unit} {loc}: query {qid!r} repeated (first at {unit} {first[qid]})", path)
            out[qid], first[qid] = text, loc
        return Table(path, unit, out, first)

    merged = merge_tables((table(p) for p in paths), lambda k: f"the instruction of query {k!r}", "text")
    return merged.rows, merged.identical


def _whole(table: Any) -> Any:
    """A qrels table whose grades are whole numbers, as ints (MTEB casts scores to int32)."""
    for (q, d), g in table.rows.items():
        if not float(g).is_integer():
            raise DataError(f"{table.place((q, d))}: query {q!r}, document {d!r}: score {g!r} is not a whole number "
                            "(MTEB reads relevance as an integer)")
        table.rows[q, d] = int(g)
    return table


def _qrels(paths: list[Path]) -> tuple[Qrels, int]:
    return merge_shards("qrels", (_whole(qrels_table(p)) for p in paths))


def load_mteb_dataset(
    repo: str,
    revision: str | None = None,
    split: str = "test",
    subset: str | None = None,
    name: str | None = None,
    task: str | None = None,
    context: ComponentContext | None = None,
) -> Dataset:
    """A retrieval dataset in MTEB's layout from the Hub, at the full commit ``revision`` (one mode,
    ``default``). ``top_ranked`` becomes the candidate lists, ``instruction`` each query's instruction,
    ``qrel_diff`` ``meta["qrel_diff"]``. ``task``: the task name download messages give."""

    revision = check_source(repo, revision)
    split = str(split)
    subset = None if subset is None else str(subset)
    if subset is not None and not _SUBSET.match(subset):
        raise DataError(f"mteb: subset must be a config prefix such as 'fas', not {str(subset)[:80]!r}")

    ctx = Context.of(context)
    owner, short = repo.split("/")
    rel = f"mteb/{owner}/{short}/{revision}"
    label = name or repo
    where = task or f"mteb:repo={repo},revision={revision}"
    listed = {f.path: f for f in repository_files(ctx, repo, revision, rel)}
    read: list[Path] = []
    configs: Configs = {}
    if CARD in listed:
        _download(ctx, where, rel, repo, revision, [listed[CARD]])
        card = ctx.data.path / rel / CARD
        read.append(card)
        configs = read_card_configs(card)
    if not configs:
        configs = _fallback_configs(list(listed), split)
    roles = role_configs(configs, subset)
    chosen: dict[str, tuple[str, str, list[str]]] = {}
    for role, config in roles.items():
        sp = pick_split(configs, config, split)
        paths = match_files(configs[config][sp], listed)
        if not paths:
            raise DataError(f"dataset {repo}@{revision}: config {config!r}, split {sp!r} names "
                            f"{configs[config][sp]} and no file of the repository matches")
        chosen[role] = (config, sp, paths)
    _download(ctx, where, rel, repo, revision, [listed[p] for _, _, ps in chosen.values() for p in ps])

    def local(role: str) -> list[Path]:
        paths = [ctx.data.path / rel / p for p in chosen[role][2]] if role in chosen else []
        read.extend(paths)
        return paths

    return _assemble(label, ctx.data, local, read, {
        "repo": repo, "revision": revision, "split": split, **({"subset": subset} if subset else {}),
        "configs": {r: f"{c}/{s}" for r, (c, s, _) in chosen.items()}})


def _assemble(label: str, data: Any, local: Any, read: list[Path], source: dict[str, Any]) -> Dataset:
    corpus, same_docs = read_shards("corpus", local("corpus"))
    qrels, same_judgments = _qrels(local("qrels"))
    raw, same_queries = read_shards("queries", local("queries"))
    instructions, same_instructions = (_instructions(local("instruction")) if "instruction" in source["configs"]
                                       else (None, 0))
    identical = {"corpus": same_docs, "queries": same_queries, "qrels": same_judgments,
                 "instruction": same_instructions}
    queries: dict[str, Query] = {}
    for qid, q in raw.items():
        if qid not in qrels:
            continue  # MTEB drops queries without qrels
        if instructions is not None:
            if qid not in instructions:
                raise DataError(f"query {qid!r} has no row in the instruction config", read[-1])
            q = Query(qid, q.text, instructions[qid], q.meta)
        queries[qid] = q
    if not queries:
        raise DataError(f"dataset {label}: no query has qrels (query ids must match)")
    candidates = None
    if "top_ranked" in source["configs"]:
        top = _id_lists(local("top_ranked"), "corpus-ids", "pid")
        candidates = Run.from_order({q: top.get(q, []) for q in queries})
    meta: dict[str, Any] = {"benchmark": "MTEB layout", **source}
    if "qrel_diff" in source["configs"]:
        meta["qrel_diff"] = _id_lists(local("qrel_diff"), "corpus-ids", "corpus-id")
    identity = {"name": label, "files": [data.file_identity(p) for p in read], **source}
    ds = Dataset.single(label, corpus, queries, qrels, candidates, identity)
    ds.meta.update(meta)
    ds.meta["queries"] = len(queries)
    ds.meta["unknown_ids"] = ds.validate()
    ds.meta["identical_duplicates"] = {k: n for k, n in identical.items() if n}
    return ds


__all__ = ["check_source", "load_mteb_dataset", "pick_split", "repository_files", "role_configs"]
