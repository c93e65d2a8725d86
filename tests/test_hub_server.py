"""The Hub imitation answers as the Hub does on the routes and errors clients rely on."""

from __future__ import annotations

import hashlib
import http.client
import json
import urllib.parse

import pytest

from harness.testing import HubServer


def ask(url: str, method: str = "GET", headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.netloc, timeout=30)
    conn.request(method, parts.path + (f"?{parts.query}" if parts.query else ""), headers=headers or {})
    resp = conn.getresponse()
    body = resp.read()
    conn.close()
    return resp.status, dict(resp.headers), body


@pytest.fixture
def hub():
    with HubServer(lfs_threshold=100) as server:
        yield server


def test_files_ranges_and_lfs_redirects(hub: HubServer) -> None:
    big = bytes(range(256)) * 2
    commit = hub.add_repo("o/r", {"a.txt": "hello", "d/big.bin": big})
    status, head, _ = ask(hub.file_url("o/r", "a.txt"), "HEAD")
    blob = hashlib.sha1(b"blob 5\0hello").hexdigest()  # git's blob id, the Hub's ETag of a regular file
    assert (status, head["X-Repo-Commit"], head["ETag"], head["Content-Length"]) == (200, commit, f'"{blob}"', "5")
    status, head, body = ask(hub.file_url("o/r", "a.txt", commit), headers={"Range": "bytes=1-"})
    assert (status, body, head["Content-Range"]) == (206, b"ello", "bytes 1-4/5")
    assert ask(hub.file_url("o/r", "a.txt"), headers={"Range": "bytes=9-"})[0] == 416
    status, head, _ = ask(hub.file_url("o/r", "d/big.bin"), "HEAD")
    assert status == 302 and head["X-Linked-Size"] == str(len(big))
    assert head["X-Linked-Etag"] == f'"{hashlib.sha256(big).hexdigest()}"'
    assert head["Location"].startswith(hub.lfs_endpoint) and hub.lfs_endpoint != hub.endpoint
    assert ask(head["Location"])[2] == big
    hub.cut_once("d/big.bin")
    with pytest.raises(http.client.IncompleteRead) as cut:  # the full length announced, half of it sent
        ask(head["Location"])
    assert cut.value.partial == big[: len(big) // 2] and hub.cuts_done == 1
    assert ask(head["Location"])[2] == big  # once


def test_errors_carry_the_hubs_codes(hub: HubServer) -> None:
    commit = hub.add_repo("o/gated", {"x": "1"}, gated=True, token="hf_right")
    cases = [(hub.file_url("o/none", "x"), {}, 404, "RepoNotFound"),
             (hub.file_url("o/gated", "x", commit[:8]), {"Authorization": "Bearer hf_right"}, 404, "RevisionNotFound"),
             (hub.file_url("o/gated", "y"), {"Authorization": "Bearer hf_right"}, 404, "EntryNotFound"),
             (hub.file_url("o/gated", "x"), {}, 401, "GatedRepo"),
             (hub.file_url("o/gated", "x"), {"Authorization": "Bearer hf_wrong"}, 403, "GatedRepo")]
    for url, headers, status, code in cases:
        got, head, _ = ask(url, "HEAD", headers)
        assert (got, head.get("X-Error-Code")) == (status, code), url
    assert ask(hub.file_url("o/gated", "x"), headers={"Authorization": "Bearer hf_right"})[2] == b"1"
    assert all("hf_right" not in json.dumps(r.__dict__) for r in hub.requests)  # the token is never kept


def test_info_and_tree_routes(hub: HubServer) -> None:
    commit = hub.add_repo("o/r", {"a.txt": "hello", "q/test.jsonl": "{}", "q/test.tsv": "x"}, lfs=["a.txt"])
    status, _, body = ask(f"{hub.endpoint}/api/datasets/o/r/revision/main?blobs=true")
    info = json.loads(body)
    assert status == 200 and info["sha"] == commit
    assert [s["rfilename"] for s in info["siblings"]] == ["a.txt", "q/test.jsonl", "q/test.tsv"]
    assert info["siblings"][0]["lfs"]["sha256"] == hashlib.sha256(b"hello").hexdigest()
    tree = json.loads(ask(f"{hub.endpoint}/api/datasets/o/r/tree/{commit}")[2])
    assert [(e["type"], e["path"]) for e in tree] == [("file", "a.txt"), ("directory", "q")]
    tree = json.loads(ask(f"{hub.endpoint}/api/datasets/o/r/tree/main/q")[2])
    assert [(e["path"], e["size"]) for e in tree] == [("q/test.jsonl", 2), ("q/test.tsv", 1)]
    assert ask(f"{hub.endpoint}/api/datasets/o/r/tree/main/nope")[1].get("X-Error-Code") == "EntryNotFound"
