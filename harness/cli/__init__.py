"""The ``harness`` command line: a thin face over the Python API (:mod:`harness.api`)."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from harness.cli.llm import cache_group, llm_options
from harness.concepts.errors import HarnessError
from harness.llm.failures import EXIT_INCOMPLETE


class _Group(click.Group):
    """Reports HarnessError, and an OSError about a named file (a path given by the user that is too
    long, unreadable, ...), as one clean line and exit status 2, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except HarnessError as exc:
            click.echo(f"Error: {exc}", err=True)
            ctx.exit(2)
        except OSError as exc:
            if exc.filename is None:
                raise
            name = str(exc.filename) + (f" -> {exc.filename2}" if exc.filename2 is not None else "")
            click.echo(f"Error: {name}: {exc.strerror or exc}", err=True)
            ctx.exit(2)


_DATA_DIR_HELP = ("Where benchmark files are read from and downloaded to (default: $HARNESS_DATA, else "
                  "~/.cache/harness/data). Give it before or after the command name.")


def _check_data_dir() -> None:
    """A folder given by --data-dir must exist: a mistyped one is reported, never created (only
    `harness data download` creates its folder, and says so)."""
    from harness.concepts.errors import DataError
    from harness.data.folder import data_dir, data_dir_origin

    root = data_dir()
    if data_dir_origin() == "option" and not root.is_dir():
        raise DataError(f"the data folder {root} given by --data-dir does not exist; check the path, or create "
                        f"it and fetch a task's files into it with `harness data download TASK --data-dir {root}`")


def _data_dir_option(check: bool = True, top: bool = False) -> Any:
    """``--data-dir`` for the group and for each command that reads data, so it works before or after
    the command name (the last one given wins). With ``check``, the command refuses a folder given by
    --data-dir (here or before the command name) that does not exist. ``top`` (the main group): an
    invocation without --data-dir drops one left by an earlier invocation in the same process."""

    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
        if ctx.resilient_parsing:  # shell completion: change nothing, report nothing
            return
        from harness.data.folder import data_dir_origin, set_data_dir

        if value is not None:
            set_data_dir(value, source="--data-dir")
        elif top and data_dir_origin() == "option":
            set_data_dir(None)
        if top:  # a new invocation: --quiet of an earlier one (same process) no longer applies
            from harness.runtime.progress import set_quiet

            set_quiet(False)
        if check:
            _check_data_dir()

    return click.option("--data-dir", type=click.Path(file_okay=False), expose_value=False, callback=callback,
                        help=_DATA_DIR_HELP)


@click.group(cls=_Group)
@click.version_option(package_name="harness", prog_name="harness")
# checked by the commands that read data; harness.data.folder reads $HARNESS_DATA
@_data_dir_option(check=False, top=True)
def cli() -> None:
    """Evaluate retrievers, rerankers and LLM judges on instruction-following and
    complex-objective retrieval benchmarks."""


@cli.command("list-plugins")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def list_plugins_cmd(as_json: bool) -> None:
    """Installed plugins (distribution, version) and the components each registers, by kind."""
    from harness.plugins.host import get_host

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
@_data_dir_option()
@click.option("--task", "-t", help="Task name (see `harness list-plugins`), e.g. trec-dl19, scifact, demo.")
@click.option("--dataset", "-d", help="Dataset spec instead of a task, e.g. beir:path=/data/scifact.")
@click.option("--retriever", "-r", help="First stage, e.g. bm25, dense:model=..., plugin:nv-embed. "
              "Default: the task's (its candidates in the re-ranking setting).")
@click.option("--reranker", "rerankers", multiple=True, help="Reranker spec; repeat to chain.")
@click.option("--judge", "-j", help="Judge spec, e.g. instfol.")
@click.option("--metric", "-m", "metrics", multiple=True, help="Metric; repeatable. Default: the task's.")
@click.option("--limit", type=click.IntRange(min=1), help="Evaluate only the first N queries (N >= 1).")
@click.option("--depth", "-k", type=click.IntRange(min=1), help="First-stage depth, >= 1 (default: the task's).")
@click.option("--output", "-o", type=click.Path(file_okay=False), help="Write results.json, per-query "
              "JSONL and TREC runs here (created and checked for writing before any work).")
