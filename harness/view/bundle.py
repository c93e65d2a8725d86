"""``harness view --bundle OUT``: the same app as a static folder that opens from ``file://`` (or any
static host). Chromium blocks ``fetch()`` of ``file://``, so every payload is a ``.js`` file that
hands its JSON to the page (``HV.put(key, data)``), loaded by ``<script src>``; file names hold only
run ids this module gave and numbers, never a name or id from a results folder.

The bundle writes only inside its folder: ``OUT`` must be new, empty, or a bundle this module wrote
(:data:`MARKER`; replaced only with ``overwrite``), and every file and folder in it is created new
through the folder's descriptor, never through a symbolic link."""

from __future__ import annotations

import itertools
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from harness.concepts.errors import HarnessError
from harness.view.catalog import CHUNK, Catalog, _member_task
from harness.view.comparison import compare_payload
from harness.view.jsontext import dumps
from harness.view.server import CSP_META, asset

#: the most ordered pairs of runs per task whose comparison the bundle holds
MAX_PAIRS = 30
#: the file that marks a folder as a bundle ``harness view`` wrote (one ``--overwrite`` may replace)
MARKER = ".harness-view-bundle"
MARKER_TEXT = "A static bundle written by `harness view --bundle`; `--overwrite` replaces it.\n"
#: what a bundle holds at its top: all that ``--overwrite`` (or a failed write) removes
ENTRIES = (MARKER, "index.html", "static", "data")

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC


class _Folder:
    """A folder written through its descriptor: each sub-folder is created new and opened without
    following a link, each file created new (``O_EXCL | O_NOFOLLOW``), so nothing is written through a
    symbolic link, even one put in place while the bundle is written."""

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def folder(self, name: str) -> _Folder:
        os.mkdir(name, 0o755, dir_fd=self.fd)
        return _Folder(os.open(name, _DIR_FLAGS, dir_fd=self.fd))

    def write(self, name: str, text: str | bytes) -> None:
        fd = os.open(name, _NEW_FILE, 0o644, dir_fd=self.fd)
        with os.fdopen(fd, "wb") as fh:
            fh.write(text.encode("utf-8") if isinstance(text, str) else text)

    def put(self, name: str, key: str, data: Any) -> None:
        self.write(name, f"HV.put({dumps(key)},{dumps(data)});\n")

    def close(self) -> None:
        os.close(self.fd)


def _is_bundle(fd: int) -> bool:
    try:
        return stat.S_ISREG(os.lstat(MARKER, dir_fd=fd).st_mode)
    except FileNotFoundError:
        return False


def _clear(fd: int) -> None:
    """Remove a bundle's :data:`ENTRIES` from the folder ``fd``: a link is removed, never followed."""
    for name in ENTRIES:
        try:
            st = os.lstat(name, dir_fd=fd)
        except FileNotFoundError:
            continue
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(name, dir_fd=fd)  # fd-based: removes links inside, never what they point to
        else:
            os.unlink(name, dir_fd=fd)


@contextmanager
def _out_folder(root: Path, overwrite: bool) -> Iterator[_Folder]:
    """``root`` ready for a bundle: created, or an empty folder, or a bundle this command wrote (cleared
    with ``overwrite``); anything else is refused before a byte is written. A bundle that fails while
    being written is removed (and ``root`` too when this call created it)."""
    created = False
    try:
        st = os.lstat(root)
    except FileNotFoundError:
        root.parent.mkdir(parents=True, exist_ok=True)
        os.mkdir(root, 0o755)
        created = True
    else:
        if stat.S_ISLNK(st.st_mode):
            raise HarnessError(f"--bundle {root} is a symbolic link; give the folder itself")
        if not stat.S_ISDIR(st.st_mode):
            raise HarnessError(f"--bundle {root} exists and is not a folder")
    fd = os.open(root, _DIR_FLAGS)
    try:
        if not created and os.listdir(fd):
            if not _is_bundle(fd):
                raise HarnessError(f"--bundle {root} exists, is not empty and holds no bundle of `harness view` "
                                   f"(no {MARKER}); give a new or empty folder")
            if not overwrite:
                raise HarnessError(f"--bundle {root} holds a bundle already; give --overwrite to replace it")
            _clear(fd)
        top = _Folder(fd)
        try:
            top.write(MARKER, MARKER_TEXT)
            yield top
        except BaseException:
            _clear(fd)
            if created:
                with suppress(OSError):  # something else appeared there meanwhile: left alone
                    os.rmdir(root)
            raise
    finally:
        os.close(fd)


def _index_html() -> str:
    html = asset("index.html").decode("utf-8")
    meta = f'<meta http-equiv="Content-Security-Policy" content="{CSP_META}">'
    return html.replace("<!--bundle-->", meta + '\n<script src="data/bundle.js"></script>')


def write_bundle(catalog: Catalog, out: str | Path, permutations: int = 10_000, overwrite: bool = False) -> Path:
    """Write the app and every payload under ``out``: a new or empty folder, or (with ``overwrite``) a
    bundle this function wrote (it holds :data:`MARKER`); anything else is refused. Every file and
    folder is created new inside ``out``, never through a link (:class:`_Folder`)."""
    root = Path(out)
    with _out_folder(root, overwrite) as top:
        static = top.folder("static")
        try:
            for name in ("app.js", "app.css"):
                static.write(name, asset(name))
        finally:
            static.close()
        top.write("index.html", _index_html())
        data = top.folder("data")
        try:
            _write_data(catalog, data, permutations)
        finally:
            data.close()
    return root


def _write_data(catalog: Catalog, data: _Folder, permutations: int) -> None:
    data.put("runs.js", "runs", catalog.runs_payload())
    by_task: dict[str, list[str]] = {}
    run_dir, q_dir = data.folder("run"), data.folder("q")
    try:
        for rid, r in catalog.runs.items():
            payload = catalog.run_payload(rid)
            run_dir.put(f"{rid}.js", f"run/{rid}", payload)
            if r.stored.is_suite:
                continue
            by_task.setdefault(_member_task(r) if r.suite else r.stored.task_name, []).append(rid)
            _write_queries(catalog, q_dir, rid, len(payload["per_query"]["qids"]))
    finally:
        run_dir.close()
        q_dir.close()
    compared = _write_comparisons(catalog, data, by_task, permutations)
    data.write("bundle.js", f"window.HV_BUNDLE = {dumps({'compare': compared, 'chunk': CHUNK})};\n")


def _write_queries(catalog: Catalog, q_dir: _Folder, rid: str, n: int) -> None:
    """``q/RID/I.js``: the payloads of the run's queries, :data:`CHUNK` a file."""
    if n == 0:
        return
    folder = q_dir.folder(rid)
    try:
        for i, start in enumerate(range(0, n, CHUNK)):
            chunk = catalog.query_chunk(rid, start)
            folder.write(f"{i}.js", "".join(f"HV.put({dumps(f'query/{rid}/{q}')},{dumps(v)});\n"
                                            for q, v in chunk.items()))
    finally:
        folder.close()


def _write_comparisons(catalog: Catalog, data: _Folder, by_task: dict[str, list[str]], permutations: int) -> list[str]:
    compared = []
    folder = data.folder("compare")
    try:
        for ids in by_task.values():
            for a, b in list(itertools.permutations(ids, 2))[:MAX_PAIRS]:
                try:
                    payload = compare_payload(catalog, [a, b], permutations=permutations)
                except HarnessError as exc:
                    payload = {"error": str(exc)}
                folder.put(f"{a}_{b}.js", f"compare/{a}/{b}", payload)
                compared.append(f"{a}/{b}")
    finally:
        folder.close()
    return compared
