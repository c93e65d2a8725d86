"""A received LLM cache is data, never code (docs/untrusted.md, "The LLM cache").

Each hostile row is planted with diskcache itself: a value stored in diskcache's pickle mode (in the
row, and in a value file) and a pickled key, each of which writes a marker file when unpickled (a
control shows diskcache's own reading, what the harness did before, runs it); a value file named
``../../../outside_secret.json``, an absolute name and a symlinked sub-folder; a results folder whose
``llm_calls.jsonl`` names a cache outside it; an empty cache folder; settings and schema diskcache
would obey. Every command that reads a cache runs through the CLI (``python -m harness.cli``) or the
view server over loopback HTTP, with RankGPT against the loopback LLM server."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import diskcache
import pytest

from harness.served.reply_cache import LLMCache, key_of
from harness.served.types import Reply
from harness.testing import TestServer
from harness.testing.synthetic import write_results_folder
from tests.plugin_fixtures import use_distributions
from tests.view_fixtures import serving

CANARY = "canary-outside-the-cache-folder"
QIDS = ["q1", "q2"]


class Runs:
    """Unpickling an instance runs code: it writes ``path`` (``pad`` characters make the pickle larger
    than diskcache's 32 KB, so it is stored in a value file)."""

    def __init__(self, path: Path, pad: int = 0) -> None:
        self.path, self.pad = str(path), pad

    def __reduce__(self) -> tuple[Any, ...]:
        return exec, (f"open({self.path!r}, 'w').write('ran')" + " #" + "x" * self.pad,)


def _harness(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, timeout=600,
                          cwd=cwd)


def _plant(folder: Path, key: Any, value: Any) -> None:
    """A row written by diskcache itself, as another program sharing the folder would."""
    dc = diskcache.Cache(str(folder))
    try:
        dc.set(key, value)
    finally:
        dc.close()


def _ran_under_diskcache(folder: Path, marker: Path, read) -> bool:
    """Control: diskcache's own reading (what the harness's cache did before) runs the planted code."""
    dc = diskcache.Cache(str(folder))
    try:
        read(dc)
    except Exception:  # noqa: BLE001  (exec returns None: diskcache may fail after running it)
        pass
    finally:
        dc.close()
    ran = marker.exists()
    marker.unlink(missing_ok=True)
    return ran


def _entry(cache: Path, text: str, content: str = "a prompt") -> str:
    """One honest entry (via the harness); its key."""
    payload = {"provider": "openai-compatible", "model": "m", "messages": [{"role": "user", "content": content}],
               "options": {}}
    key = key_of(payload)
    c = LLMCache(cache)
    try:
        c.set(key, payload, Reply(text=text))
    finally:
        c.close()
    return key


def _results(folder: Path, key: str, named: str) -> Path:
    """A results folder whose llm_calls.jsonl records one call per query under ``key``, cached in ``named``."""
    write_results_folder(folder, "demo", {q: {"nDCG@10": 0.5} for q in QIDS}, rankings=3)
    with open(folder / "llm_calls.jsonl", "w", encoding="utf-8") as fh:
        for q in QIDS:
            fh.write(json.dumps({"query_id": q, "key": key, "cached": True, "error": None,
                                 "component": "openai-compatible:m", "cache": named}) + "\n")
    return folder


def _shown(folder: Path, **kwargs: Any) -> tuple[str, list[dict[str, Any]]]:
    """(the page's LLM note, the calls of q1) through the view server over loopback HTTP; the server
    then still answers the run page."""
    with serving([folder], **kwargs) as srv:
        base = f"http://{srv.server_address[0]}:{srv.server_address[1]}"
        with urllib.request.urlopen(f"{base}/api/query/r1/q1.json", timeout=30) as r:
            q = json.loads(r.read())
        with urllib.request.urlopen(f"{base}/api/run/r1.json", timeout=30) as r:
            assert r.status == 200
    return q["llm_note"], q["llm_calls"]


def _bundle(folder: Path, out: Path, *args: str) -> str:
    """``harness view --bundle``: every data file's text (exit 0, no traceback)."""
    res = _harness("view", "--bundle", str(out), str(folder), *args)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stdout + res.stderr
    return "".join(p.read_text(encoding="utf-8") for p in (out / "data").rglob("*.js"))


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


RERANKER = "llm-double:depth=10"  # an LLM reranker: the test double of tests/llm_double.py


def identity(request: dict[str, Any]) -> str:
    """A RankGPT reply keeping each window's order."""
    return " > ".join(f"[{i}]" for i in range(1, len(request["messages"][3:-1:2]) + 1))


# -- pickle mode ------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def honest(tmp_path_factory, llm_double_root):
    """An LLM reranker (the test double ``llm-double``, tests/llm_double.py) on the demo task against the
    loopback server (kept running: its address is part of every cache key), through the CLI: the cache
    root, the figure, the keys of the calls."""
    root = tmp_path_factory.mktemp("honest")
    with TestServer(reply="Yes") as srv:
        with pytest.MonkeyPatch.context() as mp:
            use_distributions(mp, llm_double_root)
            res = _harness("eval", "--task", "demo", "--reranker", RERANKER, "--llm", srv.spec("cache-model"),
                           "--cache-dir", str(root / "cache"), "-o", str(root / "run"), "--quiet")
        assert res.returncode == 0, res.stderr
        results = json.loads((root / "run" / "results.json").read_text())
        cache = LLMCache(root / "cache" / "llm")
        keys = [key for key, _ in cache.entries()]
        cache.close()
        assert len(keys) == srv.requests_total > 0
        yield {"root": root, "srv": srv, "ndcg": results["metrics"]["nDCG@10"], "keys": keys}


@pytest.mark.parametrize("pad", [0, 40_000], ids=["in-the-row", "in-a-value-file"])
def test_a_pickled_value_runs_nothing_in_eval(honest, tmp_path, pad, llm_double):
    """`harness eval --cache-dir RECEIVED`: the pickled row is one warning naming the cache, the request
    is sent again (replacing the row), every other reply comes from the cache; same figure."""
    import shutil

    cache = tmp_path / "cache"
    shutil.copytree(honest["root"] / "cache", cache)
    marker, key = tmp_path / "MARKER", honest["keys"][0]
    _plant(cache / "llm", key, Runs(marker, pad))
    assert _ran_under_diskcache(cache / "llm", marker, lambda dc: dc.get(key))
    srv = honest["srv"]
    srv.reset_counters()
    res = _harness("eval", "--task", "demo", "--reranker", RERANKER, "--llm", srv.spec("cache-model"),
                   "--cache-dir", str(cache), "-o", str(tmp_path / "run"), "--quiet")
    assert srv.requests_total == 1  # only the refused entry; the rest from the cache
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    assert not marker.exists()
    warnings = [line for line in res.stderr.splitlines() if "pickle mode" in line]
    assert len(warnings) == 1 and str(cache / "llm") in warnings[0] and key[:16] in warnings[0]
    ndcg = json.loads((tmp_path / "run" / "results.json").read_text())["metrics"]["nDCG@10"]
    assert ndcg == honest["ndcg"] > 0
    entry = LLMCache(cache / "llm").get(key)  # replaced by the reply sent again
    assert entry is not None and entry["reply"]["text"] == "Yes"


def test_a_pickled_value_runs_nothing_in_batch_mode(tmp_path, llm_double):
    """`--llm-batch` looks the cache up through the same reader: the refused entry goes in the batch."""
    cache, marker = tmp_path / "cache", tmp_path / "MARKER"
    args = ["eval", "--task", "demo", "--reranker", llm_double, "--llm-batch", "--cache-dir", str(cache),
            "--quiet"]
    with TestServer(reply="Yes") as srv:
        spec = srv.spec("batch-model", "openai")
        assert _harness(*args, "--llm", spec).returncode == 0
        key = next(iter(srv.batch_requests))
        _plant(cache / "llm", key, Runs(marker))
        assert _ran_under_diskcache(cache / "llm", marker, lambda dc: dc.get(key))
        before = srv.batch_requests_total
        res = _harness(*args, "--llm", spec)
        assert srv.batch_requests_total - before == 1 and srv.batch_requests[key] == 2
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    assert not marker.exists() and sum("pickle mode" in line for line in res.stderr.splitlines()) == 1


def test_pickled_rows_run_nothing_in_the_cache_commands(tmp_path):
    """`harness cache info`, `explain` and `clear` on a cache holding a pickled value and a pickled key."""
    llm, marker = tmp_path / "cache" / "llm", tmp_path / "MARKER"
    _entry(llm, "an honest reply")
    _plant(llm, key_of({"provider": "x"}), Runs(marker))
    _plant(llm, Runs(marker), "a value under a pickled key")
    assert _ran_under_diskcache(llm, marker, lambda dc: list(dc.iterkeys()))
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"messages": [{"role": "user", "content": "another prompt"}]}))
    root = str(tmp_path / "cache")
    info = _harness("cache", "info", "--cache-dir", root, "--json")
    text = _harness("cache", "info", "--cache-dir", root)
    explain = _harness("cache", "explain", "--cache-dir", root, "--llm",
                       "openai-compatible:m:base_url=http://127.0.0.1:9/v1", str(request))
    assert not marker.exists()
    for res in (info, text, explain):
        assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    got = json.loads(info.stdout)
    assert (got["entries"], got["refused"]) == (3, 2)
    assert "refused: 2 entries the harness did not write" in text.stdout
    out = json.loads(explain.stdout)
    assert out["refused"] == 2 and out["nearest"] is not None
    clear = _harness("cache", "clear", "--cache-dir", root, "-y")
    assert clear.returncode == 0 and "removed 3 entries" in clear.stdout, clear.stdout + clear.stderr
    assert not marker.exists()


