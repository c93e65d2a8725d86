"""The four LLM protocols end to end on every task against the loopback server (scripted replies):
rankings stay permutations of the pools, parse failures are counted, and the calls of a real run equal
the dry-run estimate."""

from __future__ import annotations

import hashlib
import itertools
import re

import pytest
from harness import evaluate
from harness.testing import TestServer

from harness_birco import TASKS
from harness_birco.data import load_birco
from harness_birco.objectives import OBJECTIVES
from harness_birco.prompts import (
    INTRO,
    criteria_prompt,
    parse_criteria,
    parse_score,
    score_prompt,
    split_requirements,
    subtask_prompt,
)
from harness_birco.rank import birco_windows, make_birco_rank

PROTOCOLS = ("birco-score", "birco-reason", "birco-subtask", "birco-rank")
_models = itertools.count()

CRITERIA = ("Decision Criteria:\n1. The passage matches the topic.\n2. It takes a stance.\n3. Details agree.\n"
            "4. Names agree.\n5. It is specific.\nStep-by-step reasoning:\n…\nSCORE: 5/10")


def _garbage(text: str) -> bool:
    """A deterministic ~1/7 of the prompts get an unparseable reply."""
    return int(hashlib.sha256(text.encode()).hexdigest(), 16) % 7 == 0


class Oracle:
    """Scores a passage 10 when it is relevant (grade >= 1) to some limited query, else 1; garbles 1/7;
    answers criteria calls with five requirements and ranking windows with the reversed window."""

    def __init__(self, ds):
        self.rel = {ds.corpus[d].text for p in ds.qrels["default"].values() for d, g in p.items() if g >= 1}
        self.garbled = 0

    def __call__(self, req):
        msgs = req["messages"]
        last = msgs[-1]["content"]
        if "Rank the" in last:  # a RankGPT window
            n = int(re.search(r"Rank the (\d+) passages", last).group(1))
            if _garbage(last):
                self.garbled += 1
                return "I am not able to rank these."
            return " > ".join(f"[{i}]" for i in reversed(range(n)))
        if "Decision Criteria:\n…" in last:
            return CRITERIA
        if _garbage(last):
            self.garbled += 1
            return "The passage is somewhat related."
        m = re.search(r"Passage: (.*)\Z", last, flags=re.S) or re.search(
            r"Here is the passage: (.*?)\n\nHere is the requirement", last, flags=re.S)
        passage = m.group(1) if m else ""
        if "\n\nDecision Criteria:\n" in passage:  # Reason: the criteria follow the passage
            passage = passage.split("\n\nDecision Criteria:\n")[0]
        return f"Step by step... QUOTES: []\nSCORE: {10 if passage in self.rel else 1}"


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_protocol_end_to_end(birco_dir, task, protocol):
    ds = load_birco(task, "dev" if task == "doris-mae" else "test").limit(1)
    oracle = Oracle(ds)
    model = f"m{next(_models)}"
    with TestServer(reply=oracle) as srv:
        kw = dict(rerankers=[protocol], llm=srv.spec(model), limit=1, progress=False)
        dry = evaluate(f"birco:{task}", dry_run=True, **kw)
        assert srv.requests_total == 0 and dry.usage["dry_run"] is True
        res = evaluate(f"birco:{task}", **kw)
        real = res.usage["total"]
        assert real["calls"] == srv.requests_total
        assert real["calls"] + real["cache_hits"] == dry.usage["total"]["calls"] + dry.usage["total"]["cache_hits"]
        stats = res.components["rerankers"][0]["stats"]
        cfg = res.components["rerankers"][0]
        if protocol == "birco-rank":
            assert oracle.garbled <= stats["unparseable"] <= oracle.garbled + stats["cache_hits"]
            assert stats["windows"] == len(birco_windows(len(next(iter(ds.qrels["default"].values()))), 10, 5))
            assert cfg["zero_based"] and cfg["escape_brackets"] and cfg["window"] == 10 and cfg["step"] == 5
        else:
            # a repeated prompt (ArguAna pools hold passages with identical text) is answered by the
            # cache: the server saw it once, the protocol counts each failed pair
            # an item whose prompt repeats another's (identical passage texts) is answered by the same request
            repeats = stats["cache_hits"] + stats["deduplicated"]
            assert oracle.garbled <= stats["parse_failures"] <= oracle.garbled + repeats
            assert stats["calls"] == real["calls"]
            assert len(cfg["prompt_template_sha256"]) == 64 and cfg["objective"] is True
            pool = next(iter(ds.qrels["default"].values()))
            top = res.runs["default"].doc_ids(next(iter(pool and ds.queries["default"])))[0]
            best = max(pool.values())
            if protocol != "birco-subtask" or not oracle.garbled:
                # the oracle's 10 puts a relevant passage first unless its reply was garbled
                assert pool[top] >= 1 or best < 1 or stats["parse_failures"]
        # the metrics check that the ranking is a permutation of the pool
        assert 0 <= res.metrics["birco-ndcg@10"] <= 1


