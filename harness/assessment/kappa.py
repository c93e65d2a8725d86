"""Agreement between two assessors on the same items: the confusion matrix, Cohen's kappa (unweighted,
linear or quadratic weights, as ``sklearn.metrics.cohen_kappa_score`` computes it: weights by the labels'
positions in the sorted label list) and each grade's precision and recall (the second assessor's against
the first's)."""

from __future__ import annotations

import math
from collections.abc import Sequence

WEIGHTS = (None, "linear", "quadratic")


def labels_of(*columns: Sequence[int]) -> list[int]:
    """Every grade either assessor gave, sorted."""
    return sorted({g for col in columns for g in col})


def confusion(first: Sequence[int], second: Sequence[int], labels: Sequence[int]) -> list[list[int]]:
    """``matrix[i][j]``: items the first assessor graded ``labels[i]`` and the second ``labels[j]``."""
    index = {g: i for i, g in enumerate(labels)}
    matrix = [[0] * len(labels) for _ in labels]
    for a, b in zip(first, second, strict=True):
        matrix[index[a]][index[b]] += 1
    return matrix


def cohen_kappa(first: Sequence[int], second: Sequence[int], labels: Sequence[int] | None = None,
                weights: str | None = None) -> float:
    """Cohen's kappa: ``1 - sum(w * observed) / sum(w * expected)``, expected from the two assessors'
    marginals; ``w`` is 1 off the diagonal (``weights=None``), ``|i - j|`` or ``(i - j)**2``. NaN when the
    expected disagreement is 0 (e.g. one grade only)."""
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {WEIGHTS}, not {weights!r}")
    labels = list(labels) if labels is not None else labels_of(first, second)
    matrix = confusion(first, second, labels)
    n = sum(map(sum, matrix))
    if not n:
        return math.nan
    rows = [sum(r) for r in matrix]
    cols = [sum(r[j] for r in matrix) for j in range(len(labels))]
    observed = expected = 0.0
    for i in range(len(labels)):
        for j in range(len(labels)):
            w = (0 if i == j else 1) if weights is None else abs(i - j) if weights == "linear" else (i - j) ** 2
            observed += w * matrix[i][j]
            expected += w * rows[i] * cols[j] / n
    return 1 - observed / expected if expected else math.nan


def per_grade(first: Sequence[int], second: Sequence[int], labels: Sequence[int]) -> dict[str, dict[str, object]]:
    """grade -> ``precision`` (of the second assessor's grade against the first's), ``recall``, and how many
    items each gave that grade; None where nothing was given it."""
    matrix = confusion(first, second, labels)
    out: dict[str, dict[str, object]] = {}
    for i, g in enumerate(labels):
        by_first, by_second, both = sum(matrix[i]), sum(r[i] for r in matrix), matrix[i][i]
        out[str(g)] = {"precision": both / by_second if by_second else None,
                       "recall": both / by_first if by_first else None,
                       "n_human": by_first, "n_llm": by_second}
    return out


def binary(grades: Sequence[int], threshold: float) -> list[int]:
    """1 for a grade at or above ``threshold``, else 0."""
    return [1 if g >= threshold else 0 for g in grades]