def test_a_pickled_value_runs_nothing_in_the_viewer(tmp_path):
    """The server, `--bundle` and `--cache`: the call shows one message naming the cache; the page goes on."""
    folder = tmp_path / "run"
    llm, marker = folder / "cache" / "llm", tmp_path / "MARKER"
    key = _entry(llm, "an honest reply")
    other = _entry(llm, "the other reply", content="another prompt")
    _plant(llm, key, Runs(marker))
    assert _ran_under_diskcache(llm, marker, lambda dc: dc.get(key))
    _results(folder, key, str(llm))
    note, calls = _shown(folder)
    assert not marker.exists()
    assert note is None and "reply" not in calls[0]
    assert "pickle mode" in calls[0]["missing"] and str(llm) in calls[0]["missing"]
    assert "pickle mode" in _bundle(folder, tmp_path / "bundle")
    assert not marker.exists()
    assert "pickle mode" in _bundle(folder, tmp_path / "bundle2", "--cache", str(folder / "cache"))
    assert not marker.exists()
    # the same folder's honest entry is shown (the normal path), its cache named as written on another
    # machine and matched inside the folder: equal to an independent read
    _results(folder, other, "/home/alice/run/cache/llm")
    _, calls = _shown(folder)
    assert calls[0]["reply"] == LLMCache(llm).get(other)["reply"]["text"] == "the other reply"


