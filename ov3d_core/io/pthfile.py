"""A fast, restricted reader of ``torch.save`` files: Python's C unpickler with an allow-list of globals, tensors
rebuilt as numpy arrays straight from the archive's storages. torch is not imported.

Why: ``torch.load(weights_only=True)`` runs a pure-Python unpickler; a Cube R-CNN ``instances_predictions.pth`` of
100k instances (lists of Python floats) takes ~35 s in it and ~1 s here (bench/bench_load.py).

Safety: ``find_class`` resolves only the names below, each to a function or class of this module (or
``collections.OrderedDict`` and numpy's own array reconstruction), so unpickling cannot call anything else. Tensors
numpy cannot hold (bfloat16, float8, quantized, sparse, on the meta device) become ``Unsupported`` placeholders that
the loader reports per record and field. Anything outside this reader's scope (an old non-zip archive, a global it
does not know, a malformed archive) makes ``read`` return None, and the caller uses ``torch.load(weights_only=True)``,
which stays the authority on what is accepted and on its error messages.
"""

from __future__ import annotations

import io
import pickle
import zipfile
from collections import OrderedDict
from pathlib import Path

import numpy as np


class Unsupported:
    """A tensor that numpy cannot hold; ``what`` says which kind ("tensor of bfloat16", "sparse tensor", ...)."""

    created = 0  # how many were made (``read`` reports whether a file holds any)

    def __init__(self, what: str):
        self.what = what
        Unsupported.created += 1

    def __repr__(self) -> str:
        return self.what


class _Refused(Exception):
    """Outside this reader's scope: the caller falls back to torch.load."""


#: torch storage class -> numpy dtype (None: numpy has no such dtype).
_STORAGES = {
    "DoubleStorage": "<f8", "FloatStorage": "<f4", "HalfStorage": "<f2", "LongStorage": "<i8", "IntStorage": "<i4",
    "ShortStorage": "<i2", "CharStorage": "i1", "ByteStorage": "u1", "BoolStorage": "?",
    "ComplexDoubleStorage": "<c16", "ComplexFloatStorage": "<c8",
    "BFloat16Storage": None, "QUInt8Storage": None, "QInt8Storage": None, "QInt32Storage": None,
    "QUInt4x2Storage": None, "QUInt2x4Storage": None,
}
#: torch dtype name -> numpy dtype (the names a v3 tensor or a meta tensor carries).
_DTYPES = {"float64": "<f8", "float32": "<f4", "float16": "<f2", "int64": "<i8", "int32": "<i4", "int16": "<i2",
           "int8": "i1", "uint8": "u1", "bool": "?", "complex128": "<c16", "complex64": "<c8",
           "uint16": "<u2", "uint32": "<u4", "uint64": "<u8"}


class _StorageType:
    def __init__(self, name: str):
        self.name = name
        self.dtype = _STORAGES[name]
        self.label = name[:-len("Storage")].lower()


class _TorchName:
    """A torch dtype, layout or qscheme named in the pickle (only its name is kept)."""

    def __init__(self, name: str):
        self.name = name


class _Storage:
    def __init__(self, kind, data: bytes | None):
        self.kind = kind  # _StorageType, or "untyped"
        self.data = data


def _strided(storage: _Storage, dtype: str, offset: int, size, stride) -> np.ndarray:
    flat = np.frombuffer(storage.data, dtype=np.dtype(dtype))
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    if len(size) != len(stride) or any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise _Refused("odd tensor geometry")
    if 0 in size:
        return np.zeros(size, flat.dtype)
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if offset < 0 or last >= len(flat):
        raise _Refused("tensor outside its storage")
    view = np.lib.stride_tricks.as_strided(flat[offset:], shape=size,
                                           strides=tuple(s * flat.itemsize for s in stride))
    return view.copy()


def _rebuild_tensor_v2(storage, offset, size, stride, requires_grad=False, hooks=None, metadata=None):
    if not isinstance(storage, _Storage) or not isinstance(storage.kind, _StorageType):
        raise _Refused("tensor without a typed storage")
    if storage.kind.dtype is None:
        return Unsupported("quantized tensor" if storage.kind.name.startswith("Q")
                           else f"tensor of {storage.kind.label}")
    return _strided(storage, storage.kind.dtype, int(offset), size, stride)


