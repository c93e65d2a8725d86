"""Start-up time of the CLI, against a bare interpreter start measured in the same run.

    python bench/bench_startup.py [--repeat 10] [--against OTHER_CHECKOUT]

Prints the best wall time of `harness --help`, `harness list-plugins` and `list-plugins --json`, the bare
`python -c pass`, and the import cost of each command over that baseline. Target: under 0.3 s on a quiet
machine. ``--against DIR`` runs each command in turn from this checkout and from DIR (another checkout of
the project, e.g. the last release), both through ``PYTHONPATH`` so the import paths are alike, and prints
the ratio this/other of the best times (and of the median, which a noisy machine moves less).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
TARGET = 0.3
COMMANDS = (["--help"], ["list-plugins"], ["list-plugins", "--json"])


def env_for(checkout: Path) -> dict[str, str]:
    """The checkout and its plugins first on ``sys.path`` (the packages installed elsewhere stay behind)."""
    plugins = sorted(str(p) for p in (checkout / "plugins").iterdir() if (p / "pyproject.toml").is_file())
    paths = [str(checkout), *plugins]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def times(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> list[float]:
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
        out.append(time.perf_counter() - t)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--against", type=Path, help="another checkout to compare with, in the same run")
    a = ap.parse_args()
    base = min(times([sys.executable, "-c", "pass"], a.repeat))
    print(f"python -c pass           : {base * 1000:6.0f} ms")
    mine = env_for(HERE) if a.against else None
    for args in COMMANDS:
        cmd = [sys.executable, "-m", "harness.cli", *args]
        if a.against is None:
            t = min(times(cmd, a.repeat))
        else:  # alternate the two, so a change in the machine's load hits both alike
            pairs = [(times(cmd, 1, mine)[0], times(cmd, 1, env_for(a.against.resolve()))[0]) for _ in range(a.repeat)]
            t, other = min(p[0] for p in pairs), min(p[1] for p in pairs)
            ratio = statistics.median(x / y for x, y in pairs)
        verdict = "ok" if t < TARGET else f"OVER {TARGET} s"
        line = (f"harness {' '.join(args):<17}: {t * 1000:6.0f} ms  (+{(t - base) * 1000:.0f} ms over bare python)  "
                f"{verdict}")
        if a.against is not None:
            line += f"   vs {a.against.name}: {other * 1000:.0f} ms, best {t / other:.2f}x, median ratio {ratio:.2f}x"
        print(line)


if __name__ == "__main__":
    main()
