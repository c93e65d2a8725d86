"""The ``harness compare`` and ``harness report`` commands (attached to the main CLI with
``cli.add_command(compare_cmd)`` and ``cli.add_command(report_cmd)``)."""

from __future__ import annotations

import click

from harness.cli.options import FiniteFloat, check_output_file, write_text_file

#: the most resamples ``-B`` takes (a p-value resolution of 1e-6; more only costs time and memory)
MAX_PERMUTATIONS = 1_000_000
#: the largest ``--seed`` (numpy seeds are non-negative)
MAX_SEED = 2**32 - 1

_COMMON_OPTIONS = (
    click.argument("results", nargs=-1, required=True),
    click.option("--baseline", help="The system the others are tested against (default: the first)."),
    click.option("--metric", "metrics", multiple=True,
                 help="Metric(s) to compare (repeatable; default: every metric with per-query values in all)."),
    click.option("--task", "tasks", multiple=True, help="Only these task(s) (repeatable; default: all shared)."),
    click.option("--permutations", "-B", default=10_000, show_default=True,
                 type=click.IntRange(1, MAX_PERMUTATIONS),
                 help=f"Random resamples for the randomization and Tukey HSD tests (at most {MAX_PERMUTATIONS:,})."),
    click.option("--seed", default=0, show_default=True, type=click.IntRange(0, MAX_SEED),
                 help=f"Random seed (0 to {MAX_SEED:,})."),
    click.option("--alpha", default=0.05, show_default=True, type=FiniteFloat(0, 1),
                 help="Significance level (after Holm correction)."),
    click.option("--fill", type=click.Choice(["error", "zero", "drop"]), default="error", show_default=True,
                 help="Queries missing from some runs: error, count as 0, or leave out."),
    click.option("--name", "names", multiple=True,
                 help="Names for the systems, in order (default: folder names; or give RESULTS as NAME=DIR)."),
)

#: re-score every system's run under other qrels first (harness/compare/rescore.py)
_QRELS_OPTION = click.option("--qrels", type=click.Path(exists=True, dir_okay=False),
                             help="Score each system's stored run under this TREC qrels file first (e.g. written "
                                  "by `harness judge fill`): standard measures and Hole@k.")


#: the family-wise analysis (docs/compare.md "Families, corrections, ranks"): given any of these, compare adds
#: the flat list of comparisons corrected over the chosen family, the rank intervals and, when asked, the
#: means over tasks; without any, its output is the classic one
_FAMILY_OPTIONS = (
    click.option("--family", type=click.Choice(["task-metric", "all"]),
                 help="The family a correction runs over: task-metric (one per task and metric, the classic "
                      "table's) or all (every comparison printed: tasks x metrics x pairs). Default: task-metric."),
    click.option("--correction", type=click.Choice(["holm", "bonferroni", "bh", "by", "none"]),
                 help="Multiple-comparison correction: holm, bonferroni (family-wise error), bh (Benjamini-Hochberg), "
                      "by (Benjamini-Yekutieli) (false discovery rate), none. Default: holm."),
    click.option("--pairs", type=click.Choice(["baseline", "all"]),
                 help="baseline (each system against the baseline) or all (every pair in the order given, a the "
                      "earlier). Default: baseline."),
    click.option("--test", "test", type=click.Choice(["randomization", "t", "wilcoxon", "bootstrap"]),
                 help="The test whose p-value is corrected. Default: randomization."),
    click.option("--equivalence", type=FiniteFloat(min=0, min_open=True), metavar="MARGIN",
                 help="Add a TOST equivalence p-value per comparison: |mean_b - mean_a| < MARGIN."),
    click.option("--across-tasks", is_flag=True, default=None,
                 help="Compare the means over tasks (each task weighted equally; stratified bootstrap)."),
    click.option("--ranks", is_flag=True, default=None,
                 help="Rank intervals of the systems per task and metric (also given by every option above)."),
    click.option("--bootstrap", type=click.IntRange(1, MAX_PERMUTATIONS), metavar="B",
                 help="Bootstrap resamples for the rank intervals, the bootstrap test and the means over tasks "
                      "(default 10,000)."),
)


