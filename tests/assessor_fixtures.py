"""A loopback UMBRELA assessor for DL19 whose replies are a known function of the human grade: it reads the
query and the passage from the prompt, looks the pair up in NIST's qrels (read here from the files, not
through the harness) and answers ``##final score: f(grade)``; an unjudged pair gets ``int(docid) % 4``."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from harness.testing import ScriptedReply, TestServer

_PAIR = re.compile(r"Query: (.*?)\nPassage: (.*?)\n\nSplit this problem", re.S)
#: human grade -> the assessor's grade (so kappa is neither 0 nor 1)
GRADE_MAP = {0: 0, 1: 2, 2: 1, 3: 3}


def unjudged_grade(doc: str) -> int:
    return int(doc) % 4


@dataclass
class Dl19:
    """DL19 as its files hold it: qrels (qid -> doc -> grade), candidates (qid -> [(doc, score)]), the
    text -> id lookups the assessor needs."""

    root: Path
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    candidates: dict[str, list[tuple[str, float]]] = field(default_factory=dict)
    qid_of: dict[str, str] = field(default_factory=dict)
    doc_of: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, data_dir: Path) -> Dl19:
        out = cls(data_dir / "trec-dl")
        for line in (out.root / "qrels.dl19-passage.txt").read_text().splitlines():
            qid, _, doc, grade = line.split()
            out.qrels.setdefault(qid, {})[doc] = int(grade)
        for entry in json.loads((out.root / "bm25_top100.dl19.json").read_text()):
            qid = str(entry["hits"][0]["qid"])
            out.qid_of[entry["query"]] = qid
            out.candidates[qid] = [(str(h["docid"]), float(h["score"])) for h in entry["hits"]]
            out.doc_of.update({h["content"]: str(h["docid"]) for h in entry["hits"]})
        return out

    @property
    def qrels_file(self) -> Path:
        return self.root / "qrels.dl19-passage.txt"

    def pair_of(self, request: dict) -> tuple[str, str]:
        query, passage = _PAIR.search(request["messages"][-1]["content"]).groups()
        return self.qid_of[query], self.doc_of[passage]

    def expected_grade(self, qid: str, doc: str) -> int:
        grade = self.qrels.get(qid, {}).get(doc)
        return GRADE_MAP[grade] if grade is not None else unjudged_grade(doc)

    def assessor(self, no_grade: Callable[[str, str], bool] = lambda q, d: False,
                 fail: Callable[[str, str], bool] = lambda q, d: False) -> Callable[[dict], object]:
        """The reply function: a grade as :meth:`expected_grade` says, no grade where ``no_grade``, an HTTP
        500 where ``fail``."""
        def reply(request: dict) -> object:
            qid, doc = self.pair_of(request)
            if fail(qid, doc):
                return ScriptedReply(status=500, error="the assessor is down")
            if no_grade(qid, doc):
                return "The passage cannot be assessed."
            return f"Intent considered.\n##final score: {self.expected_grade(qid, doc)}"

        return reply

    def judged(self, srv: TestServer) -> list[tuple[str, str]]:
        """The pairs of the requests the server received, in order (repeats kept)."""
        return [self.pair_of(r) for r in srv.requests]


def read_trec_run(path: Path) -> dict[str, dict[str, float]]:
    run: dict[str, dict[str, float]] = {}
    for line in path.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        run.setdefault(qid, {})[doc] = float(score)
    return run


def top_k(run: dict[str, float], k: int) -> list[str]:
    return [d for d, _ in sorted(run.items(), key=lambda x: (x[1], x[0]), reverse=True)[:k]]


def read_qrels_lines(path: Path) -> dict[tuple[str, str], int]:
    out = {}
    for line in path.read_text().splitlines():
        qid, _, doc, grade = line.split()
        assert (qid, doc) not in out, f"{qid} {doc} twice"
        out[qid, doc] = int(grade)
    return out


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def holes(run: dict[str, dict[str, float]], qrels: dict[tuple[str, str], int], k: int,
          queries: Iterable[str]) -> float:
    """Hole@k counted by hand: mean over ``queries`` of the share of the top k with no judgment."""
    qs = list(queries)
    return sum(sum((q, d) not in qrels for d in top_k(run[q], k)) / k for q in qs) / len(qs)