# -- file names -------------------------------------------------------------------------------------
def _point_file(llm: Path, key: str, filename: str) -> None:
    """Rename the value file of ``key``'s row (as a hand-edited database would)."""
    con = sqlite3.connect(llm / "cache.db")
    try:
        with con:
            assert con.execute("UPDATE Cache SET filename = ? WHERE key = ?", (filename, key)).rowcount == 1
    finally:
        con.close()


def _large(llm: Path) -> tuple[str, dict[str, Any]]:
    """An honest entry large enough for a value file; (its key, the JSON of an entry for that key whose
    reply is the canary)."""
    payload = {"provider": "openai-compatible", "model": "m", "messages": [{"role": "user", "content": "p"}],
               "options": {}}
    key = key_of(payload)
    c = LLMCache(llm)
    try:
        c.set(key, payload, Reply(text="x" * 40_000))
        assert c.get(key)["reply"]["text"] == "x" * 40_000  # read back from its value file
    finally:
        c.close()
    return key, {"key": payload, "reply": Reply(text=CANARY).to_dict(), "created": 0}


@pytest.mark.parametrize("how", ["traversal", "absolute", "symlinked-folder"])
def test_a_value_file_outside_the_cache_is_never_read_nor_removed(tmp_path, how):
    folder = tmp_path / "run"
    llm = folder / "cache" / "llm"
    key, forged = _large(llm)
    secret = tmp_path / "outside_secret.json"
    secret.write_text(json.dumps(forged))
    if how == "traversal":
        name = os.path.relpath(secret, llm)  # ../../../outside_secret.json
        assert name == "../../../outside_secret.json"
    elif how == "absolute":
        name = str(secret)
    else:
        (tmp_path / "elsewhere" / "cd").mkdir(parents=True)
        (tmp_path / "elsewhere" / "cd" / ("0" * 28 + ".val")).write_text(json.dumps(forged))
        sub = next(f"{i:02x}" for i in range(256) if not (llm / f"{i:02x}").exists())  # not diskcache's own
        (llm / sub).symlink_to(tmp_path / "elsewhere")
        name = f"{sub}/cd/" + "0" * 28 + ".val"
    _point_file(llm, key, name)
    if how != "symlinked-folder":  # control: diskcache's own reading shows the outside file
        dc = diskcache.Cache(str(llm))
        assert CANARY in dc.get(key)
        dc.close()
    _results(folder, key, str(llm))
    note, calls = _shown(folder)
    assert CANARY not in json.dumps(calls) and CANARY not in _bundle(folder, tmp_path / "bundle")
    assert "outside the cache folder" in calls[0]["missing"] or "not one diskcache gives" in calls[0]["missing"]
    assert LLMCache(llm).get(key) is None
    clear = _harness("cache", "clear", "--cache-dir", str(folder / "cache"), "-y")
    assert clear.returncode == 0 and "removed 1 entries" in clear.stdout, clear.stdout + clear.stderr
    assert secret.read_text() == json.dumps(forged)  # diskcache's own clear would have deleted it
    if how == "symlinked-folder":
        assert (tmp_path / "elsewhere" / "cd" / ("0" * 28 + ".val")).exists()


