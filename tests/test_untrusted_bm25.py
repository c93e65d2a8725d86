"""BM25 index folders are untrusted too (issue 37, item 7; docs/untrusted.md, "BM25 index folders").

Each tampering of the issue's battery is made on a copy of an index built through the CLI on the demo
task, then searched with ``harness eval --retriever bm25:index=F`` (one message naming the file,
exit 2, no figure) and checked with ``harness index verify F`` (exit 1 naming the file and both
digests, the current one computed here with hashlib). The untouched index gives the in-memory
figure and run; the parameters results.json records are the manifest's, which must match its digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

#: a guard so that a test of a search that would block on a FIFO ends (a failure, not a hang); the
#: refusal itself is immediate (the file is refused from its stat, never opened)
HANG_GUARD_S = 120


def harness_cli(*args: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True,
                          env={**os.environ}, timeout=timeout)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fields_sha256(manifest: dict) -> str:
    """The manifest's fields but its own digest, canonical JSON (how a build records them)."""
    rest = {k: v for k, v in manifest.items() if k != "manifest_sha256"}
    return hashlib.sha256(json.dumps(rest, sort_keys=True, separators=(",", ":")).encode("ascii")).hexdigest()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("bm25")
    res = harness_cli("index", "build", "-r", "bm25", "--task", "demo", "-o", str(root / "idx"))
    assert res.returncode == 0, res.stderr
    return root / "idx"


@pytest.fixture()
def index(pristine, tmp_path) -> Path:
    folder = tmp_path / "idx"
    shutil.copytree(pristine, folder)
    return folder


def manifest(folder: Path) -> dict:
    return json.loads((folder / "index.json").read_text(encoding="utf-8"))


def set_manifest(folder: Path, **changes) -> None:
    (folder / "index.json").write_text(json.dumps({**manifest(folder), **changes}), encoding="utf-8")


def save(folder: Path, name: str, arr: np.ndarray) -> None:
    with open(folder / f"{name}.npy", "wb") as fh:
        np.save(fh, arr, allow_pickle=False)


def load(folder: Path, name: str) -> np.ndarray:
    return np.load(folder / f"{name}.npy", allow_pickle=False)


def swap_weights(f: Path) -> None:
    w = load(f, "weights")
    i, j = 0, int(np.flatnonzero(w != w[0])[0])
    w[[i, j]] = w[[j, i]]
    save(f, "weights", w)


def swap_documents(f: Path) -> None:
    d = load(f, "docs")
    j = int(np.flatnonzero(d != d[0])[0])  # the first posting and the first of another document
    d[[0, j]] = d[[j, 0]]
    save(f, "docs", d)


def swap_terms(f: Path) -> None:
    terms = json.loads((f / "terms.json").read_text(encoding="utf-8"))
    terms[0], terms[1] = terms[1], terms[0]
    (f / "terms.json").write_text(json.dumps(terms), encoding="utf-8")


def negate_weights(f: Path) -> None:
    w = -load(f, "weights")
    save(f, "weights", w)
    set_manifest(f, min_weight=float(w.min()))


#: case -> (tampering, the file the message must name)
FILE_TAMPERING = {
    "two weights swapped": (swap_weights, "weights.npy"),
    "two postings' documents swapped": (swap_documents, "docs.npy"),
    "two terms swapped": (swap_terms, "terms.json"),
    "every weight 1.0": (lambda f: save(f, "weights", np.ones_like(load(f, "weights"))), "weights.npy"),
}
MANIFEST_TAMPERING = {
    "stemmer none": (lambda f: set_manifest(f, stemmer="none")),
    "stopwords none": (lambda f: set_manifest(f, stopwords="none")),
    "stopwords a list": (lambda f: set_manifest(f, stopwords=["the", "of"])),
    "k1 0.9": (lambda f: set_manifest(f, k1=0.9)),
    "b 0.4": (lambda f: set_manifest(f, b=0.4)),
    "epsilon 0.5": (lambda f: set_manifest(f, epsilon=0.5)),
    "min_weight lowered": (lambda f: set_manifest(f, min_weight=-1.0)),
    "weights negated with min_weight": negate_weights,
}


