"""The restricted unpickler: BIRCO's files load; anything that would run code is refused, unexecuted."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
from harness.errors import DataError

from harness_birco.unpickler import load, loads, plain


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_malicious_pickle_is_refused_without_running(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "test_set.pickle"
    path.write_bytes(pickle.dumps({"query": {}, "corpus": {}, "qrel": _Evil(marker)}))
    with pytest.raises(DataError) as err:
        load(path)
    msg = str(err.value)
    assert str(path) in msg  # names the file
    assert "system" in msg and ("posix" in msg or "os" in msg)  # and the refused global
    assert not marker.exists()  # nothing ran


@pytest.mark.parametrize("payload", [
    (eval, ("1+1",)),
    (__import__, ("os",)),
])
def test_other_globals_refused(tmp_path, payload):
    class R:
        def __reduce__(self):
            return payload

    with pytest.raises(DataError, match="refused to unpickle global"):
        loads(pickle.dumps(R()), path="x.pickle")


def test_numpy_scalars_admitted_and_made_plain():
    data = {np.str_("q1"): [np.str_("d1")], "qrel": {"q1": {"d1": np.int64(2), "d2": np.float64(0.4)}}}
    got = loads(pickle.dumps(data))
    assert got["qrel"]["q1"]["d1"] == 2
    p = plain(got)
    assert type(next(iter(p))) is str and type(p["qrel"]["q1"]["d1"]) is int and type(p["qrel"]["q1"]["d2"]) is float


def test_object_dtype_scalar_refused():
    """numpy's scalar() with an object dtype would hand back an arbitrary object: refused."""
    from harness_birco.unpickler import _numpy_scalar

    scalar = _numpy_scalar()

    class R:
        def __reduce__(self):
            return (scalar, (np.dtype("O"), "hello"))

    with pytest.raises(DataError, match="object dtypes are not allowed"):
        loads(pickle.dumps(R()))


def test_ndarray_refused():
    with pytest.raises(DataError, match="refused to unpickle global"):
        loads(pickle.dumps(np.array([1, 2])))


def test_corrupt_stream_is_a_data_error(tmp_path):
    path = tmp_path / "bad.pickle"
    path.write_bytes(pickle.dumps({"a": 1})[:-3])
    with pytest.raises(DataError, match="cannot unpickle"):
        load(path)


def test_real_files_load(birco_dir):
    for f in sorted(birco_dir.glob("*/*.pickle")):
        obj = load(f)
        assert isinstance(obj, dict) and obj, f
