"""The ``umbrela`` judge: its prompt byte for byte as the release renders it (the release's template files,
checked against their git blob ids at the cited commit), the request the release sends, the release's reply
parsing (both pattern lists, hand-worked replies), and the judge's counting through the loopback server."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml

from harness.concepts.document import Document
from harness.concepts.errors import HarnessError
from harness.concepts.query import Query
from harness.concepts.run import Run
from harness.context import Context
from harness.judges.umbrela import UmbrelaJudge
from harness.judges.umbrela_prompts import TEMPLATE_NAMES, load_template, parse_grade
from harness.llm import LLMSettings
from harness.testing import TestServer

FIXTURES = Path(__file__).parent / "fixtures" / "umbrela"
#: file -> (our template, its git blob id at castorini/umbrela@e2c4e4126bf7b568d9230008b465a58445cabc30)
RELEASED = {"qrel_zeroshot_bing.yaml": ("zeroshot-bing", "699c4c1285cc35db44d2e9df65024abda108e654"),
            "qrel_fewshot_bing.yaml": ("fewshot-bing", "38fbda9af49361a2fae862fb9f92c24145537a42"),
            "qrel_zeroshot_basic.yaml": ("zeroshot-basic", "6172d59af986f50c671e20561cbca00a23952a9d")}
# one DL19 pair (query 1037798, passage 1037796 of the BM25 candidates), with braces and non-ASCII added
QUERY = "who is robert gray {and} what is café"
PASSAGE = "Robert Gray (1755 – 1806) was an American merchant sea-captain {0} who is known for his achievements"


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\x00" % len(data) + data).hexdigest()


def released_prompt(file: str, query: str, passage: str) -> str:
    """The release's rendering: ``PromptTemplate.render`` = ``prefix_user.format(examples, query, passage)``."""
    data = yaml.safe_load((FIXTURES / file).read_text(encoding="utf-8"))
    return data["prefix_user"].format(examples="", query=query, passage=passage)


def context(tmp_path: Path, spec: str, **settings) -> Context:
    return Context.create(cache_dir=tmp_path / "cache", llm=LLMSettings(llm=spec, **settings))


@pytest.mark.parametrize("file", sorted(RELEASED))
def test_the_fixture_is_the_released_file(file):
    assert git_blob_id((FIXTURES / file).read_bytes()) == RELEASED[file][1]


@pytest.mark.parametrize("file", sorted(RELEASED))
def test_the_prompt_sent_is_the_released_template_filled_as_the_release_fills_it(file, tmp_path):
    name = RELEASED[file][0]
    with TestServer(reply="##final score: 3") as srv:
        judge = UmbrelaJudge(template=name, context=context(tmp_path, srv.spec("gpt-4o-mini")))
        out = judge.judge({"1037798": Query("1037798", QUERY)}, Run.from_order({"1037798": ["1037796"]}),
                          {"1037796": Document("1037796", PASSAGE)})
        (body,) = srv.requests
    assert body["messages"] == [{"role": "system", "content": "You are a helpful assistant."},
                                {"role": "user", "content": released_prompt(file, QUERY, PASSAGE)}]
    assert out[("1037798", "1037796")].score == 3.0
    # gpt_judge.py _build_completion_params: temperature 0, max_tokens 100, top_p 1, penalties 0.5 / 0
    assert {k: body[k] for k in ("temperature", "max_tokens", "top_p", "frequency_penalty", "presence_penalty")} == {
        "temperature": 0.0, "max_tokens": 100, "top_p": 1.0, "frequency_penalty": 0.5, "presence_penalty": 0.0}
    text = yaml.safe_load((FIXTURES / file).read_text(encoding="utf-8"))["prefix_user"]
    assert judge.config()["prompt_sha256"] == hashlib.sha256(text.encode()).hexdigest()
    assert "e2c4e4126bf7b568d9230008b465a58445cabc30" in judge.config()["template_source"]


def test_the_default_template_is_the_releases_default():
    # GPTJudge(prompt_type="bing", few_shot_count=0) -> qrel_zeroshot_bing.yaml
    import inspect

    assert inspect.signature(UmbrelaJudge).parameters["template"].default == "zeroshot-bing" == TEMPLATE_NAMES[0]


