"""The pickle reader: BIRCO's files load as plain values; code, native-crash and bomb pickles are refused."""

from __future__ import annotations

import collections
import hashlib
import json
import os
import pickle
import struct
import subprocess
import sys

import numpy as np
import pytest
from harness import DataError

from harness_birco import unpickler
from harness_birco.data import read_ranks, read_set
from harness_birco.unpickler import MAX_DEPTH, MAX_KEY_TUPLE, load, loads


def _u(s: str) -> bytes:
    """BINUNICODE ``s``."""
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def _dtype(text: str, state: bytes = b"") -> bytes:
    """Opcodes for ``numpy.dtype(text, False, True)``, then BUILD with ``state`` when given."""
    out = b"cnumpy\ndtype\n" + _u(text) + b"\x89\x88\x87R"
    return out + (state + b"b" if state else b"")


#: the dtype's state as numpy writes it, flags rewritten to 0 (which would hide the object dtype)
_STATE_FLAGS0 = b"(K\x03" + _u("<") + b"NNN" + b"J\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00t"

#: numpy's scalar(dtype('O8') with flags=0, 8 attacker bytes): pickle.loads reads them as a PyObject*
DTYPE_ATTACK = (b"\x80\x03cnumpy.core.multiarray\nscalar\n" + _dtype("O8", _STATE_FLAGS0)
                + b"C\x08" + b"A" * 8 + b"\x86R.")


def _laughs(levels: int = 10, width: int = 10, close: bytes = b"l") -> bytes:
    """A 'billion laughs' pickle: each level is a list (``close=b"t"``: tuple) of ``width`` references
    to the previous level, ``width ** levels`` strings once expanded."""
    out = b"\x80\x04" + _u("lol") + b"\x940"  # MEMOIZE, POP: each level lives in the memo only
    for level in range(levels):
        out += b"(" + (b"h" + bytes([level])) * width + close + b"\x940"
    return out + b"h" + bytes([levels]) + b"."


class _Evil:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


# -- code execution ---------------------------------------------------------------------------------

