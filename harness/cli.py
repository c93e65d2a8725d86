"""The ``harness`` command line: a thin face over the Python API (:mod:`harness.api`)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from .errors import HarnessError
from .llm.cli import cache_group, llm_options


class _Group(click.Group):
    """Reports HarnessError as one clean line and exit status 2, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except HarnessError as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(2)


@click.group(cls=_Group)
@click.version_option(package_name="harness", prog_name="harness")
@click.option("--data-dir", type=click.Path(file_okay=False), envvar="HARNESS_DATA",
              help="Where benchmark files are read from and downloaded to (env HARNESS_DATA).")
def cli(data_dir: str | None) -> None:
    """Evaluate retrievers, rerankers and LLM judges on instruction-following and
    complex-objective retrieval benchmarks."""
    if data_dir:
        from .data import set_data_dir

        set_data_dir(data_dir)


@cli.command("list-plugins")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_plugins_cmd(as_json: bool) -> None:
    """Installed plugins (distribution, version) and the components each registers, by kind."""
    from .plugins import get_host

    host = get_host()
    if as_json:
        click.echo(json.dumps(host.report(), indent=2))
        return
    descriptions = {(c.kind, c.name, c.source): c.description for kind in host.registry.components
                    for c in host.registry.all(kind)}
    for p in host.report():
        head = f"{p['distribution']} {p['version']}" + (f" ({p['name']})" if p["name"] != p["distribution"] else "")
        click.echo(head)
        if p["error"]:
            click.secho(f"  ERROR: {p['error']}", fg="red")
        for kind, names in p["components"].items():
            click.echo(f"  {kind}s:")
            for n in names:
                desc = descriptions.get((kind, n, p["distribution"]), "")
                click.echo(f"    {n:<24} {desc}")


@cli.command("eval")
@click.option("--task", "-t", help="Task name (see `harness list-plugins`), e.g. trec-dl19, scifact, demo.")
@click.option("--dataset", "-d", help="Dataset spec instead of a task, e.g. beir:path=/data/scifact.")
@click.option("--retriever", "-r", help="First stage, e.g. bm25, dense:model=..., plugin:nv-embed. "
              "Default: the task's (its candidates in the re-ranking setting).")
@click.option("--reranker", "rerankers", multiple=True, help="Reranker spec; repeat to chain.")
@click.option("--judge", "-j", help="Judge spec, e.g. instfol.")
@click.option("--metric", "-m", "metrics", multiple=True, help="Metric; repeatable. Default: the task's.")
@click.option("--limit", type=int, help="Evaluate only the first N queries.")
@click.option("--depth", "-k", type=int, help="First-stage depth (default: the task's).")
@click.option("--output", "-o", type=click.Path(file_okay=False), help="Write results.json, per-query "
              "JSONL and TREC runs here.")
