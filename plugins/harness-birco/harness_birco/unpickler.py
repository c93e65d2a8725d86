"""A pickle reader for BIRCO's released pickles that never executes the pickle.

The files are ``dict``/``list``/``str``/``int``/``float`` containers, some holding numpy scalars
(``np.str_`` query ids, ``np.int64`` grades) that pickle rebuilds through the globals
``numpy.core.multiarray.scalar`` (``numpy._core.multiarray.scalar`` from numpy 2) and ``numpy.dtype``.

Nothing here calls ``pickle.Unpickler`` or imports numpy. The opcodes are parsed by
:func:`pickletools.genops` (which parses without executing) and interpreted by a small stack machine
that builds plain Python values only: ``str``, ``int``, ``float``, ``bool``, ``None``, ``bytes``,
``list``, ``dict``, ``tuple``, ``set`` and ``frozenset``.

- Globals: only :data:`ALLOWED` (the numpy scalar and dtype, ``collections.OrderedDict`` and the builtin
  container types); any other is refused by name before anything is looked up or imported.
- ``numpy.dtype(...)`` becomes an inert marker holding the dtype string (``'i8'``, ``'U5'``...) of kind
  ``b i u f S U``; a later BUILD state is read only for its byte order. ``scalar(dtype, raw)`` is decoded
  here from the raw bytes, whose length must equal the item size (``np.str_`` -> ``str``,
  ``np.bytes_`` -> ``bytes``, ``np.int64`` -> ``int``, ``np.float64`` -> ``float``, ``np.bool_`` -> ``bool``).
- Opcodes that can run code or need objects (INST, OBJ, NEWOBJ, EXT*, PERSID, buffers...) are refused.
- The work is bounded (:data:`MAX_MEMO`, :data:`MAX_LEN`, :data:`MAX_DEPTH`, :data:`MAX_OBJECTS`,
  :data:`MAX_KEY_TUPLE`), cycles are refused, and dict keys / set items must be scalars or small tuples
  of scalars, so a "billion laughs" pickle fails at once instead of hanging.

Every refusal is a :class:`harness.concepts.errors.DataError` naming the file.
"""

from __future__ import annotations

import os
import pickletools
import re
import struct
import sys
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from harness import DataError

#: globals admitted, (module, name); none of them is ever imported
SCALAR = frozenset({("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar")})
DTYPE = frozenset({("numpy", "dtype")})
_CONTAINER_NAMES = ("set", "frozenset", "list", "dict", "tuple", "bytearray")
CONTAINERS = ({(m, n) for m in ("builtins", "__builtin__") for n in _CONTAINER_NAMES}
              | {("collections", "OrderedDict")})
ALLOWED = SCALAR | DTYPE | CONTAINERS

#: memo entries (the largest real file uses 10,929)
MAX_MEMO = 2_000_000
#: items in one container (the largest real container holds 5,023)
MAX_LEN = 10_000_000
#: nesting depth of containers (the real files nest 3 deep)
MAX_DEPTH = 100
#: objects in the result counted with multiplicity, a shared container once per reference, plus items
#: copied by container REDUCEs (the largest real file, wtb/dev_set.pickle, expands to 279,099)
MAX_OBJECTS = 50_000_000
#: items in a tuple used as a dict key or set item (tuples of scalars only, so hashing stays linear)
MAX_KEY_TUPLE = 16

#: numpy dtype kinds decoded, and their admitted item sizes (``None``: any size)
_KINDS: Mapping[str, tuple[int, ...] | None] = MappingProxyType({"b": (1,), "i": (1, 2, 4, 8), "u": (1, 2, 4, 8),
                                                              "f": (2, 4, 8), "S": None, "U": None})
_INT_CODES = MappingProxyType({1: "b", 2: "h", 4: "i", 8: "q"})
_FLOAT_CODES = MappingProxyType({2: "e", 4: "f", 8: "d"})
_SCALARS = (str, int, float, bool, type(None), bytes)
_DTYPE_RE = re.compile(r"([<>|=]?)([A-Za-z])(\d{1,9})")
_NATIVE = "<" if sys.byteorder == "little" else ">"

