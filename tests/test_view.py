"""``harness view``: the server's data API against the results files, the untrusted-folder rules
(path traversal, only the folders given, files that leave their folder), escaping of payloads, the
static bundle and the command line."""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

import harness
from harness.cli import cli
from harness.concepts.errors import HarnessError
from harness.served.reply_cache import LLMCache
from harness.testing import requires_plugin
from harness.view.bundle import write_bundle
from harness.view.catalog import Catalog
from tests.view_fixtures import (
    FOLDER_IMG,
    JS,
    QIDS,
    SCRIPT,
    TEXT,
    demo_rankgpt,
    payload_folder,
    read_jsonl,
    read_run,
    reversed_window,
    serving,
)

CANARY = "root:x:0:0:canary-outside-the-folder"


def _get(srv, path: str, host: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """A raw GET (the path sent as is: no client-side normalisation of '..')."""
    conn = http.client.HTTPConnection(*srv.server_address[:2], timeout=30)
    try:
        conn.putrequest("GET", path, skip_host=host is not None)
        if host is not None:
            conn.putheader("Host", host)
        conn.endheaders()
        r = conn.getresponse()
        return r.status, dict(r.getheaders()), r.read()
    finally:
        conn.close()


def _api(srv, path: str):
    status, _, body = _get(srv, path)
    assert status == 200, body
    return json.loads(body)


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory):
    """Two real demo runs: BM25 and tuned BM25, with the metrics tables the CLI printed."""
    root = tmp_path_factory.mktemp("view-demo")
    printed = {}
    for name, spec in (("bm25", "bm25"), ("tuned", "bm25:k1=0.9,b=0.4")):
        r = CliRunner().invoke(cli, ["eval", "--task", "demo", "--retriever", spec, "-o", str(root / name)])
        assert r.exit_code == 0, r.output
        printed[name] = r.output
    return root, printed


def test_runs_and_a_run_match_the_results_files(demo_runs):
    root, printed = demo_runs
    with serving([root]) as srv:
        runs = _api(srv, "/api/runs.json")["runs"]
        assert [r["label"] for r in runs] == ["bm25", "tuned"]
        for r in runs:
            data = json.loads((root / r["label"] / "results.json").read_text())
            assert r["task"] == "demo" and r["status"] == "complete" and r["created"] == data["created"]
            assert r["main_metric"] == "nDCG@10" and r["main_value"] == data["metrics"]["nDCG@10"]
            assert r["components"] == data["components"]["retriever"]["spec"]
        assert round(runs[0]["main_value"], 4) == 0.7491  # the published demo figure
        run = _api(srv, f"/api/run/{runs[0]['id']}.json")
        assert run["table"] in printed["bm25"]  # the metrics table as `harness eval` printed it
        rows = read_jsonl(root / "bm25" / "per_query.jsonl")
        pq = run["per_query"]
        assert pq["qids"] == [row["query_id"] for row in rows]
        for m, col in zip(pq["metrics"], pq["columns"]):
            assert col == [row[m] for row in rows]
        assert pq["failures"] == [0] * len(rows)


def test_a_query_shows_its_text_grades_and_both_rankings(demo_runs):
    root, _ = demo_runs
    ds = harness.load_dataset("demo")
    (mode,) = ds.modes
    with serving([root / "bm25"]) as srv:
        for qid in ("q1", "q7"):
            q = _api(srv, f"/api/query/r1/{qid}.json")
            expect = read_run(root / "bm25" / "run.trec")[qid]
            assert q["rankings"]["final[default]"] == [[d, r, s] for d, r, s in expect]
            assert q["queries"]["default"]["text"] == ds.queries[mode][qid].text
            assert q["queries"]["default"]["instruction"] == ds.queries[mode][qid].instruction
            assert q["qrels"]["default"] == {d: float(g) for d, g in ds.qrels[mode][qid].items()}
            assert q["first_stage"] is False  # no run.first_stage.trec: the page says so
            assert q["llm_note"].startswith("this results folder records no LLM calls")
        status, _, _ = _get(srv, "/api/query/r1/no-such-query.json")
        assert status == 404


