"""Benchmark: BM25 at corpus scale (default 1,000,000 synthetic documents): index build time and
peak memory, save and load times, search time per query; harness's BM25 index against bm25s.

    python bench/bench_bm25_scale.py [--docs 1000000] [--queries 100] [--seed 0] [--repeat 3] [--keep DIR]

The corpus is bench_bm25.py's (seeded Zipf-Mandelbrot vocabulary, log-normal lengths around 49
tokens), written once to a TSV file. Each build runs in its own subprocess, which reads the file,
resets its peak RSS (``/proc/self/clear_refs``), tokenizes and indexes, and reports the time and the
peak RSS above what the loaded corpus held; then saves its index. This process loads both saved
indexes (ours memory-mapped and validated, bm25s's with ``mmap=True``), checks that the loaded index
gives the same top 10 as the build did, and times queries one at a time. bm25s (``pip install
bm25s``; not a dependency of the harness) is skipped with a message when absent. Both use Porter
stemming and English stopwords (each its own list) and k1=1.5, b=0.75; bm25s scores with its
default (Lucene) idf, so only the costs compare, not the rankings.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_bm25 import make_corpus, make_queries  # noqa: E402


def rss_mib(field: str) -> float:
    """VmRSS or VmHWM of this process in MiB (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def read_tsv(path: Path) -> tuple[list[str], list[str]]:
    ids, texts = [], []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            doc_id, text = line.rstrip("\n").split("\t", 1)
            ids.append(doc_id)
            texts.append(text)
    return ids, texts


def child_ours(corpus_tsv: Path, folder: Path, queries: dict[str, str]) -> dict:
    from harness.concepts.document import Document
    from harness.retrievers.bm25 import BM25Retriever

    ids, texts = read_tsv(corpus_tsv)
    corpus = {d: Document(d, t) for d, t in zip(ids, texts, strict=True)}
    del ids, texts
    base = rss_mib("VmRSS")
    exact = reset_peak()
    r = BM25Retriever()
    t = time.perf_counter()
    r.index(corpus)
    build = time.perf_counter() - t
    peak = rss_mib("VmHWM") - base
    t = time.perf_counter()
    r.save(folder)
    save = time.perf_counter() - t
    run = r.search(queries, 10)
    a = r._arrays
    return {"build_s": build, "save_s": save, "peak_mib": peak, "peak_exact": exact,
            "postings": int(a["weights"].size), "terms": len(r.vocabulary),
            "postings_mib": (a["weights"].nbytes + a["docs"].nbytes) / 2**20,
            "run": {q: run[q] for q in run}}


def child_bm25s(corpus_tsv: Path, folder: Path) -> dict:
    import bm25s
    import Stemmer

    ids, texts = read_tsv(corpus_tsv)
    base = rss_mib("VmRSS")
    exact = reset_peak()
    t = time.perf_counter()
    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("porter"), show_progress=False)
    model = bm25s.BM25(k1=1.5, b=0.75)
    model.index(tokens, show_progress=False)
    build = time.perf_counter() - t
    peak = rss_mib("VmHWM") - base
    del tokens
    t = time.perf_counter()
    model.save(str(folder), show_progress=False)
    save = time.perf_counter() - t
    return {"build_s": build, "save_s": save, "peak_mib": peak, "peak_exact": exact,
            "postings": int(model.scores["data"].size)}


def in_child(which: str, corpus_tsv: Path, folder: Path, queries: dict[str, str], out: Path) -> dict:
    code = (f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import bench_bm25_scale as b; "
            f"from pathlib import Path; q = json.loads(Path({str(out)!r}).read_text()); "
            f"r = b.child_{which}(Path({str(corpus_tsv)!r}), Path({str(folder)!r}), "
            f"*([q] if {which!r} == 'ours' else [])); Path({str(out)!r}).write_text(json.dumps(r))")
    out.write_text(json.dumps(queries))
    subprocess.run([sys.executable, "-c", code], check=True)
    return json.loads(out.read_text())


