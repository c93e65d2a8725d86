"""``harness view`` against hostile folders and clients: every field of the files it reads is
type-checked (one message naming file, line and field, in the server and in ``--bundle``); the
bundle writes only inside its folder (never through a link, never into a folder that is not a
bundle); the server cuts slow clients, bounds its connections, wants one ``Host`` header and prints
no traceback for clients that reset. Real server on 127.0.0.1, raw sockets."""

from __future__ import annotations

import http.client
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from click.testing import CliRunner

from harness.cli import cli
from harness.concepts.errors import HarnessError
from harness.testing.synthetic import write_results_folder
from harness.view.catalog import Catalog
from harness.view.server import ViewServer
from tests.view_fixtures import serving

QIDS = ("q1", "q2", "q3")
KEY = "ab" * 32


def _folder(root: Path) -> Path:
    """A results folder with every file the viewer reads, all well-formed."""
    folder = write_results_folder(root / "run", "demo", {q: {"nDCG@10": 0.25 * (i + 1)} for i, q in enumerate(QIDS)},
                                  rankings=3)
    rows = {
        "queries.jsonl": [{"mode": "default", "query_id": q, "text": f"text of {q}", "instruction": None}
                          for q in QIDS],
        "qrels.jsonl": [{"mode": "default", "query_id": q, "doc_id": f"{q}-default-d1", "grade": 1} for q in QIDS],
        "llm_calls.jsonl": [{"query_id": q, "component": "m", "key": KEY, "cached": False, "error": None,
                             "cache": None} for q in QIDS],
        "judgments.jsonl": [{"mode": "default", "query_id": q, "doc_id": f"{q}-default-d2", "score": 0.5,
                             "details": {"reply": "yes"}} for q in QIDS],
    }
    for name, lines in rows.items():
        _write_rows(folder / name, lines)
    data = json.loads((folder / "results.json").read_text())
    data["files"]["judgments"] = "judgments.jsonl"
    (folder / "results.json").write_text(json.dumps(data))
    return folder