def _apply(options):
    def deco(f):
        for o in reversed(options):
            f = o(f)
        return f
    return deco


@click.command("compare")
@_apply(_COMMON_OPTIONS)
@click.option("--format", "fmt", type=click.Choice(["table", "json", "markdown", "latex"]), default="table",
              show_default=True, help="Output format.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write to this file instead of stdout.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(min=1),
              help="Threads for the resampling (the p-values do not depend on it).")
@_apply(_FAMILY_OPTIONS)
@_QRELS_OPTION
def compare_cmd(results, baseline, metrics, tasks, permutations, seed, alpha, fill, names, fmt, output,
                workers, qrels, **family) -> None:
    """Paired significance tests between results folders evaluated on the same task(s).

    Per task and metric: each system against the baseline (paired randomization test, paired
    t-test, Holm correction over the systems, mean difference with 95% CI, effect size,
    wins/ties/losses) and, for more than two systems, the randomized Tukey HSD over all pairs.

    With --family, --correction, --pairs, --test, --equivalence, --across-tasks, --ranks or
    --bootstrap: every comparison as one flat list corrected over the chosen family (stated with its
    size), each system's rank with a bootstrap interval, and the means over tasks when asked."""
    from harness.compare import compare, load_systems
    from harness.compare.format import render_result

    if output:
        check_output_file(output)
    options = _family_options(family)
    systems = load_systems(list(results), list(names))
    if qrels:
        from harness.compare.rescore import rescore_systems

        systems = rescore_systems(systems, qrels, list(metrics) or None)
    res = compare(systems, baseline=baseline, metrics=list(metrics) or None, tasks=list(tasks) or None,
                  permutations=permutations, seed=seed, alpha=alpha, fill=fill, workers=workers, options=options)
    text = render_result(res, fmt)
    if output:
        write_text_file(output, text if text.endswith("\n") else text + "\n")
        click.echo(f"[harness] comparison written to {output}", err=True)
    else:
        click.echo(text)


def _family_options(given: dict):
    """The family-wise analysis' options when any was given, else None (the classic output)."""
    if all(v is None for v in given.values()):
        return None
    from harness.compare import FamilyOptions

    return FamilyOptions(**{k: v for k, v in given.items() if v is not None and k != "ranks"})


@click.command("report")
@_apply(_COMMON_OPTIONS[:1] + _COMMON_OPTIONS[1:2] + _COMMON_OPTIONS[4:])
@click.option("-o", "--output", type=click.Path(dir_okay=False), default="report.html", show_default=True,
              help="The HTML file to write.")
@click.option("--title", default="harness report", show_default=True, help="The report's title.")
@click.option("--bootstrap", default=10_000, show_default=True, type=click.IntRange(1, MAX_PERMUTATIONS), metavar="B",
              help="Bootstrap resamples for the rank intervals.")
@_QRELS_OPTION
def report_cmd(results, baseline, permutations, seed, alpha, fill, names, output, title, bootstrap, qrels) -> None:
    """One self-contained HTML report (no network needed) of results folders: per-task tables with
    significance marks against the baseline, radar charts across a suite's tasks, bar charts per
    task or instruction level, rank-interval charts, the worst queries with their rankings, cost and usage."""
    from harness.compare import load_systems
    from harness.compare.report import write_report
    from harness.runtime.extras import require

    require("jinja2", "report", "harness report")  # before any results folder is read
    check_output_file(output)
    systems = load_systems(list(results), list(names))
    if qrels:
        from harness.compare.rescore import rescore_systems

        systems = rescore_systems(systems, qrels)
    path = write_report(systems, output, baseline=baseline, permutations=permutations, seed=seed, alpha=alpha,
                        fill=fill, title=title, bootstrap=bootstrap)
    size = path.stat().st_size
    click.echo(f"[harness] report written to {path} ({size / 1024:.0f} KiB)", err=True)