def refused(res: subprocess.CompletedProcess, needle: str) -> str:
    err = res.stderr.strip()
    assert res.returncode == 2, (res.returncode, err, res.stdout)
    assert "Traceback" not in err and len(err.splitlines()) == 1 and err.startswith("Error: "), err
    assert needle in err, err
    assert "nDCG" not in res.stdout
    return err


def search(folder: Path, *extra: str, timeout: float | None = None) -> subprocess.CompletedProcess:
    spec = ",".join([f"bm25:index={folder}", *extra])
    return harness_cli("eval", "--task", "demo", "--retriever", spec, "--quiet", timeout=timeout)


def results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


# -- the honest index -----------------------------------------------------------------------------------


def test_untouched_index_gives_the_in_memory_figure_and_records_the_built_parameters(pristine, tmp_path):
    disk = harness_cli("eval", "--task", "demo", "--retriever", f"bm25:index={pristine}", "--quiet",
                       "-o", str(tmp_path / "disk"))
    mem = harness_cli("eval", "--task", "demo", "--retriever", "bm25", "--quiet", "-o", str(tmp_path / "mem"))
    assert disk.returncode == 0 and mem.returncode == 0, disk.stderr + mem.stderr
    a, b = results(tmp_path / "disk"), results(tmp_path / "mem")
    assert a["metrics"]["nDCG@10"] == b["metrics"]["nDCG@10"] and round(a["metrics"]["nDCG@10"], 4) == 0.7491
    assert (tmp_path / "disk" / "run.trec").read_bytes() == (tmp_path / "mem" / "run.trec").read_bytes()
    m, config = manifest(pristine), a["components"]["retriever"]
    for key in ("k1", "b", "epsilon", "tokenizer", "stopwords", "stemmer"):
        assert config[key] == m[key] == b["components"]["retriever"][key], key
    assert config["index"]["manifest_sha256"] == m["manifest_sha256"] == fields_sha256(m)
    assert config["index"]["files_verified"] is True
    assert {name: sha256(pristine / name) for name in m["sha256"]} == m["sha256"]
    assert sorted(m["sha256"]) == sorted(["weights.npy", "docs.npy", "offsets.npy", "idf.npy", "rank.npy",
                                          "ids.json", "terms.json"])
    ok = harness_cli("index", "verify", str(pristine))
    assert ok.returncode == 0 and "verified" in ok.stdout and not ok.stderr, ok.stderr
    info = harness_cli("index", "info", str(pristine))
    assert info.returncode == 0 and "sha256 of every file" in info.stdout, info.stderr


# -- the battery ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(FILE_TAMPERING))
def test_changed_file_is_refused_by_search_and_found_by_verify(index, case):
    tamper, name = FILE_TAMPERING[case]
    recorded = manifest(index).get("sha256", {}).get(name)
    tamper(index)
    now = sha256(index / name)
    err = refused(search(index), f"{index / name}: sha256 {now}")
    assert f"records {recorded}" in err and now != recorded and "verify=false" in err
    res = harness_cli("index", "verify", str(index))
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert f"{index / name}: sha256 {now}, recorded {recorded}" in res.stderr.splitlines()
    assert "1 of 8 file(s) differ" in res.stderr


@pytest.mark.parametrize("case", sorted(MANIFEST_TAMPERING))
def test_edited_manifest_is_refused_whatever_verify_says(index, case):
    recorded = manifest(index).get("manifest_sha256")
    MANIFEST_TAMPERING[case](index)
    now = fields_sha256(manifest(index))
    for extra in ((), ("verify=false",)):
        err = refused(search(index, *extra), f"{index / 'index.json'}: its fields do not match")
        assert f"sha256 {now}, recorded {recorded}" in err
    res = harness_cli("index", "verify", str(index))
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert f"{index / 'index.json'}: sha256 {now}, recorded {recorded}" in res.stderr.splitlines()
    info = harness_cli("index", "info", str(index))  # describes no parameter the weights were not built with
    refused(info, "index.json: its fields do not match")


def test_fifo_in_place_of_weights_is_refused_without_blocking(index):
    (index / "weights.npy").unlink()
    os.mkfifo(index / "weights.npy")
    refused(search(index, timeout=HANG_GUARD_S), f"{index / 'weights.npy'}: is a FIFO, not a regular file")
    res = harness_cli("index", "verify", str(index), timeout=HANG_GUARD_S)
    refused(res, "weights.npy: is a FIFO")


