"""Names of the standard measure families (light: imported at plugin-load time)."""

from __future__ import annotations

# harness name -> (ir-measures name, description)
STANDARD_ALIASES: dict[str, tuple[str, str]] = {
    "nDCG": ("nDCG", "nDCG@k, trec_eval semantics (graded gain, log2 discount)"),
    "MRR": ("RR", "Mean reciprocal rank (MRR@k cuts the ranking at k)"),
    "Recall": ("R", "Recall@k (relevant: grade >= 1 unless rel=... is given)"),
    "P": ("P", "Precision@k"),
    "MAP": ("AP", "Mean average precision (MAP@k: map_cut_k)"),
    "R-Prec": ("Rprec", "R-precision"),
    "Success": ("Success", "Success@k: 1 if any relevant document is in the top k"),
    "Judged": ("Judged", "Judged@k: share of the top k that has a judgment"),
}

STANDARD_FAMILIES = {name: desc for name, (_, desc) in STANDARD_ALIASES.items()}
