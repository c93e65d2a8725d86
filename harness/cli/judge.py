"""``harness judge agreement|fill|rankcorr``: LLM relevance assessment against a task's human qrels
(``docs/judges.md``): agreement with the people, the holes of the qrels filled, the systems' order under
the filled qrels."""

from __future__ import annotations

import json
import sys

import click

from harness.cli.options import (
    FiniteFloat,
    check_output_file,
    data_dir_option,
    llm_options,
    make_context,
    write_text_file,
)

_TASK = click.option("--task", "-t", required=True, help="The task whose qrels are assessed, e.g. trec-dl19.")
_MODE = click.option("--mode", help="The dataset's mode (needed when it has several, each with its own qrels).")
_JUDGE = click.option("--judge", "-j", default="umbrela", show_default=True,
                      help="Judge spec, e.g. umbrela, umbrela:template=instruction.")
_FAILURES = click.option("--max-llm-failures", type=click.FloatRange(0.0, 1.0), default=0.0, show_default=True,
                         metavar="SHARE", help="Share of LLM requests that may get no usable reply before the "
                         "command counts as INCOMPLETE (exit status 3).")
_QUIET = click.option("--quiet", "-q", is_flag=True, help="No progress output.")


@click.group("judge")
def judge_group() -> None:
    """LLM relevance assessment: agreement with the task's people, filling the holes of its qrels, and
    whether the systems' order survives the filled qrels."""


def _usage(judged, quiet: bool) -> None:
    from harness.llm import usage_table

    if judged.usage:
        click.echo(usage_table(judged.usage), err=quiet)
    if judged.dry_run:
        click.secho("dry run: nothing was sent; the figures above are estimates", fg="yellow", err=quiet)


def _finish(judged) -> None:
    """The failure banner, and exit status 3 when calls failed beyond the accepted share."""
    from harness.llm import EXIT_INCOMPLETE, banner

    text = banner(judged.failures) if judged.failures else ""
    if text:
        click.secho(text, fg="red" if not judged.complete else "yellow", err=True)
    if not judged.complete:
        sys.exit(EXIT_INCOMPLETE)


@judge_group.command("agreement")
@data_dir_option
@_TASK
@_JUDGE
@_MODE
@click.option("--sample", type=click.IntRange(min=1), help="Judge N pairs drawn by human grade (proportional, "
              "seeded); default: every human-judged pair with its document's text.")
@click.option("--seed", type=click.IntRange(0, 2**32 - 1), default=0, show_default=True, help="Seed of the sample.")
@click.option("--threshold", type=FiniteFloat(-100, 100), help="Grade from which a judgment is relevant "
              "(default: the task's: 2 for TREC DL passages, else its metrics' rel=, else 1).")
@click.option("--llm-threshold", type=FiniteFloat(-100, 100), help="The same for the judge's grades "
              "(default: --threshold).")
@click.option("--output", "-o", type=click.Path(file_okay=False), help="Write agreement.json and "
              "agreement_pairs.jsonl into this folder.")
@click.option("--json", "as_json", is_flag=True, help="Print agreement.json's figures as JSON.")
@_FAILURES
@_QUIET
@llm_options
def agreement_cmd(task, judge, mode, sample, seed, threshold, llm_threshold, output, as_json, max_llm_failures,
                  quiet, llm_settings, cache_dir) -> None:
    """Judge the task's human-judged pairs (or a sample) and report Cohen's kappa, binary kappa at the
    relevance threshold, quadratic kappa, the confusion matrix (rows: human grade) and per-grade
    precision and recall. Exit status 3: LLM calls failed beyond --max-llm-failures."""
    from harness.assessment import load_task_data, measure_agreement, write_agreement

    context = make_context(llm_settings, cache_dir, quiet=quiet)
    data = load_task_data(context, task, mode, threshold)
    result, judged = measure_agreement(context, data, judge, sample, seed, llm_threshold, max_llm_failures)
    if output and not judged.dry_run:
        path = write_agreement(output, result, judged, data)
        click.echo(f"[harness] agreement written to {path}", err=True)
    _usage(judged, quiet or as_json)
    if as_json:
        keys = ("status", "n", "kappa", "kappa_binary", "kappa_quadratic", "confusion", "per_grade", "threshold",
                "llm_threshold", "without_grade", "sample")
        click.echo(json.dumps({k: result.get(k) for k in keys}, indent=2))
    elif not judged.dry_run:
        click.echo(_agreement_text(result))
    _finish(judged)


def _agreement_text(result) -> str:
    def num(v) -> str:
        return "n/a" if v is None or v != v else f"{v:.4f}"

    lines = [f"{result['task']['name']}: {result['n']} pairs graded by the judge (of {result['n_pairs']} asked; "
             f"{sum(result['without_grade'].values())} without a grade)",
             f"kappa {num(result.get('kappa'))}   binary kappa (>= {result['threshold']:g}) "
             f"{num(result.get('kappa_binary'))}   quadratic kappa {num(result.get('kappa_quadratic'))}"]
    conf = result.get("confusion")
    if conf:
        labels = conf["labels"]
        lines.append("confusion (rows: human grade, columns: LLM grade)")
        lines.append("       " + "".join(f"{g:>7}" for g in labels))
        lines += [f"{g:>7}" + "".join(f"{c:>7}" for c in row) for g, row in zip(labels, conf["matrix"])]
        lines.append("grade  precision  recall")
        lines += [f"{g:>5}  {num(v['precision']):>9}  {num(v['recall']):>6}" for g, v in result["per_grade"].items()]
    return "\n".join(lines)


