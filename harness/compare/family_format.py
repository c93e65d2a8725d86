"""Writing the family-wise analysis (``harness compare --family/--correction/--pairs/...``) as a terminal
table, Markdown or LaTeX: per task and metric (and per mean over tasks) the comparisons and the ranks,
then a footer that states the test, the correction, the family and its size."""

from __future__ import annotations

from harness.compare.analysis import CompareResult
from harness.compare.corrections import DESCRIPTIONS
from harness.compare.family import ACROSS, TEST_NAMES, FamilyResult, PairComparison, RankRow
from harness.compare.latex import latex_escape
from harness.results.table import render

RANK_HEADER = ("rank", "system", "mean", "95% rank CI", "group")


def _f(v: float | None, digits: int = 4) -> str:
    if v is None or v != v:
        return "-"
    return f"{v:.{digits}f}"


def _p(v: float | None) -> str:
    if v is None or v != v:
        return "-"
    return "<0.0001" if v < 1e-4 else f"{v:.4f}"


def _rank(v: float) -> str:
    return f"{v:g}"


def comparison_header(fr: FamilyResult, across: bool) -> list[str]:
    o = fr.options
    head = ["a", "b", "mean_a", "mean_b", "delta", "95% CI", "W/T/L (tasks)" if across else "W/T/L",
            "p_boot" if across else f"p_{o.test}", f"p_{o.correction}", "sig"]
    if o.equivalence is not None:
        head += ["p_equiv", f"p_equiv_{o.correction}", "equiv"]
    return head


def comparison_cells(r: PairComparison, equivalence: bool) -> list[str]:
    e = r.extra
    wtl = (f"{e['task_wins']}/{e['task_ties']}/{e['task_losses']}" if r.scope == "across-tasks"
           else f"{e['wins']}/{e['ties']}/{e['losses']}")
    mark = ("+" if r.delta > 0 else "-") if r.significant else ""
    cells = [r.a, r.b, _f(r.mean_a), _f(r.mean_b), f"{r.delta:+.4f}", f"[{_f(r.ci[0])}, {_f(r.ci[1])}]", wtl,
             _p(r.p_value), _p(r.p_adjusted), mark]
    if equivalence:
        cells += [_p(r.p_equivalence), _p(r.p_equivalence_adjusted), "≈" if r.equivalent else ""]
    return cells


def rank_cells(r: RankRow) -> list[str]:
    return [_rank(r.rank), r.system, _f(r.mean), f"[{_rank(r.rank_ci[0])}, {_rank(r.rank_ci[1])}]", "".join(r.groups)]


def blocks(res: CompareResult) -> list[tuple[str, list[PairComparison], list[RankRow]]]:
    """``(title, comparisons, ranks)`` of each task and metric, then of each mean over tasks."""
    fr = res.family
    keys = list(dict.fromkeys((r.task, r.metric) for r in fr.comparisons))
    out = []
    for task, metric in keys:
        rows = [r for r in fr.comparisons if (r.task, r.metric) == (task, metric)]
        ranks = [r for r in fr.ranks if (r.task, r.metric) == (task, metric)]
        if task == ACROSS:
            tasks = rows[0].extra["tasks"]
            title = (f"{ACROSS} / {metric}  ({len(tasks)} tasks, equally weighted: {', '.join(tasks)}; "
                     f"{rows[0].n} queries)")
        else:
            mc = res.lookup(task, metric)
            title = f"{task} / {metric}  ({rows[0].n} queries)" + (f"  [{mc.note}]" if mc and mc.note else "")
        out.append((title, rows, ranks))
    return out


def footer(res: CompareResult) -> str:
    fr = res.family
    o, s = fr.options, fr.settings
    resamples = {"randomization": f", B={s['permutations']}", "bootstrap": f", B={o.bootstrap}"}.get(o.test, "")
    text = (f"Test: {TEST_NAMES[o.test]}{resamples}, seed={s['seed']}. "
            f"Correction: {DESCRIPTIONS[o.correction]}, over the family: {fr.description}. sig: p_{o.correction} <= "
            f"{s['alpha']} (+: b higher than a, -: lower). delta = mean_b - mean_a with its 95% t interval; W/T/L: "
            f"queries where b is better / equal / worse. Ranks: 1 = best by mean (ties share their mean rank); 95% "
            f"rank CI: percentiles of the ranks over {o.bootstrap} bootstrap resamples of the queries (paired); "
            "group: systems sharing a letter have overlapping rank intervals (cannot be told apart).")
    if o.equivalence is not None:
        text += (f" Equivalence: TOST (two one-sided paired t-tests) of |delta| < {o.equivalence}; ≈: "
                 f"p_equiv_{o.correction} <= {s['alpha']}, corrected over the same family.")
    if o.across_tasks:
        text += (f" {ACROSS}: each task weighted equally; the queries resampled within each task ({o.bootstrap} "
                 "stratified bootstrap resamples): 95% percentile interval, p by the shift method "
                 "(|delta* - delta| >= |delta|), equivalence by a bootstrap TOST; W/T/L (tasks): tasks where b is "
                 f"significantly higher / neither / lower after the correction.")
    return text + f" Missing queries: {res.settings['fill']}."