def _write_rows(path: Path, rows: list) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _raw(port: int, data: bytes, timeout: float = 30) -> bytes:
    """Send ``data`` on a new connection and read the reply to its end."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


@contextmanager
def _running(srv: ViewServer) -> Iterator[int]:
    """``srv`` serving in a thread for the block; its port."""
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv.server_address[1]
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join()


def _get(port: int, path: str) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path)
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


# -- every field type-checked -------------------------------------------------------------------

def _edit_rows(name: str, line: int, field: str, value: object):
    def edit(folder: Path) -> None:
        path = folder / name
        rows = [json.loads(x) for x in path.read_text().splitlines()]
        rows[line - 1][field] = value
        _write_rows(path, rows)
    return edit


def _edit_run(column: int, value: str):
    def edit(folder: Path) -> None:
        lines = (folder / "run.trec").read_text().splitlines()
        parts = lines[0].split()
        parts[column] = value
        lines[0] = " ".join(parts)
        (folder / "run.trec").write_text("\n".join(lines) + "\n")
    return edit


def _replace_line(name: str, line: int, text: str):
    def edit(folder: Path) -> None:
        lines = (folder / name).read_text().splitlines()
        lines[line - 1] = text
        (folder / name).write_text("\n".join(lines) + "\n")
    return edit


#: (case, edit, file, line, what the message names)
BAD = [
    ("queries query_id list", _edit_rows("queries.jsonl", 2, "query_id", ["q2"]), "queries.jsonl", 2, "'query_id'"),
    ("queries query_id object", _edit_rows("queries.jsonl", 1, "query_id", {"q": 1}), "queries.jsonl", 1, "'query_id'"),
    ("queries text number", _edit_rows("queries.jsonl", 3, "text", 5), "queries.jsonl", 3, "'text'"),
    ("queries mode list", _edit_rows("queries.jsonl", 1, "mode", ["og"]), "queries.jsonl", 1, "'mode'"),
    ("queries same row twice", _edit_rows("queries.jsonl", 2, "query_id", "q1"), "queries.jsonl", 2, "line 1"),
    ("queries row a list", _replace_line("queries.jsonl", 2, '["q2", "text"]'), "queries.jsonl", 2, "JSON object"),
    ("qrels query_id list", _edit_rows("qrels.jsonl", 1, "query_id", ["q1"]), "qrels.jsonl", 1, "'query_id'"),
    ("qrels query_id object", _edit_rows("qrels.jsonl", 3, "query_id", {}), "qrels.jsonl", 3, "'query_id'"),
    ("qrels doc_id object", _edit_rows("qrels.jsonl", 2, "doc_id", {"d": 1}), "qrels.jsonl", 2, "'doc_id'"),
    ("qrels grade text", _edit_rows("qrels.jsonl", 1, "grade", "1"), "qrels.jsonl", 1, "'grade'"),
    ("qrels grade boolean", _edit_rows("qrels.jsonl", 1, "grade", True), "qrels.jsonl", 1, "'grade'"),
    ("qrels grade missing", _edit_rows("qrels.jsonl", 1, "grade", None), "qrels.jsonl", 1, "'grade'"),
    ("qrels grade out of range", _edit_rows("qrels.jsonl", 2, "grade", 3_000_000_000), "qrels.jsonl", 2, "'grade'"),
    ("llm_calls query_id list", _edit_rows("llm_calls.jsonl", 2, "query_id", ["q2"]), "llm_calls.jsonl", 2,
     "'query_id'"),
    ("llm_calls query_id object", _edit_rows("llm_calls.jsonl", 1, "query_id", {"a": []}), "llm_calls.jsonl", 1,
     "'query_id'"),
    ("llm_calls key list", _edit_rows("llm_calls.jsonl", 1, "key", [KEY]), "llm_calls.jsonl", 1, "'key'"),
    ("llm_calls cached text", _edit_rows("llm_calls.jsonl", 3, "cached", "yes"), "llm_calls.jsonl", 3, "'cached'"),
    ("llm_calls cache object", _edit_rows("llm_calls.jsonl", 1, "cache", {"p": "/"}), "llm_calls.jsonl", 1, "'cache'"),
    ("judgments query_id list", _edit_rows("judgments.jsonl", 1, "query_id", ["q1"]), "judgments.jsonl", 1,
     "'query_id'"),
    ("judgments score text", _edit_rows("judgments.jsonl", 2, "score", "0.5"), "judgments.jsonl", 2, "'score'"),
    ("run rank with _", _edit_run(3, "1_00"), "run.trec", 1, "'rank'"),
    ("run rank in another script", _edit_run(3, "\u0661"), "run.trec", 1, "'rank'"),
    ("run score with _", _edit_run(4, "1_0"), "run.trec", 1, "'score'"),
    ("run score infinite", _edit_run(4, "1e999"), "run.trec", 1, "'score'"),
    ("run line of 5 fields", _edit_run(5, ""), "run.trec", 1, "6 fields"),
]


@pytest.mark.parametrize("case,edit,name,line,names", BAD, ids=[b[0] for b in BAD])
def test_a_field_of_the_wrong_type_is_one_message_and_the_server_goes_on(tmp_path, capfd, case, edit, name, line,
                                                                          names):
    folder = _folder(tmp_path)
    with serving([folder]) as srv:
        port = srv.server_address[1]
        assert _get(port, "/api/query/r1/q1.json")[0] == 200  # the honest folder is shown
    edit(folder)
    expected = f"{folder / name}:{line}: "
    with serving([folder]) as srv:
        port = srv.server_address[1]
        status, body = _get(port, "/api/query/r1/q1.json")
        assert status == 422, body
        message = json.loads(body)["error"]
        assert message.startswith(expected) and names in message, message
        assert _get(port, "/api/runs.json")[0] == 200  # still serving
        assert _get(port, "/api/query/r1/q1.json")[0] == 422  # the same message again, not a dead thread
    assert "Traceback" not in capfd.readouterr().err
    r = CliRunner().invoke(cli, ["view", "--bundle", str(tmp_path / "b"), str(folder)])
    assert r.exit_code == 2 and r.output.count("Error:") == 1 and "Traceback" not in r.output, r.output
    assert expected in r.output and names in r.output
    assert not (tmp_path / "b").exists()  # a failed bundle leaves nothing behind


@pytest.mark.parametrize("field,value", [
    ("llm_failures", [1]), ("llm_failures", {"per_query": ["q1"]}), ("llm_failures", {"per_query": {"q1": "2"}}),
    ("llm_failures", {"complete": "no"}), ("llm_failures", {"examples": {"error": "x"}}), ("status", ["x"]),
    ("counts", [1]), ("created", {"y": 1}),
], ids=lambda v: json.dumps(v) if not isinstance(v, str) else v)
def test_a_results_field_of_the_wrong_type_is_one_message(tmp_path, field, value):
    folder = _folder(tmp_path)
    data = json.loads((folder / "results.json").read_text())
    data[field] = value
    (folder / "results.json").write_text(json.dumps(data))
    expected = f"{folder / 'results.json'}: field {field}"
    with pytest.raises(HarnessError) as refused:  # what the server reads before it listens
        Catalog([folder])
    assert str(refused.value).startswith(expected)
    r = CliRunner().invoke(cli, ["view", "--bundle", str(tmp_path / "b"), str(folder)])
    assert r.exit_code == 2 and r.output.count("Error:") == 1 and "Traceback" not in r.output, r.output
    assert expected in r.output and not (tmp_path / "b").exists()


def test_the_honest_files_read_as_written(tmp_path):
    folder = _folder(tmp_path)
    q = Catalog([folder]).query_payload("r1", "q2")
    assert q["queries"] == {"default": {"text": "text of q2", "instruction": None}}
    assert q["qrels"] == {"default": {"q2-default-d1": 1.0}}
    assert q["judgments"] == [{"mode": "default", "query_id": "q2", "doc_id": "q2-default-d2", "score": 0.5,
                               "details": {"reply": "yes"}}]
    assert [c["key"] for c in q["llm_calls"]] == [KEY]
    assert q["rankings"]["final[default]"] == [[f"q2-default-d{r}", r, pytest.approx(1 / r, abs=1e-6)]
                                               for r in (1, 2, 3)]


# -- the bundle writes only inside its folder ---------------------------------------------------

def _snapshot(root: Path) -> dict[str, object]:
    """Every path under ``root`` with its kind and bytes (links not followed)."""
    out: dict[str, object] = {}
    for dirpath, dirs, files in os.walk(root):
        for n in dirs + files:
            p = Path(dirpath) / n
            out[str(p.relative_to(root))] = ("link", os.readlink(p)) if p.is_symlink() else \
                ("dir",) if p.is_dir() else ("file", p.read_bytes())
    return out


def _canary(tmp_path: Path) -> Path:
    canary = tmp_path / "canary"
    (canary / "data").mkdir(parents=True)
    (canary / "index.html").write_text("canary page")
    (canary / "app.js").write_text("canary script")
    (canary / "data" / "bundle.js").write_text("canary data")
    return canary


def _bundle(args: list[str]):
    return CliRunner().invoke(cli, ["view", "--bundle", *args])


def test_links_in_an_existing_bundle_write_nothing_outside(tmp_path):
    folder = _folder(tmp_path)
    canary = _canary(tmp_path)
    before = _snapshot(canary)
    out = tmp_path / "b"
    assert _bundle([str(out), str(folder)]).exit_code == 0
    import shutil

    shutil.rmtree(out / "static")
    (out / "static").symlink_to(canary, target_is_directory=True)  # app.js would land in the canary
    (out / "index.html").unlink()
    (out / "index.html").symlink_to(canary / "index.html")
    (out / "data" / "run").rename(out / "data" / "run-old")
    (out / "data" / "run").symlink_to(canary / "data", target_is_directory=True)
    refused = _bundle([str(out), str(folder)])
    assert refused.exit_code == 2 and "--overwrite" in refused.output and refused.output.count("Error:") == 1
    r = _bundle([str(out), str(folder), "--overwrite"])
    assert r.exit_code == 0, r.output
    assert _snapshot(canary) == before  # nothing written, nothing removed outside
    for name in ("static", "index.html", "data", "data/run"):
        assert not (out / name).is_symlink()
    assert (out / "static" / "app.js").is_file() and (out / "data" / "run" / "r1.js").is_file()
    # the whole bundle a link: refused, the folder it names untouched
    (tmp_path / "link").symlink_to(canary, target_is_directory=True)
    r = _bundle([str(tmp_path / "link"), str(folder), "--overwrite"])
    assert r.exit_code == 2 and "symbolic link" in r.output and _snapshot(canary) == before


def test_data_linked_out_is_removed_not_followed(tmp_path):
    folder = _folder(tmp_path)
    canary = _canary(tmp_path)
    out = tmp_path / "b"
    assert _bundle([str(out), str(folder)]).exit_code == 0
    import shutil

    shutil.rmtree(out / "data")
    (out / "data").symlink_to(canary / "data", target_is_directory=True)  # the old code removed data/ first
    before = _snapshot(canary)
    assert _bundle([str(out), str(folder), "--overwrite"]).exit_code == 0
    assert _snapshot(canary) == before and (out / "data" / "bundle.js").is_file()


@pytest.mark.parametrize("kind", ["not a bundle", "marker a link", "a file", "a forged old bundle"])
def test_a_folder_that_is_not_a_bundle_is_refused(tmp_path, kind):
    folder = _folder(tmp_path)
    canary = _canary(tmp_path)
    out = tmp_path / "b"
    if kind == "a file":
        out.write_text("keep")
    else:
        out.mkdir()
        (out / "notes.txt").write_text("keep")
        if kind == "marker a link":
            (out / ".harness-view-bundle").symlink_to(canary / "index.html")
            (out / "static").symlink_to(canary, target_is_directory=True)
        if kind == "a forged old bundle":  # what the old code took for a bundle
            (out / "data").mkdir()
            (out / "data" / "bundle.js").write_text("x")
            (out / "static").symlink_to(canary, target_is_directory=True)
    before, canary_before = _snapshot(tmp_path / "b") if out.is_dir() else out.read_bytes(), _snapshot(canary)
    for extra in ([], ["--overwrite"]):
        r = _bundle([str(out), str(folder), *extra])
        assert r.exit_code == 2 and r.output.count("Error:") == 1 and "Traceback" not in r.output, r.output
    assert (_snapshot(out) if out.is_dir() else out.read_bytes()) == before
    assert _snapshot(canary) == canary_before


def test_an_empty_folder_is_used_and_overwrite_needs_a_bundle(tmp_path):
    folder = _folder(tmp_path)
    (tmp_path / "empty").mkdir()
    assert _bundle([str(tmp_path / "empty"), str(folder)]).exit_code == 0
    assert (tmp_path / "empty" / ".harness-view-bundle").is_file()
    r = CliRunner().invoke(cli, ["view", str(folder), "--overwrite"])
    assert r.exit_code == 2 and "--bundle" in r.output


# -- the server ---------------------------------------------------------------------------------

def _request(host_lines: str) -> bytes:
    return f"GET /api/runs.json HTTP/1.1\r\n{host_lines}Connection: close\r\n\r\n".encode()


def test_exactly_one_host_header(tmp_path):
    folder = _folder(tmp_path)
    with serving([folder]) as srv:
        port = srv.server_address[1]
        local = f"Host: 127.0.0.1:{port}\r\n"
        assert _raw(port, _request(local)).startswith(b"HTTP/1.0 200")
        for hosts in (local + "Host: evil.example\r\n", local + local, "Host: evil.example\r\n" + local, ""):
            reply = _raw(port, _request(hosts))
            assert reply.startswith(b"HTTP/1.0 400"), (hosts, reply[:200])
            assert b'"runs"' not in reply
        assert _raw(port, _request("Host: evil.example\r\n")).startswith(b"HTTP/1.0 403")  # the rebinding check stays


def _slow(port: int, data: bytes) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(data)
    return s


def _closed_by_server(s: socket.socket) -> bool:
    """True when the server ended the connection (EOF, a reset or a 503), within the socket's timeout."""
    try:
        data = s.recv(65536)
    except ConnectionError:
        return True
    except TimeoutError:
        return False
    return data == b"" or data.startswith(b"HTTP/1.0 503") or _closed_by_server(s)


