"""``harness eval``: run a task and print its metrics (a thin face over :func:`harness.evaluate`)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from harness.cli.options import data_dir_option, llm_options, make_context

if TYPE_CHECKING:  # pragma: no cover
    from harness.context import Context


@click.command("eval")
@data_dir_option
@click.option("--task", "-t", help="Task name (see `harness list-plugins`), e.g. trec-dl19, scifact, demo.")
@click.option("--dataset", "-d", help="Dataset spec instead of a task, e.g. beir:path=/data/scifact.")
@click.option("--retriever", "-r", help="First stage, e.g. bm25, dense:model=..., plugin:nv-embed. "
              "Default: the task's (its candidates in the re-ranking setting); with --dataset, the dataset's "
              "candidates when it carries them (top_ranked, pools), else bm25. Naming another retriever sets "
              "the candidates aside (said on stderr, recorded in results.json).")
@click.option("--run", "run_files", multiple=True, type=click.Path(dir_okay=False), help="A TREC run file made "
              "elsewhere as the first stage (scored whole, as trec_eval scores it; rerankers may follow); repeat for "
              "several systems, one results folder each under --output.")
@click.option("--name", "run_names", multiple=True, help="The system's name for each --run, in order (its folder "
              "under --output; default: the file's name).")
@click.option("--reranker", "rerankers", multiple=True, help="Reranker spec; repeat to chain.")
@click.option("--judge", "-j", help="Judge spec, e.g. instfol.")
@click.option("--metric", "-m", "metrics", multiple=True, help="Metric; repeatable. Default: the task's.")
@click.option("--qrels", type=click.Path(exists=True, dir_okay=False), help="Score against this TREC qrels file "
              "instead of the dataset's (e.g. written by `harness judge fill`); its sha256 goes to results.json.")
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
@click.option("--sweep", "sweeps", multiple=True, metavar="KEY=V1,V2", help="Run one evaluation per value (repeat: "
              "per combination), each in its own folder under --output: llm.NAME (e.g. llm.reasoning_effort=low,high), "
              "reranker.NAME (reranker.window=10,20), retriever.NAME, judge.NAME, depth (docs/compute.md).")
@llm_options
def eval_cmd(task, dataset, retriever, run_files, run_names, rerankers, judge, metrics, qrels, limit, depth, output,
             overwrite, as_json, quiet, max_llm_failures, sweeps, llm_settings, cache_dir) -> None:
    """Run a task: first stage, rerankers, judge, metrics.

    Exit status: 0 done; 2 an input or configuration error (one message); 3 INCOMPLETE, LLM requests
    got no usable reply beyond --max-llm-failures (metrics are still printed and written, marked)."""
    from harness.api import evaluate
    from harness.llm import EXIT_INCOMPLETE

    if not task and not dataset:
        raise click.UsageError("give --task NAME or --dataset SPEC")
    # one context for this command: --quiet silences the components' progress too (encoding,
    # downloads, LLM batches); --cache-dir is the root of LLM replies and embeddings alike
    context = make_context(llm_settings, cache_dir, quiet=quiet)
    if sweeps and (run_files or run_names):
        raise click.UsageError("--sweep varies the harness's own components; --run evaluates runs made elsewhere: "
                               "give one or the other")
    if sweeps:  # harness/cli/eval_sweep.py: one evaluation per combination, a summary table
        from harness.cli.eval_sweep import run_sweep_command

        run_sweep_command(task, dataset, retriever, rerankers, judge, metrics, limit, depth, output, overwrite, quiet,
                          max_llm_failures, sweeps, context, as_json, qrels=qrels)
        return
    settings = dict(metrics=metrics or None, limit=limit, depth=depth, output=output, overwrite=overwrite,
                    progress=not quiet, max_llm_failures=max_llm_failures, command=["harness", *sys.argv[1:]],
                    qrels=qrels)
    if run_files or run_names:
        named = _eval_runs(task, dataset, retriever, run_files, run_names, rerankers, judge, context, settings)
    else:
        named = [("", evaluate(task, dataset=dataset, retriever=retriever, rerankers=rerankers, judge=judge,
                               context=context, **settings))]
    if as_json and len(named) > 1:  # several --run: one JSON object, the metrics by system name
        click.echo(json.dumps({name: result.metrics for name, result in named}, indent=2))
    else:
        for _, result in named:
            _print_result(result, as_json, quiet, llm_settings)
    if not all(result.complete for _, result in named):
        sys.exit(EXIT_INCOMPLETE)


def _eval_runs(task, dataset, retriever, run_files, run_names, rerankers, judge, context: Context,
               settings: dict) -> list:
    """``--run FILE``: each run file as the first stage (``harness.api.evaluate_runs``): ``(name, result)`` each."""
    from harness.api import evaluate_runs

    if retriever:
        raise click.UsageError("--run replaces the first stage: give it without --retriever")
    if not run_files:
        raise click.UsageError("--name names a --run; give the run file too")
    return evaluate_runs(run_files, run_names, task=task, dataset=dataset, rerankers=rerankers, judge=judge,
                         context=context, **settings)


def _failure_banner(result) -> str:
    from harness.llm import banner

    if result.is_suite:  # each member that had failures
        parts = []
        for name, member in result.members.items():
            text = banner(member.llm_failures, sum(len(r) for r in member.runs.values()))
            if text:
                parts.append(f"[{name}] {text}")
        return "\n".join(parts)
    return banner(result.llm_failures, sum(len(r) for r in result.runs.values()))


def _quality_lines(result) -> list[str]:
    """One line per LLM component whose replies were not all usable (reply-quality failures: part of
    what is measured, handled by the method's own rule), e.g. a small model's unparseable windows."""
    if result.is_suite:
        return []
    described = [*result.components.get("rerankers", []), result.components.get("judge") or {}]
    lines = []
    for desc in described:
        st = desc.get("stats") or {}
        if st.get("failed_windows"):
            lines.append(f"{desc['spec']}: {st['failed_windows']} of {st.get('windows', '?')} windows gave no usable "
                         f"ranking (each kept its order; by kind in results.json)")
        elif st.get("parse_failures"):
            lines.append(f"{desc['spec']}: {st['parse_failures']} of {st.get('items', '?')} replies unparseable "
                         f"(handled by the method's rule; see results.json)")
    return lines


def _print_result(result, as_json: bool, quiet: bool, llm_settings) -> None:
    failures = _failure_banner(result)
    if as_json:
        _print_json(result, failures)
        return
    if result.usage:
        _print_usage(result, quiet, llm_settings)
    if failures:
        click.secho(failures, fg="red" if not result.complete else "yellow")
        click.echo()
    for line in _quality_lines(result):
        click.echo(line)
    if result.task.table or any(r.task.table for r in result.members.values()):
        from harness.results.table import summary_table

        click.echo(summary_table(result))
        click.echo()
    if result.is_suite:
        _print_suite(result)
    else:
        _print_metrics(result)


def _print_json(result, failures: str) -> None:
    """``--json``: the aggregate metrics (a suite's per task, and their mean); the failure banner on stderr."""
    payload = {"tasks": result.per_task, "mean": result.metrics} if result.is_suite else result.metrics
    click.echo(json.dumps(payload, indent=2))
    if failures:
        click.secho(failures, fg="red" if not result.complete else "yellow", err=True)


def _print_usage(result, quiet: bool, llm_settings) -> None:
    """The LLM usage (on stderr with --quiet), and the dry-run warning."""
    from harness.llm import usage_table

    if result.is_suite:  # the members' usage added up
        t = result.usage["total"]
        click.echo(f"LLM usage over {result.usage['members']} tasks: {t.get('calls', 0)} calls, "
                   f"{t.get('cache_hits', 0)} cache hits, {t.get('input_tokens', 0)} input and "
                   f"{t.get('output_tokens', 0)} output tokens, ${t.get('cost_usd', 0):.2f}"
                   + (" (estimated)" if result.usage["dry_run"] else "")
                   + (f"; {t['batch']['calls']} calls via the batch API in {t['batch']['rounds']} round(s)"
                      if t.get("batch", {}).get("calls") else ""), err=quiet)
    else:
        click.echo(usage_table(result.usage), err=quiet)
    if llm_settings.dry_run:
        click.secho("dry run: nothing was sent; the metrics below come from placeholder replies",
                    fg="yellow")


def _print_suite(result) -> None:
    """One row per member task, then the mean; keys only some members report in long form."""
    from harness.results.table import render_table

    per_task = result.per_task
    common = [n for n in result.metrics if all(n in m for m in per_task.values())]
    rows = [(t, *(m[n] for n in common)) for t, m in per_task.items()]
    rows.append(("mean", *(result.metrics[n] for n in common)))
    click.echo(f"{result.task.name}  ({len(result.members)} tasks)")
    click.echo(render_table(rows, ["task", *common]))
    rest = [(t, n, v) for t, m in per_task.items() for n, v in m.items() if n not in common]
    if rest:  # keys only some members report (per-label figures, bias tables): long form
        click.echo()
        click.echo(render_table(rest, ["task", "metric", "value"]))


def _print_metrics(result) -> None:
    """The metrics table of one task, titled with its components and query count."""
    from harness.results.table import metrics_table

    comps = [result.components["retriever"]["spec"], *(r["spec"] for r in result.components.get("rerankers", []))]
    title = f"{result.task.name}  ({' -> '.join(comps)}; {sum(len(r) for r in result.runs.values())} queries)"
    if not result.complete:
        title += "  INCOMPLETE"
    click.echo(metrics_table(result.metrics, title, uncertainty=result.uncertainty, details=result.metric_details,
                             notes=result.metric_notes))
