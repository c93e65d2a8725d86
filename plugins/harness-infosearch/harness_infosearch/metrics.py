"""InfoSearch's metrics (Zhou et al., 2024, Eqs. 1-6 and the official code's deviations).

Notation: for each *scored* query (one per core query x instruction: a query whose ``changed``
qrels name a relevant gold document P^i), R_ori, R_ins, R_rev are P^i's 1-based ranks in the
``og``, ``changed`` and ``reversed`` runs and S_ori, S_ins, S_rev its scores there. A gold document
missing from a run ranks ``len(run[qid]) + 1`` with score 0 (the official code's rule). Ranks are
positions in the run as the pipeline produced it (ties already broken). N is the number of the
query's ``og`` positives; K = 20.

Values are fractions (WISE in [-1, 1], SICR and p-MRR shares); the paper reports them x100
(``harness infosearch table`` prints them that way). R_* are plain mean ranks.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from harness import HarnessError, MetricInput, MetricResult, Run

K_DEFAULT = 20
FIRST_CASES = ("code", "paper")
RANK1_RULES = ("code", "paper")


# -- the formulas -------------------------------------------------------------------------------
def wise_reward(r_ori: int, r_ins: int, n: int, k: int = K_DEFAULT, first_case: str = "code") -> float:
    """Eq. 4: 1 if the first case holds and R_ins = 1 (code: R_ori < N; paper: R_ori <= N);
    else (1 - sqrt(R_ori - R_ins) / K) / sqrt(R_ins) if R_ori <= K; else 0.01."""
    first = r_ori < n if first_case == "code" else r_ori <= n
    if first and r_ins == 1:
        return 1.0
    if r_ori <= k:
        return (1.0 - math.sqrt(r_ori - r_ins) / k) / math.sqrt(r_ins)
    return 0.01


def wise_penalty(r_ori: int, r_ins: int, r_rev: int) -> float:
    """Eq. 5, branches taken in order: -1 if R_rev < R_ori < R_ins; (R_ori - R_ins) / R_ins if
    R_ori <= R_ins; (R_rev - R_ori) / R_ori if R_rev <= R_ori."""
    if r_rev < r_ori < r_ins:
        return -1.0
    if r_ori <= r_ins:
        return (r_ori - r_ins) / r_ins
    if r_rev <= r_ori:
        return (r_rev - r_ori) / r_ori
    return 0.0  # unreachable: a penalty case has R_ins > R_ori or R_rev <= R_ori


def wise_score(r_ori: int, r_ins: int, r_rev: int, n: int, k: int = K_DEFAULT, first_case: str = "code") -> float:
    """Eq. 3: the reward when R_ins <= R_ori < R_rev, else the penalty."""
    if r_ins <= r_ori < r_rev:
        return wise_reward(r_ori, r_ins, n, k, first_case)
    return wise_penalty(r_ori, r_ins, r_rev)


def wise_ideal(r_ori: int, n: int, k: int = K_DEFAULT, first_case: str = "code") -> float:
    """Ideal WISE (official code): the reward with R_ins = 1 and R_rev = R_ori + 1."""
    return wise_reward(r_ori, 1, n, k, first_case)


def sicr_indicator(ranks: tuple[int, int, int], scores: tuple[float, float, float], rank1: str = "code") -> bool:
    """Eq. 1: R_ins < R_ori, S_ins > S_ori, R_ori < R_rev and S_ori > S_rev. With ``rank1="code"``
    and R_ori = 1 (where Eq. 1 cannot hold): R_ins = 1, R_rev > 1, S_ins >= S_ori and S_ori > S_rev."""
    r_ori, r_ins, r_rev = ranks
    s_ori, s_ins, s_rev = scores
    if rank1 == "code" and r_ori == 1:
        return r_ins == 1 and r_rev > 1 and s_ins >= s_ori and s_ori > s_rev
    return r_ins < r_ori and s_ins > s_ori and r_ori < r_rev and s_ori > s_rev


def pmrr_doc(r_og: int, r_new: int) -> float:
    """FollowIR's p-MRR for one document: R_new / R_og - 1 if R_og >= R_new (the code's ``>=``; a tie
    gives 0), else 1 - R_og / R_new (the core's :func:`harness.metrics.pmrr_doc`)."""
    from harness.metrics import pmrr_doc as core_pmrr_doc

    return core_pmrr_doc(r_og, r_new)


# -- ranks out of runs --------------------------------------------------------------------------
class _Positions:
    """Rank and score of documents in one run, with the missing-document rule."""

    def __init__(self, run: Run):
        self.run = run
        self._cache: dict[str, dict[str, tuple[int, float]]] = {}

    def __call__(self, qid: str, doc: str) -> tuple[int, float]:
        pos = self._cache.get(qid)
        if pos is None:
            pos = self._cache[qid] = {d: (i, s) for i, (d, s) in enumerate(self.run.get(qid, []), 1)}
        return pos.get(doc, (len(pos) + 1, 0.0))


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


class _CrossMode:
    """Shared by the cross-mode metrics: mode names and the scored queries."""

    per_mode = False
    names: list[str]

    def __init__(self, ori: str = "og", ins: str = "changed", rev: str = "reversed"):
        self.modes = (ori, ins, rev)

    def _check(self, inp: MetricInput, modes: tuple[str, ...]) -> None:
        missing = [m for m in modes if m not in inp.runs or m not in inp.qrels or inp.qrels[m] is None]
        if missing:
            raise HarnessError(f"{self.names[0]} compares the runs of modes {', '.join(modes)}; this dataset lacks "
                               f"{', '.join(missing)} (modes: {', '.join(inp.runs)})")

    def gold(self, inp: MetricInput) -> Iterator[tuple[str, list[str], int]]:
        """``(qid, gold documents, N)`` for each scored query: the ``changed`` positives, and the
        number of ``og`` positives."""
        ori, ins, _ = self.modes
        for qid, docs in inp.qrels[ins].items():
            if qid not in inp.runs[ori]:
                continue
            gold = [d for d, g in docs.items() if g >= 1]
            if gold:
                yield qid, gold, len(inp.qrels[ori].relevant(qid))

    def positions(self, inp: MetricInput) -> tuple[_Positions, ...]:
        return tuple(_Positions(inp.runs[m]) for m in self.modes)

    def config(self) -> dict[str, Any]:
        return {"modes": dict(zip(("ori", "ins", "rev"), self.modes))}


class WISE(_CrossMode):
    """WISE, Ideal WISE and the paper's "Per." gap ((ideal - WISE) / ideal), means over scored
    queries (per query: the mean over its gold documents, normally one)."""

    names = ["WISE", "WISE-ideal", "WISE-per"]

    def __init__(self, cutoff: int = K_DEFAULT, first_case: str = "code", **modes: str):
        super().__init__(**modes)
        if first_case not in FIRST_CASES:
            raise HarnessError(f"WISE first_case must be one of {FIRST_CASES}, not {first_case!r}")
        self.k, self.first_case = int(cutoff), first_case
        # non-default readings get their own keys so several can be reported side by side
        base = "WISE" + (f"@{self.k}" if self.k != K_DEFAULT else "") + ("-paper" if first_case == "paper" else "")
        self.names = [base, f"{base}-ideal", f"{base}-per"]

    def config(self) -> dict[str, Any]:
        return {**super().config(), "K": self.k, "first_case": self.first_case, "sqrt": True, "floor": 0.01}

    def compute(self, inp: MetricInput) -> MetricResult:
        self._check(inp, self.modes)
        pos_ori, pos_ins, pos_rev = self.positions(inp)
        n_act, n_ideal, n_per = self.names
        per: dict[str, dict[str, float]] = {}
        for qid, gold, n in self.gold(inp):
            act, ideal = [], []
            for d in gold:
                r_ori, r_ins, r_rev = pos_ori(qid, d)[0], pos_ins(qid, d)[0], pos_rev(qid, d)[0]
                act.append(wise_score(r_ori, r_ins, r_rev, n, self.k, self.first_case))
                ideal.append(wise_ideal(r_ori, n, self.k, self.first_case))
            per[qid] = {n_act: _mean(act), n_ideal: _mean(ideal)}
        wise = _mean([v[n_act] for v in per.values()])
        ideal = _mean([v[n_ideal] for v in per.values()])
        gap = (ideal - wise) / ideal if ideal else float("nan")
        return MetricResult({n_act: wise, n_ideal: ideal, n_per: gap}, per)


class SICR(_CrossMode):
    """Strict instruction compliance ratio (Eqs. 1-2): the share of scored queries whose gold
    document rises with the instruction and falls with the reversed one, in rank and in score."""

    names = ["SICR"]

    def __init__(self, rank1: str = "code", **modes: str):
        super().__init__(**modes)
        if rank1 not in RANK1_RULES:
            raise HarnessError(f"SICR rank1 must be one of {RANK1_RULES}, not {rank1!r}")
        self.rank1 = rank1
        self.names = ["SICR-paper" if rank1 == "paper" else "SICR"]

    def config(self) -> dict[str, Any]:
        return {**super().config(), "rank1": self.rank1}

    def compute(self, inp: MetricInput) -> MetricResult:
        self._check(inp, self.modes)
        pos = self.positions(inp)
        per: dict[str, dict[str, float]] = {}
        for qid, gold, _ in self.gold(inp):
            vals = []
            for d in gold:
                (r_o, s_o), (r_i, s_i), (r_r, s_r) = (p(qid, d) for p in pos)
                vals.append(float(sicr_indicator((r_o, r_i, r_r), (s_o, s_i, s_r), self.rank1)))
            per[qid] = {self.names[0]: _mean(vals)}
        return MetricResult({self.names[0]: _mean([v[self.names[0]] for v in per.values()])}, per)


class PMRR(_CrossMode):
    """FollowIR's p-MRR as the InfoSearch code computes it: over the *demoted* documents (``og``
    positive, ``changed`` grade 0), comparing the ``og`` and ``changed`` runs; mean per query, then
    over the queries that have demoted documents. Each query's p-MRR is its per-query value; the
    value's uncertainty is a bootstrap over those queries (``harness.metrics.bootstrap_uncertainty``,
    ``resamples``, ``seed``: percentile 95% interval, sd of the bootstrap means)."""

    names = ["p-MRR"]

    def __init__(self, resamples: int = 10_000, seed: int = 0, **modes: str):
        super().__init__(**modes)
        for name, value, least in (("resamples", resamples, 1), ("seed", seed, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise HarnessError(f"p-MRR: {name} must be a whole number >= {least}, not {value!r}")
        self.resamples, self.seed = resamples, seed

    def config(self) -> dict[str, Any]:
        return {**super().config(), "interval": {"method": "bootstrap over the scored queries",
                                                 "resamples": self.resamples, "seed": self.seed}}

    def compute(self, inp: MetricInput) -> MetricResult:
        from harness.metrics import bootstrap_uncertainty, p_mrr

        ori, ins, _ = self.modes
        self._check(inp, (ori, ins))
        counted: dict[str, list[str]] = {}
        for qid, docs in inp.qrels[ins].items():
            if qid not in inp.runs[ori]:
                continue
            og_pos = inp.qrels[ori].relevant(qid)
            demoted = [d for d, g in docs.items() if g < 1 and d in og_pos]
            if demoted:
                counted[qid] = demoted
        # ranks are the runs' positions (ties already broken by the pipeline): the tie rule "order"
        value, per = p_mrr(counted, inp.runs[ori].to_dict(), inp.runs[ins].to_dict(), ties="order")
        unc = bootstrap_uncertainty(list(per.values()), self.resamples, self.seed, unit="queries")
        return MetricResult({"p-MRR": value}, {q: {"p-MRR": v} for q, v in per.items()},
                            uncertainty={"p-MRR": unc} if unc is not None else {})


class GoldRank(_CrossMode):
    """The mean rank of the gold document in each mode (Table 1's R_ori, R_ins, R_rev)."""

    names = ["R_ori", "R_ins", "R_rev"]

    def compute(self, inp: MetricInput) -> MetricResult:
        self._check(inp, self.modes)
        pos = self.positions(inp)
        per: dict[str, dict[str, float]] = {}
        for qid, gold, _ in self.gold(inp):
            per[qid] = {name: _mean([float(p(qid, d)[0]) for d in gold]) for name, p in zip(self.names, pos)}
        return MetricResult({n: _mean([v[n] for v in per.values()]) for n in self.names}, per)


class Robustness:
    """Robustness@k (InstructIR, the paper's App. B): per mode, the mean over core queries of the
    minimum nDCG@k over that query's instruction variants (queries sharing ``meta["group"]``, the
    core query text). The core's :class:`harness.metrics.Robustness` (``group="meta"``) computes it,
    the one implementation the InstructIR plugin shares."""

    per_mode = True

    def __init__(self, cutoff: int = 10):
        from harness.metrics import Robustness as CoreRobustness

        self._core = CoreRobustness(cutoff=cutoff, group="meta")
        self.k, self.names = self._core.k, self._core.names

    def config(self) -> dict[str, Any]:
        return {"k": self.k, "group": "meta['group'] (core query text)"}

    def compute(self, inp: MetricInput) -> MetricResult:
        return self._core.compute(inp)
