"""Exact message construction, checked against the strings in the RankGPT notes (§2.1, §2.2, §2.4),
BIRCO's "+O" layout and InfoSearch's Table 16, and the RG prompt (§2.7)."""

from __future__ import annotations

import pytest

import harness_rankgpt.prompts as P
from harness_rankgpt.prompts import build_messages, passage_text, rg_prompt, template_hash

SYS = "You are RankGPT, an intelligent assistant that can rank passages based on their relevancy to the query."
RANK_CODE = ("Rank the {num} passages above based on their relevance to the search query. The passages should be "
             "listed in descending order using identifiers. The most relevant passages should be listed first. The "
             "output format should be [] > [], e.g., [1] > [2]. Only response the ranking results, do not say any "
             "word or explain.")


def test_code_variant_is_the_official_code():
    msgs = build_messages("what is a lobster roll", ["A lobster roll is a sandwich.", "Maine is a state."])
    assert len(msgs) == 2 * 2 + 4
    assert msgs == [
        {"role": "system", "content": SYS},
        {"role": "user", "content": "I will provide you with 2 passages, each indicated by number identifier []. "
                                    "\nRank the passages based on their relevance to query: what is a lobster roll."},
        {"role": "assistant", "content": "Okay, please provide the passages."},
        {"role": "user", "content": "[1] A lobster roll is a sandwich."},
        {"role": "assistant", "content": "Received passage [1]."},
        {"role": "user", "content": "[2] Maine is a state."},
        {"role": "assistant", "content": "Received passage [2]."},
        {"role": "user", "content": "Search Query: what is a lobster roll. \n" + RANK_CODE.format(num=2)},
    ]


def test_paper_variant_is_appendix_a5():
    msgs = build_messages("q", ["p1", "p2", "p3"], "paper")
    assert len(msgs) == 2 * 3 + 4
    assert msgs[0]["content"] == SYS
    assert msgs[1]["content"] == ("I will provide you with 3 passages, each indicated by number identifier []. "
                                  "Rank them based on their relevance to query: q.")
    assert msgs[2]["content"] == "Okay, please provide the passages."
    assert msgs[3:7] == [{"role": "user", "content": "[1] p1"},
                         {"role": "assistant", "content": "Received passage [1]"},
                         {"role": "user", "content": "[2] p2"},
                         {"role": "assistant", "content": "Received passage [2]"}]
    assert msgs[-1]["content"] == (
        "Search Query: q.\nRank the 3 passages above based on their relevance to the search query. The passages "
        "should be listed in descending order using identifiers, and the most relevant passages should be listed "
        "first, and the output format should be [] > [], e.g., [1] > [2]. Only response the ranking results, do "
        "not say any word or explain.")


def test_single_variant_is_infosearch_table16():
    msgs = build_messages("q", ["p1", "p2"], "single")
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert msgs[0]["content"] == ("You are RankGPT, an intelligent assistant that ranks passages based on their "
                                  "relevance to a query.")
    assert msgs[1]["content"] == (
        "I will provide you with 2 passages, each indicated by a number identifier [ ]. Rank the passages based on "
        "their relevance to the query: q.\n[1] p1\n[2] p2\nSearch Query: q.\nRank the 2 passages above based on "
        "their relevance to the search query. The passages should be listed in descending order using identifiers. "
        "The most relevant passages should be listed first. The output format should be [ ] >[ ], e.g., [1] >[2]. "
        "Only respond with the ranking results, do not say any word or explain.")


def test_objective_goes_where_birco_puts_it_and_ids_can_start_at_zero():
    msgs = build_messages("q", ["a", "b"], objective="Find the counter-argument.", zero_based=True)
    assert msgs[0]["content"] == "Task Description: Find the counter-argument. " + SYS
    assert msgs[3]["content"] == "[0] a" and msgs[4]["content"] == "Received passage [0]."
    assert msgs[5]["content"] == "[1] b" and msgs[6]["content"] == "Received passage [1]."
    assert msgs[-1]["content"] == ("Search Query: q.\n\nTask Description: Find the counter-argument.\n\n"
                                   + RANK_CODE.format(num=2))


def test_passage_text_word_cap_title_and_whitespace():
    text = " ".join(f"w{i}" for i in range(400))
    assert passage_text(text).split() == [f"w{i}" for i in range(300)]
    assert passage_text(text, max_words=None) == text
    assert passage_text("a\n\n b\tc") == "a b c"
    assert passage_text("body text", "My Title") == "Title: My Title Content: body text"
    assert passage_text("body text", "") == "body text"


def test_template_hashes_are_stable_and_distinct():
    hashes = {name: template_hash(t) for name, t in P.VARIANTS.items()}
    assert len(set(hashes.values())) == 3 and all(len(h) == 64 for h in hashes.values())
    assert template_hash(P.CODE) == template_hash(P.get_template("code"))
    with pytest.raises(ValueError, match="variant"):
        P.get_template("nope")


def test_relevance_generation_prompt_is_helm_4_shot():
    prompt = rg_prompt("what is x", "x is y")
    assert prompt.startswith("Given a passage and a query, predict whether the passage includes an answer to the "
                             "query by producing either 'Yes' or 'No'.\n\nPassage: Its 25 drops per ml, you guys")
    assert prompt.endswith("\n\nPassage: x is y\nQuery: what is x\nDoes the passage answer the query?\nAnswer:")
    blocks = prompt.split("\n\n")
    assert len(blocks) == 6
    assert [b.rsplit("Answer: ", 1)[1] for b in blocks[1:5]] == ["Yes", "No", "No", "Yes"]
    assert blocks[3].startswith("Passage: You can transfer money") and "Query: can you open a wells fargo" in blocks[3]
    assert rg_prompt("q", "p", shots=0) == ("Given a passage and a query, predict whether the passage includes an "
                                           "answer to the query by producing either 'Yes' or 'No'.\n\nPassage: p\n"
                                           "Query: q\nDoes the passage answer the query?\nAnswer:")
