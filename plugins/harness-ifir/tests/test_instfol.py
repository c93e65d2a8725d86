"""INSTFOL end to end on a hand-made case: the instfol judge against the loopback server returning fixed
score-token distributions, then the instfol metric; hand-computed values with and without logprobs."""

from __future__ import annotations

import json
import math

import pytest
from harness import Dataset, Document, MetricInput, Qrels, Query, Run, task_queries
from harness.testing import ScriptedReply, TestServer

import harness_ifir
from harness_ifir.judge import InstfolJudge
from harness_ifir.metric import Instfol, instfol_ratio, paired_scores

# document marker -> (generated score digit, {digit: probability} at the score token); None: unparseable reply
DISTRIBUTIONS = {
    "DOC-A": ("3", {"3": 0.60, "2": 0.30, "1": 0.05, "0": 0.03, " ": 0.02}),  # G-Eval 2.50 (the notes' example)
    "DOC-B": ("2", {"2": 1.0}),  # 2.0
    "DOC-C": ("1", {"1": 0.5, "0": 0.5}),  # 0.5
    "DOC-D": ("1", {"1": 0.995, "3": 0.005}),  # 1.0 (the 0.005 alternative is below 0.01: dropped)
    "DOC-E": None,  # "I cannot judge this." -> failed judgment
    "DOC-F": ("2", {"2": 0.5, "1": 0.5}),  # 1.5
}


def reply_for(request):
    body = json.dumps(request)
    marker = next(m for m in DISTRIBUTIONS if m in body)
    spec = DISTRIBUTIONS[marker]
    if spec is None:
        return "I cannot judge this."
    digit, dist = spec
    parts = ['{"', "score", '":', " ", digit, ', "', "reason", '": "', f"judged {marker}", '"}']
    lps = []
    for tok in parts:
        if tok == digit:
            lps.append((tok, math.log(dist[digit]), [(t, math.log(p)) for t, p in dist.items()]))
        else:
            lps.append((tok, -0.001))
    return ScriptedReply(text="".join(parts), logprobs=lps)


def small_case():
    corpus = {m.lower(): Document(m.lower(), f"Passage {m} about index funds.") for m in DISTRIBUTIONS}
    qs = {}
    for qid, level, instr in (("qa", 3, "I am 40 and want low fees."), ("qb", 2, "I am a student.")):
        meta = {"level": level, "judge_instruction": f"how to invest {instr}", "ifir_subset": "fiqa"}
        qs[qid] = (Query(qid, "how to invest", "", dict(meta)), Query(qid, "how to invest", instr, dict(meta)))
    ds = Dataset("ifir:hand", corpus, {"query": {q: a for q, (a, _) in qs.items()},
                                       "instructed": {q: b for q, (_, b) in qs.items()}},
                 {"query": Qrels({"qa": {"doc-a": 1}, "qb": {"doc-b": 1}}), "instructed": Qrels({})})
    runs = {"query": Run.from_order({"qa": ["doc-d", "doc-c", "doc-f", "doc-e"], "qb": ["doc-a", "doc-b"]}),
            "instructed": Run.from_order({"qa": ["doc-a", "doc-b", "doc-d", "doc-f"], "qb": ["doc-b", "doc-d"]})}
    return ds, runs


def judge_and_score(llm, **metric_args):
    ds, runs = small_case()
    judge = InstfolJudge(llm=llm, depth=4)
    judgments = {m: judge.judge(task_queries(ds, m, "{text} {instruction}"), runs[m], ds.corpus) for m in ds.modes}
    res = Instfol(cutoff=4, **metric_args).compute(MetricInput(runs, ds.qrels, ds, judgments))
    return res, judgments, judge