def test_first_stage_run_is_shown_when_present(demo_runs, tmp_path):
    import shutil

    src = tmp_path / "run"
    shutil.copytree(demo_runs[0] / "bm25", src)
    lines = (src / "run.trec").read_text().splitlines()
    (src / "run.first_stage.trec").write_text("\n".join(reversed(lines)) + "\n")  # any order: sorted by rank
    q = Catalog([src]).query_payload("r1", "q2")
    assert q["first_stage"] is True
    assert q["rankings"]["first_stage[default]"] == q["rankings"]["final[default]"]


@requires_plugin("harness-rankgpt")  # RankGPT's windows: the calls a component logs per query
def test_llm_calls_recorded_per_query_and_read_from_the_cache(tmp_path, monkeypatch):
    from harness.testing import TestServer

    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    srv = TestServer(reply=reversed_window).start()
    try:
        _llm_calls(tmp_path, srv)
    finally:
        srv.stop()


def _llm_calls(tmp_path, srv):
    res, requests = demo_rankgpt(tmp_path / "run", srv)
    calls = read_jsonl(tmp_path / "run" / "llm_calls.jsonl")
    stats = res.components["rerankers"][0]["stats"]
    assert len(calls) == len(requests) == stats["windows"] > 0
    assert {c["query_id"] for c in calls} == set(res.runs["default"])
    assert not any(c["cached"] or c["error"] for c in calls)
    cache = LLMCache(tmp_path / "cache" / "llm")
    sent = {json.dumps(r["messages"], sort_keys=True) for r in requests}
    for c in calls:  # every recorded key is the cached entry of a request the server received
        entry = cache.get(c["key"])
        assert entry is not None and json.dumps(entry["key"]["messages"], sort_keys=True) in sent
    # the cache lies outside the results folder: opened only when named (--cache), else a note says how
    assert all(c["cache"] == str(tmp_path / "cache" / "llm") for c in calls)
    alone = Catalog([tmp_path / "run"]).query_payload("r1", "q3")
    assert "--cache DIR" in alone["llm_note"] and not any("reply" in c for c in alone["llm_calls"])
    cat = Catalog([tmp_path / "run"], cache_dir=tmp_path / "cache")
    q = cat.query_payload("r1", "q3")
    mine = [c for c in calls if c["query_id"] == "q3"]
    assert [c["key"] for c in q["llm_calls"]] == [c["key"] for c in mine]
    for shown in q["llm_calls"]:
        assert "reply" in shown, shown
        assert shown["reply"] == reversed_window({"messages": shown["messages"]})
        assert "What is diabetes?" in shown["messages"][1]["content"]
    # a rerun is served from the cache: every call recorded as a hit
    _, again = demo_rankgpt(tmp_path / "run", srv)
    assert again == [] and all(c["cached"] for c in read_jsonl(tmp_path / "run" / "llm_calls.jsonl"))


def test_compare_matches_harness_compare(demo_runs):
    root, _ = demo_runs
    r = CliRunner().invoke(cli, ["compare", str(root / "bm25"), str(root / "tuned"), "--format", "json"])
    assert r.exit_code == 0, r.output
    expected = {m["metric"]: m["comparisons"][0] for m in json.loads(r.output)["results"]}
    with serving([root]) as srv:
        p = _api(srv, "/api/compare/r1/r2.json")
    got = {m["metric"]: m["comparisons"][0] for m in p["comparison"]["results"]}
    assert set(got) == set(expected)
    a = {row["query_id"]: row for row in read_jsonl(root / "bm25" / "per_query.jsonl")}
    b = {row["query_id"]: row for row in read_jsonl(root / "tuned" / "per_query.jsonl")}
    for metric, e in expected.items():
        for key in ("diff", "p_randomization", "p_t", "wins", "ties", "losses", "ci_low", "ci_high"):
            assert got[metric][key] == pytest.approx(e[key], abs=1e-12)
        (per,) = p["deltas"][metric]
        diffs = {q: b[q][metric] - a[q][metric] for q in a}
        assert {x[0]: x[3] for x in per["queries"]} == pytest.approx(diffs)
        assert [x[3] for x in per["queries"]] == sorted(diffs.values(), reverse=True)
        assert (per["wins"], per["ties"], per["losses"]) == (e["wins"], e["ties"], e["losses"])


