"""``harness judge agreement``: kappa and its kin against scikit-learn; the stratified sample against a
hand allocation; end to end on DL19 against a loopback assessor whose replies are a known function of the
human grade, the figures equal to an independent computation on the pairs the server actually received; a
warm rerun sends nothing; a dry run prices and writes nothing."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from harness.assessment import kappa
from harness.assessment.agreement import allocate, stratified_sample
from harness.cli import cli
from harness.testing import TestServer
from tests.assessor_fixtures import GRADE_MAP, Dl19, jsonl

sklearn_metrics = pytest.importorskip("sklearn.metrics", reason="needs scikit-learn (installed with mteb, the "
                                                                "test extra)")


@pytest.mark.parametrize("seed", range(5))
def test_kappa_equals_sklearn(seed):
    rng = random.Random(seed)
    first = [rng.choice([0, 1, 2, 3]) for _ in range(200)]
    second = [g if rng.random() < 0.6 else rng.choice([0, 1, 2, 3]) for g in first]
    for weights in (None, "linear", "quadratic"):
        assert kappa.cohen_kappa(first, second, weights=weights) == pytest.approx(
            sklearn_metrics.cohen_kappa_score(first, second, weights=weights))
    labels = kappa.labels_of(first, second)
    assert kappa.confusion(first, second, labels) == sklearn_metrics.confusion_matrix(first, second,
                                                                                       labels=labels).tolist()
    p, r, _, _ = sklearn_metrics.precision_recall_fscore_support(first, second, labels=labels, zero_division=0)
    grades = kappa.per_grade(first, second, labels)
    assert [grades[str(g)]["precision"] for g in labels] == pytest.approx(list(p))  # second's grade vs first's
    assert [grades[str(g)]["recall"] for g in labels] == pytest.approx(list(r))


def test_kappa_on_a_hand_made_matrix():
    # human: 0 0 1 1 2 3 ; llm: 0 1 1 1 2 2. po = 4/6; marginals human (2,2,1,1), llm (1,3,2,0)
    human, llm = [0, 0, 1, 1, 2, 3], [0, 1, 1, 1, 2, 2]
    pe = (2 * 1 + 2 * 3 + 1 * 2 + 1 * 0) / 36
    assert kappa.cohen_kappa(human, llm) == pytest.approx((4 / 6 - pe) / (1 - pe))
    assert kappa.confusion(human, llm, [0, 1, 2, 3]) == [[1, 1, 0, 0], [0, 2, 0, 0], [0, 0, 1, 0], [0, 0, 1, 0]]
    assert kappa.per_grade(human, llm, [0, 1, 2, 3])["3"] == {"precision": None, "recall": 0.0, "n_human": 1,
                                                              "n_llm": 0}


def test_the_sample_is_proportional_to_the_grades_and_seeded():
    # 10 of 17: exact shares 5.88, 2.94, 1.18 -> floors 5, 2, 1 (8); the 2 left go to the largest remainders
    assert allocate({0: 10, 1: 5, 2: 2}, 10) == {0: 6, 1: 3, 2: 1}
    by_grade = {0: [("q", f"a{i}") for i in range(10)], 1: [("q", f"b{i}") for i in range(5)],
                2: [("q", f"c{i}") for i in range(2)]}
    one, two = stratified_sample(by_grade, 10, seed=4), stratified_sample(by_grade, 10, seed=4)
    assert one == two and len(set(one)) == 10 and stratified_sample(by_grade, 10, seed=5) != one
    assert sum(1 for _, d in one if d.startswith("a")) == 6
    assert stratified_sample(by_grade, None, 0) == sorted(p for ps in by_grade.values() for p in ps)


def independent_figures(dl19: Dl19, pairs: list[tuple[str, str]]) -> dict:
    human = [dl19.qrels[q][d] for q, d in pairs]
    llm = [GRADE_MAP[g] for g in human]
    return {"kappa": sklearn_metrics.cohen_kappa_score(human, llm),
            "kappa_binary": sklearn_metrics.cohen_kappa_score([int(g >= 2) for g in human],
                                                              [int(g >= 2) for g in llm]),
            "kappa_quadratic": sklearn_metrics.cohen_kappa_score(human, llm, weights="quadratic"),
            "confusion": sklearn_metrics.confusion_matrix(human, llm, labels=[0, 1, 2, 3]).tolist()}


def test_agreement_on_dl19_equals_an_independent_computation(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    dl19 = Dl19.read(data_dir)
    no_grade = {d for q, docs in dl19.qrels.items() for d, g in docs.items() if g == 1 and int(d) % 3 == 0}
    args = ["--data-dir", str(data_dir), "judge", "agreement", "--task", "trec-dl19", "--sample", "150", "--seed",
            "7", "-o", str(tmp_path / "agr"), "--quiet"]
    with TestServer(reply=dl19.assessor(no_grade=lambda q, d: d in no_grade)) as srv:
        res = CliRunner().invoke(cli, [*args, "--llm", srv.spec("gpt-4o-mini")])
        assert res.exit_code == 0, res.output
        asked = dl19.judged(srv)
        assert len(asked) == len(set(asked)) == 150  # each pair once
        out = json.loads((tmp_path / "agr" / "agreement.json").read_text())
        # a warm rerun: every reply from the cache, nothing sent, the same figures
        again = CliRunner().invoke(cli, [*args, "--llm", srv.spec("gpt-4o-mini")])
        assert again.exit_code == 0, again.output
        assert srv.requests_total == 150
        assert json.loads((tmp_path / "agr" / "agreement.json").read_text())["kappa"] == out["kappa"]
    graded = [(q, d) for q, d in asked if d not in no_grade]
    assert out["n"] == len(graded) < 150 and out["without_grade"]["no_grade"] == 150 - len(graded)
    expected = independent_figures(dl19, graded)
    for key in ("kappa", "kappa_binary", "kappa_quadratic"):
        assert out[key] == pytest.approx(expected[key])
    assert out["confusion"]["labels"] == [0, 1, 2, 3] and out["confusion"]["matrix"] == expected["confusion"]
    assert out["threshold"] == 2.0 and "TREC DL" in out["task"]["threshold_rule"]
    rows = jsonl(tmp_path / "agr" / "agreement_pairs.jsonl")
    assert sorted((r["query_id"], r["doc_id"]) for r in rows) == sorted(asked)
    assert out["judge"]["prompt_sha256"] and out["usage"]["total"]["calls"] == 150


def test_the_sample_follows_the_human_grades(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    dl19 = Dl19.read(data_dir)
    with_text = {d for hits in dl19.candidates.values() for d, _ in hits}
    counts: dict[int, int] = {}
    for q, docs in dl19.qrels.items():
        for d, g in docs.items():
            if d in with_text and q in dl19.candidates:
                counts[g] = counts.get(g, 0) + 1
    with TestServer(reply=dl19.assessor()) as srv:
        res = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "judge", "agreement", "--task", "trec-dl19",
                                       "--sample", "60", "--llm", srv.spec(), "--json", "--quiet"])
        assert res.exit_code == 0, res.output
        asked = dl19.judged(srv)
    by_grade: dict[int, int] = {}
    for q, d in asked:
        by_grade[dl19.qrels[q][d]] = by_grade.get(dl19.qrels[q][d], 0) + 1
    total = sum(counts.values())
    assert sorted(by_grade) == sorted(counts) and sum(by_grade.values()) == 60
    assert all(abs(by_grade[g] - 60 * counts[g] / total) < 1 for g in counts)
    assert json.loads(res.stdout)["sample"]["strata"] == {str(g): n for g, n in sorted(by_grade.items())}


def test_a_dry_run_prices_the_pairs_and_writes_nothing(data_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    res = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "judge", "agreement", "--task", "trec-dl19",
                                   "--sample", "40", "--llm", "openai:gpt-4o-mini", "--dry-run",
                                   "-o", str(tmp_path / "agr")])
    assert res.exit_code == 0, res.output
    assert "DRY RUN" in res.output and "openai:gpt-4o-mini" in res.output
    row = next(line for line in res.output.splitlines() if line.startswith("openai:gpt-4o-mini"))
    assert row.split()[1] == "40" and float(row.split()[-1]) > 0  # 40 calls, priced
    assert not (tmp_path / "agr").exists()


def test_batch_mode_sends_the_pairs_through_the_batch_api_with_the_same_figures(data_dir, tmp_path, monkeypatch):
    pytest.importorskip("openai", reason="needs openai: pip install 'harness-ir[openai]'")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")
    dl19 = Dl19.read(data_dir)
    args = ["--data-dir", str(data_dir), "judge", "agreement", "--task", "trec-dl19", "--sample", "24", "--json",
            "--quiet"]
    with TestServer(reply=dl19.assessor()) as srv:
        batch = CliRunner().invoke(cli, [*args, "--llm", srv.spec("gpt-4o-mini", "openai"), "--llm-batch",
                                         "--cache-dir", str(tmp_path / "batch")])
        assert batch.exit_code == 0, batch.output
        assert srv.requests_total == 0 and srv.batch_requests_total == 24
        direct = CliRunner().invoke(cli, [*args, "--llm", srv.spec("gpt-4o-mini", "openai"),
                                          "--cache-dir", str(tmp_path / "direct")])
        assert direct.exit_code == 0, direct.output
        assert srv.requests_total == 24
    one, two = json.loads(batch.stdout), json.loads(direct.stdout)
    assert one["n"] == two["n"] == 24 and one["kappa"] == two["kappa"] and one["confusion"] == two["confusion"]
