"""Downloading task files from a loopback HTTP server that serves the shared data folder.

Nothing here reaches the internet: every URL is ``http://127.0.0.1:<port>/...`` and the files are
fetched into a temporary folder (the shared data is only read).
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from harness.concepts.errors import DataError
from harness.concepts.task import DataFile, Task, load_task_file
from harness.data.download import download_task_files, ensure_task_files, source_url, task_file_status
from harness.data.folder import DataFolder
from harness.runtime.progress import ProgressSettings

REPO = Path(__file__).resolve().parents[1]
QUIET = ProgressSettings("off")  # no progress, no "downloading ..." line


class Handler(SimpleHTTPRequestHandler):
    """Serves files read-only; ``server.mode`` picks the behaviour: ``range`` (honours
    ``Range: bytes=N-``), ``plain`` (ignores Range, always 200) or ``truncate`` (announces the full
    length, sends half, closes)."""

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        server = self.server
        server.requests.append((self.path, self.headers.get("Range")))  # type: ignore[attr-defined]
        path = Path(self.translate_path(self.path))
        if not path.is_file():
            self.send_error(404)
            return
        body = path.read_bytes()
        mode = server.mode  # type: ignore[attr-defined]
        rng = self.headers.get("Range")
        if mode == "range" and rng and rng.startswith("bytes=") and rng.endswith("-"):
            start = int(rng[6:-1])
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            self.send_header("Content-Length", str(len(body) - start))
            self.end_headers()
            self.wfile.write(body[start:])
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if mode == "truncate":
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


@pytest.fixture
def server(data_dir: Path) -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(data_dir)))
    httpd.mode = "range"  # type: ignore[attr-defined]
    httpd.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def base(httpd: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{httpd.server_address[1]}"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_file_task(data_dir: Path, rel: str = "noveleval/corpus.tsv", digest: str | None = None) -> Task:
    src = data_dir / rel
    return Task(name="t", dataset="x", files=[DataFile(rel, "https://example.invalid/" + rel,
                                                       digest or sha(src), src.stat().st_size)])


def test_download_task_and_skip_when_present(
    server: ThreadingHTTPServer, data_dir: Path, tmp_path: Path
) -> None:
    task = load_task_file(REPO / "tasks" / "trec-dl19.toml")
    paths = download_task_files(task, dest=tmp_path, base_url=base(server), progress=QUIET)
    assert paths == [tmp_path / f.path for f in task.files]
    for f, p in zip(task.files, paths, strict=True):
        assert sha(p) == f.sha256 and p.stat().st_size == f.size
        assert not p.with_name(p.name + ".part").exists()
    n = len(server.requests)  # type: ignore[attr-defined]
    download_task_files(task, dest=tmp_path, base_url=base(server), progress=QUIET)
    assert len(server.requests) == n  # type: ignore[attr-defined]  # already there: nothing fetched
    status = task_file_status(task, root=tmp_path)
    assert all(s["present"] and s["ok"] for s in status)


def test_interrupted_transfer_resumes(server: ThreadingHTTPServer, data_dir: Path, tmp_path: Path) -> None:
    task = one_file_task(data_dir)
    f = task.files[0]
    target, part = tmp_path / f.path, tmp_path / (f.path + ".part")
    server.mode = "truncate"  # type: ignore[attr-defined]
    with pytest.raises(DataError, match="interrupted") as exc:
        download_task_files(task, dest=tmp_path, base_url=base(server), progress=QUIET)
    assert "again to resume" in str(exc.value)
    assert not target.exists() and part.stat().st_size == f.size // 2
    server.mode = "range"  # type: ignore[attr-defined]
    download_task_files(task, dest=tmp_path, base_url=base(server), progress=QUIET)
    assert sha(target) == f.sha256 and not part.exists()
    assert server.requests[-1] == (f"/{f.path}", f"bytes={f.size // 2}-")  # type: ignore[attr-defined]


def test_server_ignoring_range_restarts(server: ThreadingHTTPServer, data_dir: Path, tmp_path: Path) -> None:
    task = one_file_task(data_dir)
    f = task.files[0]
    part = tmp_path / (f.path + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes((data_dir / f.path).read_bytes()[:1000])
    server.mode = "plain"  # type: ignore[attr-defined]
    download_task_files(task, dest=tmp_path, base_url=base(server), progress=QUIET)
    assert sha(tmp_path / f.path) == f.sha256 and not part.exists()
    assert server.requests[-1][1] == "bytes=1000-"  # type: ignore[attr-defined]  # asked, was ignored


def test_complete_part_is_verified_and_renamed(
    server: ThreadingHTTPServer, data_dir: Path, tmp_path: Path
) -> None:
    task = one_file_task(data_dir, "noveleval/queries.tsv")
    f = task.files[0]
    part = tmp_path / (f.path + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes((data_dir / f.path).read_bytes())  # server answers 416 to the range
    download_task_files(task, dest=tmp_path, base_url=base(server), progress=QUIET)
    assert sha(tmp_path / f.path) == f.sha256


def test_wrong_checksum_is_a_clean_error(server: ThreadingHTTPServer, data_dir: Path, tmp_path: Path) -> None:
    task = one_file_task(data_dir, "noveleval/queries.tsv", digest="0" * 64)
    f = task.files[0]
    with pytest.raises(DataError) as exc:
        download_task_files(task, dest=tmp_path, base_url=base(server), progress=QUIET)
    msg = str(exc.value)
    assert f"{base(server)}/{f.path}" in msg and "0" * 64 in msg and sha(data_dir / f.path) in msg
    assert not (tmp_path / f.path).exists() and not (tmp_path / (f.path + ".part")).exists()


def test_corrupt_part_is_discarded(server: ThreadingHTTPServer, data_dir: Path, tmp_path: Path) -> None:
    task = one_file_task(data_dir)
    f = task.files[0]
    part = tmp_path / (f.path + ".part")
    part.parent.mkdir(parents=True)
    part.write_bytes(b"x" * 500)
    with pytest.raises(DataError, match="checksum mismatch"):
        download_task_files(task, dest=tmp_path, base_url=base(server), progress=QUIET)
    assert not part.exists()
    download_task_files(task, dest=tmp_path, base_url=base(server), progress=QUIET)
    assert sha(tmp_path / f.path) == f.sha256


def test_http_error_names_url(server: ThreadingHTTPServer, tmp_path: Path) -> None:
    task = Task(name="t", dataset="x", files=[DataFile("nope/missing.txt", "", "", None)])
    with pytest.raises(DataError, match=r"HTTP 404 .*nope/missing\.txt"):
        download_task_files(task, dest=tmp_path, base_url=base(server), progress=QUIET)


def test_ensure_task_files(server: ThreadingHTTPServer, data_dir: Path, tmp_path: Path,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path))
    task = load_task_file(REPO / "tasks" / "noveleval.toml")
    monkeypatch.setenv("HARNESS_AUTO_DOWNLOAD", "0")
    with pytest.raises(DataError) as exc:
        ensure_task_files(task, DataFolder.from_env(), progress=QUIET)
    msg = str(exc.value)
    assert str(tmp_path / "noveleval" / "corpus.tsv") in msg and "HARNESS_DATA" in msg
    assert "`harness data download noveleval`" in msg and "2 more" in msg
    monkeypatch.setenv("HARNESS_AUTO_DOWNLOAD", "1")
    monkeypatch.setenv("HARNESS_DATA_URL", base(server))
    folder = DataFolder.from_env()  # the environment is read when the folder (a context) is made
    assert folder.auto_download and folder.mirror == base(server)
    paths = ensure_task_files(task, folder, progress=QUIET)
    assert all(sha(p) == f.sha256 for p, f in zip(paths, task.files, strict=True))
    n = len(server.requests)  # type: ignore[attr-defined]
    ensure_task_files(task, folder, progress=QUIET)
    assert len(server.requests) == n  # type: ignore[attr-defined]


def test_source_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    f = DataFile("a/b.txt", "https://example.org/b.txt")
    monkeypatch.delenv("HARNESS_DATA_URL", raising=False)
    folder = DataFolder.from_env(tmp_path)
    assert folder.mirror is None
    assert source_url(f, folder.mirror, folder.path) == "https://example.org/b.txt"
    assert source_url(f, "http://mirror/data/", folder.path) == "http://mirror/data/a/b.txt"
    monkeypatch.setenv("HARNESS_DATA_URL", "http://env-mirror")
    folder = DataFolder.from_env(tmp_path)
    assert source_url(f, folder.mirror, folder.path) == "http://env-mirror/a/b.txt"
    monkeypatch.delenv("HARNESS_DATA_URL")
    folder = DataFolder.from_env(tmp_path)
    with pytest.raises(DataError, match="no download URL") as exc:
        source_url(DataFile("a/b.txt"), folder.mirror, folder.path)
    assert str(tmp_path / "a" / "b.txt") in str(exc.value)


def test_never_writes_into_shared_data(data_dir: Path) -> None:
    assert not any(p.name.endswith(".part") for p in data_dir.rglob("*"))


def test_cli_download_then_eval_from_a_fresh_data_folder(server: ThreadingHTTPServer, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A user with no data: `harness data download noveleval` from a mirror, then `harness eval`."""
    import json

    from click.testing import CliRunner

    from harness.cli import cli

    fresh = tmp_path / "data"
    runner = CliRunner()
    res = runner.invoke(cli, ["--data-dir", str(fresh), "data", "download", "noveleval",
                              "--base-url", base(server)])
    assert res.exit_code == 0, res.output
    assert "noveleval: 3 file(s) ready" in res.output
    assert sorted(p.name for p in (fresh / "noveleval").iterdir()) == ["corpus.tsv", "qrels.txt", "queries.tsv"]
    res = runner.invoke(cli, ["--data-dir", str(fresh), "eval", "--task", "noveleval", "--quiet", "--json"])
    assert res.exit_code == 0, res.output
    assert 0 < json.loads(res.output)["nDCG@10"] < 1
    assert DataFolder.from_env().path != fresh  # --data-dir was for those commands only: nothing outlives them


