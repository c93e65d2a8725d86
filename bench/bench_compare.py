"""Speed of the resampling tests behind `harness compare`.

    python bench/bench_compare.py [--queries 5000] [--systems 5] [--permutations 10000] [--workers 1]

Times the paired randomization test (one pair) and the randomized Tukey HSD (all systems) on
synthetic per-query scores, and checks that the p-values do not depend on --workers.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from harness.compare.stats import randomization_test, randomized_tukey_hsd


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", type=int, default=5000)
    ap.add_argument("--systems", type=int, default=5)
    ap.add_argument("--permutations", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    base = rng.uniform(0, 1, args.queries)
    x = np.stack([np.clip(base + 0.01 * k + rng.normal(0, 0.1, args.queries), 0, 1) for k in range(args.systems)], 1)

    t0 = time.perf_counter()
    p = randomization_test(x[:, 1], x[:, 0], permutations=args.permutations, workers=args.workers)
    t1 = time.perf_counter()
    print(f"randomization test: {args.queries} queries, B={args.permutations}: {t1 - t0:.2f} s (p={p:.4f})")
    ph = randomized_tukey_hsd(x, permutations=args.permutations, workers=args.workers)
    t2 = time.perf_counter()
    print(f"randomized Tukey HSD: {args.queries} queries x {args.systems} systems, B={args.permutations}: "
          f"{t2 - t1:.2f} s (p[0,1]={ph[0, 1]:.4f})")
    if args.workers > 1:
        assert randomization_test(x[:, 1], x[:, 0], permutations=args.permutations) == p
        print("same p with 1 worker")


if __name__ == "__main__":
    main()
