"""Shared input checks for the loaders: files, value conversion with exact rules, small array helpers.

Value rules (every numeric field of every loader):

* float: an int or a float (JSON number, Python/numpy scalar), finite. Booleans are refused, also inside arrays.
* int: an int within int64, or a float with an integral value within int64 (``5.0``); booleans refused.
* bool: ``true``/``false``, or the integers 0 and 1.
* arrays: nested lists (or numpy arrays) of exactly the declared shape, every element by the rule above.

``convert_many`` converts a whole column with one numpy call and vectorised checks; only when that fails does it look
at the values one by one, to name the *first* offending one.
"""

from __future__ import annotations

import math
import os
import stat
import warnings
from itertools import chain
from pathlib import Path

import numpy as np

from ov3d_core.errors import InputError


class CornerMismatchWarning(UserWarning):
    """Stored ``bbox3D_cam`` corners disagree with the corners rebuilt from ``center_cam``, ``dimensions`` and
    ``R_cam``."""


MISSING = object()

DTYPES = {"float": np.float64, "int": np.int64, "bool": np.bool_}
_KINDS = {"float": "iuf", "int": "iuf", "bool": "bui"}
_I64_LO, _I64_HI = -(2 ** 63), 2 ** 63  # [lo, hi)


# ------------------------------------------------------------------------------------------------------- files

def as_path(path) -> Path:
    try:
        return Path(os.fspath(path))
    except TypeError:
        raise InputError(None, None, None, "a file path (str or os.PathLike)", got=path) from None


def check_file(path) -> Path:
    """An existing regular file, else ``InputError`` naming the path (also when it cannot even be looked at)."""
    p = as_path(path)
    try:
        st = p.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise InputError(str(p), None, None, "an existing file (no such file)") from None
    except OSError as e:
        raise os_error(p, e) from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(str(p), None, None, "a regular file, not a folder" if stat.S_ISDIR(st.st_mode)
                         else "a regular file")
    return p


def file_size(path) -> tuple[Path, int]:
    """``check_file`` and the file's size."""
    p = check_file(path)
    try:
        return p, p.stat().st_size
    except OSError as e:
        raise os_error(p, e) from None


def check_dir(path) -> Path:
    p = as_path(path)
    if not p.is_dir():
        raise InputError(str(p), None, None, "an existing folder")
    return p


def os_error(path, exc: OSError) -> InputError:
    """One line for an ``OSError`` raised while reading ``path`` (permission denied, I/O error, ...)."""
    what = exc.strerror or type(exc).__name__
    return InputError(str(path), None, None, f"a readable file ({what})")


def read_bytes(path) -> bytes:
    """The bytes of an existing file; unreadable files raise ``InputError``."""
    p = check_file(path)
    try:
        return p.read_bytes()
    except OSError as e:
        raise os_error(p, e) from None


# ------------------------------------------------------------------------------------------------------- values

def describe(kind: str, shape: tuple[int, ...]) -> str:
    """Human text for an expected value: ``3 finite numbers``, ``a 3x3 array of finite numbers``, ``an integer``."""
    if kind == "str":
        return "a string"
    if kind == "bool":
        return "true or false" if not shape else f"{'x'.join(map(str, shape))} booleans"
    unit = "integer" if kind == "int" else "finite number"
    if not shape:
        return f"an {unit}" if unit[0] in "aeiou" else f"a {unit}"
    if len(shape) == 1:
        return f"{shape[0]} {unit}s"
    return f"a {'x'.join(map(str, shape))} array of {unit}s"


def _to_array(vals) -> np.ndarray | None:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.asarray(vals)
    except (ValueError, TypeError, OverflowError):
        return None


def _has_bool(vals, depth: int) -> bool:
    """Any bool (Python, numpy scalar or bool array) among ``vals`` or their nested items ``depth`` levels down."""
    items = vals
    for level in range(depth + 1):
        types = set(map(type, items))
        if bool in types or np.bool_ in types:
            return True
        if np.ndarray in types and any(v.dtype.kind == "b" for v in items if type(v) is np.ndarray):
            return True
        if level < depth:
            if types <= {list, tuple}:
                items = list(chain.from_iterable(items))
            else:
                items = list(chain.from_iterable(v for v in items if type(v) in (list, tuple)))
    return False


