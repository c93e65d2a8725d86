"""The paired bootstrap test of a mean difference (shift method), on the resampling convention of
:mod:`harness.metrics.bootstrap` (seeded fixed blocks, queries resampled with replacement, paired).

With ``d = b - a`` and ``delta = mean(d)``, each resample's ``delta*`` gives the centred value
``delta* - delta`` (equal to the mean of the resampled centred differences ``d - mean(d)``: the null
distribution shifted to 0); ``c`` counts the resamples with ``|delta* - delta| >= |delta|`` (up to
rounding) and ``p = (c + 1) / (B + 1)``, as the randomization test counts."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from harness.compare.stats import tolerance
from harness.metrics.bootstrap import DEFAULT_RESAMPLES, bootstrap_means


def shift_p(shifted: np.ndarray, delta: float) -> float:
    """``(c + 1) / (B + 1)``, ``c`` counting ``|shifted| >= |delta|`` among the ``B`` centred resamples."""
    observed = abs(delta)
    c = int(np.count_nonzero(np.abs(shifted) >= observed - tolerance(observed)))
    return (c + 1) / (shifted.size + 1)


def bootstrap_test(a: Sequence[float], b: Sequence[float], *, resamples: int = DEFAULT_RESAMPLES,
                   seed: int = 0) -> float:
    """Two-sided paired bootstrap test of ``mean(b - a) = 0`` (shift method); ``(c + 1) / (B + 1)``."""
    x = np.column_stack([np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)])
    means = bootstrap_means([x], resamples, seed)[:, 0, :]
    delta = float(x[:, 1].mean() - x[:, 0].mean())
    return shift_p(means[:, 1] - means[:, 0] - delta, delta)