def test_subtask_dry_run_is_an_upper_bound_with_fewer_requirements(birco_dir):
    def reply(req):
        last = req["messages"][-1]["content"]
        return "Decision Criteria:\n- one\n- two\nStep-by-step reasoning: ..." if "Decision Criteria:\n…" in last \
            else "SCORE: 3"

    with TestServer(reply=reply) as srv:
        kw = dict(rerankers=["birco-subtask:max_requirements=5"], llm=srv.spec("sub-ub"), limit=1,
                  progress=False)
        dry = evaluate("birco:relic", dry_run=True, **kw)
        res = evaluate("birco:relic", **kw)
        n = len(res.runs["default"].doc_ids(next(iter(res.runs["default"]))))
        assert res.usage["total"]["calls"] == 1 + 2 * n
        assert dry.usage["total"]["calls"] == 1 + 5 * n
        assert res.components["rerankers"][0]["stats"]["requirements"] == 2


def test_ties_broken_by_incoming_e5_order(birco_dir):
    with TestServer(reply="SCORE: 4") as srv:
        res = evaluate("birco:arguana", rerankers=["birco-score"], llm=srv.spec("ties"), limit=2, progress=False)
        base = evaluate("birco:arguana", limit=2, progress=False)
        for q in base.runs["default"]:
            assert res.runs["default"].doc_ids(q) == base.runs["default"].doc_ids(q)


def test_objective_in_prompts_only_with_o(birco_dir):
    seen: list[dict] = []

    def reply(req):
        seen.append(req)
        last = req["messages"][-1]["content"]
        return "[0] > [1]" if "Rank the" in last else "SCORE: 1"

    obj = OBJECTIVES["relic"]
    with TestServer(reply=reply) as srv:
        for spec, has in (("birco-score:objective=true", True), ("birco-score:objective=false", False),
                          ("birco-rank:objective=true", True), ("birco-rank:objective=false", False)):
            seen.clear()
            model = "o-" + spec.replace(":", "-").replace("=", "-")
            evaluate("birco:relic", rerankers=[spec], llm=srv.spec(model), limit=1, progress=False)
            blob = "\n".join(m["content"] for r in seen for m in r["messages"])
            escaped = obj.replace("[", "(").replace("]", ")")
            assert (obj in blob or escaped in blob) is has, spec
            if spec.startswith("birco-rank"):
                assert "[masked sentence(s)]" not in blob and "(masked sentence(s))" in blob
                first = seen[0]["messages"]
                assert first[3]["content"].startswith("[0] ") and first[-3]["content"].startswith("[9] ")
                if has:
                    assert first[0]["content"].startswith(f"Task Description: {escaped} You are RankGPT")
                    assert f"\n\nTask Description: {escaped}\n\nRank the 10 passages" in first[-1]["content"]
                assert first[-1]["content"].startswith("Search Query: ")
                assert "{query}" not in first[-1]["content"]  # the WTB template bug is not copied


