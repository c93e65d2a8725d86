"""The worked example of docs/compute.md: effectiveness against compute on the loopback server, no key.

A simulated reasoning model answers RankGPT's windows on the packaged demo task: the more effort it is asked
for, the more it thinks (reasoning tokens: low 64, medium 256, high 1024 per window; latency 1 ms per 8 of
them) and the better it ranks (low: only the window's best passage moved to the top; medium: the best two;
high: the window sorted by the demo's grades). Every reply's reasoning holds a decoy ranking (the window
reversed), which the harness must never parse. Then::

    harness eval -t demo --reranker rankgpt:window=5,step=2,depth=10 --llm openai:sim:base_url=URL \\
        --sweep llm.reasoning_effort=low,medium,high -o OUT/sweep --prices OUT/prices.toml
    harness eval -t demo -o OUT/bm25
    harness report OUT/sweep/*/ OUT/bm25 -o OUT/report.html

    python bench/compute_example.py [OUT]     # default: a temporary folder; prints every command's output
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from harness.testing import ScriptedReply, TestServer

DEMO = Path(__file__).resolve().parents[1] / "harness" / "data" / "demo"
THINK = {"low": 64, "medium": 256, "high": 1024}
BEST = {"low": 1, "medium": 2}


def _demo() -> tuple[dict[str, str], dict[tuple[str, str], int], dict[str, str]]:
    docs = {}
    for line in (DEMO / "corpus.jsonl").read_text().splitlines():
        d = json.loads(line)
        docs[" ".join(f"{d.get('title', '')} {d['text']}".split())] = d["_id"]
    with open(DEMO / "qrels" / "test.tsv", encoding="utf-8") as fh:
        grades = {(r["query-id"], r["corpus-id"]): int(r["score"]) for r in csv.DictReader(fh, delimiter="\t")}
    queries = {}
    for line in (DEMO / "queries.jsonl").read_text().splitlines():
        q = json.loads(line)
        queries[q["_id"]] = f"{q['text']} {q['instruction']}"  # the demo task's query_format
    return docs, grades, queries


DOCS, GRADES, QUERIES = _demo()


def _doc_id(passage: str) -> str | None:
    text = " ".join(passage.split("] ", 1)[-1].replace("Title: ", "").replace(" Content: ", " ").split())
    return next((d for t, d in DOCS.items() if t.startswith(text[:60]) or text.startswith(t[:60])), None)


def simulated(req: dict) -> ScriptedReply:
    """A reasoning model whose ranking improves with the effort asked for (see the module docstring)."""
    effort = req.get("reasoning_effort") or "low"
    turns = req["messages"]
    passages = [m["content"] for m in turns[3:-1:2]]
    final = turns[-1]["content"]
    qid = next((q for q, text in QUERIES.items() if text in final), None)  # RankGPT's query: the formed text
    grade = [GRADES.get((qid, _doc_id(p) or ""), 0) for p in passages]
    order = list(range(len(passages)))
    best = sorted(order, key=lambda i: (-grade[i], i))
    if effort in BEST:
        head = best[: BEST[effort]]
        order = head + [i for i in order if i not in head]
    else:
        order = best
    answer = " > ".join(f"[{i + 1}]" for i in order)
    decoy = " > ".join(f"[{i}]" for i in range(len(passages), 0, -1))
    return ScriptedReply(answer, reasoning=f"First guess: {decoy}. Checking each passage against the query...",
                         reasoning_tokens=THINK.get(effort, 64), delay=THINK.get(effort, 64) / 8_000)


def _run(*args: str) -> str:
    res = subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=900)
    shown = f"$ harness {' '.join(args)}\n{res.stdout}{res.stderr}"
    if res.returncode != 0:
        raise SystemExit(shown)
    return shown


def main(argv: list[str]) -> None:
    out = Path(argv[0]) if argv else Path(tempfile.mkdtemp(prefix="compute-example-"))
    out.mkdir(parents=True, exist_ok=True)
    prices = out / "prices.toml"
    prices.write_text('date = "example"\n[models]\n"openai:sim" = { input = 1.0, output = 4.0 }\n')
    with TestServer(simulated) as srv:
        llm = srv.spec("sim", "openai")
        print(_run("eval", "-t", "demo", "--reranker", "rankgpt:window=5,step=2,depth=10", "--llm", llm,
                   "--sweep", "llm.reasoning_effort=low,medium,high", "-o", str(out / "sweep"), "--prices", str(prices),
                   "--cache-dir", str(out / "cache"), "--quiet", "--overwrite"))
        print(f"requests sent: {srv.requests_total}; efforts asked: "
              f"{sorted({r['reasoning_effort'] for r in srv.requests})}")
    print(_run("eval", "-t", "demo", "-o", str(out / "bm25"), "--quiet", "--overwrite"))
    folders = [str(out / "sweep" / f"llm.reasoning_effort={e}") for e in THINK]
    print(_run("report", *folders, str(out / "bm25"), "-o", str(out / "report.html"), "-B", "1000"))
    high = json.loads((out / "sweep" / "llm.reasoning_effort=high" / "per_query.jsonl").read_text().splitlines()[0])
    print("per_query.jsonl, first row of llm.reasoning_effort=high:", json.dumps(high))
    print(f"folder: {out}")


if __name__ == "__main__":
    main(sys.argv[1:])