@pytest.mark.parametrize("path", [
    "/../../etc/passwd", "/static/../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/etc/passwd",
    "/static/..%2f..%2f..%2fetc%2fpasswd", "/api/run/..%2f..%2f..%2fetc%2fpasswd.json",
    "/api/query/r1/..%2f..%2f..%2fetc%2fpasswd.json", "/api/../../../../etc/passwd.json",
    "/api/run/r1/../../../../etc/passwd.json", "//etc/passwd", "/static/app.js/../../../../etc/passwd",
])
def test_path_traversal_is_refused(demo_runs, path):
    with serving([demo_runs[0] / "bm25"]) as srv:
        status, headers, body = _get(srv, path)
    assert status == 404
    assert b"root:" not in body and b"demo" not in body
    assert headers["Content-Security-Policy"].startswith("default-src 'none'; script-src 'self'; style-src 'self'")


def test_only_the_folders_given_are_served(demo_runs, tmp_path):
    root, _ = demo_runs
    with serving([root / "bm25"]) as srv:
        runs = _api(srv, "/api/runs.json")["runs"]
        assert [r["label"] for r in runs] == ["bm25"]
        assert _get(srv, "/api/run/r2.json")[0] == 404
        assert _get(srv, "/api/compare/r1/r2.json")[0] == 404
    # a folder of folders: a sub-folder that is a link to a results folder elsewhere is not served
    parent = tmp_path / "parent"
    parent.mkdir()
    (parent / "outside").symlink_to(root / "tuned", target_is_directory=True)
    import shutil

    shutil.copytree(root / "bm25", parent / "inside")
    assert [r.label for r in Catalog([parent]).runs.values()] == ["inside"]


def test_a_file_outside_the_folder_is_never_read(demo_runs, tmp_path):
    import shutil

    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "calls.jsonl").write_text(json.dumps({"query_id": "q1", "key": CANARY}) + "\n")
    run = tmp_path / "run"
    shutil.copytree(demo_runs[0] / "bm25", run)
    (run / "llm_calls.jsonl").symlink_to(secret / "calls.jsonl")
    with serving([run]) as srv:
        status, _, body = _get(srv, "/api/query/r1/q1.json")
    assert status == 422 and b"outside the results folder" in body and CANARY.encode() not in body
    data = json.loads((run / "results.json").read_text())
    data["files"]["run[default]"] = "../secret/calls.jsonl"
    (run / "results.json").write_text(json.dumps(data))
    with pytest.raises(HarnessError, match="leaves the results folder"):
        Catalog([run])
    r = CliRunner().invoke(cli, ["view", "--bundle", str(tmp_path / "b"), str(run)])
    assert r.exit_code == 2 and r.output.count("Error:") == 1 and "Traceback" not in r.output
    assert CANARY not in r.output and not (tmp_path / "b").exists()


def test_payloads_are_escaped_in_every_json(tmp_path):
    cache = tmp_path / "cache"
    folder = payload_folder(tmp_path, cache)
    with serving([folder], cache_dir=cache) as srv:
        bodies = []
        for path in ["/api/runs.json", "/api/run/r1.json",
                     *(f"/api/query/r1/{urllib.request.quote(q, safe='')}.json" for q in QIDS)]:
            status, headers, body = _get(srv, path)
            assert status == 200, (path, body)
            assert headers["Content-Type"] == "application/json; charset=utf-8"
            assert headers["X-Content-Type-Options"] == "nosniff"
            assert b"<" not in body and b">" not in body  # no markup, whatever the reader sniffs
            bodies.append(json.loads(body))
    runs, run, *queries = bodies
    assert runs["runs"][0]["label"] == FOLDER_IMG and runs["runs"][0]["task"] == SCRIPT
    assert run["per_query"]["qids"] == QIDS
    for q, qid in zip(queries, QIDS):
        assert q["query_id"] == qid and q["queries"]["default"]["text"] == TEXT
        (call,) = q["llm_calls"]
        assert call["reply"] == TEXT and call["messages"][0]["content"] == TEXT and call["error"] == TEXT
    out = write_bundle(Catalog([folder], cache_dir=cache), tmp_path / "bundle", permutations=100)
    names = [p.relative_to(out / "data").as_posix() for p in (out / "data").rglob("*.js")]
    assert all(set(n) <= set("abcdefghijklmnopqrstuvwxyz0123456789_-/.") for n in names), names
    for p in (out / "data").rglob("*.js"):
        assert "<" not in p.read_text(encoding="utf-8")


