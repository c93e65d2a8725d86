"""Fusion: ``harness fuse`` of the demo's BM25 and dense runs equals an RRF (k = 60) computed here from the
run files alone, exactly; the in-evaluation fusion (``--retriever fuse:...``) gives the same run; every
method and normalisation equals ranx's own ``fuse`` (the reference library); bad settings are one message."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.concepts.errors import HarnessError
from harness.concepts.run import Run
from harness.retrievers.fusion import METHODS, NORMS, check_fusion, fuse

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def invoke(*args: str) -> str:
    res = CliRunner().invoke(cli, list(args))
    assert res.exit_code == 0, res.output
    return res.output


def trec_lines(path: Path) -> dict[str, list[tuple[str, float]]]:
    """A run file's lists as written, by hand: qid -> [(docid, score)] in the file's order."""
    out: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        qid, _, docid, _, score, _ = line.split()
        out[qid].append((docid, float(score)))
    return out


def rrf_by_hand(runs: list[dict[str, list[tuple[str, float]]]], k: int = 60) -> dict[str, list[str]]:
    """Cormack et al.'s RRF from the files: rank = position in trec_eval's order (score desc, docid desc)."""
    fused: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for run in runs:
        for qid, hits in run.items():
            for rank, (docid, _) in enumerate(trec_order(hits), 1):
                fused[qid][docid] += 1.0 / (k + rank)
    return {q: [d for d, _ in trec_order(list(s.items()))] for q, s in fused.items()}


def trec_order(hits: list[tuple[str, float]]) -> list[tuple[str, float]]:
    """trec_eval's order: score descending, ties by document id descending."""
    return sorted(hits, key=lambda h: (h[1], h[0]), reverse=True)


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("sentence_transformers", reason="the dense run needs the extra dense: "
                                                        "pip install 'harness-ir[dense]'")
    root = tmp_path_factory.mktemp("demo-runs")
    invoke("eval", "--task", "demo", "-o", str(root / "bm25"), "--quiet")
    invoke("eval", "--task", "demo", "--retriever", "dense", "-o", str(root / "dense"), "--quiet")
    return root


def test_harness_fuse_equals_rrf_by_hand_and_the_in_evaluation_fusion(demo_runs: Path, tmp_path: Path):
    invoke("fuse", str(demo_runs / "bm25"), str(demo_runs / "dense"), "--method", "rrf", "--k", "60",
           "-o", str(tmp_path / "fused"), "--quiet")
    fused = trec_lines(tmp_path / "fused" / "run.trec")
    expected = rrf_by_hand([trec_lines(demo_runs / "bm25" / "run.trec"), trec_lines(demo_runs / "dense" / "run.trec")])
    assert {q: [d for d, _ in hits] for q, hits in fused.items()} == expected
    bm25, dense = trec_lines(demo_runs / "bm25" / "run.trec"), trec_lines(demo_runs / "dense" / "run.trec")
    for q, hits in fused.items():  # the scores exactly: 1/(60 + rank) summed, bm25's term first
        ranks = [{d: i for i, (d, _) in enumerate(trec_order(r[q]), 1)} for r in (bm25, dense)]
        for d, score in hits:
            assert score == sum(1.0 / (60 + r[d]) for r in ranks if d in r)
    # the same fusion inside one evaluation, over the retrievers themselves
    invoke("eval", "--task", "demo", "--retriever", "fuse:retrievers=[bm25,dense],method=rrf,k=60",
           "-o", str(tmp_path / "inline"), "--quiet")
    assert (tmp_path / "inline" / "run.trec").read_text() == (tmp_path / "fused" / "run.trec").read_text()
    data = json.loads((tmp_path / "fused" / "results.json").read_text())
    comp = data["components"]["retriever"]
    assert comp["name"] == "fuse" and comp["method"] == "rrf" and comp["k"] == 60
    assert [i["sha256"] for i in comp["inputs"]] and all(i["source"] == "run file" for i in comp["inputs"])
    # the fused folder is a system like any other: compare reads it
    out = invoke("compare", str(demo_runs / "bm25"), str(tmp_path / "fused"), "--metric", "nDCG@10", "-B", "100")
    assert "fused" in out


def test_fusion_feeds_a_reranker_and_records_each_input(demo_runs: Path, tmp_path: Path):
    invoke("eval", "--task", "demo", "--retriever",
           f"fuse:retrievers=[run-file:{demo_runs / 'bm25' / 'run.trec'},dense],method=combsum,norm=zscore",
           "--reranker", "dense", "-o", str(tmp_path / "out"), "--quiet")
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["components"]["retriever"]["norm"] == "zscore"
    assert (tmp_path / "out" / "run.first_stage.trec").is_file()
    assert data["components"]["rerankers"][0]["name"] == "dense"