def time_queries(search, queries: dict[str, str], repeat: int) -> list[float]:
    """Each query's time: the best of ``repeat`` calls (the machine is shared)."""
    times = []
    for qid, text in queries.items():
        best = float("inf")
        for _ in range(repeat):
            t = time.perf_counter()
            search(qid, text)
            best = min(best, time.perf_counter() - t)
        times.append(best)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--vocab", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat", type=int, default=3, help="Time each query this many times; keep the best.")
    ap.add_argument("--keep", type=Path, help="Write the corpus and indexes here (kept, and the corpus reused by a "
                    "run with the same arguments) instead of a temporary folder.")
    args = ap.parse_args()
    try:
        import bm25s  # noqa: F401
    except ImportError:
        bm25s = None
        print("bm25s not installed (pip install bm25s): its columns are skipped")

    work = args.keep or Path(tempfile.mkdtemp(prefix="bench-bm25-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    corpus_tsv, made = work / "corpus.tsv", work / "corpus.json"
    key = {"docs": args.docs, "queries": args.queries, "vocab": args.vocab, "seed": args.seed}
    t = time.perf_counter()
    if made.is_file() and json.loads(made.read_text())["key"] == key:  # --keep: generated by an earlier run
        queries = json.loads(made.read_text())["queries"]
    else:
        rng = np.random.default_rng(args.seed)
        corpus, _ = make_corpus(args.docs, args.vocab, rng)
        queries = make_queries(corpus, args.queries, rng)
        with open(corpus_tsv, "w", encoding="utf-8") as fh:
            for doc_id, d in corpus.items():
                fh.write(f"{doc_id}\t{d.full_text()}\n")
        del corpus
        made.write_text(json.dumps({"key": key, "queries": queries}))
    for name in ("ours", "bm25s"):
        shutil.rmtree(work / name, ignore_errors=True)
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}, "
          f"{os.cpu_count()} CPUs (load average {os.getloadavg()[0]:.1f})")
    print(f"corpus: {args.docs:,} docs, {corpus_tsv.stat().st_size / 2**20:.0f} MiB of text, {len(queries)} queries; "
          f"generated in {time.perf_counter() - t:.0f} s")

    ours = in_child("ours", corpus_tsv, work / "ours", queries, work / "ours.json")
    ratio = ours["peak_mib"] / ours["postings_mib"]
    print(f"ours: build {ours['build_s']:.1f} s ({ours['build_s'] / args.docs * 1e6:.1f} us/doc, tokenizing "
          f"included), peak memory {ours['peak_mib']:.0f} MiB above the loaded corpus = {ratio:.2f}x the postings "
          f"({ours['postings']:,} postings, {ours['postings_mib']:.0f} MiB; {ours['terms']:,} terms); "
          f"save {ours['save_s']:.1f} s")
    theirs = None
    if bm25s is not None:
        theirs = in_child("bm25s", corpus_tsv, work / "bm25s", {}, work / "bm25s.json")
        print(f"bm25s: build {theirs['build_s']:.1f} s, peak memory {theirs['peak_mib']:.0f} MiB above the loaded "
              f"texts ({theirs['postings']:,} postings), save {theirs['save_s']:.1f} s; ours/bm25s build time "
              f"{ours['build_s'] / theirs['build_s']:.2f}")

    from harness.retrievers.bm25 import BM25Retriever

    t = time.perf_counter()
    loaded = BM25Retriever(index=str(work / "ours"))
    t_load = time.perf_counter() - t
    same = all([tuple(h) for h in ours["run"][q]] == loaded.search({q: queries[q]}, 10)[q] for q in queries)
    ours_t = time_queries(lambda q, text: loaded.search({q: text}, 10), queries, args.repeat)
    batched = float("inf")
    for _ in range(args.repeat):
        t = time.perf_counter()
        loaded.search(queries, 10)
        batched = min(batched, (time.perf_counter() - t) / len(queries))
    print(f"ours, loaded: load (mmap + validation) {t_load:.2f} s = {t_load / ours['build_s']:.3f} of the build; "
          f"top 10 identical to the build's: {same}; search {statistics.mean(ours_t) * 1e3:.2f} ms/query mean, "
          f"{statistics.median(ours_t) * 1e3:.2f} ms median (one query per call), {batched * 1e3:.2f} "
          f"ms/query batched (best of {args.repeat})")
    if theirs is not None:
        import bm25s
        import Stemmer

        t = time.perf_counter()
        model = bm25s.BM25.load(str(work / "bm25s"), mmap=True, show_progress=False)
        t_load_s = time.perf_counter() - t
        stem = Stemmer.Stemmer("porter")

        def bm25s_search(qid: str, text: str) -> None:
            tok = bm25s.tokenize([text], stopwords="en", stemmer=stem, show_progress=False)
            model.retrieve(tok, k=10, show_progress=False, n_threads=1)

        theirs_t = time_queries(bm25s_search, queries, args.repeat)
        print(f"bm25s, loaded: load {t_load_s:.2f} s; search {statistics.mean(theirs_t) * 1e3:.2f} ms/query mean, "
              f"{statistics.median(theirs_t) * 1e3:.2f} ms median; ours faster by "
              f"{statistics.mean(theirs_t) / statistics.mean(ours_t):.1f}x (mean)")
    targets = {
        "build no slower than bm25s": theirs is None or ours["build_s"] <= theirs["build_s"],
        "peak memory <= 1.5x postings": ratio <= 1.5,
        "search <= 4 ms/query mean": statistics.mean(ours_t) <= 4e-3,
        "load < build/10, same results": t_load < ours["build_s"] / 10 and same,
    }
    print("targets: " + "; ".join(f"{k}: {'met' if v else 'NOT met'}" for k, v in targets.items()))
    if not same:
        raise SystemExit("the loaded index's top 10 differ from the build's")


if __name__ == "__main__":
    main()
