"""``harness score``: score a TREC run file against qrels, like trec_eval."""

from __future__ import annotations

import json

import click

from harness.cli.options import make_context


@click.command("score")
@click.option("--qrels", required=True, type=click.Path(exists=True, dir_okay=False), help="TREC qrels file.")
@click.option("--run", "run_file", required=True, type=click.Path(exists=True, dir_okay=False),
              help="TREC run file (qid Q0 docid rank score tag).")
@click.option("--metric", "-m", "metrics", multiple=True, default=("nDCG@10",), show_default=True)
@click.option("--per-query", is_flag=True, help="Also print each query's values.")
@click.option("--json", "as_json", is_flag=True)
def score_cmd(qrels, run_file, metrics, per_query, as_json) -> None:
    """Score a TREC run file against qrels, like trec_eval."""
    from harness.api import score
    from harness.results.table import metrics_table, render_table

    res = score(qrels, run_file, metrics, context=make_context(check_data=False))
    if as_json:
        click.echo(json.dumps({"aggregate": res.aggregate, **({"per_query": res.per_query} if per_query else {})},
                              indent=2))
        return
    if per_query:
        names = list(res.aggregate)
        click.echo(render_table([(q, *(v.get(n, float("nan")) for n in names)) for q, v in res.per_query.items()],
                                ["query", *names]))
        click.echo()
    click.echo(metrics_table(res.aggregate, f"{run_file} ({len(res.per_query)} queries with qrels)"))