def test_host_header_and_methods(demo_runs):
    with serving([demo_runs[0] / "bm25"]) as srv:
        status, _, _ = _get(srv, "/api/runs.json", host="evil.example:80")
        assert status == 403  # a DNS-rebinding page cannot read the API
        status, headers, body = _get(srv, "/")
        assert status == 200 and b'<main id="app">' in body
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"]
        conn = http.client.HTTPConnection(*srv.server_address[:2], timeout=30)
        conn.request("POST", "/api/runs.json", body=b"{}")
        assert conn.getresponse().status == 405
        conn.close()


def test_bundle_holds_the_same_payloads(demo_runs, tmp_path):
    root, _ = demo_runs
    r = CliRunner().invoke(cli, ["view", "--bundle", str(tmp_path / "b"), str(root), "-B", "200"])
    assert r.exit_code == 0, r.output
    out = tmp_path / "b"
    html = (out / "index.html").read_text()
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert "http:" not in html and "https:" not in html
    cat = Catalog([root])

    def put(path: Path) -> dict:
        text = path.read_text()
        assert text.startswith("HV.put(") and text.endswith(");\n")
        key, _, data = text[len("HV.put("):-3].partition(",")
        return {json.loads(key): json.loads(data)}

    assert put(out / "data" / "runs.js") == {"runs": json.loads(json.dumps(cat.runs_payload()))}
    run2 = put(out / "data" / "run" / "r2.js")["run/r2"]
    assert run2["per_query"]["qids"] == cat.run_payload("r2")["per_query"]["qids"]
    chunk = (out / "data" / "q" / "r1" / "0.js").read_text().splitlines()
    assert len(chunk) == 10 and chunk[0].startswith('HV.put("query/r1/q1",')
    assert (out / "data" / "compare" / "r1_r2.js").is_file() and (out / "data" / "compare" / "r2_r1.js").is_file()
    again = CliRunner().invoke(cli, ["view", "--bundle", str(tmp_path / "b"), str(root / "bm25"), "--overwrite"])
    assert again.exit_code == 0, again.output  # a bundle folder may be rewritten (with --overwrite)
    assert not (out / "data" / "run" / "r2.js").exists()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("x")
    refused = CliRunner().invoke(cli, ["view", "--bundle", str(tmp_path / "other"), str(root)])
    assert refused.exit_code == 2 and "not empty" in refused.output


def test_bad_input_is_one_message(tmp_path):
    for args in (["view", str(tmp_path / "missing")], ["view", str(tmp_path)]):
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 2 and r.output.count("Error:") == 1 and "Traceback" not in r.output


def test_cli_serves_on_loopback_and_prints_its_url(demo_runs):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "view", str(demo_runs[0] / "bm25")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, (line, proc.stderr.read() if proc.poll() is not None else "")
        url = line.split()[line.split().index("at") + 1]
        with urllib.request.urlopen(url + "api/runs.json", timeout=30) as resp:
            assert json.loads(resp.read())["runs"][0]["label"] == "bm25"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_javascript_payload_is_only_text_in_a_hash_link(tmp_path):
    """The page builds every link as '#/' + encoded ids: a 'javascript:' id stays inside the fragment."""
    js = (Path(harness.__file__).parent / "view" / "static" / "app.js").read_text()
    assert "innerHTML" not in js and "insertAdjacentHTML" not in js and "eval(" not in js
    assert "document.write" not in js and "new Function" not in js
    folder = payload_folder(tmp_path, tmp_path / "cache", name=JS)
    assert Catalog([folder]).runs_payload()["runs"][0]["label"] == JS


def test_judge_scores_per_document(demo_runs, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(demo_runs[0] / "bm25", run)
    top = read_run(run / "run.trec")["q2"][:3]
    rows = [{"mode": "default", "query_id": "q2", "doc_id": d, "score": i / 4, "details": {"reply": TEXT}}
            for i, (d, _, _) in enumerate(top)]
    (run / "judgments.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    data = json.loads((run / "results.json").read_text())
    data["files"]["judgments"] = "judgments.jsonl"
    (run / "results.json").write_text(json.dumps(data))
    q = Catalog([run]).query_payload("r1", "q2")
    assert q["judgments"] == rows
    assert Catalog([run]).query_payload("r1", "q1")["judgments"] == []