def _nested_lists(vals: list, kind: str, shape: tuple[int, ...]) -> np.ndarray | None:
    """The fast case of ``_bulk``: values parsed from JSON, nested Python lists of exactly ``shape`` holding Python
    ints/floats (bools are their own type here, so they fail ``types <= {int, float}``). None if it is not that."""
    items = vals
    for d in shape:
        if set(map(type, items)) != {list} or set(map(len, items)) != {d}:
            return None
        items = list(chain.from_iterable(items))
    types = set(map(type, items))
    try:
        if kind == "float" and types <= {float, int}:
            flat = np.fromiter(items, np.float64, len(items))
            if not np.isfinite(flat).all():
                return None
        elif kind == "int" and types <= {int}:
            flat = np.fromiter(items, np.int64, len(items))
        elif kind == "bool" and types <= {bool}:
            flat = np.fromiter(items, np.bool_, len(items))
        else:
            return None
    except OverflowError:
        return None
    return flat.reshape(len(vals), *shape)


def _bulk(vals: list, kind: str, shape: tuple[int, ...]) -> np.ndarray | None:
    """The column as an array of ``DTYPES[kind]`` if every value follows the rules, else None (vectorised)."""
    n = len(vals)
    fast = _nested_lists(vals, kind, shape)
    if fast is not None:
        return fast
    arr = _to_array(vals)
    if arr is None or arr.shape != (n, *shape) or arr.dtype.kind not in _KINDS[kind]:
        return None
    if kind == "bool":
        if arr.dtype.kind != "b" and not np.isin(arr, (0, 1)).all():
            return None
        return arr.astype(bool)
    if arr.dtype.kind == "b" or _has_bool(vals, len(shape)):
        return None
    if kind == "float":
        out = arr.astype(np.float64, copy=False)
        return out if np.isfinite(out).all() else None
    if arr.dtype.kind == "u":
        return arr.astype(np.int64) if not len(arr) or arr.max() < _I64_HI else None
    if arr.dtype.kind == "f":
        if not (np.isfinite(arr).all() and (arr == np.round(arr)).all()
                and (arr >= _I64_LO).all() and (arr < _I64_HI).all()):
            return None
        return arr.astype(np.int64)
    return arr.astype(np.int64, copy=False)


def _scalar(v, kind: str):
    """One scalar by the rules, as a Python value of the kind, or None."""
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v.item()
    if isinstance(v, (bool, np.bool_)):
        return bool(v) if kind == "bool" else None
    if isinstance(v, np.generic):
        v = v.item()
    if not isinstance(v, (int, float)):
        return None
    if kind == "bool":
        return bool(v) if isinstance(v, int) and v in (0, 1) else None
    if kind == "float":
        try:
            f = float(v)
        except OverflowError:
            return None
        return f if math.isfinite(f) else None
    if isinstance(v, float):
        if not math.isfinite(v) or v != math.floor(v):
            return None
        v = int(v)
    return v if _I64_LO <= v < _I64_HI else None


def _flat(v, kind: str, shape: tuple[int, ...], out: list) -> bool:
    if not shape:
        s = _scalar(v, kind)
        if s is None:
            return False
        out.append(s)
        return True
    if isinstance(v, np.ndarray):
        if v.shape != shape or v.dtype.kind not in _KINDS[kind] or (kind != "bool" and v.dtype.kind == "b"):
            return False
        return all(_flat(x, kind, (), out) for x in v.ravel().tolist())
    if not isinstance(v, (list, tuple)) or len(v) != shape[0]:
        return False
    return all(_flat(x, kind, shape[1:], out) for x in v)


def convert_value(v, kind: str, shape: tuple[int, ...] = ()):
    """One value by the rules: an array of ``shape`` (a Python str for kind "str"), or None if it breaks them."""
    if kind == "str":
        return v if type(v) is str else None
    flat: list = []
    if not _flat(v, kind, shape, flat):
        return None
    return np.array(flat, dtype=DTYPES[kind]).reshape(shape)


