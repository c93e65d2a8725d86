"""Hub cards and downloads are untrusted: a dataset card's YAML is read with bounded work, and every
download has a read timeout. Each case runs ``python -m harness.cli`` in a subprocess against the Hub
imitation (:class:`harness.testing.HubServer`), as a user behind that Hub runs it.

- Cards (``--dataset mteb:``): anchors and aliases (billion laughs), deep nesting, huge values, too many
  values, foreign tags and numbers Python cannot convert are one message each, exit 2, before any data
  file is fetched; a pattern that would make a backtracking regex run for hours is matched in linear time.
- Downloads (``harness data download``): a Hub that sends the headers and then nothing (for 100 s) ends
  the command within the timeout set in the environment (``HF_HUB_DOWNLOAD_TIMEOUT`` and
  ``HF_HUB_ETAG_TIMEOUT`` for Hub files, ``HARNESS_DOWNLOAD_TIMEOUT`` for plain URLs), one message naming
  the file and the timeout; bad timeout settings are one message.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from harness.data.hub_configs import (
    MAX_DEPTH,
    MAX_MATCH_STEPS,
    MAX_NODES,
    MAX_SCALAR,
    parse_configs,
    read_card_configs,
)
from harness.testing import HubServer

COMMIT = "2" * 40
REPO = "org/hostile"
DL19_PIN = "3506f981b25db886390e23025be96052cc0fae57"
DL19_HUB_PATH = "retrieve_results/BM25/retrieve_results_dl19_top100.json"
CARD = """---
configs:
- config_name: corpus
  data_files:
  - split: corpus
    path: corpus.jsonl
- config_name: queries
  data_files:
  - split: queries
    path: queries.jsonl
- config_name: default
  data_files:
  - split: test
    path: {qrels}