def test_an_entry_that_is_not_the_harness_encoding_is_refused(tmp_path):
    """Text that is not an entry, an entry for another request, a reply of the wrong type: refused."""
    llm = tmp_path / "llm"
    key = _entry(llm, "honest")
    other_payload = {"provider": "openai-compatible", "model": "m", "messages": [{"role": "user", "content": "b"}]}
    bad = {"not json": "{", "another request": json.dumps({"key": other_payload, "reply": {"text": "x"}}),
           "a number": json.dumps({"key": {}, "reply": {"text": 5}}), "deep": "[" * 100_000}
    for text in bad.values():
        _plant(llm, key, text)
        c = LLMCache(llm)
        try:
            assert c.get(key) is None and c.refused == 1
        finally:
            c.close()


# -- where the viewer looks -------------------------------------------------------------------------
@pytest.mark.parametrize("named", ["absolute", "relative-up"])
def test_a_cache_outside_the_results_folder_is_never_opened(tmp_path, named):
    outside = tmp_path / "outside-cache" / "llm"
    key = _entry(outside, CANARY)
    folder = tmp_path / "results" / "run"
    name = str(outside) if named == "absolute" else "../../outside-cache/llm"
    _results(folder, key, name)
    before = _snapshot(outside)
    note, calls = _shown(folder)
    assert CANARY not in json.dumps(calls) and CANARY not in _bundle(folder, tmp_path / "bundle")
    assert "harness view --cache DIR" in note
    assert _snapshot(outside) == before
    # named by the user, it is opened
    _, calls = _shown(folder, cache_dir=outside.parent)
    assert calls[0]["reply"] == CANARY