@click.option("--json", "as_json", is_flag=True, help="Print the aggregate metrics as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
@llm_options
def eval_cmd(task, dataset, retriever, rerankers, judge, metrics, limit, depth, output, as_json, quiet,
             llm_settings) -> None:
    """Run a task: first stage, rerankers, judge, metrics."""
    from .api import evaluate
    from .table import metrics_table, render

    if not task and not dataset:
        raise click.UsageError("give --task NAME or --dataset SPEC")
    if llm_settings.cache_dir:  # one cache root for LLM replies and embeddings
        import os

        os.environ["HARNESS_CACHE_DIR"] = llm_settings.cache_dir
    result = evaluate(task, dataset=dataset, retriever=retriever, rerankers=rerankers, judge=judge,
                      metrics=metrics or None, limit=limit, depth=depth, output=output, progress=not quiet,
                      command=["harness", *sys.argv[1:]])
    if as_json:
        payload = result.metrics if not hasattr(result, "results") else {
            "tasks": result.per_task, "mean": result.metrics}
        click.echo(json.dumps(payload, indent=2))
        return
    if result.usage:
        if hasattr(result, "results"):  # a suite: the members' usage added up
            t = result.usage["total"]
            click.echo(f"LLM usage over {result.usage['members']} tasks: {t.get('calls', 0)} calls, "
                       f"{t.get('cache_hits', 0)} cache hits, {t.get('input_tokens', 0)} input and "
                       f"{t.get('output_tokens', 0)} output tokens, ${t.get('cost_usd', 0):.2f}"
                       + (" (estimated)" if result.usage["dry_run"] else ""), err=quiet)
        else:
            from .llm import session_usage

            click.echo(session_usage().table(), err=quiet)
        if llm_settings.dry_run:
            click.secho("dry run: nothing was sent; the metrics below come from placeholder replies",
                        fg="yellow")
    if result.task.table or (hasattr(result, "results") and _member_table(result)):
        click.echo(_summary_table(result))
        click.echo()
    if hasattr(result, "results"):  # a suite: one row per member task, then the mean
        per_task = result.per_task
        common = [n for n in result.metrics if all(n in m for m in per_task.values())]
        rows = [(t, *(m[n] for n in common)) for t, m in per_task.items()]
        rows.append(("mean", *(result.metrics[n] for n in common)))
        click.echo(f"{result.task.name}  ({len(result.results)} tasks)")
        click.echo(render(rows, ["task", *common]))
        rest = [(t, n, v) for t, m in per_task.items() for n, v in m.items() if n not in common]
        if rest:  # keys only some members report (per-label figures, bias tables): long form
            click.echo()
            click.echo(render(rest, ["task", "metric", "value"]))
        return
    comps = [result.components["retriever"]["spec"], *(r["spec"] for r in result.components.get("rerankers", []))]
    title = f"{result.task.name}  ({' -> '.join(comps)}; {sum(len(r) for r in result.runs.values())} queries)"
    click.echo(metrics_table(result.metrics, title))


def _member_table(result) -> list:
    return next((r.task.table for r in result.results.values() if r.task.table), [])


def _summary_table(result) -> str:
    """The task's summary row(s) as its paper prints them (``Task.table``); a suite gets a row per
    member and the mean."""
    from .table import render

    columns = result.task.table or _member_table(result)
    comps = getattr(result, "components", None) or next(iter(result.results.values())).components
    system = " -> ".join([comps["retriever"]["spec"], *(r["spec"] for r in comps.get("rerankers", []))])
    if hasattr(result, "results"):
        rows = [(f"{system} | {name}", metrics) for name, metrics in result.per_task.items()]
        rows.append((f"{system} | mean", result.metrics))
    else:
        rows = [(f"{system} | {result.task.name}", result.metrics)]

    def cell(metrics, key, scale):
        value = metrics.get(key)
        return "-" if value is None else round(float(value) * float(scale), 1)

    body = [(label, *(cell(m, key, scale) for _, key, scale in columns)) for label, m in rows]
    return render(body, ["", *(header for header, _, _ in columns)], digits=1)


@cli.command("score")
@click.option("--qrels", required=True, type=click.Path(exists=True, dir_okay=False), help="TREC qrels file.")
@click.option("--run", "run_file", required=True, type=click.Path(exists=True, dir_okay=False),
              help="TREC run file (qid Q0 docid rank score tag).")
@click.option("--metric", "-m", "metrics", multiple=True, default=("nDCG@10",), show_default=True)
@click.option("--per-query", is_flag=True, help="Also print each query's values.")
@click.option("--json", "as_json", is_flag=True)
def score_cmd(qrels, run_file, metrics, per_query, as_json) -> None:
    """Score a TREC run file against qrels, like trec_eval."""
    from .api import score
    from .table import metrics_table, render

    res = score(qrels, run_file, metrics)
    if as_json:
        click.echo(json.dumps({"aggregate": res.aggregate, **({"per_query": res.per_query} if per_query else {})},
                              indent=2))
        return
    if per_query:
        names = list(res.aggregate)
        click.echo(render([(q, *(v.get(n, float("nan")) for n in names)) for q, v in res.per_query.items()],
                          ["query", *names]))
        click.echo()
    click.echo(metrics_table(res.aggregate, f"{run_file} ({len(res.per_query)} queries with qrels)"))


cli.add_command(cache_group)


def _add_compare_commands() -> None:
    from .compare_cli import compare_cmd, report_cmd  # their heavy imports happen when they run

    cli.add_command(compare_cmd)
    cli.add_command(report_cmd)


_add_compare_commands()


@cli.group("data")
def data_group() -> None:
    """Benchmark files: where they are, and fetching them."""


@data_group.command("path")
def data_path_cmd() -> None:
    """Print the data folder."""
    from .data import data_dir

    click.echo(str(data_dir()))


@data_group.command("download")
@click.argument("tasks", nargs=-1, required=True)
@click.option("--base-url", envvar="HARNESS_DATA_URL", help="Mirror serving the files by their data-folder paths.")
def data_download_cmd(tasks, base_url) -> None:
    """Fetch TASKS' files into the data folder, verifying checksums (resumes broken transfers)."""
    from .api import load_task
    from .download import download_task_files

    def members(name: str) -> list:
        task = load_task(name)
        return [task] + [m for sub in task.tasks for m in members(sub)]

    for name in tasks:
        for task in members(name):  # a suite brings its member tasks' files
            if task.files:
                paths = download_task_files(task, base_url=base_url)
                click.echo(f"{task.name}: {len(paths)} file(s) ready")


@cli.command("new-plugin")
@click.argument("name")
@click.option("--dir", "parent", default=".", type=click.Path(file_okay=False), show_default=True)
def new_plugin_cmd(name: str, parent: str) -> None:
    """Write a plugin skeleton harness-NAME/ (package, entry point, a retriever, a test)."""
    from .plugin_template import write_plugin

    root = write_plugin(name, parent)
    click.echo(f"wrote {root}; next: pip install -e {root} && harness list-plugins")


def main() -> None:
    from .plugins import get_host

    try:
        get_host().commands(cli)
    except HarnessError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(2)
    cli(prog_name="harness")


if __name__ == "__main__":  # pragma: no cover
    main()