def test_slow_clients_are_cut_and_never_starve_the_server(tmp_path):
    folder = _folder(tmp_path)
    srv = ViewServer(Catalog([folder]), request_timeout=1.0, max_connections=8)
    slow: list[socket.socket] = []
    with _running(srv) as port:
        try:
            for i in range(20):  # headers begun and never finished
                slow.append(_slow(port, f"GET /api/runs.json HTTP/1.1\r\nHost: 127.0.0.1\r\nX-{i}: ".encode()))
            status, body = _get(port, "/api/runs.json")
            assert status == 200 and json.loads(body)["runs"]  # a new client is served at once
            assert len(srv.connections) <= 8  # never more than the bound open
            assert sum(_closed_by_server(s) for s in slow) == 20  # every slow client cut (the bound, the timeout)
        finally:
            for s in slow:
                s.close()
        # a client that trickles a byte every 0.2 s is cut by the deadline on the whole request
        s = _slow(port, b"G")
        sent = 1
        try:
            for _ in range(150):
                time.sleep(0.2)
                s.send(b"E")
                sent += 1
        except OSError:
            pass
        finally:
            s.close()
        assert sent < 150, "a trickling client held the connection for 30 s"
        assert _get(port, "/api/runs.json")[0] == 200


def _reset(s: socket.socket) -> None:
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close sends RST
    s.close()


