"""Hub files through huggingface_hub, end to end, against the loopback Hub imitation.

Each command runs as a user runs it: ``python -m harness.cli`` in a subprocess whose environment
sets ``HF_ENDPOINT`` to :class:`harness.testing.HubServer` (huggingface_hub reads some settings when
it is imported), an empty data folder, and ``HF_HOME``/``HOME`` inside the test's folder. Files that
are not on the Hub (the anserini qrels) come from a loopback mirror (``HARNESS_DATA_URL``) of the
shared data, which is only read.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.testing import HubServer, require_data

from .plugin_fixtures import make_distribution

REPO = Path(__file__).resolve().parents[1]
DL19_PIN = "3506f981b25db886390e23025be96052cc0fae57"
DL19_HUB_PATH = "retrieve_results/BM25/retrieve_results_dl19_top100.json"
DL19_FILES = ("trec-dl/bm25_top100.dl19.json", "trec-dl/qrels.dl19-passage.txt")
TEST_COMMIT = "0123456789abcdef0123456789abcdef01234567"


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def mirror(data_dir: Path) -> Iterator[str]:
    """A static loopback mirror of the shared data folder (read-only), for the non-Hub files."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(data_dir)))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def hub() -> Iterator[HubServer]:
    with HubServer() as server:
        yield server


def user_env(tmp_path: Path, hub: HubServer, mirror: str | None = None, token: str | None = None) -> dict[str, str]:
    """The environment of a user behind the Hub imitation: an empty data folder, a home of its own."""
    env = {k: v for k, v in hub.environ().items() if k not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN",
                                                                 "HARNESS_DATA_URL")}
    for name in ("data", "home", "hf-home", "xdg", "cache"):
        (tmp_path / name).mkdir(parents=True, exist_ok=True)
    env.update(HF_ENDPOINT=hub.endpoint, HF_HOME=str(tmp_path / "hf-home"), HOME=str(tmp_path / "home"),
               XDG_CACHE_HOME=str(tmp_path / "xdg"), HARNESS_CACHE_DIR=str(tmp_path / "cache"),
               HARNESS_DATA=str(tmp_path / "data"), HARNESS_PROGRESS="0")
    if mirror:
        env["HARNESS_DATA_URL"] = mirror
    if token:
        env["HF_TOKEN"] = token
    return env