def test_instfol_with_logprobs_equals_the_hand_computed_value():
    with TestServer(reply=reply_for) as srv:
        res, judgments, judge = judge_and_score(srv.spec("judge-model"))
        # 12 (query, doc) positions, but only 9 distinct (instruction, document) requests: the two modes share
        # the instruction, so doc-d and doc-f of qa and doc-b of qb are judged once
        assert srv.requests_total == srv.unique_requests == 9
        body = srv.requests[0]
        assert body["temperature"] == 0 and body["top_p"] == 0.7 and body["top_logprobs"] == 10 and body["logprobs"]
    j = judgments["instructed"][("qa", "doc-a")]
    assert j.score == pytest.approx(2.45 / 0.98) and j.details["probs"]["3"] == 0.6 and "fallback" not in j.details
    assert judgments["query"][("qa", "doc-e")].score is None
    assert judge.stats()["parse_failures"] == 1 and judge.stats()["failed"] == 1
    # qa: position 4 failed in the query list (doc-e), so it is dropped from both lists:
    #   S_q = [1.0, 0.5, 1.5] (mean 1), S_inst = [2.5, 2.0, 1.0] (mean 11/6): (11/6 - 1) / (3 - 1) = 5/12
    # qb: S_q = [2.5, 2.0] (mean 2.25), S_inst = [2.0, 1.0] (mean 1.5): (1.5 - 2.25) / 0.75 = -1
    a = res.aggregate
    assert a["instfol@4_L3"] == pytest.approx(100 * 5 / 12)  # 41.67, the notes' worked example
    assert a["instfol@4_L2"] == pytest.approx(-100.0)
    assert a["instfol@4"] == pytest.approx((100 * 5 / 12 - 100) / 2)  # mean over levels: -29.17
    assert set(a) == {"instfol@4", "instfol@4_L2", "instfol@4_L3"}  # counts are details, not metrics
    assert res.details == {"instfol@4_queries": 2, "instfol@4_queries_skipped": 0, "instfol@4_positions_dropped": 1}
    assert res.per_query["qa"]["instfol@4"] == pytest.approx(41.6667, abs=1e-4)


def test_instfol_without_logprobs_uses_the_parsed_integers():
    with TestServer(reply=reply_for) as srv:
        res, judgments, judge = judge_and_score(srv.spec("claude-judge", "anthropic"))
        assert srv.requests_total == 9
        # the Anthropic Messages API: system prompt apart, no logprobs asked
        assert all("system" in r and "logprobs" not in r and "top_logprobs" not in r for r in srv.requests)
    j = judgments["instructed"][("qa", "doc-a")]
    assert j.score == 3.0 and j.details["fallback"] == "no-logprobs"
    assert judge.stats()["fallback"] == 11  # every parsed judgment (12 positions, one failed)
    # qa: S_q = [1, 1, 2] (mean 4/3), S_inst = [3, 2, 1] (mean 2): (2 - 4/3) / (3 - 4/3) = 0.4
    # qb: S_q = [3, 2] (mean 2.5), S_inst = [2, 1] (mean 1.5): (1.5 - 2.5) / 0.5 = -2
    a = res.aggregate
    assert a["instfol@4_L3"] == pytest.approx(40.0) and a["instfol@4_L2"] == pytest.approx(-200.0)
    assert a["instfol@4"] == pytest.approx(-80.0)


def test_pooled_variant():
    with TestServer(reply=reply_for) as srv:
        res, _, _ = judge_and_score(srv.spec("judge-model"), pooled=True)
    # one query per level here, so pooling changes nothing but the key (which carries the cutoff given)
    assert res.aggregate["instfol_pooled@4_L3"] == pytest.approx(100 * 5 / 12)
    assert res.aggregate["instfol_pooled@4"] == pytest.approx((100 * 5 / 12 - 100) / 2)


def test_ratio_edge_cases():
    assert instfol_ratio(2.0, 2.0) == 0.0
    assert instfol_ratio(2.5, 3.0) == pytest.approx(-0.5)  # mean S_q = max: the plain difference
    assert instfol_ratio(1.5, 2.0) == pytest.approx(-0.5)
    assert instfol_ratio(11 / 6, 1.0) == pytest.approx(5 / 12)
    assert paired_scores([1.0, None, 2.0], [3.0, 1.0]) == ([1.0], [3.0], 2)


def test_judge_config_records_templates_and_defaults(tmp_path):
    with TestServer(reply=reply_for) as srv:
        judge = InstfolJudge(llm=srv.spec("judge-model"))
        cfg = judge.config()
        assert cfg["depth"] == 20 and cfg["temperature"] == 0.0 and cfg["top_p"] == 0.7 and cfg["top_logprobs"] == 10
        assert cfg["prompt_version"] == "v1" and len(cfg["prompt_sha256"]) == 16
        assert all(len(h) == 64 for h in cfg["prompt_sha256"].values())
        # a user-replaced template: one file in a folder overrides the shipped one of that name
        (tmp_path / "fiqa_l3.txt").write_text("[system]\nYou judge.\n[user]\nI: {instruction}\nD: {corpus}\nJSON:\n")
        custom = InstfolJudge(llm=srv.spec("judge-model"), prompts=str(tmp_path)).config()
        assert custom["prompt_version"] == "custom"
        assert custom["prompt_sha256"]["fiqa_l3"] != cfg["prompt_sha256"]["fiqa_l3"]
        assert custom["prompt_sha256"]["aila_l3"] == cfg["prompt_sha256"]["aila_l3"]