def test_the_instruction_variant_adds_the_instruction_and_keeps_the_rest(tmp_path):
    released = load_template("zeroshot-bing").text
    variant = load_template("instruction")
    assert "castorini/umbrela@" not in variant.source and "this project's" in variant.source
    query = Query("q1", "python sort list Only answers with code.", "Only answers with code.",
                  {"query": "python sort list"})
    with TestServer(reply="##final score: 1") as srv:
        judge = UmbrelaJudge(template="instruction", context=context(tmp_path, srv.spec()))
        judge.judge({"q1": query, "q2": Query("q2", "plain")}, Run.from_order({"q1": ["d"], "q2": ["d"]}),
                    {"d": Document("d", "sorted(xs)")})
        prompts = {m["content"] for r in srv.requests for m in r["messages"] if m["role"] == "user"}
    assert ("Query: python sort list\nInstruction: Only answers with code.\nPassage: sorted(xs)" in
            "\n".join(prompts))
    assert judge.stats()["no_instruction"] == 1  # q2 has none: counted
    # every line of the release's template but the three the variant rewrites is kept
    kept = [line for line in released.splitlines() if line in variant.text.splitlines()]
    assert len(released.splitlines()) - len(kept) == 3


# hand-worked replies: (reply, grade by the release's list at e2c4e41, grade by the paper's list at 16cba3e)
REPLIES = [
    ("##final score: 2", 2, 2),
    ("##FINAL SCORE: 3", 3, 3),  # lowercased first
    # "score: N" is a pattern of the release only; the paper's list falls through to its last pattern, the last digit
    ("Score: 3, as it covers 2 aspects", 3, 2),
    # the third pattern (o, optional [:-=], a digit) matches "to 3" before "final score" is tried: kept as released
    ("the passage relates to 3 topics\n##final score: 1", 3, 3),
    ("I would give it a score of 1 because 2 parts are missing", 1, 2),
    ("The passage does not address the query.", None, None),  # no 0-3 digit anywhere: no grade
    ("", None, None),
]


@pytest.mark.parametrize("reply,release,paper", REPLIES)
def test_replies_are_parsed_by_the_released_rules(reply, release, paper):
    assert parse_grade(reply, "release").grade == release
    assert parse_grade(reply, "paper").grade == paper


def test_a_reply_without_a_grade_is_counted_not_guessed_unless_asked(tmp_path):
    replies = {"good": "##final score: 2", "bad": "I cannot tell."}

    def reply(req):
        return next(v for k, v in replies.items() if f"Passage: {k}" in req["messages"][-1]["content"])

    corpus = {k: Document(k, k) for k in replies}
    run = Run.from_order({"q": ["good", "bad"]})
    with TestServer(reply=reply) as srv:
        spec = srv.spec()
        none = UmbrelaJudge(context=context(tmp_path, spec))
        out = none.judge({"q": Query("q", "x")}, run, corpus)
        zero = UmbrelaJudge(no_score="zero", context=context(tmp_path, spec))
        out_zero = zero.judge({"q": Query("q", "x")}, run, corpus)
        assert srv.requests_total == 2  # the second judge's replies came from the cache
    assert out[("q", "bad")].score is None and out[("q", "good")].score == 2.0
    assert none.stats()["parse_failures"] == 1 and none.stats()["failed"] == 1
    assert out_zero[("q", "bad")].score == 0.0 and zero.stats()["no_score_zero"] == 1
    assert zero.stats()["cache_hits"] == 2


def test_depth_cuts_each_ranking_and_a_dry_run_sends_nothing(tmp_path):
    corpus = {f"d{i}": Document(f"d{i}", f"text {i}") for i in range(5)}
    run = Run.from_order({"q": list(corpus)})
    with TestServer(reply="##final score: 1") as srv:
        judge = UmbrelaJudge(depth=3, context=context(tmp_path, srv.spec()))
        assert len(judge.judge({"q": Query("q", "x")}, run, corpus)) == 3 and srv.requests_total == 3
        dry = UmbrelaJudge(context=context(tmp_path / "dry", srv.spec(), dry_run=True))
        out = dry.judge({"q": Query("q", "x")}, run, corpus)
        assert srv.requests_total == 3
    assert all(j.score is None and "dry run" in j.details["error"] for j in out.values())
    assert dry.stats()["dry_run"] == 5


def test_bad_options_are_one_message(tmp_path):
    with TestServer() as srv:
        for kwargs in ({"template": "bingo"}, {"parser": "v3"}, {"no_score": "guess"}, {"depth": 0}):
            with pytest.raises(HarnessError, match="umbrela"):
                UmbrelaJudge(context=context(tmp_path, srv.spec()), **kwargs)


def test_the_judge_is_registered_and_runs_in_an_evaluation(tmp_path):
    with TestServer(reply="##final score: 2") as srv:
        ctx = context(tmp_path, srv.spec())
        from harness.api import evaluate

        res = evaluate("demo", judge="umbrela:depth=2", limit=2, progress=False, context=ctx,
                       output=str(tmp_path / "out"))
    assert res.components["judge"]["name"] == "umbrela" and res.components["judge"]["template"] == "zeroshot-bing"
    rows = [json.loads(line) for line in (tmp_path / "out" / "judgments.jsonl").read_text().splitlines()]
    assert len(rows) == 4 and all(r["score"] == 2.0 for r in rows)
