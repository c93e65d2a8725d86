"""Benchmark: harness's sparse BM25 vs rank_bm25's BM25Okapi.get_scores, in one process.

    python bench/bench_bm25.py [--docs 100000] [--queries 50] [--seed 0]

Builds a synthetic corpus (Zipf-Mandelbrot vocabulary, log-normal document lengths around 50
tokens, seeded RNG), indexes it with both, times per-query scoring, checks that every query's
top 10 is identical (score desc, then doc id desc) and that the score vectors agree, and prints the
speed ratios.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import string
import time

import numpy as np
from rank_bm25 import BM25Okapi

from harness.concepts.document import Document
from harness.retrievers.bm25 import BM25Retriever


def make_words(n: int, rng: np.random.Generator) -> list[str]:
    """``n`` distinct pseudo-words; frequent (low id) words are short, as in natural language."""
    letters = np.array(list(string.ascii_lowercase))
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < n:
        start, m = len(words), 2 * (n - len(words))
        lengths = np.minimum(12, 2 + (np.log2(np.arange(start, start + m) + 2) * 0.6).astype(int)
                             + rng.integers(0, 4, size=m))
        chars = rng.choice(letters, size=(m, 12))
        for row, length in zip(chars, lengths.tolist(), strict=True):
            w = "".join(row[:length])
            if w not in seen:
                seen.add(w)
                words.append(w)
                if len(words) == n:
                    break
    return words


def make_corpus(n_docs: int, vocab: int, rng: np.random.Generator) -> tuple[dict[str, Document], list[str]]:
    words = make_words(vocab, rng)
    ranks = np.arange(1, vocab + 1, dtype=np.float64)
    p = 1.0 / (ranks + 2.7) ** 1.07  # Zipf-Mandelbrot
    p /= p.sum()
    lens = np.clip(rng.lognormal(mean=np.log(45), sigma=0.45, size=n_docs).astype(int), 5, 400)
    ids = rng.choice(vocab, size=int(lens.sum()), p=p)
    bounds = np.concatenate([[0], np.cumsum(lens)])
    arr = np.array(words, dtype=object)
    corpus = {}
    for i in range(n_docs):
        doc_id = f"d{i}"
        toks = arr[ids[bounds[i] : bounds[i + 1]]]
        corpus[doc_id] = Document(doc_id, " ".join(toks[8:]), title=" ".join(toks[:8]))
    return corpus, words


def make_queries(corpus: dict[str, Document], n: int, rng: np.random.Generator) -> dict[str, str]:
    """Queries of 3-8 tokens drawn from a random document (so they match), plus a random word."""
    docs = list(corpus.values())
    queries = {}
    for qi in range(n):
        toks = docs[int(rng.integers(len(docs)))].full_text().split()
        m = int(rng.integers(3, 9))
        picked = [toks[j] for j in rng.choice(len(toks), size=min(m, len(toks)), replace=False)]
        queries[f"q{qi}"] = " ".join(picked)
    return queries


def top10_reference(scores: np.ndarray, ids: list[str], rank: np.ndarray) -> list[str]:
    order = np.lexsort((-rank, -scores))[:10]
    return [ids[i] for i in order]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--vocab", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    rng = np.random.default_rng(args.seed)
    t = time.perf_counter()
    corpus, _ = make_corpus(args.docs, args.vocab, rng)
    queries = make_queries(corpus, args.queries, rng)
    n_tokens = sum(len(d.full_text().split()) for d in corpus.values())
    print(f"python {platform.python_version()}, numpy {np.__version__}, {platform.machine()}")
    print(
        f"corpus: {len(corpus):,} docs, {n_tokens:,} tokens (avg {n_tokens / len(corpus):.1f}/doc), "
        f"{len(queries)} queries; generated in {time.perf_counter() - t:.1f}s"
    )

    ours = BM25Retriever()
    t = time.perf_counter()
    ours.index(corpus)
    t_ours_index = time.perf_counter() - t

    t = time.perf_counter()
    tokenized = [ours.tokenizer(d.full_text()) for d in corpus.values()]
    t_tok = time.perf_counter() - t
    t = time.perf_counter()
    ref = BM25Okapi(tokenized)
    t_ref_index = time.perf_counter() - t
    print(
        f"index build: ours {t_ours_index:.2f}s (tokenizing included); rank_bm25 {t_tok + t_ref_index:.2f}s "
        f"({t_tok:.2f}s tokenizing + {t_ref_index:.2f}s BM25Okapi()); "
        f"vocabulary {len(ours.vocabulary):,}, {ours.matrix.nnz:,} postings"
    )

    ids = ours.doc_ids
    rank = np.empty(len(ids), dtype=np.int64)
    rank[sorted(range(len(ids)), key=ids.__getitem__)] = np.arange(len(ids))

    ref_times, ours_times, score_times = [], [], []
    mismatches, max_diff, exact = 0, 0.0, True
    expected: dict[str, list[str]] = {}
    for qid, text in queries.items():
        toks = ours.tokenizer(text)
        t = time.perf_counter()
        ref_scores = ref.get_scores(toks)
        ref_times.append(time.perf_counter() - t)

        t = time.perf_counter()
        our_scores = ours.get_scores(toks)
        score_times.append(time.perf_counter() - t)

        t = time.perf_counter()
        run = ours.search({qid: text}, 10)
        ours_times.append(time.perf_counter() - t)

        max_diff = max(max_diff, float(np.abs(ref_scores - our_scores).max()))
        exact &= bool(np.array_equal(ref_scores, our_scores))
        expected[qid] = top10_reference(ref_scores, ids, rank)
        if run.doc_ids(qid) != expected[qid]:
            mismatches += 1

    t = time.perf_counter()
    batch = ours.search(queries, 10)
    t_batch = time.perf_counter() - t
    batch_mismatches = sum(batch.doc_ids(qid) != expected[qid] for qid in queries)

    ms = 1000.0
    ref_q, ours_q, score_q = (statistics.mean(x) for x in (ref_times, ours_times, score_times))
    batch_q = t_batch / len(queries)
    print(
        f"per query, mean: rank_bm25 get_scores {ref_q * ms:.2f} ms | ours get_scores {score_q * ms:.3f} ms "
        f"| ours search top-10 (tokenize+score+top-k) {ours_q * ms:.3f} ms "
        f"| ours batched search {batch_q * ms:.3f} ms/query"
    )
    print(
        f"median: rank_bm25 {statistics.median(ref_times) * ms:.2f} ms, "
        f"ours search {statistics.median(ours_times) * ms:.3f} ms"
    )
    print(
        f"speed-up vs rank_bm25 get_scores: search {ref_q / ours_q:.0f}x, batched {ref_q / batch_q:.0f}x, "
        f"get_scores alone {ref_q / score_q:.0f}x"
    )
    print(
        f"top-10 identical to rank_bm25 for {len(queries) - mismatches}/{len(queries)} queries "
        f"({len(queries) - batch_mismatches}/{len(queries)} batched); "
        f"max |score difference| {max_diff:.3g}; bit-identical score vectors: {exact}"
    )
    if mismatches or batch_mismatches:
        raise SystemExit(f"{max(mismatches, batch_mismatches)} queries' top-10 differ from rank_bm25")


if __name__ == "__main__":
    main()