def harness(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], env=env, capture_output=True, text=True,
                          timeout=600)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def files_under(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def serve_dl19(hub: HubServer, data_dir: Path, **options: object) -> None:
    """castorini/rank_llm_data at the pinned commit, holding the real DL19 candidates (in LFS)."""
    hub.add_repo("castorini/rank_llm_data", {DL19_HUB_PATH: data_dir / DL19_FILES[0]}, commit=DL19_PIN,
                 lfs=[DL19_HUB_PATH], **options)  # type: ignore[arg-type]


def test_trec_dl19_downloads_through_the_hub_client_and_scores_0_5058(
        hub: HubServer, mirror: str, data_dir: Path, tmp_path: Path) -> None:
    require_data(data_dir, *DL19_FILES, fetch="trec-dl19")
    serve_dl19(hub, data_dir)
    env = user_env(tmp_path, hub, mirror)
    res = harness("data", "download", "trec-dl19", env=env)
    assert res.returncode == 0, res.stderr
    assert "trec-dl19: 2 file(s) ready" in res.stdout
    data = tmp_path / "data"
    assert files_under(data) == sorted(DL19_FILES)  # no staging folder, no second copy, no .part
    for rel in DL19_FILES:
        assert sha(data / rel) == sha(data_dir / rel)
    # the harness asked for the file's metadata within HF_HUB_ETAG_TIMEOUT, then the client asked the Hub for
    # the pinned commit (HEAD: 302 to the LFS origin) and fetched from there
    asked = hub.file_requests(DL19_HUB_PATH)
    assert [(r.origin, r.method, r.status) for r in asked] == [("hub", "HEAD", 302)] * 2 + [("lfs", "GET", 200)]
    assert all(f"/resolve/{DL19_PIN}/" in r.path for r in asked[:2])
    # nothing of the file was kept in the client's cache (HF_HOME): one copy only
    assert all(p.stat().st_size < 100_000 for p in (tmp_path / "hf-home").rglob("*") if p.is_file())

    res = harness("eval", "--task", "trec-dl19", "--quiet", "--json", env=env)
    assert res.returncode == 0, res.stderr
    assert round(json.loads(res.stdout)["nDCG@10"], 4) == 0.5058  # the published pyserini BM25 figure

    res = harness("data", "download", "trec-dl19", env=env)  # in place: nothing fetched again
    assert res.returncode == 0 and len(hub.file_requests(DL19_HUB_PATH)) == 3


HUB_PLUGIN = """
from harness import DataFile, Task, hookimpl

BASE = "https://huggingface.co/datasets/{repo}/resolve/{rev}/{path}"


def task(name, *files):
    return Task(name=name, dataset="demo", files=list(files))


@hookimpl
def register_tasks(register):
    register("hubtest:short", lambda: task("hubtest:short", DataFile(
        "t/dl19.json", BASE.format(repo="castorini/rank_llm_data", rev="3506f981", path="{dl19}"))), "short id")
    register("hubtest:missing", lambda: task("hubtest:missing", DataFile(
        "t/gone.json", BASE.format(repo="castorini/rank_llm_data", rev="{pin}", path="gone/file.json"))), "absent")
    register("hubtest:norepo", lambda: task("hubtest:norepo", DataFile(
        "t/x.json", BASE.format(repo="nobody/nothing", rev="{pin}", path="x.json"))), "no repo")
    register("hubtest:big", lambda: task("hubtest:big", DataFile(
        "t/big.bin", BASE.format(repo="test/big", rev="{commit}", path="big.bin"), "{big_sha}", {big_size})), "big")
    register("hubtest:optional", lambda: task("hubtest:optional", DataFile(
        "t/dl19.json", BASE.format(repo="castorini/rank_llm_data", rev="{pin}", path="{dl19}"), "{dl19_sha}"),
        DataFile("t/top_ranked.jsonl", BASE.format(repo="castorini/rank_llm_data", rev="{pin}",
                 path="top_ranked.jsonl"), optional=True)), "optional")
"""


@pytest.fixture
def plugin_env(tmp_path: Path, hub: HubServer, data_dir: Path) -> dict[str, str]:
    """The user environment plus a plugin whose tasks name Hub files in odd ways."""
    require_data(data_dir, DL19_FILES[0], fetch="trec-dl19")
    big = hashlib.sha256(b"seed").digest() * (24 * 1024 * 1024 // 32 + 5)  # > 2 x 10 MiB chunks
    (tmp_path / "big.bin").write_bytes(big)
    source = HUB_PLUGIN.format(dl19=DL19_HUB_PATH, pin=DL19_PIN, commit=TEST_COMMIT, big_sha=sha(tmp_path / "big.bin"),
                               big_size=len(big), dl19_sha=sha(data_dir / DL19_FILES[0]), repo="{repo}",
                               rev="{rev}", path="{path}")
    root = make_distribution(tmp_path / "plugin", "harness-hubtest", "harness_hubtest", source)
    serve_dl19(hub, data_dir)
    hub.add_repo("test/big", {"big.bin": tmp_path / "big.bin"}, commit=TEST_COMMIT)
    env = user_env(tmp_path, hub)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(root), env.get("PYTHONPATH", "")]))
    return env


def one_error_line(res: subprocess.CompletedProcess[str]) -> str:
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2, res.stderr
    assert "Traceback" not in res.stderr
    errors = [line for line in lines if line.startswith("Error: ")]
    assert len(errors) == 1, res.stderr
    return errors[0]


def test_an_abbreviated_revision_gets_the_hubs_404_and_one_message(plugin_env: dict[str, str], hub: HubServer) -> None:
    res = harness("data", "download", "hubtest:short", env=plugin_env)
    msg = one_error_line(res)
    assert "castorini/rank_llm_data" in msg and "revision 3506f981," in msg and DL19_HUB_PATH in msg
    assert "full 40-hex" in msg
    asked = hub.file_requests(DL19_HUB_PATH)
    assert [(r.method, r.status) for r in asked] == [("HEAD", 404)]  # asked once; the Hub said no
    assert "/resolve/3506f981/" in asked[0].path
    assert not any((Path(plugin_env["HARNESS_DATA"]) / "t").glob("*"))