_IGNORED = frozenset({"PROTO", "FRAME"})
_PUSH_VALUE = frozenset({"INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4", "FLOAT", "BINFLOAT",
                         "STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "SHORT_BINUNICODE", "BINUNICODE",
                         "BINUNICODE8", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8"})
_CONSTANTS = MappingProxyType({"NONE": None, "NEWTRUE": True, "NEWFALSE": False})
_PUT = frozenset({"PUT", "BINPUT", "LONG_BINPUT"})
_GET = frozenset({"GET", "BINGET", "LONG_BINGET"})


class _Global:
    """An admitted global, by name only."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str):
        self.module, self.name = module, name


class _Dtype:
    """An inert stand-in for ``numpy.dtype``: kind, item size in bytes and byte order."""

    __slots__ = ("kind", "itemsize", "order", "text")

    def __init__(self, text: str, kind: str, itemsize: int, order: str):
        self.text, self.kind, self.itemsize, self.order = text, kind, itemsize, order


class _Reader:
    """The stack machine over :func:`pickletools.genops`; :meth:`run` returns the unpickled value."""

    def __init__(self, data: bytes, path: object):
        self.data, self.path = data, path
        self.stack: list[Any] = []
        self.marks: list[int] = []
        self.memo: dict[int, Any] = {}
        self.copied = 0  # items copied by container REDUCEs, charged to MAX_OBJECTS

    def fail(self, message: str) -> DataError:
        return DataError(message, self.path)

    # -- stack ----------------------------------------------------------------------------------
    def pop(self) -> Any:
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            raise self.fail("cannot unpickle: stack underflow (corrupt pickle)")
        return self.stack.pop()

    def pop_mark(self) -> list[Any]:
        if not self.marks:
            raise self.fail("cannot unpickle: no MARK on the stack (corrupt pickle)")
        start = self.marks.pop()
        items = self.stack[start:]
        del self.stack[start:]
        return items

    def top(self) -> Any:
        if len(self.stack) <= (self.marks[-1] if self.marks else 0):
            raise self.fail("cannot unpickle: stack underflow (corrupt pickle)")
        return self.stack[-1]

    def sized(self, obj: Any) -> Any:
        if len(obj) > MAX_LEN:
            raise self.fail(f"a container holds more than MAX_LEN={MAX_LEN:,} items (refused as a possible "
                            "pickle bomb)")
        return obj

    def key(self, k: Any, what: str) -> Any:
        """``k`` if it is a scalar or a small tuple of scalars (hashing it is linear)."""
        if type(k) in _SCALARS:
            return k
        if type(k) is tuple and len(k) <= MAX_KEY_TUPLE and all(type(x) in _SCALARS for x in k):
            return k
        raise self.fail(f"refused a {what} of type {_name(k)}: only scalars and tuples of at most "
                        f"MAX_KEY_TUPLE={MAX_KEY_TUPLE} scalars are allowed")

    def target(self, kind: type, op: str) -> Any:
        obj = self.top()
        if type(obj) is not kind:
            raise self.fail(f"cannot unpickle: {op} on a {_name(obj)} (expected a {kind.__name__})")
        return obj

    def set_items(self, d: dict, items: list[Any]) -> None:
        if len(items) % 2:
            raise self.fail("cannot unpickle: odd number of items for a dict (corrupt pickle)")
        for i in range(0, len(items), 2):
            d[self.key(items[i], "dict key")] = items[i + 1]
        self.sized(d)

    # -- globals and REDUCE ---------------------------------------------------------------------
    def find_global(self, module: Any, name: Any) -> _Global:
        if type(module) is not str or type(name) is not str:
            raise self.fail("cannot unpickle: STACK_GLOBAL needs two strings (corrupt pickle)")
        if (module, name) not in ALLOWED:
            raise self.fail(f"refused to unpickle global {module[:100]}.{name[:100]}: only plain containers and "
                            "numpy scalars/dtypes are allowed in BIRCO data (the file may be corrupt or malicious)")
        return _Global(module, name)

    def reduce(self, func: Any, args: Any) -> Any:
        if type(func) is not _Global:
            raise self.fail(f"refused REDUCE on a {_name(func)}: only admitted globals may be called")
        if type(args) is not tuple:
            raise self.fail(f"cannot unpickle: REDUCE arguments are a {_name(args)}, not a tuple")
        key = (func.module, func.name)
        if key in DTYPE:
            return self.dtype(args)
        if key in SCALAR:
            return self.scalar(args)
        return self.container(func.name, args)

    def dtype(self, args: tuple) -> _Dtype:
        if not 1 <= len(args) <= 3 or type(args[0]) is not str or any(type(a) is not bool for a in args[1:]):
            raise self.fail("refused numpy.dtype arguments: expected (str, bool, bool)")
        m = _DTYPE_RE.fullmatch(args[0])
        if not m or m.group(2) not in _KINDS:
            raise self.fail(f"refused numpy dtype {args[0][:20]!r}: only kinds b, i, u, f, S, U are allowed "
                            "(object, void, datetime... dtypes are not plain data)")
        order, kind, size = m.group(1) or "=", m.group(2), int(m.group(3))
        sizes = _KINDS[kind]
        if sizes is not None and size not in sizes:
            raise self.fail(f"refused numpy dtype {args[0]!r}: item size {size} is not one of {sizes}")
        return _Dtype(args[0], kind, size * 4 if kind == "U" else size, order)

    def build(self, obj: Any, state: Any) -> None:
        if type(obj) is not _Dtype:
            raise self.fail(f"refused BUILD on a {_name(obj)}: only numpy dtypes take a state")
        if type(state) is not tuple or len(state) < 2 or state[1] not in ("<", ">", "|", "="):
            raise self.fail("refused a numpy dtype state without a byte order ('<', '>', '|' or '=')")
        obj.order = state[1]  # every other field (flags, sizes, fields...) is ignored

    def scalar(self, args: tuple) -> Any:
        if len(args) != 2 or type(args[0]) is not _Dtype or type(args[1]) is not bytes:
            raise self.fail("refused numpy scalar arguments: expected (numpy.dtype, bytes)")
        dt, raw = args
        if len(raw) != dt.itemsize:
            raise self.fail(f"refused a numpy scalar of dtype {dt.text!r}: {len(raw)} bytes, expected {dt.itemsize}")
        if dt.kind == "b":
            return raw != b"\x00"
        if dt.kind == "S":
            return raw.rstrip(b"\x00")
        order = _NATIVE if dt.order == "=" else dt.order
        if order == "|" and dt.itemsize > 1:
            raise self.fail(f"refused a numpy scalar of dtype {dt.text!r}: byte order '|' for a multi-byte type")
        if dt.kind == "U":
            try:
                return raw.decode("utf-32-be" if order == ">" else "utf-32-le").rstrip("\x00")
            except UnicodeDecodeError as exc:
                raise self.fail(f"refused a numpy string scalar: {exc}") from None
        if dt.kind == "f":
            code = _FLOAT_CODES[dt.itemsize]
        else:
            code = _INT_CODES[dt.itemsize]
            code = code if dt.kind == "i" else code.upper()
        return struct.unpack(("<" if order in "<|" else ">") + code, raw)[0]

    def container(self, name: str, args: tuple) -> Any:
        """``list(x)``, ``dict()``, ``OrderedDict()``, ``set(x)``, ``bytearray(s, 'latin-1')``..."""
        if name == "bytearray":
            return self.bytearray_of(args)
        if len(args) > 1:
            raise self.fail(f"refused {name} arguments: expected at most one")
        src = args[0] if args else ()
        if type(src) not in (list, tuple, set, frozenset, dict):
            raise self.fail(f"refused {name} argument of type {_name(src)}: expected a plain container")
        self.copied += len(src)
        if self.copied > MAX_OBJECTS:
            raise self.fail(f"container REDUCEs copy more than MAX_OBJECTS={MAX_OBJECTS:,} items (refused as a "
                            "possible pickle bomb)")
        if name in ("list", "tuple"):
            return list(src) if name == "list" else tuple(src)
        if name in ("set", "frozenset"):
            items = {self.key(x, "set item") for x in src}
            return items if name == "set" else frozenset(items)
        return self.mapping_of(name, src)

    def bytearray_of(self, args: tuple) -> bytes:
        """``bytearray()``, ``bytearray(b)``, ``bytearray(s, 'latin-1')``, as bytes."""
        if not args:
            return b""
        if len(args) == 1 and type(args[0]) is bytes:
            return args[0]
        if len(args) == 2 and type(args[0]) is str and args[1] in ("latin-1", "latin1"):
            try:
                return args[0].encode("latin-1")
            except UnicodeEncodeError:
                raise self.fail("refused bytearray arguments: not latin-1 text") from None
        raise self.fail("refused bytearray arguments: expected (), (bytes,) or (str, 'latin-1')")

    def mapping_of(self, name: str, src: Any) -> dict:
        """``dict(src)`` / ``OrderedDict(src)`` of a dict or of (key, value) pairs, keys checked."""
        out: dict = {}  # dict, OrderedDict
        if type(src) is dict:
            out.update(src)
            return out
        for pair in src:
            if type(pair) not in (list, tuple) or len(pair) != 2:
                raise self.fail(f"refused {name} argument: expected (key, value) pairs")
            out[self.key(pair[0], "dict key")] = pair[1]
        return out

    # -- main loop ------------------------------------------------------------------------------
    def run(self) -> Any:
        try:
            for op, arg, _pos in pickletools.genops(self.data):
                if op.name == "STOP":
                    break
                self.step(op.name, arg)
        except DataError:
            raise
        except Exception as exc:  # genops on a truncated or corrupt stream
            raise self.fail(f"cannot unpickle: {type(exc).__name__}: {str(exc)[:200]}") from None
        if self.marks or len(self.stack) != 1:
            raise self.fail("cannot unpickle: STOP with an unbalanced stack (corrupt pickle)")
        result = self.stack[0]
        _Walk(self).visit(result, 1)
        return result

    # the opcode dispatch: one flat branch per opcode family, read top to bottom against pickletools'
    # opcode table; split up, the mapping from opcode to effect would be harder to audit
    def step(self, name: str, arg: Any) -> None:  # noqa: C901
        """Apply one opcode (one branch per opcode family)."""
        push = self.stack.append
        if name in _IGNORED:
            if name == "PROTO" and not 0 <= arg <= 5:
                raise self.fail(f"cannot unpickle: unsupported pickle protocol {arg}")
        elif name in _PUSH_VALUE:
            push(arg)
        elif name in _CONSTANTS:
            push(_CONSTANTS[name])
        elif name == "MARK":
            self.marks.append(len(self.stack))
        elif name == "POP":
            if self.marks and self.marks[-1] == len(self.stack):
                self.marks.pop()  # as pickle does: POP right after MARK drops the mark
            else:
                self.pop()
        elif name == "POP_MARK":
            self.pop_mark()
        elif name == "DUP":
            push(self.top())
        elif name in _PUT:
            self.memoize(arg)
        elif name == "MEMOIZE":
            self.memoize(len(self.memo))
        elif name in _GET:
            if arg not in self.memo:
                raise self.fail(f"cannot unpickle: memo key {arg} not found (corrupt pickle)")
            push(self.memo[arg])
        elif name == "EMPTY_DICT":
            push({})
        elif name == "EMPTY_LIST":
            push([])
        elif name == "EMPTY_TUPLE":
            push(())
        elif name == "EMPTY_SET":
            push(set())
        elif name == "DICT":
            d: dict = {}
            self.set_items(d, self.pop_mark())
            push(d)
        elif name == "LIST":
            push(self.sized(self.pop_mark()))
        elif name == "TUPLE":
            push(tuple(self.sized(self.pop_mark())))
        elif name in ("TUPLE1", "TUPLE2", "TUPLE3"):
            n = int(name[-1])
            items = [self.pop() for _ in range(n)]
            push(tuple(reversed(items)))
        elif name == "FROZENSET":
            push(frozenset(self.key(x, "set item") for x in self.sized(self.pop_mark())))
        elif name == "SETITEM":
            v, k = self.pop(), self.pop()
            self.set_items(self.target(dict, name), [k, v])
        elif name == "SETITEMS":
            items = self.pop_mark()
            self.set_items(self.target(dict, name), items)
        elif name == "APPEND":
            v = self.pop()
            lst = self.target(list, name)
            lst.append(v)
            self.sized(lst)
        elif name == "APPENDS":
            items = self.pop_mark()
            lst = self.target(list, name)
            lst.extend(items)
            self.sized(lst)
        elif name == "ADDITEMS":
            items = self.pop_mark()
            s = self.target(set, name)
            s.update(self.key(x, "set item") for x in items)
            self.sized(s)
        elif name == "BYTEARRAY8":
            push(bytes(arg))
        elif name == "GLOBAL":
            module, _, attr = arg.partition(" ")
            push(self.find_global(module, attr))
        elif name == "STACK_GLOBAL":
            attr, module = self.pop(), self.pop()
            push(self.find_global(module, attr))
        elif name == "REDUCE":
            args, func = self.pop(), self.pop()
            push(self.reduce(func, args))
        elif name == "BUILD":
            state = self.pop()
            self.build(self.top(), state)
        else:
            raise self.fail(f"refused pickle opcode {name}: only plain-data opcodes are interpreted")

    def memoize(self, index: int) -> None:
        if len(self.memo) >= MAX_MEMO and index not in self.memo:
            raise self.fail(f"more than MAX_MEMO={MAX_MEMO:,} memo entries (refused as a possible pickle bomb)")
        self.memo[index] = self.top()


class _Walk:
    """Checks the result once per container: plain values only, no cycles, depth and expanded size bounded."""

    def __init__(self, reader: _Reader):
        self.reader = reader
        self.done: dict[int, tuple[int, int]] = {}  # id -> (expanded weight, height)
        self.active: set[int] = set()  # containers on the current path (ids are stable: all stay reachable)

    def visit(self, obj: Any, depth: int) -> tuple[int, int]:
        kind = type(obj)
        if kind in _SCALARS:
            return 1, 0
        if kind not in (list, tuple, dict, set, frozenset):
            raise self.reader.fail(f"refused a {_name(obj)} in the data: only plain values are allowed")
        i = id(obj)
        if i in self.active:
            raise self.reader.fail("refused a pickle with a reference cycle (plain data has none)")
        if i not in self.done:
            if depth > MAX_DEPTH:
                raise self.too_deep()
            self.active.add(i)
            children = [*obj, *obj.values()] if kind is dict else obj
            weight, height = 1, 0
            for child in children:
                w, h = self.visit(child, depth + 1)
                weight += w
                height = max(height, h)
                if weight + self.reader.copied > MAX_OBJECTS:
                    raise self.too_big()
            self.active.discard(i)
            self.done[i] = (weight, height + 1)
        weight, height = self.done[i]
        if depth + height - 1 > MAX_DEPTH:
            raise self.too_deep()
        return weight, height

    def too_deep(self) -> DataError:
        return self.reader.fail(f"containers nest more than MAX_DEPTH={MAX_DEPTH} deep (refused as a possible "
                                "pickle bomb)")

    def too_big(self) -> DataError:
        return self.reader.fail(f"the data expands to more than MAX_OBJECTS={MAX_OBJECTS:,} objects, shared "
                                "references counted each time (refused as a possible pickle bomb)")


def _name(obj: Any) -> str:
    if type(obj) is _Dtype:
        return "numpy.dtype"
    if type(obj) is _Global:
        return f"global {obj.module}.{obj.name}"
    return type(obj).__name__


def loads(data: bytes, path: object = None) -> Any:
    """Interpret the pickle ``data`` into plain Python values; anything else is a :class:`DataError`
    naming ``path``."""
    return _Reader(bytes(data), path).run()


def load(path: str | os.PathLike[str]) -> Any:
    """Read one pickle file with :func:`loads`."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise DataError("file not found", p) from None
    except OSError as exc:
        raise DataError(f"cannot read: {exc}", p) from exc
    return loads(data, path=p)