# --- feedback: checksum mismatches, a created folder, progress outside a terminal ---------------


@pytest.fixture
def bad_mirror(data_dir: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A mirror of noveleval whose qrels.txt differs from the published file (one line added)."""
    root = tmp_path / "mirror"
    (root / "noveleval").mkdir(parents=True)
    for name in ("corpus.tsv", "queries.tsv", "qrels.txt"):
        (root / "noveleval" / name).write_bytes((data_dir / "noveleval" / name).read_bytes())
    with open(root / "noveleval" / "qrels.txt", "ab") as f:
        f.write(b"0 Q0 0-0 2\n")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(root)))
    httpd.mode = "range"  # type: ignore[attr-defined]
    httpd.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield base(httpd), root / "noveleval" / "qrels.txt"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def test_cli_checksum_mismatch_names_file_and_both_hashes(bad_mirror: tuple[str, Path], data_dir: Path,
                                                          tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from harness.cli import cli

    url, served = bad_mirror
    monkeypatch.setenv("HARNESS_PROGRESS", "0")
    fresh = tmp_path / "data"
    res = CliRunner().invoke(cli, ["data", "download", "noveleval", "--data-dir", str(fresh), "--base-url", url])
    expected = sha(data_dir / "noveleval" / "qrels.txt")
    assert res.exit_code == 2
    assert f"creating the data folder {fresh} (given by --data-dir)\n" in res.stderr
    part = fresh / "noveleval" / "qrels.txt.part"
    assert (f"Error: checksum mismatch for noveleval/qrels.txt downloaded from {url}/noveleval/qrels.txt: "
            f"expected sha256 {expected}, actual {sha(served)} ({served.stat().st_size} bytes); {part} was deleted; "
            "the source (or the mirror) serves other content than the task expects\n") in res.stderr, res.stderr
    assert not part.exists() and not (fresh / "noveleval" / "qrels.txt").exists()


def test_redownload_reports_a_changed_file(server: ThreadingHTTPServer, data_dir: Path, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    task = one_file_task(data_dir, "noveleval/queries.tsv")
    f = task.files[0]
    target = tmp_path / f.path
    download_task_files(task, dest=tmp_path, base_url=base(server), progress=QUIET)
    capsys.readouterr()
    target.write_bytes(target.read_bytes() + b"edited\n")
    changed = sha(target)
    download_task_files(task, dest=tmp_path, base_url=base(server), progress=QUIET)
    assert capsys.readouterr().err == (
        f"checksum mismatch in {target}: expected sha256 {f.sha256}, {f.size} bytes, actual {changed} "
        f"({f.size + 7} bytes); downloading it again\n")
    assert sha(target) == f.sha256


def test_eval_warns_about_a_changed_file(data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from click.testing import CliRunner

    from harness.cli import cli

    copy = tmp_path / "data" / "noveleval"
    copy.mkdir(parents=True)
    for name in ("corpus.tsv", "queries.tsv", "qrels.txt"):
        (copy / name).write_bytes((data_dir / "noveleval" / name).read_bytes())
    (copy / "qrels.txt").write_bytes((copy / "qrels.txt").read_bytes() + b"0 Q0 x-1 0\n")  # an edited file
    monkeypatch.setenv("HARNESS_DATA", str(tmp_path / "data"))
    res = CliRunner().invoke(cli, ["eval", "--task", "noveleval", "--quiet", "--json"])
    assert res.exit_code == 0, res.output
    assert res.stderr == (
        f"[harness] warning: checksum mismatch in {copy / 'qrels.txt'}: expected sha256 "
        f"{sha(data_dir / 'noveleval' / 'qrels.txt')}, 5270 bytes, actual {sha(copy / 'qrels.txt')} (5281 bytes); "
        "using the file as it is (`harness data download noveleval` fetches the published file again)\n")


def test_download_progress_outside_a_terminal(server: ThreadingHTTPServer, data_dir: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    task = one_file_task(data_dir, "noveleval/corpus.tsv")
    monkeypatch.delenv("HARNESS_PROGRESS", raising=False)
    monkeypatch.setenv("HARNESS_PROGRESS_INTERVAL", "0")  # a line at every chunk instead of every 15 s
    download_task_files(task, dest=tmp_path / "a", base_url=base(server))
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == f"downloading noveleval/corpus.tsv from {base(server)}/noveleval/corpus.tsv"
    assert lines[1].startswith("noveleval/corpus.tsv: 65.5kB/385kB (17.0%), ") and "ETA" in lines[1]
    assert lines[-1].startswith("noveleval/corpus.tsv: 385kB/385kB (100.0%)")
    assert not any("\r" in line for line in lines)
    monkeypatch.setenv("HARNESS_PROGRESS", "0")
    download_task_files(task, dest=tmp_path / "b", base_url=base(server))
    assert capsys.readouterr().err == f"downloading noveleval/corpus.tsv from {base(server)}/noveleval/corpus.tsv\n"
