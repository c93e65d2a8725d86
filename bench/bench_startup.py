"""Start-up time of the CLI, against a bare interpreter start measured in the same run.

    python bench/bench_startup.py [--repeat 10]

Prints the best wall time of `harness --help` and `harness list-plugins` and the bare
`python -c pass`, and the import cost of each command over that baseline. Target: under 0.5 s.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time


def best(cmd: list[str], repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        out = min(out, time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=10)
    a = ap.parse_args()
    base = best([sys.executable, "-c", "pass"], a.repeat)
    print(f"python -c pass           : {base * 1000:6.0f} ms")
    for args in (["--help"], ["list-plugins"], ["list-plugins", "--json"]):
        t = best([sys.executable, "-m", "harness.cli", *args], a.repeat)
        verdict = "ok" if t < 0.5 else "OVER 0.5 s"
        print(f"harness {' '.join(args):<17}: {t * 1000:6.0f} ms  (+{(t - base) * 1000:.0f} ms over bare "
              f"python, {t / base:.1f}x)  {verdict}")


if __name__ == "__main__":
    main()