def test_judge_works_on_any_dataset_with_instructions():
    """InfoSearch-like queries (no IFIR meta): the raw query + Query.instruction, the generic template."""
    from harness_ifir.judge import judge_instruction

    with TestServer(reply=reply_for) as srv:
        judge = InstfolJudge(llm=srv.spec("judge-model"), depth=1)
        q = Query("x", "formed text", "only peer-reviewed sources", {"query": "vitamin d"})
        assert judge_instruction(q) == "vitamin d only peer-reviewed sources"
        out = judge.judge({"x": q}, Run.from_order({"x": ["d"]}), {"d": Document("d", "DOC-B text")})
        assert out[("x", "d")].score == 2.0 and out[("x", "d")].details["template"] == "generic"
        content = srv.requests[0]["messages"][-1]["content"]
        assert "vitamin d only peer-reviewed sources" in content and "DOC-B text" in content


def test_import_loads_no_sdk_or_torch():
    import subprocess
    import sys

    code = ("import sys, harness_ifir; from harness import PluginHost; "
            "h = PluginHost(load_entry_points=False); h.register_plugin(harness_ifir, 'ifir'); "
            "[h.registry.lookup('task', f'ifir:{s}') for s in harness_ifir.SUBSETS]; "
            "bad = [m for m in ('openai', 'anthropic', 'torch') if m in sys.modules]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(harness_ifir.__file__).rsplit("/", 2)[0])


def test_pooled_differs_from_the_mean_of_ratios():
    from harness import Judgment, Judgments

    corpus = {d: Document(d, d) for d in ("a", "b", "c", "d", "e", "f")}
    meta = {"level": 1}
    qs = {m: {q: Query(q, "t", "", dict(meta)) for q in ("q1", "q2")} for m in ("query", "instructed")}
    ds = Dataset("hand", corpus, qs, {"query": Qrels({}), "instructed": Qrels({})})
    runs = {"query": Run.from_order({"q1": ["a", "b"], "q2": ["c"]}),
            "instructed": Run.from_order({"q1": ["d", "e"], "q2": ["f"]})}
    scores = {"query": {("q1", "a"): 1, ("q1", "b"): 1, ("q2", "c"): 2},
              "instructed": {("q1", "d"): 2, ("q1", "e"): 2, ("q2", "f"): 3}}
    judgments = {}
    for mode, sc in scores.items():
        judgments[mode] = Judgments()
        for (q, d), s in sc.items():
            judgments[mode].add(Judgment(q, d, float(s)))
    inp = MetricInput(runs, ds.qrels, ds, judgments)
    # per query: q1 (2-1)/(3-1) = 0.5, q2 (3-2)/(3-2) = 1 -> mean 75; pooled: S_q mean 4/3, S_inst 7/3 -> 1/(5/3) = 60
    assert Instfol().compute(inp).aggregate["instfol_L1"] == pytest.approx(75.0)
    assert Instfol(pooled=True).compute(inp).aggregate["instfol_pooled_L1"] == pytest.approx(60.0)


def test_no_usable_judgment_gives_no_value_and_says_why():
    """A judge whose every reply is unparseable (a small base model): INSTFOL is nan, with a note that
    counts the pairs and the reasons (printed under the metrics table: tests/test_results_contract.py)."""
    with TestServer(reply="I cannot judge this.") as srv:
        res, judgments, judge = judge_and_score(srv.spec("tiny-model"))
    assert math.isnan(res.aggregate["instfol@4"])
    note = res.notes["instfol@4"]
    assert note == ("no query has a usable judgment in both modes (2 queries; 12 pairs judged, 0 usable; "
                    "failed: 12 unparseable reply (no-json))")
    assert judge.stats()["parse_failures"] == judge.stats()["failed"] == 12
