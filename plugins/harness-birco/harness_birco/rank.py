"""BIRCO's Rank / Rank+O: the ``rankgpt`` reranker of harness-rankgpt with BIRCO's settings
(``run_exp_RankGPT.py``): window 10, step 5, one pass from the bottom of the E5-large-v2 order to the
top, ids ``[0]..[9]``, ``[``/``]`` in the query and passages turned into ``(``/``)``, the official
code's multi-turn messages, and for +O the query's objective (App. B, ``Query.instruction``) before the
system line and in the closing turn, with the raw query as the query.

Two things differ from harness-rankgpt's defaults and are done here:

- **windows**: BIRCO's loop aligns its last window with the top of the list (a full window ``[0, 10)``),
  where harness-rankgpt adds a shorter top window (``[0, 6)`` for a pool of 51). The number of calls is
  the same (9 for 50, 10 for 51, 21 for 110); :class:`BircoRankGPT` overrides the window plan.
- **parsing**: ids are read from ``[n]`` only (BIRCO's regex), duplicates dropped and missing ids
  appended in incoming order; BIRCO's random permutation on a reply without exactly 10 ids, and its
  lost duplicates, are not copied (an unparseable reply keeps the window's order and is counted).

The released WTB template's ``{{query}}`` bug is not copied: the closing turn always states the query.
"""

from __future__ import annotations

from typing import Any

from harness import ComponentContext
from harness_rankgpt.rankgpt import RankGPT

from . import __version__
from .pointwise import _flag


def birco_windows(n: int, window: int = 10, step: int = 5) -> list[tuple[int, int]]:
    """BIRCO's windows, back to front: ``[n-window, n)``, moving up by ``step``; the last one is
    ``[0, window)`` (aligned with the top). 50 -> 9 windows, 51 -> 10, 110 -> 21."""
    if n <= 0:
        return []
    if n <= window:
        return [(0, n)]
    out = []
    start = n - window
    while start > 0:
        out.append((start, start + window))
        start -= step
    out.append((0, window))
    return out


class BircoRankGPT(RankGPT):
    """RankGPT with BIRCO's window plan (see the module docstring)."""

    def windows(self, n: int) -> list[tuple[int, int]]:
        return birco_windows(n, self.window, self.step)

    def config(self) -> dict[str, Any]:
        cfg = super().config()
        cfg.pop("windows_per_query", None)
        return {**cfg, "method": "birco-rank", "plugin": f"harness-birco {__version__} (harness-rankgpt rankgpt)",
                "protocol": "Rank+O" if self.objective else "Rank",
                "windows": "BIRCO: back to front, last window aligned with the top (birco_windows)"}


def make_birco_rank(llm: str | None = None, objective: Any = True, context: ComponentContext | None = None,
                    **overrides: Any) -> BircoRankGPT:
    """``birco-rank[:objective=true|false,...]``; any other rankgpt option (``max_words``, ``max_tokens``,
    ``temperature``...) may be given and overrides BIRCO's setting."""
    options: dict[str, Any] = {
        "window": 10, "step": 5, "depth": 100_000, "passes": 1, "prompt": "code",
        "objective": "instruction" if _flag(objective) else None, "query": "raw",
        "zero_based": True, "escape_brackets": True, "parser": "brackets",
    }
    options.update(overrides)
    return BircoRankGPT(llm=llm, context=context, **options)
