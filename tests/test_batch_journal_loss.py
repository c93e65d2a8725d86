"""The batch journal (``<cache>/llm/batches.db``) as a file the harness did not write: intents owned by
(host, pid, start time) under a lease, a damaged journal moved aside with one warning line, batches
recognised at the provider without the journal (OpenAI: the digest of their custom_ids in the
metadata; Anthropic: request count and custom_ids), and `harness batch collect|cancel` going past a
batch the provider does not know. Through the official SDKs against the loopback server."""

from __future__ import annotations

import logging
import os
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.llm import LLMSession, LLMSettings, RetryPolicy, user
from harness.runtime.procs import process_start
from harness.served.batch.journal import DEFAULT_LEASE, FILENAME, BatchJournal, JournalLost, lease_from_env
from harness.served.batch.protocol import requests_digest
from harness.served.request_errors import BatchPending
from harness.testing import TestServer
from harness.testing.llm_server import last_user_text

MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}


def done(req: dict) -> str:
    return "done: " + last_user_text(req)


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL",
                "HARNESS_BATCH_LEASE"):
        monkeypatch.delenv(var, raising=False)


def session(tmp_path: Path, **changes) -> LLMSession:
    settings = LLMSettings(batch=True, batch_poll=0.01, cache_dir=str(tmp_path / "cache"), retry=RetryPolicy.fast())
    return LLMSession(settings.merged(**changes))


def prompts(n: int) -> list[str]:
    return [f"item {i}" for i in range(n)]


