"""Writing a :class:`CompareResult` as a terminal table, JSON, Markdown or LaTeX (booktabs)."""

from __future__ import annotations

import json
import math

from harness.compare import family_format
from harness.compare.analysis import CompareResult, MetricComparison
from harness.compare.latex import latex_escape
from harness.results.table import render

HEADER = ("system", "mean", "diff", "95% CI", "d_z", "W/T/L", "p_rand", "p_holm", "p_t", "sig")


def _f(v: float, digits: int = 4) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.{digits}f}"


def _p(v: float) -> str:
    if v is None or v != v:
        return "-"
    return "<0.0001" if v < 1e-4 else f"{v:.4f}"


def _mean(r: MetricComparison, system: str, value: float, pm: str = "±") -> str:
    """The mean, with ``± SE`` when the system's results report an SE for the metric."""
    se = (r.uncertainty.get(system) or {}).get("se")
    return _f(value) if se is None else f"{_f(value)} {pm} {_f(se)}"


def _rows(r: MetricComparison, pm: str = "±") -> list[list[str]]:
    base = r.systems[0]
    rows = [[f"{base} (baseline)", _mean(r, base, r.means[base], pm), "", "", "", "", "", "", "", ""]]
    for c in r.comparisons:
        mark = ("+" if c.diff > 0 else "-") if c.significant else ""
        rows.append([c.system, _mean(r, c.system, c.mean, pm), f"{c.diff:+.4f}", f"[{_f(c.ci_low)}, {_f(c.ci_high)}]",
                     _f(c.effect_size, 2), f"{c.wins}/{c.ties}/{c.losses}", _p(c.p_randomization),
                     _p(c.p_randomization_holm), _p(c.p_t), mark])
    for name, value in r.leaderboard.items():  # MTEB result files: no per-query scores, no test
        rows.append([f"{name} (MTEB)*", _f(value), f"{value - r.means[base]:+.4f}", "", "", "", "—", "—", "—", ""])
    return rows


def _title(r: MetricComparison) -> str:
    t = f"{r.task} / {r.metric}  ({r.n_queries} queries)"
    return f"{t}  [{r.note}]" if r.note else t


def _tukey_rows(r: MetricComparison) -> list[list[str]]:
    out = []
    for i, a in enumerate(r.systems):
        for b in r.systems[i + 1:]:
            out.append([a, b, f"{r.means[a] - r.means[b]:+.4f}", _p(r.tukey[a][b])])
    return out


def _footer(res: CompareResult) -> str:
    s = res.settings
    text = (f"Paired randomization test (sign flips), B={s['permutations']}, seed={s['seed']}; p_holm: Holm "
            f"correction within each family ({s['family']}); sig: p_holm <= {s['alpha']} (+ higher, - lower than "
            f"{res.baseline}); 95% CI: t interval of the mean difference; d_z: Cohen's d_z; W/T/L: queries won, "
            f"tied, lost against the baseline; p_t: paired t-test. Missing queries: {s['fill']}.")
    if any(r.uncertainty for r in res.results):
        text += " mean ± SE: the standard error the metric reported with its value (results.json uncertainty)."
    if any(r.leaderboard for r in res.results):
        text += (" * (MTEB): a score from an MTEB result file (a leaderboard row): it has no per-query scores, so "
                 "no paired test is claimed for it (p: —).")
    return text


def to_table(res: CompareResult) -> str:
    blocks = []
    for r in res.results:
        block = [_title(r), render(_rows(r), HEADER)]
        if r.tukey:
            block.append("randomized Tukey HSD (all pairs):")
            block.append(render(_tukey_rows(r), ["system A", "system B", "diff", "p_hsd"]))
        blocks.append("\n".join(block))
    blocks.append(_footer(res))
    return "\n\n".join(blocks)


def to_json(res: CompareResult) -> str:
    return json.dumps(res.as_dict(), indent=2, ensure_ascii=False)


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|")


def _md(rows: list[list[str]], header: list[str]) -> str:
    rule = "|".join("---" if i == 0 else "---:" for i in range(len(header)))
    lines = ["| " + " | ".join(header) + " |", f"|{rule}|"]
    lines += ["| " + " | ".join(_md_escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def to_markdown(res: CompareResult) -> str:
    out = []
    for r in res.results:
        out.append(f"### {_md_escape(_title(r))}\n\n{_md(_rows(r), HEADER)}")
        if r.tukey:
            out.append("Randomized Tukey HSD (all pairs):\n\n" + _md(_tukey_rows(r), ["system A", "system B", "diff",
                                                                                    "p_hsd"]))
    out.append(_footer(res))
    return "\n\n".join(out) + "\n"


def to_latex(res: CompareResult) -> str:
    """One booktabs table per task and metric (needs ``\\usepackage{booktabs}``)."""
    out = []
    cols = ["System", "Mean", r"$\Delta$", r"95\% CI", "$d_z$", "W/T/L", "$p$", r"$p_\mathrm{Holm}$", r"$p_t$"]
    for r in res.results:
        lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{l" + "r" * (len(cols) - 1) + "}",
                 r"\toprule", " & ".join(cols) + r" \\", r"\midrule"]
        for row in _rows(r, pm="\x00"):
            cells = [latex_escape(c).replace("\x00", r"$\pm$") for c in row[:9]]
            if row[9]:
                cells[1] = cells[1] + r"$^{\dagger}$"
            lines.append(" & ".join(cells) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}",
                  r"\caption{" + latex_escape(_title(r)) + r". $\dagger$: Holm-adjusted paired randomization test "
                  + f"$p \\le {res.settings['alpha']}$ against {latex_escape(res.baseline)} "
                  + f"(B={res.settings['permutations']}, seed {res.settings['seed']}; Holm family: "
                  + latex_escape(res.settings["family"]) + ").}",
                  r"\end{table}"]
        out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"


def render_result(res: CompareResult, fmt: str) -> str:
    """``res`` in ``fmt`` (``table``, ``json``, ``markdown`` or ``latex``: the choices of ``--format``); the family-wise
    analysis, when ``res`` holds one, in its own layout."""
    if res.family is not None and fmt != "json":
        return {"table": family_format.to_table, "markdown": family_format.to_markdown,
                "latex": family_format.to_latex}[fmt](res)
    return {"table": to_table, "json": to_json, "markdown": to_markdown, "latex": to_latex}[fmt](res)