def test_malicious_pickle_is_refused_without_running(tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "test_set.pickle"
    path.write_bytes(pickle.dumps({"query": {}, "corpus": {}, "qrel": _Evil(marker)}))
    with pytest.raises(DataError) as err:
        load(path)
    msg = str(err.value)
    assert str(path) in msg  # names the file
    assert "refused to unpickle global" in msg and "system" in msg and ("posix" in msg or "os" in msg)
    assert not marker.exists()  # nothing ran


@pytest.mark.parametrize("payload", [
    (eval, ("1+1",)),
    (__import__, ("os",)),
    (collections.Counter, ()),  # another global of an admitted module
])
def test_other_globals_refused(tmp_path, payload):
    class R:
        def __reduce__(self):
            return payload

    with pytest.raises(DataError, match="refused to unpickle global") as err:
        loads(pickle.dumps(R()), path="x.pickle")
    assert "x.pickle" in str(err.value) and payload[0].__name__ in str(err.value)


def test_refused_global_is_never_imported():
    name = "harness_birco_test_no_such_module"
    with pytest.raises(DataError, match=f"refused to unpickle global {name}.f"):
        loads(b"\x80\x02c" + name.encode() + b"\nf\n)R.")
    assert name not in sys.modules


def test_ndarray_refused():
    with pytest.raises(DataError, match="refused to unpickle global numpy.*_reconstruct"):
        loads(pickle.dumps(np.array([1, 2])))


@pytest.mark.parametrize(("data", "opcode"), [
    (b"(iharness\nx\n.", "INST"),
    (b"\x80\x02cbuiltins\nlist\n)\x81.", "NEWOBJ"),
    (b"(cbuiltins\nlist\no.", "OBJ"),
    (b"\x80\x02\x82\x01.", "EXT1"),
    (b"Pid\n.", "PERSID"),
    (b"\x80\x02K\x01Q.", "BINPERSID"),
    (b"\x80\x05\x97.", "NEXT_BUFFER"),
])
def test_other_opcodes_refused(data, opcode):
    with pytest.raises(DataError, match=f"x.pickle: refused pickle opcode {opcode}"):
        loads(data, path="x.pickle")


def test_unknown_opcode_byte_is_a_data_error():
    with pytest.raises(DataError, match="x.pickle: cannot unpickle"):
        loads(b"\x80\x04\xff.", path="x.pickle")


def test_corrupt_stream_is_a_data_error(tmp_path):
    path = tmp_path / "bad.pickle"
    path.write_bytes(pickle.dumps({"a": 1})[:-3])
    with pytest.raises(DataError, match="cannot unpickle"):
        load(path)


@pytest.mark.parametrize("data", [b"\x80\x04a.", b"\x80\x04K\x01K\x02.", b"\x80\x04(K\x01.", b"\x80\x04h\x05."])
def test_malformed_stacks_are_data_errors(data):
    with pytest.raises(DataError, match="cannot unpickle"):
        loads(data)


# -- numpy: decoded here, numpy never imported ------------------------------------------------------

def test_dtype_state_attack_refused(tmp_path):
    with pytest.raises(DataError, match="x.pickle: refused numpy dtype 'O8'"):
        loads(DTYPE_ATTACK, path="x.pickle")


def test_dtype_state_attack_does_not_crash_a_process(tmp_path):
    """Run in a fresh interpreter: the reader refuses it, exits normally and never imports numpy."""
    path = tmp_path / "attack.pickle"
    path.write_bytes(DTYPE_ATTACK)
    code = ("import sys\nfrom harness import DataError\nfrom harness_birco.unpickler import load\n"
            f"try:\n    load({str(path)!r})\nexcept DataError as e:\n    print('refused:', e)\n"
            "print('numpy imported:', 'numpy' in sys.modules)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    assert "refused:" in proc.stdout and "'O8'" in proc.stdout
    assert "numpy imported: False" in proc.stdout


def test_dtype_state_is_read_only_for_byte_order():
    """A hostile state on an int dtype (object flags, odd sizes, fields) changes nothing but byte order."""
    state = b"(K\x03" + _u(">") + b"N" + b"(" + _u("f") + b"t" + b"}" + b"K\x08K\x08K\x3ft"
    data = b"\x80\x03cnumpy.core.multiarray\nscalar\n" + _dtype("i4", state) + b"C\x04\x00\x00\x01\x02\x86R."
    assert loads(data) == 0x0102


@pytest.mark.parametrize("value", [
    np.str_("q1é"), np.str_(""), np.bytes_(b"ab"), np.int64(-5), np.int8(-3), np.uint16(65000),
    np.uint64(2**64 - 1), np.array([5], dtype=">i4")[0], np.array([1.5], dtype=">f8")[0],
    np.array(["ab"], dtype=">U3")[0], np.float16(0.5), np.float32(1.25), np.float64(0.1), np.bool_(True),
    np.bool_(False),
])
@pytest.mark.parametrize("protocol", [3, 4, 5])
def test_numpy_scalars_decoded_to_python_values(value, protocol):
    got = loads(pickle.dumps(value, protocol=protocol))
    assert got == value.item() and type(got) is type(value.item())


def test_numpy_scalars_in_containers_are_plain():
    data = {np.str_("q1"): [np.str_("d1")], "qrel": {"q1": {"d1": np.int64(2), "d2": np.float64(0.4)}}}
    got = loads(pickle.dumps(data))
    assert got == {"q1": ["d1"], "qrel": {"q1": {"d1": 2, "d2": 0.4}}}
    assert type(next(iter(got))) is str and type(got["q1"][0]) is str
    assert type(got["qrel"]["q1"]["d1"]) is int and type(got["qrel"]["q1"]["d2"]) is float


@pytest.mark.parametrize(("value", "message"), [
    (np.complex128(1j), "refused numpy dtype 'c16'"),
    (np.datetime64("2020-01-01"), "refused numpy dtype 'M8'"),
    (np.void(b"ab"), "refused numpy dtype 'V2'"),
    (np.longdouble(1), "item size 16"),
    (np.dtype("i8"), "refused a numpy.dtype in the data"),
])
def test_other_numpy_values_refused(value, message):
    with pytest.raises(DataError, match=message):
        loads(pickle.dumps(value))


def test_object_dtype_scalar_refused():
    with pytest.raises(DataError, match="refused numpy dtype 'O8'"):
        loads(b"\x80\x03cnumpy._core.multiarray\nscalar\n" + _dtype("O8") + _u("hello") + b"\x86R.")


def test_scalar_size_mismatch_refused():
    data = b"\x80\x03cnumpy.core.multiarray\nscalar\n" + _dtype("i8") + b"C\x04abcd\x86R."
    with pytest.raises(DataError, match="4 bytes, expected 8"):
        loads(data)


# -- plain data, protocols 0-5 ----------------------------------------------------------------------

@pytest.mark.parametrize("protocol", range(6))
def test_plain_data_all_protocols(protocol):
    data = {"a": [1, -2**70, 2.5, None, True, False, "x\u00e9\U0001f600"], "t": (1, (2, 3)), "s": {1, "b"},
            "f": frozenset({"a"}), "o": collections.OrderedDict(a=1, b=[2]), (1, "k"): (), "e": [[], {}, ()]}
    shared = [1, 2]
    data["shared"] = [shared, shared]
    if protocol >= 3:  # bytes before protocol 3 go through the global _codecs.encode, which is refused
        data["b"], data["ba"] = b"\x00y", bytearray(b"z\xff")
    got = loads(pickle.dumps(data, protocol=protocol))
    expected = {**data, "o": dict(data["o"])} | ({"ba": b"z\xff"} if protocol >= 3 else {})
    assert got == expected
    assert type(got["o"]) is dict and type(got["s"]) is set and type(got["f"]) is frozenset
    assert type(got["t"]) is tuple and type(got["t"][1]) is tuple
    if protocol >= 3:
        assert type(got["ba"]) is bytes


# -- bombs and cycles -------------------------------------------------------------------------------

@pytest.mark.parametrize("close", [b"l", b"t"])
def test_billion_laughs_refused(close):
    data = _laughs(close=close)  # 10 ** 10 strings once expanded
    assert len(data) < 500
    with pytest.raises(DataError, match="x.pickle: .*MAX_OBJECTS=50,000,000"):
        loads(data, path="x.pickle")


def test_laughs_below_the_limit_load():
    got = loads(_laughs(levels=3))
    assert len(got) == 10 and len(got[0]) == 10 and got[9][9][9] == "lol"


@pytest.mark.parametrize("tail", [
    b"}" + b"h\x0a" + b"N" + b"s.",  # nested shared tuple as a dict key
    b"\x8f(" + b"h\x0a" + b"\x90.",  # ... as a set item
    b"(" + b"h\x0a" + b"\x91.",  # ... in a frozenset
])
def test_nested_tuples_refused_as_keys(tail):
    data = _laughs(close=b"t")[:-1] + b"0" + tail  # POP the bomb, keep it in the memo
    assert len(data) < 500
    with pytest.raises(DataError, match=f"only scalars and tuples of at most MAX_KEY_TUPLE={MAX_KEY_TUPLE}"):
        loads(data)


def test_small_tuple_keys_admitted():
    assert loads(pickle.dumps({(1, "a", None): {2}, "k": frozenset({("x", 2.5)})})) == {
        (1, "a", None): {2}, "k": frozenset({("x", 2.5)})}


@pytest.mark.parametrize("data", [
    b"\x80\x04(" * (MAX_DEPTH + 1) + b"]" + b"l" * (MAX_DEPTH + 1) + b".",  # nested lists
    b"\x80\x04]" + b"\x85" * (MAX_DEPTH + 1) + b".",  # nested tuples
])
def test_deep_nesting_refused(data):
    with pytest.raises(DataError, match=f"MAX_DEPTH={MAX_DEPTH}"):
        loads(data)


def test_nesting_at_the_limit_loads():
    got = loads(b"\x80\x04]" + b"\x85" * (MAX_DEPTH - 1) + b".")
    for _ in range(MAX_DEPTH - 1):
        got = got[0]
    assert got == []


@pytest.mark.parametrize("data", [
    b"\x80\x04]\x94h\x00a.",  # a list holding itself
    b"\x80\x04}\x94K\x01]\x94h\x00as.",  # a dict holding a list holding the dict
])
def test_cycles_refused(data):
    with pytest.raises(DataError, match="x.pickle: refused a pickle with a reference cycle"):
        loads(data, path="x.pickle")


def test_memo_limit(monkeypatch):
    monkeypatch.setattr(unpickler, "MAX_MEMO", 3)
    with pytest.raises(DataError, match="MAX_MEMO=3"):
        loads(b"\x80\x04(" + b"K\x01\x94" * 4 + b"l.")


def test_length_limit(monkeypatch):
    monkeypatch.setattr(unpickler, "MAX_LEN", 3)
    with pytest.raises(DataError, match="MAX_LEN=3"):
        loads(pickle.dumps(list(range(4))))


# -- the real files ---------------------------------------------------------------------------------

#: per file: sha256 of ``json.dumps(value, ensure_ascii=True)``, and counts (queries, corpus, qrel pairs) or
#: (queries, ranked ids); computed from the numpy-backed unpickler this reader replaced
REAL = {
    "arguana/e5_rank.pickle": ("ec452b7e9819f29660374d8da4be6e8b8c269936ac2cdae99a32d47d21964585", (100, 5001)),
    "arguana/test_set.pickle": ("b82ed23146b1091d8fe5686247e2840d27e61a4dad78ee9b2788cf7d157ae988",
                                (100, 3117, 5001)),
    "clinical-trial/dev_set.pickle": ("b4f16f465b06ea39d07b373469732e8b35c285af6629b55cc25781dd2f94e5c5",
                                      (9, 248, 253)),
    "clinical-trial/e5_rank.pickle": ("aaca552b4d60aaff6db8f601ca764e0f886842ffddef54cd6dc1971d3d525313", (50, 3591)),
    "clinical-trial/test_set.pickle": ("9f4a690ed2fa19a649e2b7ae40ed9460904422b7ea489d1fb685803edc2437ad",
                                       (50, 3377, 3591)),
    "doris-mae/dev_set.pickle": ("5c359246e19ce6eb15b02c2f68b1218fcc393e3ec4d6009f1fc4d53acd28e53b",
                                 (40, 2938, 3129)),
    "relic/e5_rank.pickle": ("2f64b9f6039cda6ce199a00e8d6341f5d7169c9e78797d7c1c008d5aa9630c87", (100, 5062)),
    "relic/test_set.pickle": ("5a7614573ac930e10fe3cb7f60584e9b4d521601f4560e3562fdb36c6b6c0960", (100, 5023, 5062)),
    "wtb/dev_set.pickle": ("93ae303cd2199a7d99c5acda3c38e3dde10f99fc50a6048d7c80772fcd4c89c9", (57, 2404, 137028)),
    "wtb/e5_rank.pickle": ("93f3eab22a469c74858dcf5910621cdf89c2e9ab2f135e553865bc31b8f6fb73", (100, 5043)),
    "wtb/test_set.pickle": ("cf997c9f618bee052712d46fada9f4852aed5a607f4cb7bc5951721239f23a8a", (100, 1767, 5043)),
}


def test_real_files_load_with_the_same_values(birco_dir):
    found = sorted(str(f.relative_to(birco_dir)) for f in birco_dir.glob("*/*.pickle"))
    assert found == sorted(REAL)
    for rel, (digest, counts) in REAL.items():
        obj = load(birco_dir / rel)
        assert hashlib.sha256(json.dumps(obj, ensure_ascii=True).encode()).hexdigest() == digest, rel
        if "qrel" in obj:
            got = (len(obj["query"]), len(obj["corpus"]), sum(len(p) for p in obj["qrel"].values()))
            assert all(type(k) is str and type(v) is str for k, v in {**obj["query"], **obj["corpus"]}.items())
        else:
            got = (len(obj), sum(len(v) for v in obj.values()))
            assert all(type(d) is str for v in obj.values() for d in v)
        assert got == counts, rel


def test_real_values(birco_dir):
    queries, corpus, qrel = read_set(birco_dir / "arguana/test_set.pickle")
    assert queries["test-economy-epsihbdns-pro01a"].startswith("The government has a right to make decis")
    assert sum(g for p in qrel.values() for g in p.values()) == 100
    assert read_ranks(birco_dir / "arguana/e5_rank.pickle")["test-economy-epsihbdns-pro01a"][:2] == [
        "training-society-fygspsmy-pro01a", "training-politics-pgglgvhciu-con01b"]
    _, _, qrel = read_set(birco_dir / "clinical-trial/dev_set.pickle")
    assert "201415" in qrel and sum(g for p in qrel.values() for g in p.values()) == 84
    _, _, qrel = read_set(birco_dir / "doris-mae/dev_set.pickle")
    grades = [g for p in qrel.values() for g in p.values()]
    assert all(type(g) is float for g in grades) and round(sum(grades), 6) == 1822.027037