def journal_path(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "llm" / FILENAME


def checkpoint(db: Path) -> None:
    """Fold the write-ahead log into the file, as when the last process using it ends."""
    con = sqlite3.connect(db)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


DAMAGE_SQL = {
    "emptied": "DELETE FROM requests; DELETE FROM batches",
    "batches deleted": "DELETE FROM batches",
    "requests deleted": "DELETE FROM requests",
    "table dropped": "DROP TABLE requests",
    "unknown state": "UPDATE batches SET state = 'zombie'",
    "text in a number": "UPDATE batches SET n = 'many'",
    "payload not JSON": "UPDATE requests SET payload = '{not json'",
}


def damage(db: Path, how: str) -> None:
    """Damage the journal ``how`` a careless user, a full disk or a sync tool would."""
    checkpoint(db)
    if how in DAMAGE_SQL:
        con = sqlite3.connect(db)
        con.executescript(DAMAGE_SQL[how])
        con.commit()
        con.close()
        checkpoint(db)
    elif how == "truncated":
        data = db.read_bytes()
        db.write_bytes(data[: len(data) // 3])
    elif how == "zero bytes":
        db.write_bytes(b"")
    elif how == "garbage":
        db.write_bytes(b"this is not a database at all " * 300)
    elif how == "deleted":
        db.unlink()
    elif how == "folder":
        db.unlink()
        db.mkdir()
        (db / "x").write_text("a folder where the journal belongs")
    else:  # pragma: no cover
        raise ValueError(how)


def warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.WARNING and "batch journal" in r.getMessage()]


# -- ownership: host, pid, start time, lease -----------------------------------------------------
def _intent(tmp_path: Path, srv: TestServer, n: int):
    """An intent for the first ``n`` prompts, as a process that stopped before submitting leaves it."""
    client = session(tmp_path).client(srv.spec(MODELS["openai"], "openai"))
    items = [client._lookup([user(p)], None, {}) for p in prompts(n)]
    journal = client.batch.journal
    rec, _ = journal.reserve(client.batch.endpoint, [(p.key, p.payload) for p in items])
    return journal, rec


@pytest.fixture
def sleeper():
    """A live process on this host that is not us."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    yield proc
    proc.kill()
    proc.wait()


OWNER = """
import json, sys, time
from harness.served.batch.journal import BatchJournal
spec = json.loads(sys.stdin.readline())
rec, _ = BatchJournal(spec["path"]).reserve(spec["endpoint"], spec["items"])
print(rec.id, flush=True)
time.sleep(600)  # alive, but it never submits nor renews its lease
"""


@pytest.mark.parametrize("where", ["this host", "another host"])
def test_a_live_foreign_owner_holds_its_intent_only_for_its_lease(tmp_path, where):
    """Another live process (HARNESS_BATCH_LEASE=1) reserved requests and hangs. While its lease runs
    (here: as if it had renewed it) --no-wait reruns wait on it and submit nothing; once the lease it
    took has run out, the next run looks for the batch at the provider, abandons the intent and
    submits the requests itself, once. On another host the pid cannot be checked: the lease decides."""
    import json

    with TestServer(reply=done) as srv:
        spec = srv.spec(MODELS["openai"], "openai")
        client = session(tmp_path).client(spec)
        items = [client._lookup([user(p)], None, {}) for p in prompts(4)]
        journal = client.batch.journal
        owner = subprocess.Popen([sys.executable, "-c", OWNER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 text=True, env={**os.environ, "HARNESS_BATCH_LEASE": "1"})
        try:
            owner.stdin.write(json.dumps({"path": str(journal.path), "endpoint": client.batch.endpoint,
                                          "items": [(p.key, p.payload) for p in items]}) + "\n")
            owner.stdin.flush()
            rec = journal.get(int(owner.stdout.readline()))
            assert (rec.owner_pid, rec.owner_start, rec.state) == (owner.pid, process_start(owner.pid), "intent")
            assert rec.lease_until == pytest.approx(rec.created + 1.0)  # the lease the owner took
            if where == "another host":
                journal._set(rec.id, owner_host="another-host.example")
            journal._set(rec.id, lease_until=time.time() + 3600)  # as if the owner had renewed it
            assert not journal.get(rec.id).owner_gone
            for _ in range(2):  # every rerun within the lease waits: nothing is submitted
                with pytest.raises(BatchPending, match=r"pending: 4 request\(s\) in 1 batch\(es\).*being submitted"):
                    session(tmp_path, batch_wait=False).client(spec).map(prompts(4))
            assert srv.batch_submissions == 0 and journal.get(rec.id).state == "intent"

            journal._set(rec.id, lease_until=rec.lease_until)  # the owner renews no more: its 1 s lease runs out
            lists = srv.batch_lists
            replies = session(tmp_path).client(spec).map(prompts(4))
            assert owner.poll() is None  # the owner still runs
        finally:
            owner.kill()
            owner.wait()
        assert [r.text for r in replies] == [f"done: item {i}" for i in range(4)]
        assert srv.batch_submissions == 1 and set(srv.batch_requests.values()) == {1}
        assert srv.batch_lists > lists  # the intent was looked for at the provider before it was abandoned
    old, new = journal.get(rec.id), journal.batches(["collected"])[0]
    assert old.state == "abandoned" and "never created" in old.note
    assert old.finished <= new.created  # the new batch was reserved only after the old intent was given up


def test_a_reused_pid_does_not_hold_an_intent(tmp_path, sleeper):
    """The pid runs, but it is a later process than the one that reserved the intent (another start
    time): the intent is its owner's no more, however long its lease."""
    with TestServer(reply=done) as srv:
        journal, rec = _intent(tmp_path, srv, 3)
        journal._set(rec.id, owner_pid=sleeper.pid, owner_host=socket.gethostname(),
                     owner_start="another-boot/12345", lease_until=time.time() + 3600)
        assert journal.get(rec.id).owner_gone
        replies = session(tmp_path, batch_wait=False).client(srv.spec(MODELS["openai"], "openai")).map(prompts(3))
        assert srv.batch_submissions == 1
    assert [r.text for r in replies] == [f"done: item {i}" for i in range(3)]
    assert journal.get(rec.id).state == "abandoned"


def test_the_lease_setting(monkeypatch):
    assert lease_from_env({}) == DEFAULT_LEASE == 1800
    assert lease_from_env({"HARNESS_BATCH_LEASE": "2.5"}) == 2.5
    from harness.concepts.errors import HarnessError

    for bad in ("0", "-1", "nan", "inf", "abc", "1e9"):
        with pytest.raises(HarnessError, match=r"\$HARNESS_BATCH_LEASE"):
            lease_from_env({"HARNESS_BATCH_LEASE": bad})


def test_an_older_journal_gains_the_owner_columns(tmp_path):
    """A journal written before owner start times and leases (and before `removed`) opens: its
    intents are held for the default lease from their creation, and new ones get both columns."""
    path = tmp_path / FILENAME
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE batches (id INTEGER PRIMARY KEY AUTOINCREMENT, tag TEXT UNIQUE NOT NULL, endpoint TEXT NOT NULL,
            provider TEXT NOT NULL, model TEXT NOT NULL, base_url TEXT, state TEXT NOT NULL, remote_id TEXT,
            created REAL NOT NULL, submitted REAL, finished REAL, n INTEGER NOT NULL, nbytes INTEGER,
            attempt INTEGER NOT NULL, owner_pid INTEGER NOT NULL, owner_host TEXT NOT NULL, note TEXT);
        CREATE TABLE requests (batch INTEGER NOT NULL REFERENCES batches(id), key TEXT NOT NULL,
            payload TEXT NOT NULL, PRIMARY KEY (batch, key));""")
    now = time.time()
    for tag, created in (("recent", now - 60), ("old", now - DEFAULT_LEASE - 60)):
        cur = con.execute("INSERT INTO batches (tag, endpoint, provider, model, state, created, n, attempt, owner_pid,"
                          " owner_host) VALUES (?, 'e', 'openai', 'm', 'intent', ?, 1, 1, 1, 'elsewhere')",
                          (tag, created))
        con.execute("INSERT INTO requests VALUES (?, ?, '{}')", (cur.lastrowid, tag))
    con.commit()
    con.close()
    journal = BatchJournal(path)
    recent, old = sorted(journal.batches(), key=lambda r: r.tag, reverse=True)
    assert (recent.tag, recent.owner_start, recent.lease_until, recent.owner_gone) == ("recent", None, None, False)
    assert old.tag == "old" and old.owner_gone
    assert not journal.recovered and not journal.fresh
    rec, _ = journal.reserve({"endpoint": "e", "provider": "openai", "model": "m"}, [("new", {})])
    assert rec.owner_start == process_start(os.getpid()) and rec.lease_until > rec.created


# -- a lost or damaged journal during a one-stage run ----------------------------------------------
LOSSES = ["emptied", "batches deleted", "requests deleted", "truncated", "garbage", "zero bytes", "deleted",
          "folder"]


@pytest.mark.parametrize("how", LOSSES)
@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_lost_journal_submits_nothing_twice(tmp_path, caplog, provider, how):
    """Submitted with --no-wait, the journal then lost: the rerun recognises its batch at the provider
    (OpenAI by the digest in its metadata, Anthropic by its custom_ids), adopts and collects it: the
    server's submission counter stays 1, every request was submitted once."""
    caplog.set_level(logging.INFO, logger="harness.llm")
    n = 12
    with TestServer(reply=done, batch_delay=3600) as srv:
        spec = srv.spec(MODELS[provider], provider)
        first = session(tmp_path, batch_wait=False).client(spec)
        with pytest.raises(BatchPending):
            first.map(prompts(n))
        first.batch.journal.close()
        assert srv.batch_submissions == 1
        damage(journal_path(tmp_path), how)
        srv.batch_delay = 0  # the provider finishes while nobody watches
        rerun = session(tmp_path).client(spec)
        replies = rerun.map(prompts(n))
        assert srv.batch_submissions == 1 and srv.requests_total == 0
        assert sorted(srv.batch_requests.values()) == [1] * n
        original = srv.batches[0].id
    assert [r.text for r in replies] == [f"done: item {i}" for i in range(n)]
    u = rerun.usage.get(rerun.label)
    assert (u.batch_calls, u.batches) == (n, 0)  # collected and paid for here, submitted earlier
    journal = rerun.batch.journal
    [rec] = journal.batches()
    assert (rec.state, rec.remote_id) == ("collected", original)
    assert [m for m in caplog.messages if "adopted (nothing submitted)" in m] == [
        f"{rerun.label}: batch {original} holds these {n} requests although the journal had no record of it; "
        f"adopted (nothing submitted)"]
    aside = sorted(journal_path(tmp_path).parent.glob(f"{FILENAME}.corrupt-*"))
    if how in ("deleted", "zero bytes"):  # no different from a new journal: nothing to move aside
        assert not aside and not warnings(caplog)
    else:
        assert len(warnings(caplog)) == 1 and journal.recovered == aside[:1]
        assert f"moved it to {aside[0].name}" in warnings(caplog)[0]


@pytest.mark.parametrize("how", ["table dropped", "unknown state", "text in a number", "payload not JSON"])
def test_rows_are_validated_on_read(tmp_path, caplog, how):
    """A journal whose rows are not what the harness writes is treated as lost: moved aside with one
    warning, and the rerun still submits nothing twice."""
    caplog.set_level(logging.WARNING, logger="harness.llm")
    with TestServer(reply=done, batch_delay=3600) as srv:
        spec = srv.spec(MODELS["openai"], "openai")
        first = session(tmp_path, batch_wait=False).client(spec)
        with pytest.raises(BatchPending):
            first.map(prompts(5))
        first.batch.journal.close()
        damage(journal_path(tmp_path), how)
        srv.batch_delay = 0
        replies = session(tmp_path).client(spec).map(prompts(5))
        assert srv.batch_submissions == 1
    assert [r.text for r in replies] == [f"done: item {i}" for i in range(5)]
    [notice] = warnings(caplog)
    assert "was damaged" in notice and "moved it to batches.db.corrupt-" in notice


def test_anthropic_still_running_is_adopted_by_count_only_when_the_journal_is_empty(tmp_path):
    """A message batch shows its custom_ids only once ended. While it runs, an empty (lost) journal
    adopts it on its request count; a journal with history does not take a stranger's batch of the
    same size (it submits its own)."""
    import anthropic

    with TestServer(reply=done, batch_delay=3600) as srv:
        spec = srv.spec(MODELS["anthropic"], "anthropic")
        with pytest.raises(BatchPending):
            session(tmp_path, batch_wait=False).client(spec).map(prompts(6))
        damage(journal_path(tmp_path), "garbage")
        with pytest.raises(BatchPending):  # still running: adopted, not submitted again
            session(tmp_path, batch_wait=False).client(spec).map(prompts(6))
        assert srv.batch_submissions == 1

        stranger = anthropic.Anthropic(base_url=srv.anthropic_base_url, api_key="test", max_retries=0)
        stranger.messages.batches.create(requests=[
            {"custom_id": f"other-{i}", "params": {"model": "claude-test", "max_tokens": 8,
                                                   "messages": [{"role": "user", "content": f"x{i}"}]}}
            for i in range(3)])
        with pytest.raises(BatchPending):
            session(tmp_path, batch_wait=False).client(spec).map(prompts(3) + prompts(9)[6:])
        assert srv.batch_submissions == 3  # ours, the stranger's, and ours again (3 new requests)
        srv.batch_delay = 0
        replies = session(tmp_path).client(spec).map(prompts(6) + prompts(9)[6:])
        assert srv.batch_submissions == 3 and set(srv.batch_requests.values()) == {1}
    assert [r.text for r in replies] == [f"done: item {i}" for i in range(9)]


def test_the_lookup_costs_one_list_call_per_round(tmp_path):
    """Three dependent rounds: three submissions and three list calls, no more; the OpenAI batches
    carry the digest of their custom_ids."""

    def three(item, chat):
        text = item
        for _ in range(3):
            text = chat([user(text)]).text
        return text

    with TestServer(reply=done) as srv:
        client = session(tmp_path).client(srv.spec(MODELS["openai"], "openai"))
        client.run_sequences(three, prompts(8))
        assert (srv.batch_submissions, srv.batch_lists) == (3, 3)
        for b in srv.batches:
            assert b.metadata["harness_keys"] == requests_digest(b.custom_ids)


def test_damage_met_mid_run_stops_with_one_line(tmp_path):
    """A row changed behind an open journal's back: the journal is moved aside and the run stops
    with one message (JournalLost, exit status 2), and every later call says the same, touching no
    file."""
    journal = BatchJournal(tmp_path / FILENAME)
    rec, _ = journal.reserve({"endpoint": "e", "provider": "openai", "model": "m"}, [("a", {})])
    con = sqlite3.connect(journal.path)
    con.execute("UPDATE batches SET state = 'zombie'")
    con.commit()
    con.close()
    with pytest.raises(JournalLost, match="was damaged while this run used it"):
        journal.get(rec.id)
    assert len(journal.recovered) == 1
    with pytest.raises(JournalLost):
        journal.batches()
    assert not journal.path.exists()


# -- through the CLI -------------------------------------------------------------------------------
def _harness(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HARNESS_BATCH_POLL": "0.02", **(env or {})})


def _journal_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "batch journal" in line]


@pytest.mark.parametrize(("provider", "how"), [("openai", "emptied"), ("anthropic", "garbage")])
def test_cli_eval_rerun_after_a_lost_journal(tmp_path, provider, how, llm_double):
    cache = str(tmp_path / "cache")
    with TestServer(reply="Yes", batch_delay=3600) as srv:
        args = ["eval", "--task", "demo", "--reranker", llm_double, "--llm",
                srv.spec(MODELS[provider], provider), "--llm-batch", "--cache-dir", cache, "--quiet"]
        first = _harness(*args, "--no-wait")
        assert first.returncode == 75, first.stderr
        damage(journal_path(tmp_path), how)
        srv.batch_delay = 0
        final = _harness(*args)
        assert final.returncode == 0, final.stderr
        assert srv.batch_submissions == 1 and srv.batch_requests_total == 400 and srv.requests_total == 0
        assert "nDCG@10" in final.stdout and "Traceback" not in final.stderr
        assert len(_journal_lines(final.stderr)) == 1


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_cli_collect_and_cancel_go_past_a_batch_the_provider_does_not_know(tmp_path, provider):
    """Three pending batches, one of which the provider has no record of: `collect` collects the other
    two, marks that one abandoned, lists it at the end (the provider does not know it; no model is
    blamed) and exits 3; `cancel --all` likewise cancels the other two."""
    cache = str(tmp_path / "cache")
    ghost = "batch_" + "0" * 24 if provider == "openai" else "msgbatch_" + "0" * 24
    with TestServer(reply=done, batch_delay=3600) as srv:
        spec = srv.spec(MODELS[provider], provider)
        for group in range(2):  # twice: once to collect, once to cancel
            srv.batch_delay = 3600
            with pytest.raises(BatchPending):
                session(tmp_path, batch_wait=False, batch_size=3).client(spec).map(
                    [f"group {group} item {i}" for i in range(9)])
            journal = BatchJournal(journal_path(tmp_path))
            live = journal.batches(["submitted"])
            assert len(live) == 3
            journal._set(live[1].id, remote_id=ghost)  # made with another account, say
            journal.close()
            if group == 0:
                srv.batch_delay = 0
                out = _harness("batch", "collect", "--cache-dir", cache)
                verb = "; collected ("
            else:
                out = _harness("batch", "cancel", "--all", "--cache-dir", cache)
                verb = ": cancel requested"
            assert out.returncode == 3, out.stdout + out.stderr
            assert "Traceback" not in out.stderr
            lines = out.stdout.splitlines()
            assert sum(verb in line for line in lines) == 2
            tail = lines[lines.index(next(line for line in lines if "the provider does not know" in line)):]
            assert any(ghost in line and "does not know batch" in line for line in tail)
            assert "model" not in " ".join(tail).lower() and "not found" not in " ".join(tail).lower()
            states = {r.remote_id: r.state for r in BatchJournal(journal_path(tmp_path)).batches()}
            assert states[ghost] == "abandoned"
            assert sorted(s for rid, s in states.items() if rid in {live[0].remote_id, live[2].remote_id}) == (
                ["collected"] * 2 if group == 0 else ["submitted"] * 2)
        assert srv.batch_cancels == 2


@pytest.mark.parametrize(("command", "how"), [
    (("batch", "status"), "garbage"), (("batch", "status"), "truncated"), (("batch", "status"), "folder"),
    (("batch", "status", "--all", "--offline"), "batches deleted"), (("batch", "collect"), "garbage"),
    (("batch", "clean", "-y"), "unknown state"), (("batch", "cancel", "--all"), "garbage"),
    (("cache", "info"), "text in a number")])
def test_cli_batch_commands_on_a_damaged_journal(tmp_path, command, how):
    """Every `harness batch` subcommand (and `cache info`) on a damaged journal: one warning line, no
    traceback, the command's ordinary answer on a fresh journal."""
    cache = tmp_path / "cache"
    with TestServer(reply=done) as srv:
        session(tmp_path).client(srv.spec(MODELS["openai"], "openai")).map(prompts(3))
    damage(journal_path(tmp_path), how)
    out = _harness(*command, "--cache-dir", str(cache))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Traceback" not in out.stderr
    assert len(_journal_lines(out.stderr)) == 1 and "was damaged" in out.stderr
    assert list(journal_path(tmp_path).parent.glob(f"{FILENAME}.corrupt-*"))