@click.option("--overwrite", is_flag=True, help="Replace the results an --output folder already holds.")
@click.option("--json", "as_json", is_flag=True, help="Print the aggregate metrics as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress output.")
@click.option("--max-llm-failures", type=click.FloatRange(0.0, 1.0), default=0.0, show_default=True,
              metavar="SHARE", help="Share of LLM requests that may get no usable reply before the run counts as "
              "INCOMPLETE (exit status 3), e.g. 0.01.")
@llm_options
def eval_cmd(task, dataset, retriever, rerankers, judge, metrics, limit, depth, output, overwrite, as_json, quiet,
             max_llm_failures, llm_settings) -> None:
    """Run a task: first stage, rerankers, judge, metrics.

    Exit status: 0 done; 2 an input or configuration error (one message); 3 INCOMPLETE, LLM requests
    got no usable reply beyond --max-llm-failures (metrics are still printed and written, marked)."""
    from harness.api import evaluate

    if not task and not dataset:
        raise click.UsageError("give --task NAME or --dataset SPEC")
    if quiet:  # no progress from the components either (encoding, downloads, LLM batches), while this runs
        from harness.runtime.progress import set_quiet

        set_quiet(True)
        click.get_current_context().call_on_close(lambda: set_quiet(False))
    if llm_settings.cache_dir:  # one cache root for LLM replies and embeddings
        import os

        os.environ["HARNESS_CACHE_DIR"] = llm_settings.cache_dir
    result = evaluate(task, dataset=dataset, retriever=retriever, rerankers=rerankers, judge=judge,
                      metrics=metrics or None, limit=limit, depth=depth, output=output, overwrite=overwrite,
                      progress=not quiet, max_llm_failures=max_llm_failures,
                      command=["harness", *sys.argv[1:]])
    _print_result(result, as_json, quiet, llm_settings)
    if not result.complete:
        sys.exit(EXIT_INCOMPLETE)


def _failure_banner(result) -> str:
    from harness.llm.failures import banner

    if hasattr(result, "results"):  # a suite: each member that had failures
        parts = []
        for name, member in result.results.items():
            text = banner(member.llm_failures, sum(len(r) for r in member.runs.values()))
            if text:
                parts.append(f"[{name}] {text}")
        return "\n".join(parts)
    return banner(result.llm_failures, sum(len(r) for r in result.runs.values()))


def _print_result(result, as_json: bool, quiet: bool, llm_settings) -> None:
    from harness.results.table import metrics_table, render

    failures = _failure_banner(result)
    if as_json:
        payload = result.metrics if not hasattr(result, "results") else {
            "tasks": result.per_task, "mean": result.metrics}
        click.echo(json.dumps(payload, indent=2))
        if failures:
            click.secho(failures, fg="red" if not result.complete else "yellow", err=True)
        return
    if result.usage:
        if hasattr(result, "results"):  # a suite: the members' usage added up
            t = result.usage["total"]
            click.echo(f"LLM usage over {result.usage['members']} tasks: {t.get('calls', 0)} calls, "
                       f"{t.get('cache_hits', 0)} cache hits, {t.get('input_tokens', 0)} input and "
                       f"{t.get('output_tokens', 0)} output tokens, ${t.get('cost_usd', 0):.2f}"
                       + (" (estimated)" if result.usage["dry_run"] else ""), err=quiet)
        else:
            from harness.llm import session_usage

            click.echo(session_usage().table(), err=quiet)
        if llm_settings.dry_run:
            click.secho("dry run: nothing was sent; the metrics below come from placeholder replies",
                        fg="yellow")
    if failures:
        click.secho(failures, fg="red" if not result.complete else "yellow")
        click.echo()
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
    if not result.complete:
        title += "  INCOMPLETE"
    click.echo(metrics_table(result.metrics, title))