def test_the_command_survives_slow_and_reset_clients_without_a_traceback(tmp_path):
    folder = _folder(tmp_path)
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "harness.cli", "view", str(folder)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, line
        port = int(line.split("http://127.0.0.1:")[1].split("/")[0])
        slow = [_slow(port, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n") for _ in range(20)]
        assert _get(port, "/api/runs.json")[0] == 200  # 20 slow connections starve nothing
        for path in ("/api/run/r1.json", "/api/query/r1/q1.json", "/static/app.js", "/"):
            for _ in range(5):
                s = socket.create_connection(("127.0.0.1", port), timeout=30)
                _reset(s)  # reset before a byte
                s = _slow(port, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
                _reset(s)  # reset right after the request, before the reply is read
                s = _slow(port, f"GET {path} HTTP/1.1\r\nHo".encode())
                _reset(s)  # reset in the middle of the headers
        s = _slow(port, b"GET /static/app.js HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        s.recv(100)
        _reset(s)  # reset in the middle of the reply
        for s in slow:
            _reset(s)
        status, body = _get(port, "/api/query/r1/q1.json")
        assert status == 200 and json.loads(body)["query_id"] == "q1"
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=30)
    assert "Traceback" not in err and "Exception" not in err, err
    assert len(err.splitlines()) <= 1, err


class _Broken(Catalog):
    """A catalog with a defect: the run page raises what no check expects."""

    def run_payload(self, rid: str) -> dict:
        raise ZeroDivisionError("a defect")


def test_a_defect_is_one_message_and_one_line(tmp_path, capfd):
    with _running(ViewServer(_Broken([_folder(tmp_path)]))) as port:
        status, body = _get(port, "/api/run/r1.json")
        assert status == 500 and json.loads(body)["error"] == "ZeroDivisionError: a defect"
        assert _get(port, "/api/runs.json")[0] == 200
    err = capfd.readouterr().err
    assert "Traceback" not in err and err.count("ZeroDivisionError: a defect") == 1, err
