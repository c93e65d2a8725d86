"""A restricted unpickler for BIRCO's released pickles.

The files are ``dict``/``list``/``str``/``int``/``float`` containers, some holding numpy scalars
(``np.str_`` query ids, ``np.int64`` grades), which pickle reconstructs through two globals:
``numpy.core.multiarray.scalar`` (``numpy._core.multiarray.scalar`` when written by numpy 2) and
``numpy.dtype``. Those, and plain container types, are the only globals admitted; anything else (a
``__reduce__`` calling ``os.system``, ``builtins.eval``, ``subprocess.Popen``...) is refused with a
:class:`harness.errors.DataError` naming the file and the global, before it is looked up, so nothing
runs. Object-dtype scalars are refused too.
"""

from __future__ import annotations

import importlib
import io
import os
import pickle
from pathlib import Path
from typing import Any

from harness.errors import DataError

#: globals admitted, (module, name); numpy's are resolved without importing the deprecated numpy.core
SCALAR = {("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar")}
DTYPE = {("numpy", "dtype")}
CONTAINERS = {("builtins", n) for n in ("set", "frozenset", "list", "dict", "tuple", "bytearray")} | {
    ("__builtin__", n) for n in ("set", "frozenset", "list", "dict", "tuple", "bytearray")} | {
    ("collections", "OrderedDict")}
ALLOWED = SCALAR | DTYPE | CONTAINERS


def _numpy_scalar():
    for mod in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            return importlib.import_module(mod).scalar
        except (ImportError, AttributeError):
            continue
    raise ImportError("numpy is needed to read numpy scalars")


class RestrictedUnpickler(pickle.Unpickler):
    """``pickle.Unpickler`` whose ``find_class`` admits only :data:`ALLOWED`."""

    def __init__(self, file: Any, *, path: object = None):
        super().__init__(file)
        self.path = path

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in ALLOWED:
            raise DataError(f"refused to unpickle global {module}.{name}: only plain containers and numpy "
                            "scalars/dtypes are allowed in BIRCO data (the file may be corrupt or malicious)",
                            self.path)
        if (module, name) in SCALAR:
            scalar = _numpy_scalar()
            path = self.path

            def safe_scalar(dtype: Any, *args: Any) -> Any:
                if getattr(dtype, "hasobject", True):
                    raise DataError(f"refused a numpy scalar of dtype {dtype!r} (object dtypes are not allowed)",
                                    path)
                return scalar(dtype, *args)

            return safe_scalar
        if (module, name) in DTYPE:
            import numpy

            return numpy.dtype
        if module == "collections":
            import collections

            return collections.OrderedDict
        import builtins

        return getattr(builtins, name)


def loads(data: bytes, *, path: object = None) -> Any:
    """Unpickle ``data`` with :class:`RestrictedUnpickler`; malformed data is a :class:`DataError`."""
    try:
        return RestrictedUnpickler(io.BytesIO(data), path=path).load()
    except DataError:
        raise
    except Exception as exc:  # truncated or corrupt stream
        raise DataError(f"cannot unpickle: {type(exc).__name__}: {exc}", path) from exc


def load(path: str | os.PathLike[str]) -> Any:
    """Read and unpickle one file with :class:`RestrictedUnpickler`."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise DataError("file not found", p) from None
    except OSError as exc:
        raise DataError(f"cannot read: {exc}", p) from exc
    return loads(data, path=p)


def plain(obj: Any) -> Any:
    """Numpy scalars to Python values, recursively (``np.str_`` -> ``str``, ``np.int64`` -> ``int``...)."""
    if isinstance(obj, dict):
        return {plain(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain(v) for v in obj]
    if isinstance(obj, str):
        return str(obj)
    if isinstance(obj, bool):
        return obj
    item = getattr(obj, "item", None)
    if callable(item) and type(obj).__module__ == "numpy":
        return item()
    return obj