def _rebuild_tensor_v3(storage, offset, size, stride, requires_grad, hooks, dtype, metadata=None):
    if not isinstance(storage, _Storage) or not isinstance(dtype, _TorchName):
        raise _Refused("tensor without a dtype")
    np_dtype = _DTYPES.get(dtype.name)
    if np_dtype is None:
        return Unsupported(f"tensor of {dtype.name}")
    return _strided(storage, np_dtype, int(offset), size, stride)


def _unsupported(what: str):
    def rebuild(*args, **kwargs):
        return Unsupported(what)
    return rebuild


def _get_layout(name):
    return _TorchName(str(name))


def _size(*args):
    return tuple(*args)


def _latin1(text, encoding="latin1"):
    if encoding != "latin1" or not isinstance(text, str):
        raise _Refused("_codecs.encode beyond bytes")
    return text.encode("latin1")


def _numpy_globals() -> dict:
    try:
        from numpy._core import multiarray as ma
    except ImportError:  # numpy 1.x
        from numpy.core import multiarray as ma
    out = {}
    for mod in ("numpy._core.multiarray", "numpy.core.multiarray"):
        out[(mod, "_reconstruct")] = ma._reconstruct
        out[(mod, "scalar")] = ma.scalar
    out[("numpy", "ndarray")] = np.ndarray
    out[("numpy", "dtype")] = _safe_dtype
    return out


def _safe_dtype(spec, align=False, copy=False):
    dt = np.dtype(spec, align=align, copy=copy)
    if dt.hasobject:
        raise _Refused("object arrays")
    return dt


_GLOBALS = {
    ("collections", "OrderedDict"): OrderedDict,
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor_v2,
    ("torch._utils", "_rebuild_tensor_v3"): _rebuild_tensor_v3,
    ("torch._utils", "_rebuild_qtensor"): _unsupported("quantized tensor"),
    ("torch._utils", "_rebuild_sparse_tensor"): _unsupported("sparse tensor"),
    ("torch._utils", "_rebuild_meta_tensor_no_storage"): _unsupported("meta tensor"),
    ("torch.serialization", "_get_layout"): _get_layout,
    ("torch", "Size"): _size,
    ("_codecs", "encode"): _latin1,
}


class _Unpickler(pickle.Unpickler):
    def __init__(self, data: bytes, archive: zipfile.ZipFile, prefix: str):
        super().__init__(io.BytesIO(data))
        self.archive = archive
        self.prefix = prefix
        self.storages: dict[str, _Storage] = {}
        self.allowed = {**_GLOBALS, **_numpy_globals()}

    def find_class(self, module, name):
        obj = self.allowed.get((module, name))
        if obj is not None:
            return obj
        if module == "torch" and name in _STORAGES:
            return _StorageType(name)
        if module == "torch" and (name in _DTYPES or name.startswith(("float8", "bfloat", "quint", "qint",
                                                                        "sparse", "strided", "per_"))):
            return _TorchName(name)
        if module == "torch.storage" and name == "UntypedStorage":
            return "untyped"
        raise _Refused(f"{module}.{name}")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise _Refused("persistent id")
        _, kind, key, location, numel = pid
        if not isinstance(key, str):
            raise _Refused("storage key")
        st = self.storages.get(key)
        if st is None:
            try:
                data = self.archive.read(f"{self.prefix}/data/{key}")
            except KeyError:
                raise _Refused("missing storage") from None
            st = self.storages[key] = _Storage(kind, data)
        return st


def read(path: Path) -> tuple[bool, object, bool]:
    """``(True, the unpickled object, clean)`` of a ``torch.save`` zip archive, tensors as numpy arrays (clean: no
    ``Unsupported`` among them); ``(False, None, False)`` when out of scope."""
    before = Unsupported.created
    ok, obj = _read(path)
    return ok, obj, ok and Unsupported.created == before


def _read(path: Path) -> tuple[bool, object]:
    try:
        if not zipfile.is_zipfile(path):
            return False, None
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            pkl = [n for n in names if n.endswith("/data.pkl") and n.count("/") == 1]
            if len(pkl) != 1:
                return False, None
            prefix = pkl[0][: -len("/data.pkl")]
            order = f"{prefix}/byteorder"
            if order in names and archive.read(order).strip() != b"little":
                return False, None
            return True, _Unpickler(archive.read(pkl[0]), archive, prefix).load()
    except (_Refused, pickle.UnpicklingError, zipfile.BadZipFile, EOFError, ValueError, TypeError, AttributeError,
            KeyError, IndexError, OverflowError, MemoryError, RecursionError, OSError, NotImplementedError):
        return False, None