def _pair(ties: bool = True) -> tuple[Run, Run]:
    """Two runs over the same queries (ranx requires it); ``ties``: two equal scores in the first."""
    a = Run.from_scores({"q1": {"a": 3.0, "b": 2.0, "c": 2.0 if ties else 1.5, "e": -1.0},
                         "q2": {"x": 1.0, "y": 0.5, "z": 0.25}})
    b = Run.from_scores({"q1": {"b": 0.9, "d": 0.8, "e": 0.1}, "q2": {"y": 2.0, "w": -3.0}})
    return a, b


@pytest.mark.parametrize("method,norm", [("rrf", None), *((m, n) for m in METHODS if m != "rrf" for n in NORMS)])
def test_every_method_and_norm_equals_ranx(method: str, norm: str | None):
    ranx = pytest.importorskip("ranx", reason="the reference fusion is ranx's: pip install ranx")
    a, b = _pair(ties=False)  # ranx breaks ties by its sort; the order of tied documents is ours to define
    weights = [0.7, 0.3] if method == "wsum" else None
    ours = fuse([a, b], method, weights=weights, norm=norm)
    names = {"combsum": "sum", "combmnz": "mnz", "max": "max", "wsum": "wsum", "rrf": "rrf"}
    ranx_norm = {None: None, "none": None, "minmax": "min-max", "zscore": "zmuv"}[norm]
    theirs = ranx.fuse([ranx.Run(a.to_dict()), ranx.Run(b.to_dict())], norm=ranx_norm, method=names[method],
                       params={"weights": weights} if weights else {"k": 60} if method == "rrf" else {}).to_dict()
    for q in ours:
        assert set(ours.scores(q)) == set(theirs[q])
        for d, s in ours.scores(q).items():
            assert math.isclose(s, theirs[q][d], rel_tol=1e-12, abs_tol=1e-12), (q, d, s, theirs[q][d])


def test_the_command_offers_the_methods_and_norms_of_the_module():
    from harness.cli import fuse as command

    assert command.METHODS == METHODS and command.NORMS == NORMS


def test_formulas_by_hand():
    a, b = _pair()
    mnz = fuse([a, b], "combmnz", norm="none").scores("q1")
    assert mnz["b"] == (2.0 + 0.9) * 2 and mnz["a"] == 3.0 * 1 and mnz["e"] == (-1.0 + 0.1) * 2
    mx = fuse([a, b], "max", norm="minmax").scores("q2")
    assert mx["w"] == 0.0 and mx["y"] == 1.0  # min-max of b's q2: y 1, w 0
    rrf = fuse([a, b], "rrf", k=10).scores("q1")
    assert rrf["c"] == 1 / (10 + 2)  # a ranks a, c, b: the tie of b and c broken by doc id descending
    assert rrf["b"] == 1 / (10 + 3) + 1 / (10 + 1)


@pytest.mark.parametrize("kwargs,message", [
    ({"method": "wsum"}, "one finite weight per run"),
    ({"method": "wsum", "weights": [1.0]}, "one finite weight per run"),
    ({"method": "rrf", "norm": "zscore"}, "does not apply"),
    ({"method": "combsum", "weights": [0.5, 0.5]}, "wsum only"),
    ({"method": "borda"}, "unknown fusion method"),
    ({"method": "combsum", "norm": "rank"}, "unknown fusion normalisation"),
    ({"method": "rrf", "k": -1}, "k must be"),
])
def test_bad_fusion_settings_are_one_message(kwargs, message):
    with pytest.raises(HarnessError, match=message):
        check_fusion(2, **kwargs)


def test_fuse_command_refuses_a_mixed_or_unnamed_task(demo_runs: Path, tmp_path: Path):
    res = CliRunner().invoke(cli, ["fuse", str(demo_runs / "bm25" / "run.trec"), str(demo_runs / "dense" / "run.trec"),
                                   "-o", str(tmp_path / "x")])
    assert res.exit_code == 2 and "give --task" in res.output
    res = CliRunner().invoke(cli, ["fuse", str(demo_runs / "bm25"), str(demo_runs / "dense"), "--task", "scifact",
                                   "-o", str(tmp_path / "y")])
    assert res.exit_code == 2 and "not on 'scifact'" in res.output
    res = CliRunner().invoke(cli, ["fuse", str(demo_runs / "bm25"), str(demo_runs / "dense"), "--method", "combsum",
                                   "--k", "60", "-o", str(tmp_path / "z")])
    assert res.exit_code == 2 and "--k is RRF's constant" in res.output
    # run files with the task named: fused whole
    invoke("fuse", str(demo_runs / "bm25" / "run.trec"), str(demo_runs / "dense" / "run.trec"), "--task", "demo",
           "--method", "wsum", "--weights", "0.7,0.3", "-o", str(tmp_path / "w"), "--quiet")
    assert json.loads((tmp_path / "w" / "results.json").read_text())["components"]["retriever"]["weights"] == [0.7, 0.3]
