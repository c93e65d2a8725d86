"""``harness index``: build an embedding index of a corpus on disk (locally or on Ray), describe one,
verify one. Search it with ``harness eval --retriever dense:index=FOLDER``."""

from __future__ import annotations

import json

import click

from harness.cli.options import CACHE_DIR_OPTION, data_dir_option, make_context


@click.group("index")
def index_group() -> None:
    """Embedding indexes on disk: build one, describe one, verify one."""


@index_group.command("build")
@data_dir_option
@click.option("--task", "-t", help="Task whose corpus to encode, e.g. scifact.")
@click.option("--dataset", "-d", help="Dataset spec instead of a task, e.g. beir:path=/data/scifact.")
@click.option("--retriever", "-r", default="dense", show_default=True,
              help="The dense model to encode with, as a retriever spec: dense:model=...,preset=... (or a plugin "
                   "built on it); or bm25 (bm25:k1=...,b=...,stopwords=...,stemmer=...) for a BM25 index.")
@click.option("--output", "-o", required=True, type=click.Path(file_okay=False),
              help="The index folder (created; a folder holding part of the same index is completed).")
@click.option("--shard-size", type=click.IntRange(min=1), default=None, help="Documents per shard [default 100000].")
@click.option("--dtype", type=click.Choice(["float32", "float16"]), default="float32", show_default=True,
              help="How vectors are stored (float16 halves the size; scores move by about 1e-3).")
@click.option("--executor", "-x", default="local", show_default=True, metavar="local|ray|ray:address=auto",
              help="Where to encode: in this process, on a local Ray cluster, or on a running one (Ray options: "
                   "actors, num_cpus, num_gpus, batch_size, device).")
@click.option("--overwrite", is_flag=True, help="Replace an index of another corpus or model in --output.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
@CACHE_DIR_OPTION
def build_cmd(task, dataset, retriever, output, shard_size, dtype, executor, overwrite, quiet, cache_dir) -> None:
    """Encode a corpus into an index folder of shards (resumable: complete shards are kept)."""
    from harness.api import build_index

    if not task and not dataset:
        raise click.UsageError("give --task NAME or --dataset SPEC")
    context = make_context(cache_dir=cache_dir, quiet=quiet)
    report = build_index(output, task=task, dataset=dataset, retriever=retriever, shard_size=shard_size, dtype=dtype,
                         executor=executor, overwrite=overwrite, context=context,
                         on_shard=None if quiet else (lambda line: click.echo(f"[harness] {line}", err=True)))
    click.echo(report.line())


@index_group.command("info")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the manifest as JSON.")
def info_cmd(folder: str, as_json: bool) -> None:
    """Describe an index: model, documents, shards (complete or not), dtype, where the corpus came from."""
    from harness.api import index_info

    info = index_info(folder)
    if as_json:
        click.echo(json.dumps(info, indent=2))
        return
    if info.get("kind") == "harness-bm25-index":
        click.echo(f"index:      {folder} (BM25: k1 {info['k1']}, b {info['b']}, epsilon {info['epsilon']}, "
                   f"stopwords {info['stopwords']}, stemmer {info['stemmer']})")
        click.echo(f"documents:  {info['documents']}, {info['terms']} terms, {info['postings']} postings")
        click.echo(f"corpus:     task {info['source'].get('task')}, corpus sha256 {info['corpus_sha256']}")
        click.echo("checksums:  " + ("sha256 of every file and of the manifest's fields recorded; the manifest's "
                                     f"checked, the files' not here (`harness index verify {folder}` checks them)"
                                     if info["checksums"] else "none recorded (built before the harness recorded "
                                     "them): bm25:index= and `harness index verify` refuse it; rebuild with "
                                     "--overwrite"))
        return
    model = info.get("model") or {}
    click.echo(f"index:      {folder}")
    click.echo(f"documents:  {info['count']} in {info['shards']} shard(s) of {info['shard_size']}; "
               f"{info['shards_complete']} complete" + ("" if info.get("complete") else " (build not finished)"))
    click.echo(f"vectors:    {info.get('dimension')}-d {info['dtype']}, "
               f"{'normalised (cosine)' if info.get('normalize') else 'not normalised (dot product)'}")
    click.echo(f"model:      {model.get('model')} (revision {model.get('revision')}, fingerprint "
               f"{model.get('fingerprint')})")
    click.echo(f"templates:  query {info.get('query_template')!r}, document {info.get('doc_template')!r}")
    src = info.get("source") or {}
    click.echo(f"corpus:     task {src.get('task')}, dataset {src.get('dataset')}, ids sha256 {info['ids_sha256']}")
    click.echo("checksums:  " + ("sha256 of every shard's emb.npy and ids.json recorded; not checked here "
                                 f"(`harness index verify {folder}` checks them)" if info["checksums"] else
                                 "no checksums recorded (built before the harness recorded them; rebuild with "
                                 "--overwrite to add them)"))


@index_group.command("verify")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
def verify_cmd(folder: str) -> None:
    """Check an index whole (dense or BM25): manifest, shards, headers, ids, and every file's sha256 against
    the one its build recorded. Exit 0: all match; 1: a file differs (each is named with both digests);
    2: malformed."""
    from harness.api import verify_index

    report = verify_index(folder)
    if report.get("kind") == "harness-bm25-index":
        _bm25_verified(folder, report)
        return
    if report["checksums"] is None:
        click.echo(f"{folder}: {report['shards']} shard(s); manifest, shard.json, emb.npy headers and ids checked; "
                   f"no checksums recorded (built before the harness recorded them), so the vectors could not be "
                   f"verified; rebuild with --overwrite to add them")
        return
    for m in report["mismatches"]:
        click.echo(f"shard {m['shard']}: {m['file']}: sha256 {m['sha256']}, recorded {m['recorded']}", err=True)
    if report["mismatches"]:
        shards = len({m["shard"] for m in report["mismatches"]})
        click.echo(f"{folder}: {shards} of {report['shards']} shard(s) differ from what the build recorded", err=True)
        click.get_current_context().exit(1)
    click.echo(f"{folder}: {report['shards']} shard(s) verified: sha256 of every emb.npy and ids.json matches")


def _bm25_verified(folder: str, report: dict) -> None:
    """``harness index verify`` of a BM25 index: each differing file with both digests, exit 1."""
    for m in report["mismatches"]:
        click.echo(f"{m['file']}: sha256 {m['sha256']}, recorded {m['recorded']}", err=True)
    if report["mismatches"]:
        click.echo(f"{folder}: {len(report['mismatches'])} of {len(report['files'])} file(s) differ from what the "
                   f"build recorded", err=True)
        click.get_current_context().exit(1)
    click.echo(f"{folder}: BM25 index verified: the manifest's fields and the sha256 of every file "
               f"({', '.join(report['files'][1:])}) match what the build recorded")
