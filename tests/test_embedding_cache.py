"""The on-disk embedding cache: exact round trips, keys, location, corruption, concurrency, speed."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from harness.retrievers.dense.embedding_cache import EmbeddingCache, default_cache_dir, text_key

IDENTITY = {"model": "org/some-model", "revision": "abc123", "fingerprint": "f00d"}


def _vectors(n: int, dim: int = 8, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)


def test_round_trip_is_exact_and_counted(tmp_path):
    cache = EmbeddingCache(IDENTITY, tmp_path)
    keys = [text_key("document", "{text}", f"text {i}") for i in range(10)]
    vecs = _vectors(10)
    cache.put(keys[:6], vecs[:6])
    got, found = EmbeddingCache(IDENTITY, tmp_path).lookup(keys)
    assert found.tolist() == [True] * 6 + [False] * 4
    assert got.dtype == np.float32 and got.shape == (10, 8)
    assert np.array_equal(got[:6], vecs[:6]) and not got[6:].any()
    assert (cache.written, len(cache)) == (6, 6)
    again = EmbeddingCache(IDENTITY, tmp_path)
    again.lookup(keys)
    assert (again.hits, again.misses, again.corrupt) == (6, 4, 0)


def test_stored_as_raw_float32_bytes_not_pickle(tmp_path):
    cache = EmbeddingCache(IDENTITY, tmp_path)
    key = text_key("query", "{text}", "hello")
    vec = _vectors(1, 4)
    cache.put([key], vec)
    with sqlite3.connect(cache.path) as conn:
        dim, blob = conn.execute("SELECT dim, vec FROM emb").fetchone()
    assert dim == 4 and blob == vec.astype("<f4").tobytes()


def test_keys_depend_on_role_template_and_text():
    base = text_key("query", "query: {text}", "photosynthesis")
    assert base == text_key("query", "query: {text}", "photosynthesis")
    assert len(base) == 32
    others = {
        text_key("document", "query: {text}", "photosynthesis"),
        text_key("query", "passage: {text}", "photosynthesis"),
        text_key("query", "{text}", "photosynthesis"),
        text_key("query", "query: {text}", "Photosynthesis"),
    }
    assert base not in others and len(others) == 4


def test_model_identity_selects_the_file(tmp_path):
    a = EmbeddingCache(IDENTITY, tmp_path)
    b = EmbeddingCache({**IDENTITY, "revision": "def456"}, tmp_path)
    c = EmbeddingCache({**IDENTITY, "max_length": 128}, tmp_path)
    assert len({a.path, b.path, c.path}) == 3
    assert a.path == EmbeddingCache(dict(reversed(list(IDENTITY.items()))), tmp_path).path
    key = text_key("query", "{text}", "x")
    a.put([key], _vectors(1))
    assert not b.lookup([key])[1].any()


def test_default_location(monkeypatch, tmp_path):
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "hc"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_cache_dir() == tmp_path / "hc" / "embeddings"
    monkeypatch.delenv("HARNESS_CACHE_DIR")
    assert default_cache_dir() == tmp_path / "xdg" / "harness" / "embeddings"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_cache_dir() == Path.home() / ".cache" / "harness" / "embeddings"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "hc"))
    assert EmbeddingCache(IDENTITY).path.parent == tmp_path / "hc" / "embeddings"


def test_corrupted_rows_are_misses_and_get_overwritten(tmp_path):
    cache = EmbeddingCache(IDENTITY, tmp_path)
    keys = [text_key("document", "{text}", t) for t in ("a", "b", "c", "d")]
    vecs = _vectors(4)
    cache.put(keys, vecs)
    with sqlite3.connect(cache.path) as conn:
        conn.execute("UPDATE emb SET vec = ? WHERE key = ?", (b"\x00\x01\x02", keys[0]))  # truncated
        conn.execute("UPDATE emb SET vec = ? WHERE key = ?",
                     (np.full(8, np.nan, dtype="<f4").tobytes(), keys[1]))  # not finite
        conn.execute("UPDATE emb SET dim = 3 WHERE key = ?", (keys[2],))  # wrong dimension
    fresh = EmbeddingCache(IDENTITY, tmp_path)
    got, found = fresh.lookup(keys)
    assert found.tolist() == [False, False, False, True]
    assert fresh.corrupt == 3 and np.isfinite(got).all()
    assert np.array_equal(got[3], vecs[3])
    fresh.put(keys[:3], vecs[:3])
    got, found = EmbeddingCache(IDENTITY, tmp_path).lookup(keys)
    assert found.all() and np.array_equal(got, vecs)


def test_corrupted_file_is_moved_aside(tmp_path, caplog):
    cache = EmbeddingCache(IDENTITY, tmp_path)
    tmp_path.mkdir(exist_ok=True)
    cache.path.write_bytes(b"this is not a database" * 100)
    key = text_key("query", "{text}", "x")
    with caplog.at_level("WARNING", logger="harness.retrievers.dense.cache"):
        assert not cache.lookup([key])[1].any()
        cache.put([key], _vectors(1))
    assert "unreadable" in caplog.text
    assert list(tmp_path.glob("*.corrupt-*"))
    assert EmbeddingCache(IDENTITY, tmp_path).lookup([key])[1].all()


def test_unwritable_location_degrades_to_no_cache(tmp_path, caplog):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cache = EmbeddingCache(IDENTITY, blocker / "sub")  # a folder under a file cannot exist
    key = text_key("query", "{text}", "x")
    with caplog.at_level("WARNING", logger="harness.retrievers.dense.cache"):
        assert not cache.lookup([key])[1].any()
        cache.put([key], _vectors(1))
    assert cache.stats()["disabled"] and "disabled" in caplog.text


def _writer(args: tuple[str, int]) -> int:
    directory, worker = args
    cache = EmbeddingCache(IDENTITY, directory)
    keys = [text_key("document", "{text}", f"t{i}") for i in range(400)]
    vecs = _vectors(400, seed=0)  # every worker writes the same values for shared keys
    for start in range(worker * 50, 400, 100):
        cache.put(keys[start:start + 50], vecs[start:start + 50])
        cache.lookup(keys[:200])
    return cache.written


def test_concurrent_processes(tmp_path):
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    with multiprocessing.get_context(method).Pool(4) as pool:
        written = pool.map(_writer, [(str(tmp_path), w) for w in range(4)])
    assert sum(written) >= 400
    keys = [text_key("document", "{text}", f"t{i}") for i in range(400)]
    got, found = EmbeddingCache(IDENTITY, tmp_path).lookup(keys)
    assert found.all() and np.array_equal(got, _vectors(400, seed=0))


def test_batch_round_trip(tmp_path):
    """20k vectors of 384 dimensions written in batches and read back by a fresh cache object, bit for
    bit (speed figures live in docs/retrievers.md, not in a test)."""
    n, dim = 20_000, 384
    keys = [text_key("document", "{text}", f"document {i}") for i in range(n)]
    vecs = _vectors(n, dim)
    cache = EmbeddingCache(IDENTITY, tmp_path)
    for start in range(0, n, 1024):
        cache.put(keys[start:start + 1024], vecs[start:start + 1024])
    got, found = EmbeddingCache(IDENTITY, tmp_path).lookup(keys)
    assert found.all() and np.array_equal(got, vecs)


@pytest.mark.parametrize("dim", [None, 8])
def test_lookup_of_nothing(tmp_path, dim):
    got, found = EmbeddingCache(IDENTITY, tmp_path).lookup([], dim)
    assert len(got) == 0 and len(found) == 0
