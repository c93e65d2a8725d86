"""`harness report` stays linear in the number of metrics.

    python bench/bench_report.py [--metrics 25000] [--per-query-metrics 10] [--queries 20] [-B 100]

Writes two results folders (schema 2) whose results.json report ``--metrics`` metric names (half
with an uncertainty, 100 counts in ``metric_details``) and whose per_query.jsonl holds
``--per-query-metrics`` of them for ``--queries`` queries, then times, in this process and on the
same folders: `harness compare`'s work (read + tests, the baseline) and `harness report`'s work
(read + tests + HTML), at the full size and at a tenth of it. A linear report grows about 10x
from a tenth to the full size; a quadratic one about 100x.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path


def write_folder(folder: Path, n_metrics: int, n_pq: int, n_queries: int, seed: int) -> str:
    rnd = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    names = [f"metric-{i}@10" for i in range(n_metrics)]
    with open(folder / "per_query.jsonl", "w", encoding="utf-8") as fh:
        for q in range(n_queries):
            fh.write(json.dumps({"query_id": f"q{q}", **{n: rnd.random() for n in names[:n_pq]}}) + "\n")
    with open(folder / "run.trec", "w", encoding="utf-8") as fh:
        for q in range(n_queries):
            fh.writelines(f"q{q} Q0 d{r} {r} {1 / r} bench\n" for r in range(1, 11))
    results = {"schema_version": 2, "task": {"name": "bench"}, "components": {"retriever": {"spec": "bench"}},
               "metrics": {n: rnd.random() for n in names},
               "uncertainty": {n: {"se": 0.01, "ci95": None, "n": n_queries, "estimate": None, "method": "bench"}
                               for n in names[: n_metrics // 2]},
               "metric_details": {f"{n}_queries_skipped": 1 for n in names[:100]},
               "files": {"run[default]": "run.trec", "per_query": "per_query.jsonl"}}
    (folder / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return str(folder)


def timed(fn, *args) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--metrics", type=int, default=25_000)
    ap.add_argument("--per-query-metrics", type=int, default=10)
    ap.add_argument("--queries", type=int, default=20)
    ap.add_argument("-B", "--permutations", type=int, default=100)
    args = ap.parse_args()

    from harness.compare import compare, load_systems
    from harness.compare.report import write_report

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)

        def folders(n: int) -> list[str]:
            return [write_folder(root / f"{n}-{k}", n, min(n, args.per_query_metrics), args.queries, k)
                    for k in range(2)]

        def run_compare(fs: list[str]) -> None:
            compare(load_systems(fs), permutations=args.permutations)

        def run_report(fs: list[str]) -> None:
            write_report(load_systems(fs), root / "report.html", permutations=args.permutations)

        small, full = folders(max(1, args.metrics // 10)), folders(args.metrics)
        run_report(small)  # warm up: imports, jinja2's template compilation
        rows = []
        for label, fs in ((f"{args.metrics // 10:,} metrics", small), (f"{args.metrics:,} metrics", full)):
            c, r = timed(run_compare, fs), timed(run_report, fs)
            rows.append((label, c, r))
            print(f"{label:>16}: compare {c:6.2f} s, report {r:6.2f} s, report / compare {r / c:5.1f}x")
        size = (root / "report.html").stat().st_size
        print(f"report of {args.metrics:,} metrics: {size / 2**20:.1f} MiB")
        print(f"growth from a tenth to the full size: compare {rows[1][1] / rows[0][1]:.1f}x, "
              f"report {rows[1][2] / rows[0][2]:.1f}x (linear: about 10x; quadratic: about 100x)")


if __name__ == "__main__":
    main()