def to_table(res: CompareResult) -> str:
    eq = res.family.options.equivalence is not None
    out = []
    for title, rows, ranks in blocks(res):
        head = comparison_header(res.family, rows[0].scope == "across-tasks")
        out.append("\n".join([title, render([comparison_cells(r, eq) for r in rows], head), "ranks:",
                              render([rank_cells(r) for r in ranks], list(RANK_HEADER))]))
    out.append(footer(res))
    return "\n\n".join(out)


def _md(rows: list[list[str]], header: list[str]) -> str:
    def esc(s: str) -> str:
        return s.replace("|", "\\|")

    rule = "|".join("---" if i < 2 else "---:" for i in range(len(header)))
    lines = ["| " + " | ".join(esc(h) for h in header) + " |", f"|{rule}|"]
    return "\n".join(lines + ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows])


def to_markdown(res: CompareResult) -> str:
    eq = res.family.options.equivalence is not None
    out = []
    for title, rows, ranks in blocks(res):
        head = comparison_header(res.family, rows[0].scope == "across-tasks")
        out.append(f"### {title.replace('|', chr(92) + '|')}\n\n{_md([comparison_cells(r, eq) for r in rows], head)}"
                   f"\n\nRanks:\n\n{_md([rank_cells(r) for r in ranks], list(RANK_HEADER))}")
    out.append(footer(res))
    return "\n\n".join(out) + "\n"


def _tex_table(head: list[str], rows: list[list[str]], caption: str, spec: str) -> str:
    lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{" + spec + "}", r"\toprule",
             " & ".join(head) + r" \\", r"\midrule"]
    previous = None
    for row in rows:
        if previous is not None and row[:2] != previous:
            lines.append(r"\midrule")
        previous = row[:2]
        lines.append(" & ".join(latex_escape(c).replace("≈", r"$\approx$") for c in row) + r" \\")
    return "\n".join(lines + [r"\bottomrule", r"\end{tabular}", r"\caption{" + caption + "}", r"\end{table}"])


def to_latex(res: CompareResult) -> str:
    """Two booktabs tables: every comparison of the family, and every rank interval."""
    fr = res.family
    o = fr.options
    eq = o.equivalence is not None
    head = ["Task", "Metric", "A", "B", r"$\Delta$", r"95\% CI", "$p$", r"$p_\mathrm{adj}$"]
    head += [r"$p_\mathrm{eq}$", r"$p_\mathrm{eq,adj}$"] if eq else []
    rows = []
    for r in fr.comparisons:
        cells = [r.task, r.metric, r.a, r.b, f"{r.delta:+.4f}" + ("\x00" if r.significant else ""),
                 f"[{_f(r.ci[0])}, {_f(r.ci[1])}]", _p(r.p_value), _p(r.p_adjusted)]
        rows.append(cells + ([_p(r.p_equivalence), _p(r.p_equivalence_adjusted)] if eq else []))
    caption = latex_escape(f"B minus A. Test: {TEST_NAMES[o.test]}. Correction: {DESCRIPTIONS[o.correction]}, "
                           f"over the family: {fr.description}. ") + r"$\dagger$: $p_\mathrm{adj} \le " + \
        f"{fr.settings['alpha']}$" + "."
    table = _tex_table(head, rows, caption, "llll" + "r" * (len(head) - 4)).replace("\x00", r"$^{\dagger}$")
    rank_rows = [[r.task, r.metric, _rank(r.rank), r.system, _f(r.mean),
                  f"[{_rank(r.rank_ci[0])}, {_rank(r.rank_ci[1])}]", "".join(r.groups)] for r in fr.ranks]
    rank_caption = latex_escape(f"Ranks (1 = best) with 95% bootstrap intervals ({o.bootstrap} resamples of the "
                                "queries, paired; seed " + f"{fr.settings['seed']}); systems sharing a group letter "
                                "have overlapping rank intervals.")
    ranks = _tex_table(["Task", "Metric", "Rank", "System", "Mean", r"95\% rank CI", "Group"], rank_rows,
                       rank_caption, "llrlrrl")
    return table + "\n\n" + ranks + "\n"