---
# a small MTEB-layout dataset
"""
DATA = {
    "corpus.jsonl": '{"_id": "d1", "title": "", "text": "cats purr"}\n{"_id": "d2", "text": "dogs bark"}\n',
    "queries.jsonl": '{"_id": "q1", "text": "purring cats"}\n{"_id": "q2", "text": "barking dogs"}\n',
    "qrels/test.jsonl": '{"query-id": "q1", "corpus-id": "d1", "score": 1}\n'
                        '{"query-id": "q2", "corpus-id": "d2", "score": 1}\n',
}


@pytest.fixture
def hub():
    with HubServer() as server:
        yield server


def one_error(res) -> str:
    """The command's single ``Error:`` line (exit 2, no traceback)."""
    assert res.returncode == 2, (res.returncode, res.stderr[-3000:])
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    errors = [line for line in res.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, res.stderr[-3000:]
    return errors[0]


# -- cards ------------------------------------------------------------------------------------------------
def laughs(levels: int = 9) -> str:
    """The billion laughs: nine lists of nine aliases of the level below (9**9 strings once expanded)."""
    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def card(front: str) -> str:
    return f"---\n{front}---\n# a hostile card\n"


HOSTILE_CARDS = {
    # expanded by anything that walks or prints the value: str(entry) in a message did, for minutes
    "billion laughs in configs": (card(laughs() + "configs: *l8\n"), "alias"),
    "billion laughs in data_files": (card(laughs() + "configs:\n- config_name: corpus\n  data_files: *l8\n"),
                                     "alias"),
    "billion laughs beside configs": (card(laughs() + CARD.split("---")[1].lstrip("\n")), "anchor (&l0)"),
    "one anchor": (CARD.format(qrels="&q qrels/test.jsonl"), "anchor (&q)"),
    "merge key": (card("base: {split: test}\nconfigs:\n- config_name: default\n  data_files:\n"
                       "  - <<: {split: test}\n    path: qrels/test.jsonl\n"), "merge key"),
    "deep nesting": (card("configs: " + "[" * 100_000 + "]" * 100_000 + "\n"), f"more than {MAX_DEPTH} levels"),
    "deep block nesting": (card("configs:\n" + "".join("  " * i + "- \n" for i in range(200))),
                           f"more than {MAX_DEPTH} levels"),
    "huge string": (card(f"configs:\n- config_name: {'x' * 200_000}\n"), f"at most {MAX_SCALAR:,}"),
    "long config name": (card(f"configs:\n- config_name: {'x' * 5000}\n  data_files: corpus.jsonl\n"),
                         "1 to 256 characters"),
    "too many values": (card("x: [" + ",".join(["1"] * (MAX_NODES + 1)) + "]\n"), f"more than {MAX_NODES:,} values"),
    "python tag": (card("configs: !!python/object/apply:os.system ['touch pwned']\n"), "is not allowed"),
    "set tag": (card("configs: !!set {a, b}\n"), "is not allowed"),
    "5000-digit number": (card("size: " + "9" * 5000 + "\nconfigs: []\n"), "a number of 5,000 characters"),
    "impossible date": (card("date: 2020-13-45\nconfigs: []\n"), "does not parse"),
    "two documents": (card("configs: []\n--- [x]\n"), "a second document"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_CARDS))
def test_a_hostile_card_is_one_message_before_any_data_file(hub, tmp_path, case):
    text, words = HOSTILE_CARDS[case]
    hub.add_repo(REPO, {"README.md": text, **DATA}, commit=COMMIT)
    run = hub.shell(tmp_path)
    res = run("eval", "--dataset", f"mteb:repo={REPO},revision={COMMIT}", "-q", "-o", str(tmp_path / "out"))
    msg = one_error(res)
    assert words in msg and "README.md" in msg and len(msg) < 1000, msg
    assert not (tmp_path / "pwned").exists() and not (tmp_path / "out" / "results.json").exists()
    # nothing was built from the card: only the card itself was fetched, no data file
    fetched = {r.file for r in hub.requests if r.file}
    assert fetched == {"README.md"}, fetched


def test_the_billion_laughs_card_is_refused_at_its_first_anchor(tmp_path):
    """Refused from the parser's events, before any alias could be expanded (no time bound in a test)."""
    readme = tmp_path / "README.md"
    readme.write_text(card(laughs() + "configs: *l8\n"), encoding="utf-8")
    with pytest.raises(Exception, match="anchors and aliases are refused"):
        read_card_configs(readme)


def test_the_honest_card_still_loads(hub, tmp_path):
    hub.add_repo(REPO, {"README.md": CARD.format(qrels="qrels/test.jsonl"), **DATA}, commit=COMMIT)
    run = hub.shell(tmp_path)
    res = run("eval", "--dataset", f"mteb:repo={REPO},revision={COMMIT}", "-q", "-o", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr[-3000:]
    saved = json.loads((tmp_path / "out" / "results.json").read_text())["dataset"]
    assert saved["configs"] == {"corpus": "corpus/corpus", "queries": "queries/queries", "qrels": "default/test"}
    # the same values as PyYAML's safe loader reads from the card (an independent reading)
    import yaml

    front = CARD.format(qrels="qrels/test.jsonl").split("---")[1]
    expected = {c["config_name"]: {d["split"]: [d["path"]] for d in c["data_files"]}
                for c in yaml.safe_load(front)["configs"]}
    assert parse_configs(front) == expected


def test_a_pattern_built_to_backtrack_is_matched_in_linear_time(hub, tmp_path):
    """``*a*a*a*a*a*a*a*a*b`` against a 200-character name: a regex backtracks for hours, segment matching
    takes microseconds; the repository has no matching file, so the message says so."""
    name = "a" * 200 + ".jsonl"
    hub.add_repo(REPO, {"README.md": CARD.format(qrels="'" + "*a" * 8 + "*b'"), **DATA, name: "{}\n"}, commit=COMMIT)
    run = hub.shell(tmp_path)
    res = run("eval", "--dataset", f"mteb:repo={REPO},revision={COMMIT}", "-q")
    msg = one_error(res)
    assert "no file of the repository matches" in msg and "*a*a*a" in msg, msg


def test_the_work_of_matching_is_bounded(hub, tmp_path):
    """The slowest a single segment can be (``*aaa...ab`` against ``aaa...a``: pattern x name steps), over 40
    such names: one message at MAX_MATCH_STEPS, never minutes."""
    names = {"a" * 990 + f"{i:02d}": "{}\n" for i in range(40)}
    hub.add_repo(REPO, {"README.md": CARD.format(qrels="'*" + "a" * 998 + "b'"), **DATA, **names}, commit=COMMIT)
    res = hub.shell(tmp_path)("eval", "--dataset", f"mteb:repo={REPO},revision={COMMIT}", "-q")
    assert f"more than {MAX_MATCH_STEPS:,} steps" in one_error(res)


def test_a_double_star_inside_a_segment_is_refused_as_the_datasets_library_does(hub, tmp_path):
    hub.add_repo(REPO, {"README.md": CARD.format(qrels="qrels/**.jsonl"), **DATA}, commit=COMMIT)
    res = hub.shell(tmp_path)("eval", "--dataset", f"mteb:repo={REPO},revision={COMMIT}", "-q")
    assert "'**' can only be a whole path segment" in one_error(res)


# -- downloads --------------------------------------------------------------------------------------------
def _gets(hub: HubServer, path: str) -> list:
    return hub.file_requests(path, "GET")


def test_a_hub_that_sends_headers_and_then_nothing_ends_within_the_timeout(hub, tmp_path):
    """trec-dl19's Hub file: the HEAD is answered, every GET sends its headers and then nothing for 100 s.
    huggingface_hub resumes a stalled transfer itself (at most 6 tries, 1 s apart), then one message: no
    restarts on top (before, 3 x 6 tries of 10 s each)."""
    hub.add_repo("castorini/rank_llm_data", {DL19_HUB_PATH: b"x" * 50_000}, commit=DL19_PIN)
    hub.stall(DL19_HUB_PATH, seconds=100, headers=True)
    run = hub.shell(tmp_path)
    res = run("data", "download", "trec-dl19", env_extra={"HF_HUB_DOWNLOAD_TIMEOUT": "2"})
    msg = one_error(res)
    assert DL19_HUB_PATH in msg and "castorini/rank_llm_data" in msg, msg
    assert "no bytes arrived for 2 s (HF_HUB_DOWNLOAD_TIMEOUT)" in msg, msg
    gets = _gets(hub, DL19_HUB_PATH)
    assert 1 <= len(gets) <= 6 and all(r.stalled for r in gets), [(r.status, r.stalled) for r in gets]
    assert not any(p.is_file() for p in run.data.rglob("*"))


def test_a_hub_that_never_answers_the_metadata_request_ends_within_the_timeout(hub, tmp_path):
    hub.add_repo("castorini/rank_llm_data", {DL19_HUB_PATH: b"x" * 50_000}, commit=DL19_PIN)
    hub.stall(DL19_HUB_PATH, seconds=100, headers=False)
    run = hub.shell(tmp_path)
    res = run("data", "download", "trec-dl19", env_extra={"HF_HUB_ETAG_TIMEOUT": "2"})
    msg = one_error(res)
    assert DL19_HUB_PATH in msg and "metadata request for 2 s (HF_HUB_ETAG_TIMEOUT)" in msg, msg
    heads = hub.file_requests(DL19_HUB_PATH, "HEAD")
    assert heads and all(r.stalled for r in heads) and not _gets(hub, DL19_HUB_PATH)


def test_a_plain_download_that_stalls_is_resumed_then_one_message(hub, tmp_path):
    """noveleval from a mirror (plain ``urllib``): each answer sends 1,000 bytes, then nothing for 100 s;
    with HARNESS_DOWNLOAD_TIMEOUT=2, three tries, each resuming where the last stopped, then one message."""
    hub.add_repo("org/mirror", {"noveleval/corpus.tsv": b"c" * 385_372}, commit=COMMIT)
    hub.stall("noveleval/corpus.tsv", seconds=100, headers=True, after=1000)
    run = hub.shell(tmp_path)
    mirror = f"{hub.endpoint}/datasets/org/mirror/resolve/{COMMIT}"
    res = run("data", "download", "noveleval", "--base-url", mirror, env_extra={"HARNESS_DOWNLOAD_TIMEOUT": "2"})
    msg = one_error(res)
    assert "noveleval/corpus.tsv" in msg and "no bytes for 2 s ($HARNESS_DOWNLOAD_TIMEOUT) in 3 tries" in msg, msg
    assert "3000 bytes kept" in msg, msg
    gets = _gets(hub, "noveleval/corpus.tsv")
    assert [r.range for r in gets] == [None, "bytes=1000-", "bytes=2000-"] and all(r.stalled for r in gets)
    part = run.data / "noveleval" / "corpus.tsv.part"
    assert part.read_bytes() == b"c" * 3000 and not (run.data / "noveleval" / "corpus.tsv").exists()


def test_a_plain_download_within_the_timeout_completes(hub, tmp_path, data_dir):
    files = {f"noveleval/{n}": data_dir / "noveleval" / n for n in ("corpus.tsv", "queries.tsv", "qrels.txt")}
    hub.add_repo("org/mirror", files, commit=COMMIT)
    run = hub.shell(tmp_path)
    mirror = f"{hub.endpoint}/datasets/org/mirror/resolve/{COMMIT}"
    res = run("data", "download", "noveleval", "--base-url", mirror, env_extra={"HARNESS_DOWNLOAD_TIMEOUT": "2"})
    assert res.returncode == 0, res.stderr[-3000:]
    for rel, src in files.items():
        got = run.data / rel
        assert hashlib.sha256(got.read_bytes()).hexdigest() == hashlib.sha256(src.read_bytes()).hexdigest()


@pytest.mark.parametrize("var,value,words", [
    ("HARNESS_DOWNLOAD_TIMEOUT", "abc", "HARNESS_DOWNLOAD_TIMEOUT must be a number"),
    ("HARNESS_DOWNLOAD_TIMEOUT", "0", "HARNESS_DOWNLOAD_TIMEOUT must be a finite number above 0"),
    ("HARNESS_DOWNLOAD_TIMEOUT", "nan", "HARNESS_DOWNLOAD_TIMEOUT must be a finite number"),
    ("HF_HUB_DOWNLOAD_TIMEOUT", "2.5", "HF_HUB_DOWNLOAD_TIMEOUT must be a whole number from 1"),
    ("HF_HUB_ETAG_TIMEOUT", "0", "HF_HUB_ETAG_TIMEOUT must be a whole number from 1"),
])
def test_a_bad_timeout_setting_is_one_message(hub, tmp_path, var, value, words):
    hub.add_repo("castorini/rank_llm_data", {DL19_HUB_PATH: b"x" * 100}, commit=DL19_PIN)
    res = hub.shell(tmp_path)("data", "download", "trec-dl19", env_extra={var: value})
    assert words in one_error(res)
    assert not hub.file_requests(DL19_HUB_PATH)  # refused before any request