@judge_group.command("fill")
@data_dir_option
@click.argument("results", nargs=-1, required=True)
@_TASK
@_JUDGE
@_MODE
@click.option("--depth", "-k", type=click.IntRange(min=1), default=10, show_default=True,
              help="Judge the unjudged pairs among each run's top K.")
@click.option("--output", "-o", required=True, type=click.Path(dir_okay=False),
              help="The TREC qrels file to write (and QRELS_FILE.provenance.jsonl beside it).")
@click.option("--scale", type=click.Choice(["judge", "binary"]), help="Grades written: the judge's as they are, "
              "or 1 for a judge grade >= 2 else 0 (default: judge when the people graded above 1, else binary).")
@_FAILURES
@_QUIET
@llm_options
def fill_cmd(results, task, judge, mode, depth, output, scale, max_llm_failures, quiet, llm_settings,
             cache_dir) -> None:
    """Judge every pair in the top K of the given results folders' runs that the task's qrels lack, and
    write qrels holding the human judgments unchanged plus the filled ones. With --dry-run: the price,
    nothing written. Exit status 3: LLM calls failed beyond --max-llm-failures (nothing written)."""
    from harness.assessment import fill_qrels, load_task_data

    check_output_file(output)
    context = make_context(llm_settings, cache_dir, quiet=quiet)
    data = load_task_data(context, task, mode)
    summary, judged = fill_qrels(context, data, list(results), judge, depth, output, scale,
                                 max_llm_failures=max_llm_failures)
    _usage(judged, quiet)
    click.echo(f"{data.task.name}: {summary['pairs_in_union']} pairs in the union of {summary['runs']} runs' "
               f"top {depth}: {summary['judged_by_people']} judged by people, {summary['to_judge']} to judge"
               + ("" if judged.dry_run else f"; {summary['filled']} filled, {summary['left_unjudged']} left "
                  "without a grade")
               + (f"; {summary['queries_without_qrels']} queries without qrels left out"
                  if summary["queries_without_qrels"] else ""))
    if summary["written"]:
        click.echo(f"[harness] qrels written to {summary['written']['qrels']} "
                   f"({summary['written']['judgments']} judgments; provenance in {summary['written']['provenance']})",
                   err=True)
    elif not judged.dry_run:
        click.echo(f"[harness] {output} not written: LLM calls failed; run the command again to retry them (the "
                   "replies received are cached)", err=True)
    _finish(judged)


@judge_group.command("rankcorr")
@data_dir_option
@click.argument("results", nargs=-1, required=True)
@_TASK
@_MODE
@click.option("--qrels", required=True, type=click.Path(exists=True, dir_okay=False),
              help="The other qrels (e.g. written by `harness judge fill`).")
@click.option("--metric", "-m", default="nDCG@10", show_default=True, help="The metric ordering the systems.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the JSON to this file.")
def rankcorr_cmd(results, task, mode, qrels, metric, as_json, output) -> None:
    """Kendall's tau-b between the systems' order by METRIC under the task's qrels and under --qrels, with
    the systems that change places. RESULTS are results folders (NAME=DIR names one)."""
    from harness.assessment import load_task_data, rank_correlation, split_named

    if output:
        check_output_file(output)
    folders, names = split_named(results)
    context = make_context(quiet=True)
    data = load_task_data(context, task, mode)
    res = rank_correlation(data, folders, qrels, metric, names)
    text = json.dumps(res, indent=2)
    if output:
        write_text_file(output, text + "\n")
    click.echo(text if as_json else _rankcorr_text(res))


def _rankcorr_text(res) -> str:
    metric = res["metric"]
    hole = next((k for k in (res["systems"][0] if res["systems"] else {}) if k.startswith("Hole@")), None)
    tau, p = res["tau"], res["p_value"]
    lines = [f"{metric}: Kendall's tau-b {'n/a' if tau is None else f'{tau:.4f}'} "
             f"(p = {'n/a' if p is None else f'{p:.4f}'}) over {res['n_systems']} systems",
             f"{'system':<30} {'task qrels':>11} {'rank':>5} {'--qrels':>9} {'rank':>5}"
             + (f" {hole + ' task':>14} {hole + ' --qrels':>16}" if hole else "")]
    for s in res["systems"]:
        v = s[metric]
        lines.append(f"{s['name'][:30]:<30} {v['task_qrels']:>11.4f} {s['rank_task_qrels']:>5} "
                     f"{v['qrels_file']:>9.4f} {s['rank_qrels_file']:>5}"
                     + (f" {s[hole]['task_qrels']:>14.4f} {s[hole]['qrels_file']:>16.4f}" if hole else ""))
    lines.append("changed places: " + (", ".join(res["changed_places"]) or "none"))
    return "\n".join(lines)