def test_the_imitation_answers_an_abbreviated_revision_as_the_hub_does(hub: HubServer, data_dir: Path) -> None:
    import http.client
    import urllib.error
    import urllib.parse
    import urllib.request

    require_data(data_dir, DL19_FILES[0])
    serve_dl19(hub, data_dir)
    for rev, code in (("3506f981", "RevisionNotFound"), (DL19_PIN[:39], "RevisionNotFound")):
        req = urllib.request.Request(hub.file_url("castorini/rank_llm_data", DL19_HUB_PATH, rev), method="HEAD")
        with pytest.raises(urllib.error.HTTPError) as exc:
            urllib.request.urlopen(req, timeout=30)
        assert exc.value.code == 404 and exc.value.headers["X-Error-Code"] == code
    conn = http.client.HTTPConnection(urllib.parse.urlsplit(hub.endpoint).netloc, timeout=30)
    conn.request("HEAD", urllib.parse.urlsplit(hub.file_url("castorini/rank_llm_data", DL19_HUB_PATH)).path)
    head = conn.getresponse()
    conn.close()
    # a branch resolves to the full id; an LFS file redirects to another origin with its size and sha256
    assert head.status == 302 and head.headers["X-Repo-Commit"] == DL19_PIN
    assert head.headers["Location"].startswith(hub.lfs_endpoint + "/")
    assert head.headers["X-Linked-Etag"] == f'"{sha(data_dir / DL19_FILES[0])}"'
    assert int(head.headers["X-Linked-Size"]) == (data_dir / DL19_FILES[0]).stat().st_size
    with urllib.request.urlopen(hub.file_url("castorini/rank_llm_data", DL19_HUB_PATH, DL19_PIN), timeout=30) as resp:
        assert hashlib.sha256(resp.read()).hexdigest() == sha(data_dir / DL19_FILES[0])


@pytest.mark.parametrize("task,words", [
    ("hubtest:missing", ("castorini/rank_llm_data", DL19_PIN, "gone/file.json", "missing at that revision")),
    ("hubtest:norepo", ("nobody/nothing", "x.json", "does not exist")),
])
def test_hub_errors_name_repository_revision_and_file(plugin_env: dict[str, str], task: str,
                                                      words: tuple[str, ...]) -> None:
    msg = one_error_line(harness("data", "download", task, env=plugin_env))
    assert all(w in msg for w in words), msg


def test_an_optional_file_absent_from_the_hub_is_skipped(plugin_env: dict[str, str], data_dir: Path) -> None:
    res = harness("data", "download", "hubtest:optional", env=plugin_env)
    assert res.returncode == 0, res.stderr
    data = Path(plugin_env["HARNESS_DATA"])
    assert files_under(data) == ["t/dl19.json"] and sha(data / "t/dl19.json") == sha(data_dir / DL19_FILES[0])
    skipped = [line for line in res.stderr.splitlines() if "t/top_ranked.jsonl" in line]
    assert len(skipped) == 1 and "optional" in skipped[0]


def test_a_transfer_cut_halfway_resumes_with_a_range_request(plugin_env: dict[str, str], hub: HubServer,
                                                             tmp_path: Path) -> None:
    hub.cut_once("big.bin")
    res = harness("data", "download", "hubtest:big", env=plugin_env)
    assert res.returncode == 0, res.stderr
    got = Path(plugin_env["HARNESS_DATA"]) / "t" / "big.bin"
    assert sha(got) == sha(tmp_path / "big.bin")
    assert hub.cuts_done == 1
    gets = hub.file_requests("big.bin", "GET")
    # huggingface_hub resumed past the whole 10 MiB chunks it had written before the cut
    assert [(r.status, r.range) for r in gets] == [(200, None), (206, f"bytes={10 * 1024 * 1024}-")]


def test_a_gated_repository_needs_hf_token_which_is_never_written(
        hub: HubServer, mirror: str, data_dir: Path, tmp_path: Path) -> None:
    require_data(data_dir, *DL19_FILES, fetch="trec-dl19")
    canary = "hf_CANARY" + hashlib.sha256(str(tmp_path).encode()).hexdigest()[:24]
    serve_dl19(hub, data_dir, gated=True, token=canary)

    res = harness("data", "download", "trec-dl19", env=user_env(tmp_path / "anon", hub, mirror))
    msg = one_error_line(res)
    assert "gated" in msg and "HF_TOKEN" in msg and "hf auth login" in msg and "castorini/rank_llm_data" in msg
    assert [r.status for r in hub.file_requests(DL19_HUB_PATH)] == [401]

    env = user_env(tmp_path, hub, mirror, token=canary)
    out = tmp_path / "run"
    runs = [harness("data", "download", "trec-dl19", env=env),
            harness("eval", "--task", "trec-dl19", "--output", str(out), "--json", env=env)]
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr
    assert round(json.loads(runs[1].stdout)["nDCG@10"], 4) == 0.5058
    assert (out / "results.json").is_file()
    # the token went to the Hub only, never to the LFS origin
    assert [(r.origin, r.authorized) for r in hub.file_requests(DL19_HUB_PATH)[1:]] == [("hub", True)] * 2 + [
        ("lfs", False)]
    # ... and appears in no file the runs wrote (data, results, caches, home) nor in their output
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(written) > 5
    assert not [p for p in written if canary.encode() in p.read_bytes()]
    assert not [r for r in runs if canary in r.stdout + r.stderr]