def test_prompts_and_parsers():
    p = score_prompt("QQ", "PP", "OBJ")
    assert p.startswith(INTRO + " OBJ\n\nNow, you are presented with a query and a single passage from its "
                                "candidate pool. Given the above IR task description, think step by step")
    assert p.endswith("only output the score in this format. SCORE:\n\nQuery: QQ\n\nPassage: PP")
    assert "OBJ" not in score_prompt("QQ", "PP", None) and "Given the above" not in score_prompt("QQ", "PP", None)
    c = criteria_prompt("QQ", "PP", "OBJ")
    assert "determine the appropriate criteria" in c and c.endswith("tailored to the specific query.")
    s = subtask_prompt("QQ", "PP", "RR")
    assert s.startswith("Here is the passage: PP\n\nHere is the requirement extracted from the query: RR\n\n"
                        "Here is the query: QQ\n\nYou are a helpful assistant.")
    assert parse_score("blah SCORE: 7/10") == 7 and parse_score("Score: 6.5\n") == 6.5
    assert parse_score("I give it a score of 3 because") == 3
    assert parse_score("SCORE: **8**") == 8 and parse_score("SCORE: ?/10") is None
    assert parse_score("no number here") is None and parse_score("") is None
    assert parse_score("SCORE: x\nScore: 4") == 4  # falls through to the next key
    crit = parse_criteria(CRITERIA)
    assert split_requirements(crit) == ["The passage matches the topic.", "It takes a stance.", "Details agree.",
                                        "Names agree.", "It is specific."]
    assert split_requirements("- a\n- a\n- b") == ["a", "b"]


def test_birco_windows():
    assert len(birco_windows(50)) == 9 and len(birco_windows(51)) == 10 and len(birco_windows(110)) == 21
    assert birco_windows(51)[0] == (41, 51) and birco_windows(51)[-1] == (0, 10)
    assert birco_windows(7) == [(0, 7)]
    cover = set()
    for s, e in birco_windows(153):
        assert e - s == 10
        cover |= set(range(s, e))
    assert cover == set(range(153))


def test_rank_config_is_birco(tmp_path):
    with TestServer(reply="[0]") as srv:
        r = make_birco_rank(llm=srv.spec("cfg"))
        cfg = r.config()
        assert cfg["protocol"] == "Rank+O" and cfg["objective_from"] == "instruction" and cfg["query"] == "raw"
        assert cfg["parser"] == "brackets" and cfg["prompt"] == "code"
        assert make_birco_rank(llm=srv.spec("cfg"), objective="false").config()["protocol"] == "Rank"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_perfect_replies_give_perfect_rankings(birco_dir, protocol):
    """A server that knows the qrels (10 for relevant passages, the sorted permutation for windows) makes
    every protocol put the relevant passage first: nDCG@10 = 1 on ArguAna's first queries."""
    from harness_rankgpt.prompts import escape_brackets, passage_text

    ds = load_birco("arguana").limit(3)
    rel = {ds.corpus[d].text for p in ds.qrels["default"].values() for d, g in p.items() if g >= 1}
    rel_shown = {escape_brackets(passage_text(t, "", 300)) for t in rel}

    def reply(req):
        msgs = req["messages"]
        last = msgs[-1]["content"]
        if "Rank the" in last:
            shown = [m["content"] for m in msgs if m["role"] == "user" and re.match(r"\[\d+\] ", m["content"])]
            good = [i for i, t in enumerate(shown) if t.split("] ", 1)[1] in rel_shown]
            return " > ".join(f"[{i}]" for i in good + [i for i in range(len(shown)) if i not in good])
        if "Decision Criteria:\n…" in last:
            return CRITERIA
        passage = (re.search(r"Passage: (.*)\Z", last, flags=re.S) or re.search(
            r"Here is the passage: (.*?)\n\nHere is the requirement", last, flags=re.S)).group(1)
        passage = passage.split("\n\nDecision Criteria:\n")[0]
        return f"SCORE: {10 if passage in rel else 2}"

    with TestServer(reply=reply) as srv:
        res = evaluate("birco:arguana", rerankers=[protocol], llm=srv.spec(f"perfect-{protocol}"), limit=3,
                       progress=False)
        assert res.metrics["birco-ndcg@10"] == pytest.approx(1.0)
