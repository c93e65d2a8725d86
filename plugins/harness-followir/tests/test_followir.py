"""FollowIR end to end from an empty data folder through the Hub imitation, in both releases (the -mteb
layout and the original layout mteb 1.x read), p-MRR under both tie rules (hand-computed), and the figures
against MTEB's own evaluation of the same scores."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from importlib import metadata

import pytest
from followir_fixture import (
    ORIGINAL_COMMIT,
    ORIGINAL_LFS,
    ORIGINAL_READ,
    ORIGINAL_REPO,
    POOLS,
    QREL_DIFF,
    QRELS,
    SCORES,
    TableReranker,
    original_repository,
    repository,
)
from harness import Context, DataError, HarnessError, evaluate, load_dataset, load_task
from harness.testing import HubServer, plugin_registry

import harness_followir
from harness_followir.benchmarks import BENCHMARKS, benchmark

CORE17 = benchmark("core17")


@pytest.fixture
def hub(monkeypatch, tmp_path):
    """Every FollowIR repository at its pinned commit, reached through HF_ENDPOINT; downloads on."""
    with HubServer() as server:
        for b in BENCHMARKS:
            server.add_repo(b.repo, repository(), commit=b.revision)
        server.downloading(monkeypatch, tmp_path / "hf")
        yield server


def _context(tmp_path) -> Context:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    return Context.create(registry=plugin_registry(harness_followir), data_dir=data)


def test_both_tie_rules_give_the_hand_computed_values(hub, tmp_path):
    """Topic 310, counted document d3 (pool d1..d5):
    og scores d1 3, d2 2, d3 2, d4 1, d5 0; changed d1 3, d5 2, d2 = d3 = d4 = 1.
      trec_eval (ties by doc id descending): og d1, d3, d2 -> R_og(d3) = 2; changed d1, d5, d4, d3, d2 ->
      R_new = 4; R_og < R_new: 1 - 2/4 = 0.5.
      release (ties in pool order): og d1, d2, d3 -> R_og = 3; changed d1, d5, d2, d3, d4 -> R_new = 4:
      1 - 3/4 = 0.25.
    Topic 311, counted d4 and d6 (pool d6, d2, d4, d1, d3): og strictly d6 5, d2 4, d4 3, d1 2, d3 1 ->
    R_og(d6) = 1, R_og(d4) = 3 under both rules; changed d1 2, then d6 = d2 = d4 = 1, d3 0.
      trec_eval: d1, d6, d4, d2, d3 -> d6: 1 vs 2 -> 1 - 1/2 = 0.5; d4: 3 vs 3 -> 3/3 - 1 = 0; mean 0.25.
      release: d1, d6, d2, d4, d3 -> d6: 0.5; d4: 3 vs 4 -> 1 - 3/4 = 0.25; mean 0.375.
    p-MRR = mean over topics: trec_eval (0.5 + 0.25) / 2 = 0.375; release (0.25 + 0.375) / 2 = 0.3125."""
    res = evaluate("followir:core17", rerankers=[TableReranker()], progress=False, context=_context(tmp_path))
    assert res.metrics["p-MRR"] == pytest.approx(0.375)
    assert res.metrics["p-MRR[release]"] == pytest.approx(0.3125)
    assert res.per_query["310"]["p-MRR"] == pytest.approx(0.5)
    assert res.per_query["310"]["p-MRR[release]"] == pytest.approx(0.25)
    assert res.per_query["311"]["p-MRR"] == pytest.approx(0.25)
    assert res.per_query["311"]["p-MRR[release]"] == pytest.approx(0.375)


def _bootstrap_by_hand(values: list[float], b: int, seed: int) -> list[float]:
    """Bootstrap means drawn one resample at a time from the documented streams: blocks of 1,000, block i
    from SeedSequence(seed).spawn(n)[i] (harness.metrics.bootstrap)."""
    import numpy as np

    sizes = [1000] * (b // 1000) + ([b % 1000] if b % 1000 else [])
    x, out = np.array(values), []
    for seq, size in zip(np.random.SeedSequence(seed).spawn(len(sizes)), sizes):
        rng = np.random.Generator(np.random.PCG64(seq))
        out += [float(x[rng.integers(0, x.size, size=x.size)].mean()) for _ in range(size)]
    return out


def test_p_mrr_has_a_bootstrap_interval_over_topics_and_compare_pairs_its_topics(hub, tmp_path):
    """The per-topic p-MRR values (0.5 and 0.25, above) are the per-query rows; results.json gives the mean a
    bootstrap interval over them; `harness compare` pairs the topics like queries. The value is unchanged."""
    import numpy as np
    from click.testing import CliRunner
    from harness.cli import cli

    ranked = evaluate("followir:core17", rerankers=[TableReranker()], progress=False, context=_context(tmp_path),
                      output=str(tmp_path / "ranked"))
    plain = evaluate("followir:core17", progress=False, context=_context(tmp_path), output=str(tmp_path / "plain"))
    assert ranked.metrics["p-MRR"] == pytest.approx(0.375)
    u = ranked.uncertainty["p-MRR"]
    means = _bootstrap_by_hand([0.5, 0.25], 10_000, 0)
    assert u.n == 2 and u.ci95 == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])))
    assert u.se == pytest.approx(np.std(means, ddof=1)) and "over topics" in u.method
    stored = json.loads((tmp_path / "ranked" / "results.json").read_text())["uncertainty"]["p-MRR"]
    assert stored["ci95"] == pytest.approx(list(u.ci95)) and stored["n"] == 2
    r = CliRunner().invoke(cli, ["compare", f"plain={tmp_path / 'plain'}", f"ranked={tmp_path / 'ranked'}",
                                 "--metric", "p-MRR", "--test", "t", "--bootstrap", "500", "--format", "json"])
    assert r.exit_code == 0, r.output
    (row,) = json.loads(r.output)["comparisons"]
    assert (row["a"], row["b"], row["n"]) == ("plain", "ranked", 2)
    assert row["delta"] == pytest.approx(0.375 - plain.metrics["p-MRR"])
    from harness_followir.metric import FollowIRPMRR

    with pytest.raises(HarnessError, match="resamples must be a whole number >= 1"):
        FollowIRPMRR(resamples=0)
    assert FollowIRPMRR(seed=5).config()["interval"] == {"method": "bootstrap over topics", "resamples": 10_000,
                                                         "seed": 5}


def test_the_pool_alone_moves_nothing(hub, tmp_path):
    """Without a reranker each mode is its pool in the published order: identical pools, p-MRR 0."""
    res = evaluate("followir:news21", progress=False, context=_context(tmp_path))
    assert res.metrics["p-MRR"] == 0.0 and res.metrics["p-MRR[release]"] == 0.0


def _written_run(folder, mode: str) -> dict[str, dict[str, float]]:
    """The run file the evaluation wrote for ``mode``, as {MTEB query id: {doc: score}}."""
    from harness.formats import read_trec_run

    path = next(p for p in folder.rglob("*.trec") if f"{mode}" in p.name)
    run = read_trec_run(path)
    return {f"{q}-{mode}": dict(run.scores(q)) for q in run}


def test_scores_equal_mtebs_own_evaluation(hub, tmp_path):
    """MTEB's functions (mteb/_evaluators/retrieval_metrics.py) on the same qrels: p-MRR from the scores the
    reranker gave (ties kept) under MTEB's current rule, and under the release rule with MTEB's
    pre-#5241 ``get_rank_from_dict`` (a stable score-only sort over the pool order); MAP@1000 and nDCG@5
    of each half from the run files harness wrote."""
    rm = pytest.importorskip("mteb._evaluators.retrieval_metrics", reason="mteb is not installed")
    out = tmp_path / "out"
    res = evaluate("followir:core17", rerankers=[TableReranker()], progress=False, context=_context(tmp_path),
                   output=str(out))
    qrels = {q: {d: int(s) for d, s in docs.items()} for q, docs in QRELS.items()}
    og = {q: SCORES[q] for q in SCORES if q.endswith("-og")}
    new = {q: SCORES[q] for q in SCORES if not q.endswith("-og")}
    assert res.metrics["p-MRR"] == pytest.approx(rm.calculate_pmrr(og, new, QREL_DIFF))

    def release_rank(dict_of_results, doc_id):  # mteb < 2.19.5 (and 1.x): key=lambda x: x[1], stable
        ranked = sorted(dict_of_results.items(), key=lambda x: x[1], reverse=True)
        for i, (d, score) in enumerate(ranked):
            if d == doc_id:
                return i + 1, score
        return len(ranked) + 1, 0

    in_pool_order = {q: {d: s[d] for d in POOLS[q.split("-")[0]]} for q, s in SCORES.items()}
    patch = pytest.MonkeyPatch()
    with patch.context() as m:
        m.setattr(rm, "get_rank_from_dict", release_rank)
        release = rm.calculate_pmrr({q: v for q, v in in_pool_order.items() if q.endswith("-og")},
                                    {q: v for q, v in in_pool_order.items() if not q.endswith("-og")}, QREL_DIFF)
    assert res.metrics["p-MRR[release]"] == pytest.approx(release)
    results = {**_written_run(out, "og"), **_written_run(out, "changed")}
    mteb = rm.evaluate_p_mrr_change(qrels, results, QREL_DIFF, [1, 3, 5, 10, 100, 1000])
    for mode in ("og", "changed"):
        assert res.metrics[f"MAP@1000[{mode}]"] == pytest.approx(mteb[mode]["map_at_1000"], abs=1e-5)
        assert res.metrics[f"nDCG@5[{mode}]"] == pytest.approx(mteb[mode]["ndcg_at_5"], abs=1e-5)


def _installed() -> bool:
    return any(ep.value == "harness_followir" for ep in metadata.entry_points(group="harness"))


@pytest.mark.skipif(not _installed(), reason="the CLI sees installed plugins only: "
                                             "pip install -e plugins/harness-followir")
@pytest.mark.parametrize("b", BENCHMARKS, ids=lambda b: b.name)
def test_every_task_runs_from_an_empty_data_folder(hub, tmp_path, b):
    """``harness eval --task followir:<x>`` in a subprocess (HF_ENDPOINT read as a shell would): every file
    fetched at the pin, results.json naming the repository, the commit and the sha256 of each byte read."""
    data = tmp_path / "data"
    data.mkdir()
    env = dict(os.environ, HARNESS_DATA=str(data))
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "harness.cli", "eval", "--task", b.task_name, "-o", str(out), "-q"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    served = repository()
    gets = {r.path for r in hub.requests if r.method == "GET" and r.file is not None}
    assert gets == {f"/datasets/{b.repo}/resolve/{b.revision}/{p}" for p in served}
    saved = json.loads((out / "results.json").read_text())
    ident = saved["dataset"]
    assert ident["repo"] == b.repo and ident["revision"] == b.revision
    rel = f"mteb/{b.repo}/{b.revision}"
    assert {f["path"]: f["sha256"] for f in ident["files"]} == {
        f"{rel}/{p}": hashlib.sha256(v).hexdigest() for p, v in served.items()}
    assert saved["task"]["mteb"]["task_name"] == b.mteb_task
    assert {f"{b.score}[og]", "p-MRR", "p-MRR[release]"} <= set(saved["metrics"])


# -- the original release (mteb 1.x's data) ----------------------------------------------------------------------
@pytest.fixture
def original_hub(monkeypatch, tmp_path):
    """jhu-clsp/core17-instructions at the commit mteb 1.x names, in the original layout (LFS where the Hub
    stores it so), beside the -mteb release at its pin; downloads on."""
    with HubServer() as server:
        server.add_repo(ORIGINAL_REPO, original_repository(), commit=ORIGINAL_COMMIT, lfs=ORIGINAL_LFS)
        server.add_repo(CORE17.repo, repository(), commit=CORE17.revision)
        server.downloading(monkeypatch, tmp_path / "hf")
        yield server


def _fetched(hub: HubServer) -> set[str]:
    """The files transferred (GET on the Hub or its LFS storage), each asked of the Hub at the pinned commit."""
    asked = {r.path for r in hub.requests if r.origin == "hub" and r.file is not None}
    assert asked and all(a.startswith(f"/datasets/{ORIGINAL_REPO}/resolve/{ORIGINAL_COMMIT}/") for a in asked), asked
    return {r.file for r in hub.requests if r.method == "GET" and r.file is not None}


def _jsonl(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.decode().splitlines() if line.strip()]


def _mteb_inputs(served: dict[str, bytes]) -> tuple[dict, dict]:
    """The served files as MTEB reads them, computed here from the bytes: qrels keyed ``<topic>-og`` /
    ``<topic>-changed`` (ids as strings, grades as ints) and the documents p-MRR counts by mteb 1.x's
    ``create_qrel_diff`` (the documents of qrels_changed whose grade in qrels_og differs)."""
    half = {m: {} for m in ("og", "changed")}
    for mode in half:
        for r in _jsonl(served[f"qrels_{mode}/test.jsonl"]):
            half[mode].setdefault(str(r["query-id"]), {})[str(r["corpus-id"])] = int(r["score"])
    qrels = {f"{t}-{m}": docs for m, table in half.items() for t, docs in table.items()}
    diff = {t: [d for d, g in docs.items() if half["og"][t][d] != g] for t, docs in half["changed"].items()}
    return qrels, diff


def test_core17_original_release_from_an_empty_data_folder_equals_mtebs_p_mrr(original_hub, tmp_path):
    """``followir:core17:release=mteb1`` fetches exactly the five files the layout's card names, at
    e39ff896..., through the Hub client into an empty data folder; its p-MRR equals mteb's
    ``evaluate_p_mrr_change`` on the same scores and qrels (0.375, worked out by hand above), p-MRR[release]
    mteb 1.x's rule (a stable sort by score over the pool order), MAP@1000 / nDCG@5 of each half MTEB's on
    the written run files; results.json names the repository, the commit and the sha256 of each file read."""
    rm = pytest.importorskip("mteb._evaluators.retrieval_metrics", reason="mteb is not installed")
    out = tmp_path / "out"
    res = evaluate("followir:core17:release=mteb1", rerankers=[TableReranker()], progress=False,
                   context=_context(tmp_path), output=str(out))
    assert _fetched(original_hub) == set(ORIGINAL_READ)
    served = original_repository()
    qrels, diff = _mteb_inputs(served)
    assert diff == {"310": ["d3"], "311": ["d6", "d4"]}
    mteb = rm.evaluate_p_mrr_change(qrels, SCORES, diff, [1, 3, 5, 10, 100, 1000])
    assert res.metrics["p-MRR"] == pytest.approx(mteb["p-MRR"]) == pytest.approx(0.375)

    def release_rank(dict_of_results, doc_id):  # mteb 1.x (mteb/evaluation/evaluators/utils.py): stable sort
        ranked = sorted(dict_of_results.items(), key=lambda x: x[1], reverse=True)
        for i, (d, score) in enumerate(ranked):
            if d == doc_id:
                return i + 1, score
        return len(ranked) + 1, 0

    in_pool_order = {q: {d: s[d] for d in POOLS[q.split("-")[0]]} for q, s in SCORES.items()}
    with pytest.MonkeyPatch().context() as m:
        m.setattr(rm, "get_rank_from_dict", release_rank)
        release = rm.evaluate_p_mrr_change(qrels, in_pool_order, diff, [1, 1000])["p-MRR"]
    assert res.metrics["p-MRR[release]"] == pytest.approx(release) == pytest.approx(0.3125)
    written = rm.evaluate_p_mrr_change(qrels, {**_written_run(out, "og"), **_written_run(out, "changed")}, diff,
                                       [1, 3, 5, 10, 100, 1000])
    for mode in ("og", "changed"):
        assert res.metrics[f"MAP@1000[{mode}]"] == pytest.approx(written[mode]["map_at_1000"], abs=1e-5)
        assert res.metrics[f"nDCG@5[{mode}]"] == pytest.approx(written[mode]["ndcg_at_5"], abs=1e-5)
    saved = json.loads((out / "results.json").read_text())
    ident = saved["dataset"]
    assert (ident["repo"], ident["revision"], ident["layout"]) == (ORIGINAL_REPO, ORIGINAL_COMMIT, "original")
    rel = f"mteb/{ORIGINAL_REPO}/{ORIGINAL_COMMIT}"
    assert {f["path"]: f["sha256"] for f in ident["files"]} == {
        f"{rel}/{p}": hashlib.sha256(served[p]).hexdigest() for p in ORIGINAL_READ}
    assert saved["task"]["name"] == "followir:core17:mteb1"
    block = saved["task"]["mteb"]
    assert (block["task_name"], block["dataset"], block["dataset_revision"]) == (
        "Core17InstructionRetrieval", ORIGINAL_REPO, ORIGINAL_COMMIT)


def test_both_releases_of_one_collection_give_the_same_figures(original_hub, tmp_path):
    """The fixture holds the same collection in both layouts: every figure agrees, so the original layout is
    read into the same modes, pools, qrels and counted documents as the -mteb one."""
    ctx = _context(tmp_path)
    one = evaluate("followir:core17:mteb1", rerankers=[TableReranker()], progress=False, context=ctx)
    two = evaluate("followir:core17", rerankers=[TableReranker()], progress=False, context=ctx)
    assert set(one.metrics) == set(two.metrics) and len(one.metrics) >= 6
    for key, value in two.metrics.items():
        assert one.metrics[key] == pytest.approx(value), key


def test_the_release_argument_and_its_registered_names():
    """``release=mteb1`` gives the task registered as ``followir:<x>:mteb1`` (the name results record, so
    ``harness compare`` and ``export mteb`` find its block): the original repository at mteb 1.x's full
    commit, every file there; the suite ``followir:mteb1``; anything else is one error."""
    ctx = _context_only()
    for b in BENCHMARKS:
        task = load_task(f"{b.task_name}:release=mteb1", ctx)
        again = load_task(f"{b.task_name}:mteb1", ctx)
        assert task.name == again.name == f"{b.task_name}:mteb1" and task.dataset_args == again.dataset_args
        assert task.mteb["dataset"] == b.original_repo == b.original_repo.removesuffix("-mteb")
        assert len(task.mteb["dataset_revision"]) == 40 and task.mteb["metrics"] == {"p-MRR[release]": "p-MRR"}
        assert [f.url.split("/resolve/")[1].split("/", 1)[0] for f in task.files] == [b.original_revision] * 5
        assert load_task(b.task_name, ctx).mteb["dataset"] == b.repo and not load_task(b.task_name, ctx).files
    assert load_task("followir:release=mteb1", ctx).tasks == [f"{b.task_name}:mteb1" for b in BENCHMARKS]
    with pytest.raises(HarnessError, match="release must be mteb"):
        load_task("followir:core17:release=mteb2", ctx)


def _context_only() -> Context:
    return Context.create(registry=plugin_registry(harness_followir))


@pytest.mark.skipif(not _installed(), reason="the CLI sees installed plugins only: "
                                             "pip install -e plugins/harness-followir")
def test_the_dataset_spec_reads_the_original_layout(original_hub, tmp_path):
    """``--dataset followir:repo=jhu-clsp/core17-instructions,revision=e39ff896...`` in a shell: the original
    layout is read (no layout= needed for FollowIR's own repositories), the pools are the first stage, and
    without a reranker each mode is its pool in the same order (p-MRR 0); a branch as revision is one
    message, exit status 2."""
    (tmp_path / "sh").mkdir()
    run = original_hub.shell(tmp_path / "sh")
    spec = f"followir:repo={ORIGINAL_REPO},revision={ORIGINAL_COMMIT}"
    done = run("eval", "--dataset", spec, "-m", "followir-p-MRR", "-m", "MAP@1000", "-o", "out", "-q")
    assert done.returncode == 0, done.stderr
    saved = json.loads((tmp_path / "sh" / "out" / "results.json").read_text())
    assert saved["dataset"]["layout"] == "original" and saved["metrics"]["p-MRR"] == 0.0
    assert saved["metrics"]["MAP@1000[og]"] > 0
    assert _fetched(original_hub) == set(ORIGINAL_READ)
    bad = run("eval", "--dataset", f"followir:repo={ORIGINAL_REPO},revision=main", "-q")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert "revision must be a full 40-hex commit id" in bad.stderr


def _edit(files: dict[str, bytes], path: str, change) -> dict[str, bytes]:
    rows = _jsonl(files[path])
    files[path] = "".join(json.dumps(r) + "\n" for r in change(rows)).encode()
    return files


DEFECTS = {
    "a pair judged under the changed narrative only": (
        "qrels_changed/test.jsonl", lambda rows: rows + [{"query-id": 310, "corpus-id": "d5", "score": 0.0}],
        "judged here but not in qrels_og"),
    "a grade that is not a whole number": (
        "qrels_og/test.jsonl", lambda rows: [{**r, "score": 0.5} for r in rows], "not a whole number"),
    "a topic without its changed narrative": (
        "queries.jsonl", lambda rows: [{k: v for k, v in r.items() if k != "instruction_changed"} for r in rows],
        "instruction_changed must be a string"),
    "a narrative that is not text": (
        "queries.jsonl", lambda rows: [{**r, "instruction_og": 7} for r in rows], "instruction_og must be a string"),
    "a judged topic without a pool": (
        "top_ranked.jsonl", lambda rows: [r for r in rows if r["qid"] != "311"], "has no pool"),
    "a topic judged under one narrative only": (
        "qrels_changed/test.jsonl", lambda rows: [r for r in rows if r["query-id"] != 311],
        "has no judgment in qrels_changed"),
    "a pooled document without an id": (
        "top_ranked.jsonl", lambda rows: rows + [{"qid": "310", "pid": None}], "'pid' must be"),
}


@pytest.mark.parametrize("defect", DEFECTS, ids=list(DEFECTS))
def test_a_defective_release_is_one_data_error_naming_the_file(tmp_path, defect):
    """The files are untrusted: each defect is one DataError naming the file (files already in the data
    folder, downloads off)."""
    path, change, message = DEFECTS[defect]
    files = _edit(original_repository(), path, change)
    root = tmp_path / "data" / "mteb" / ORIGINAL_REPO / ORIGINAL_COMMIT
    for name in ORIGINAL_READ:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(files[name])
    with pytest.raises(DataError, match=message) as err:
        evaluate("followir:core17:mteb1", progress=False, context=_context(tmp_path))
    assert path.split("/")[-1] in str(err.value)


#: embeddings-benchmark/results @ f4cc6c8b365a3c779dbc708d6affe0b0355b2ddf,
#: results/sentence-transformers__all-MiniLM-L6-v2/8b3219a92973c328a8e22fadcfa821b5dc75636a/
#: Core17InstructionRetrieval.json (mteb 1.12.75): its p-MRR and revision, in the 1.x file form
MINILM_1X = {"dataset_revision": ORIGINAL_COMMIT, "task_name": "Core17InstructionRetrieval", "mteb_version": "1.12.75",
             "scores": {"test": [{"p-MRR": -0.003451558, "individual": {"original": {}, "changed": {}},
                                  "main_score": -0.003451558, "hf_subset": "default", "languages": ["eng-Latn"]}]},
             "evaluation_time": 1.0, "kg_co2_emissions": None}


@pytest.mark.skipif(not _installed(), reason="the CLI sees installed plugins only: "
                                             "pip install -e plugins/harness-followir")
def test_compare_puts_a_1x_result_file_next_to_the_release_rule(original_hub, tmp_path):
    """A run of ``followir:core17:release=mteb1`` and MTEB's 1.x file for Core17 (same dataset revision):
    ``harness compare`` maps the file's p-MRR to p-MRR[release], the rule 1.x used."""
    (tmp_path / "sh").mkdir()
    run = original_hub.shell(tmp_path / "sh")
    done = run("eval", "--task", "followir:core17:release=mteb1", "-o", "out", "-q")
    assert done.returncode == 0, done.stderr
    f = tmp_path / "sh" / "minilm" / "Core17InstructionRetrieval.json"
    f.parent.mkdir()
    f.write_text(json.dumps(MINILM_1X))
    cmp = run("compare", "out", f"minilm={f}", "--format", "json")
    assert cmp.returncode == 0, cmp.stderr
    board = {r["metric"]: r["leaderboard"] for r in json.loads(cmp.stdout)["results"]}
    assert board["p-MRR[release]"] == {"minilm": pytest.approx(-0.003451558, abs=1e-6)}
    assert all(not v for k, v in board.items() if k != "p-MRR[release]"), board


def test_layout_original_reads_any_repository_in_that_layout(tmp_path):
    """``layout=original`` reads a repository that is not one of FollowIR's own in the original layout (files
    already in the data folder); ``layout`` takes auto, original or mteb only."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    root = tmp_path / "data" / "mteb" / "someone" / "copy" / commit
    served = original_repository()
    for name in ORIGINAL_READ:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(served[name])
    ctx = _context(tmp_path)
    ds = load_dataset("followir", ctx, repo="someone/copy", revision=commit, layout="original")
    assert ds.modes == ["og", "changed"] and set(ds.queries["og"]) == {"310", "311"}
    assert ds.queries["changed"]["310"].instruction == "Relevant documents discuss radio waves from cell phones only."
    assert ds.candidates["og"].doc_ids("311") == POOLS["311"] and ds.meta["qrel_diff"] == {"310": ["d3"],
                                                                                           "311": ["d6", "d4"]}
    assert ds.identity["repo"] == "someone/copy" and "release" not in ds.identity
    with pytest.raises(DataError, match="layout must be auto, original or mteb"):
        load_dataset("followir", ctx, repo="someone/copy", revision=commit, layout="beir")