def convert_many(vals: list, kind: str, shape: tuple[int, ...] = ()) -> tuple[np.ndarray | None, int | None]:
    """``(array (n, *shape), None)`` if every value follows the rules, else ``(None, index of the first that does
    not)``."""
    if not vals:
        return np.zeros((0, *shape), DTYPES[kind]), None
    arr = _bulk(vals, kind, shape)
    if arr is not None:
        return arr, None
    parts = []
    for j, v in enumerate(vals):
        a = convert_value(v, kind, shape)
        if a is None:
            return None, j
        parts.append(a)
    return np.stack(parts).astype(DTYPES[kind]), None


# ------------------------------------------------------------------------------------------------------- arrays

def first_duplicate(ids: np.ndarray) -> int | None:
    """Index of the first record whose id already occurred earlier, else None."""
    if len(ids) < 2:
        return None
    order = np.argsort(ids, kind="stable")
    s = ids[order]
    dup = np.flatnonzero(s[1:] == s[:-1]) + 1
    if not len(dup):
        return None
    return int(order[dup].min())


def first_false(mask: np.ndarray) -> int | None:
    bad = np.flatnonzero(~np.asarray(mask, bool))
    return int(bad[0]) if len(bad) else None


def first_true(mask: np.ndarray) -> int | None:
    hit = np.flatnonzero(np.asarray(mask, bool))
    return int(hit[0]) if len(hit) else None


def check_finite_array(arr, file, field: str, shape: tuple[int, ...] | None = None, record=None) -> np.ndarray:
    """A float64 array of the given shape with finite values, else ``InputError``."""
    a = _to_array(arr)
    if a is None or a.dtype.kind not in "iuf" or (shape is not None and a.shape != shape):
        want = describe("float", shape) if shape is not None else "an array of finite numbers"
        raise InputError(file, record, field, want, got=getattr(a, "shape", arr))
    a = a.astype(np.float64)
    if not np.isfinite(a).all():
        raise InputError(file, record, field, "finite numbers (no NaN or inf)")
    return a


def warn_corner_mismatch(file: str, ids: np.ndarray, max_err: np.ndarray, tol: float) -> None:
    """One ``CornerMismatchWarning`` per file summarising how many annotations disagree, with the first few ids."""
    bad = np.flatnonzero(max_err > tol)
    if not len(bad):
        return
    first = ", ".join(str(int(ids[i])) for i in bad[:5])
    more = "" if len(bad) <= 5 else ", ..."
    warnings.warn(
        f"{file}: {len(bad)} annotation(s) have `bbox3D_cam` corners that differ from the corners rebuilt from "
        f"center_cam, dimensions and R_cam by more than {tol:g} m (max {float(max_err[bad].max()):.3g} m; ids "
        f"{first}{more}); the stored corners are used", CornerMismatchWarning, stacklevel=3)


def index_of(keys: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Position of each ``query`` value in ``keys`` (unique), -1 where absent."""
    keys = np.asarray(keys)
    query = np.asarray(query)
    if not len(keys):
        return np.full(len(query), -1, np.int64)
    order = np.argsort(keys, kind="stable")
    pos = np.clip(np.searchsorted(keys[order], query), 0, len(keys) - 1)
    return np.where(keys[order][pos] == query, order[pos], -1).astype(np.int64)


def isin_names(values: np.ndarray, wanted) -> np.ndarray:
    """``values[i] in wanted`` for an object array of names (hash lookups; ``np.isin`` would sort the objects)."""
    wanted = set(wanted)
    return np.fromiter((v in wanted for v in values), bool, len(values))


def isin_codes(codes: np.ndarray, names: list, wanted) -> np.ndarray:
    """``names[codes] in wanted`` for every row, computed once per distinct name (codes < 0: False)."""
    wanted = set(wanted)
    table = np.array([n in wanted for n in names] + [False], bool)
    return table[np.where(codes < 0, len(names), codes)]