def test_deeply_nested_manifest_is_one_message(index):
    text = (index / "index.json").read_text(encoding="utf-8").rstrip().rstrip("}")
    (index / "index.json").write_text(text + ', "deep": ' + "[" * 200_000 + "]" * 200_000 + "}", encoding="utf-8")
    refused(search(index), "index.json: nested more than 64 levels deep")
    for command in ("verify", "info"):
        res = harness_cli("index", command, str(index))
        assert res.returncode == 2 and "Traceback" not in res.stderr and len(res.stderr.splitlines()) == 1, res.stderr
        assert "index.json" in res.stderr and "nest" in res.stderr


def test_index_built_before_checksums_is_refused_with_a_message_to_rebuild(index):
    m = manifest(index)
    for key in ("checksums", "sha256", "manifest_sha256"):
        del m[key]
    (index / "index.json").write_text(json.dumps(m), encoding="utf-8")
    for extra in ((), ("verify=false",)):
        err = refused(search(index, *extra), "records no checksums")
        assert "--overwrite" in err
    refused(harness_cli("index", "verify", str(index)), "records no checksums")
    info = harness_cli("index", "info", str(index))
    assert info.returncode == 0 and "none recorded" in info.stdout, info.stderr
    again = harness_cli("index", "build", "-r", "bm25", "--task", "demo", "-o", str(index), "--overwrite")
    assert again.returncode == 0, again.stderr
    assert harness_cli("index", "verify", str(index)).returncode == 0


def test_partial_checksum_fields_are_malformed(index):
    m = manifest(index)
    set_manifest(index, sha256={k: v for k, v in m["sha256"].items() if k != "terms.json"})
    refused(search(index), "field 'sha256' must map")
    set_manifest(index, sha256=m["sha256"], manifest_sha256="0" * 63)
    refused(search(index), "field 'manifest_sha256' must be a sha256")
    set_manifest(index, manifest_sha256=m["manifest_sha256"], checksums="md5")
    refused(search(index), "field 'checksums' must be 'sha256'")


# -- headers, dtypes and sizes ----------------------------------------------------------------------------


HEADER_TAMPERING = {
    "truncated": (lambda f: (f / "weights.npy").write_bytes((f / "weights.npy").read_bytes()[:-8]), "bytes"),
    "bytes appended": (lambda f: (f / "weights.npy").write_bytes((f / "weights.npy").read_bytes() + b"\0" * 8),
                       "bytes"),
    "big-endian": (lambda f: save(f, "weights", load(f, "weights").astype(">f8")), ">f8"),
    "float32": (lambda f: save(f, "weights", load(f, "weights").astype("<f4")), "<f4"),
    "one posting more": (lambda f: save(f, "weights", np.append(load(f, "weights"), 1.0)), "shape"),
    "not an array": (lambda f: (f / "weights.npy").write_bytes(b"\x93NUMPY\x01\x00{'descr'"), "not a .npy"),
}


@pytest.mark.parametrize("case", sorted(HEADER_TAMPERING))
def test_array_headers_dtypes_and_sizes_are_checked_without_the_digests(index, case):
    """Headers are checked before the digests, so the message says what is wrong; the same with
    verify=false."""
    tamper, needle = HEADER_TAMPERING[case]
    tamper(index)
    for extra in ((), ("verify=false",)):
        err = refused(search(index, *extra), f"{index / 'weights.npy'}: ")
        assert needle in err


def test_verify_false_skips_only_the_files_digests(index, tmp_path):
    """The opt-out is what it says: a changed weights file is searched (the risk the docs name), its
    record says the files were not verified, and a bad verify value is refused."""
    swap_weights(index)
    res = harness_cli("eval", "--task", "demo", "--retriever", f"bm25:index={index},verify=false", "--quiet",
                      "-o", str(tmp_path / "out"))
    assert res.returncode == 0, res.stderr
    assert results(tmp_path / "out")["components"]["retriever"]["index"]["files_verified"] is False
    refused(search(index, "verify=maybe"), "verify must be true or false")
    refused(harness_cli("eval", "--task", "demo", "--retriever", "bm25:verify=false", "--quiet"),
            "verify= applies to an index")