def _member_table(result) -> list:
    return next((r.task.table for r in result.results.values() if r.task.table), [])


def _summary_table(result) -> str:
    """The task's summary row(s) as its paper prints them (``Task.table``); a suite gets a row per
    member and the mean."""
    from harness.results.table import render

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
    from harness.api import score
    from harness.results.table import metrics_table, render

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
    from harness.cli.compare import compare_cmd, report_cmd  # their heavy imports happen when they run

    cli.add_command(compare_cmd)
    cli.add_command(report_cmd)


_add_compare_commands()


@cli.group("data")
@_data_dir_option(check=False)  # `data download` may create the folder; `data path` checks it
def data_group() -> None:
    """Benchmark files: where they are, and fetching them."""


@data_group.command("path")
@_data_dir_option()
def data_path_cmd() -> None:
    """Print the data folder (and, on stderr, which setting chose it)."""
    from harness.data.folder import data_dir, data_dir_source

    root = data_dir()
    click.echo(str(root))
    state = "" if root.is_dir() else "; it does not exist yet: `harness data download TASK` creates it"
    click.echo(f"({data_dir_source()}{state})", err=True)


@data_group.command("download")
@click.argument("tasks", nargs=-1, required=True)
@click.option("--base-url", envvar="HARNESS_DATA_URL", help="Mirror serving the files by their data-folder paths.")
@_data_dir_option(check=False)
@click.pass_context
def data_download_cmd(ctx, tasks, base_url) -> None:
    """Fetch TASKS' files into the data folder, verifying checksums (resumes broken transfers).

    Creates the data folder when it does not exist. A task that publishes no files to fetch (e.g.
    IFIR-EVAL) is reported with where its files must go, and the exit status is 2 unless they are
    already in place."""
    from harness.api import load_dataset, load_task
    from harness.concepts.errors import DataError
    from harness.data.download import download_task_files
    from harness.data.folder import data_dir, data_dir_source

    def members(name: str) -> list:
        task = load_task(name)
        return [task] + [m for sub in task.tasks for m in members(sub)]

    problems = []
    for name in tasks:
        for task in members(name):  # a suite brings its member tasks' files
            if task.files:
                root = data_dir()
                if not root.is_dir():
                    click.echo(f"creating the data folder {root} ({data_dir_source()})", err=True)
                paths = download_task_files(task, base_url=base_url)
                click.echo(f"{task.name}: {len(paths)} file(s) ready")
            elif not task.is_suite:
                try:  # nothing to fetch: is its data in place? (the loader says where it must go)
                    load_dataset(task.name)
                except DataError as exc:
                    problems.append(f"{task.name}: nothing to download: the task publishes no files for harness "
                                    f"to fetch, and its data is not in place: {exc}")
                else:
                    click.echo(f"{task.name}: nothing to download (the task publishes no files); its data is "
                               "in place")
    for problem in problems:
        click.echo(f"Error: {problem}", err=True)
    if problems:
        ctx.exit(2)


@cli.command("new-plugin")
@click.argument("name")
@click.option("--dir", "parent", default=".", type=click.Path(file_okay=False), show_default=True)
def new_plugin_cmd(name: str, parent: str) -> None:
    """Write a plugin skeleton harness-NAME/ (package, entry point, a retriever, a test)."""
    from harness.plugins.template import write_plugin

    root = write_plugin(name, parent)
    click.echo(f"wrote {root}; next: pip install -e {root} && harness list-plugins")


def main() -> None:
    from harness.plugins.host import get_host

    try:
        get_host().commands(cli)
    except HarnessError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(2)
    cli(prog_name="harness")


if __name__ == "__main__":  # pragma: no cover
    main()