def test_the_viewer_creates_and_changes_nothing_in_a_cache(tmp_path):
    """An empty cache folder (given with --cache, or held by the results folder) stays empty; a cache
    without entries, and one with, are read without a file created or changed (no -wal, no -shm)."""
    empty, folder = tmp_path / "empty", tmp_path / "run"
    empty.mkdir()
    (folder / "cache" / "llm").mkdir(parents=True)
    _results(folder, "a" * 64, "cache/llm")
    empty_note, _ = _shown(folder, cache_dir=empty)
    _bundle(folder, tmp_path / "bundle", "--cache", str(empty))
    _shown(folder)
    assert list(empty.iterdir()) == [] and list((folder / "cache" / "llm").iterdir()) == []
    held = folder / "cache" / "llm"
    made = LLMCache(held)  # a cache without entries: cache.db alone
    assert len(made) == 0
    made.close()
    before = _snapshot(held)
    assert sorted(before) == ["cache.db"]
    _results(folder, "a" * 64, str(held))
    note, calls = _shown(folder)
    _bundle(folder, tmp_path / "bundle1")
    assert _snapshot(held) == before
    assert note is None and calls[0]["missing"] == "not in the LLM cache"
    llm = tmp_path / "cache" / "llm"
    key = _entry(llm, "shown")
    before = _snapshot(llm)
    assert sorted(before) == ["cache.db"]
    _results(folder, key, str(llm))
    _, calls = _shown(folder, cache_dir=llm)
    bundle = _bundle(folder, tmp_path / "bundle2", "--cache", str(llm))
    assert _snapshot(llm) == before
    assert calls[0]["reply"] == "shown" and "shown" in bundle
    assert "no LLM cache in" in empty_note


# -- the database -----------------------------------------------------------------------------------
def test_settings_that_would_move_the_cache_are_refused(tmp_path, llm_double):
    """diskcache applies every row of its Settings table as an attribute: ``_directory`` moves the
    database elsewhere. The harness refuses such a cache with one message and writes nothing there."""
    llm, elsewhere = tmp_path / "cache" / "llm", tmp_path / "elsewhere"
    key = _entry(llm, "honest")
    elsewhere.mkdir()
    con = sqlite3.connect(llm / "cache.db")
    with con:
        con.execute("INSERT INTO Settings VALUES ('_directory', ?)", (str(elsewhere),))
    con.close()
    dc = diskcache.Cache(str(llm), eviction_policy="none", tag_index=True)  # control: what the harness did before
    with pytest.raises(sqlite3.OperationalError):  # connected to elsewhere/cache.db, which it created
        dc.set("k", "v")
    dc.close()
    assert (elsewhere / "cache.db").exists()
    (elsewhere / "cache.db").unlink()
    with TestServer(reply=identity) as srv:
        for args in (["cache", "info"], ["cache", "clear", "-y"],
                     ["eval", "--task", "demo", "--reranker", llm_double, "--llm", srv.spec("m"), "--quiet"]):
            res = _harness(*args, "--cache-dir", str(tmp_path / "cache"))
            assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
            assert "is not a cache the harness wrote" in res.stderr and "'_directory'" in res.stderr
        assert srv.requests_total == 0
    assert list(elsewhere.iterdir()) == []
    con = sqlite3.connect(llm / "cache.db")
    with con:
        con.execute("DELETE FROM Settings WHERE key = '_directory'")
        con.execute("CREATE VIEW Extra AS SELECT 1")
    con.close()
    assert "defines a view" in _harness("cache", "info", "--cache-dir", str(tmp_path / "cache")).stderr
    folder = _results(tmp_path / "run", key, "x")
    note, _ = _shown(folder, cache_dir=llm)
    assert "defines a view" in note
