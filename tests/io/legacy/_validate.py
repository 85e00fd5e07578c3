# Frozen copy of the loader as of commit c926022 (before the columnar rewrite): the reference that
# tests/io/test_parity.py compares the new loaders against, record by record. Do not edit.
"""Shared input checks for the loaders: file reading and vectorised column extraction.

The pattern everywhere: pull one field out of every record with a list comprehension, turn it into a numpy array in
one call, and check dtype, shape and finiteness on the whole array. Only when that fails do we scan record by record,
to name the *first* offending record in the ``InputError``. Loading 500,000 records therefore costs a few numpy
conversions, not 500,000 Python-level checks.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ov3d_core.errors import InputError


class CornerMismatchWarning(UserWarning):
    """Stored ``bbox3D_cam`` corners disagree with the corners rebuilt from ``center_cam``, ``dimensions`` and
    ``R_cam``."""


_MISSING = object()

#: dtype kinds accepted per value kind.
_KINDS = {"float": "iuf", "int": "iuf", "bool": "bui"}


def as_path(path) -> Path:
    try:
        return Path(os.fspath(path))
    except TypeError:
        raise InputError(None, None, None, "a file path (str or os.PathLike)", got=path) from None


def check_file(path) -> Path:
    """An existing regular file, else ``InputError`` naming the path."""
    p = as_path(path)
    if not p.exists():
        raise InputError(str(p), None, None, "an existing file (no such file)")
    if not p.is_file():
        raise InputError(str(p), None, None, "a regular file, not a folder")
    return p


def check_dir(path) -> Path:
    p = as_path(path)
    if not p.is_dir():
        raise InputError(str(p), None, None, "an existing folder")
    return p


def read_json(path):
    """Parse a JSON file; missing, empty, undecodable or malformed files raise ``InputError`` (with line/column)."""
    p = check_file(path)
    data = p.read_bytes()
    if not data.strip():
        raise InputError(str(p), None, None, "a JSON document, got an empty file")
    try:
        return json.loads(data)
    except json.JSONDecodeError as e:
        raise InputError(str(p), f"line {e.lineno} column {e.colno}", None, f"valid JSON ({e.msg})") from None
    except UnicodeDecodeError as e:
        raise InputError(str(p), f"byte {e.start}", None, "UTF-8 encoded JSON text") from None


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


def _array_ok(arr: np.ndarray | None, kind: str, shape: tuple[int, ...], n: int) -> bool:
    if arr is None or arr.shape != (n, *shape) or arr.dtype.kind not in _KINDS[kind]:
        return False
    if kind == "bool":
        return arr.dtype.kind == "b" or bool(np.isin(arr, (0, 1)).all())
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all():
            return False
        if kind == "int" and not (arr == np.round(arr)).all():
            return False
    return True


def value_ok(v, kind: str, shape: tuple[int, ...]) -> bool:
    """Check one value (the slow path, used to find the first bad record)."""
    if kind == "str":
        return isinstance(v, str)
    if isinstance(v, (str, bytes)) or (kind != "bool" and isinstance(v, (bool, np.bool_))):
        return False
    a = _to_array(v)
    if a is None or a.ndim != len(shape):
        return False
    return _array_ok(a.reshape(1, *a.shape), kind, shape, 1)


class Records:
    """A list of dict records from one file, with column extraction that raises ``InputError`` naming the file, the
    first offending record (via ``label(i)``) and the field."""

    def __init__(self, file, records: Sequence, label: Callable[[int], str], what: str = "an object"):
        self.file = None if file is None else str(file)
        self.records = records
        self.label = label
        bad = next((i for i, r in enumerate(records) if not isinstance(r, dict)), None)
        if bad is not None:
            raise InputError(self.file, label(bad), None, what, got=type(records[bad]).__name__)

    def __len__(self) -> int:
        return len(self.records)

    def error(self, i: int, field: str | None, expected: str, got=_MISSING) -> InputError:
        return InputError(self.file, self.label(i), field, expected, got=None if got is _MISSING else got)

    def has(self, field: str) -> np.ndarray:
        """Mask of records where ``field`` is present and not null."""
        return np.array([r.get(field) is not None for r in self.records], dtype=bool).reshape(len(self.records))

    def raw(self, field: str, default=_MISSING, kind: str = "float", shape: tuple[int, ...] = ()) -> list:
        """The field of every record; missing (or null) values become ``default`` or raise."""
        if default is _MISSING:
            try:
                vals = [r[field] for r in self.records]
            except KeyError:
                i = next(i for i, r in enumerate(self.records) if field not in r)
                raise self.error(i, field, f"present ({describe(kind, shape)})") from None
            if any(v is None for v in vals):
                i = next(i for i, v in enumerate(vals) if v is None)
                raise self.error(i, field, f"{describe(kind, shape)}, got null")
            return vals
        vals = [r.get(field, default) for r in self.records]
        if any(v is None for v in vals):
            vals = [default if v is None else v for v in vals]
        return vals

    def column(self, field: str, shape: tuple[int, ...] = (), kind: str = "float", default=_MISSING,
               rows: np.ndarray | None = None) -> np.ndarray:
        """``(n, *shape)`` array of the field (float64, int64 or bool by ``kind``); ``rows`` restricts the check to
        a subset of records (the result then has ``len(rows)`` rows)."""
        vals = self.raw(field, default, kind, shape) if rows is None else self._raw_rows(field, rows, default, kind,
                                                                                        shape)
        return self._convert(field, vals, shape, kind, rows)

    def _convert(self, field, vals, shape, kind, rows):
        n = len(vals)
        dtype = {"float": np.float64, "int": np.int64, "bool": bool}[kind]
        if n == 0:
            return np.zeros((0, *shape), dtype)
        arr = _to_array(vals)
        if not _array_ok(arr, kind, shape, n):
            j = next((j for j, v in enumerate(vals) if not value_ok(v, kind, shape)), None)
            if j is None:  # cannot happen in practice; keep a clear message anyway
                raise self.error(0, field, describe(kind, shape))
            i = j if rows is None else int(rows[j])
            raise self.error(i, field, describe(kind, shape), got=vals[j])
        if kind == "bool":
            return arr.astype(bool)
        return arr.astype(dtype, copy=False)

    def _raw_rows(self, field, rows, default, kind, shape):
        recs = self.records
        if default is _MISSING:
            vals = [recs[i].get(field) for i in rows]
            if any(v is None for v in vals):
                j = next(j for j, v in enumerate(vals) if v is None)
                raise self.error(int(rows[j]), field, f"present ({describe(kind, shape)})")
            return vals
        return [default if (v := recs[i].get(field)) is None else v for i in rows]

    def optional(self, field: str, shape: tuple[int, ...] = (), kind: str = "float",
                 fill=np.nan) -> tuple[np.ndarray, np.ndarray]:
        """Field present on some records: ``(values, with `fill` where absent or null; present mask)``."""
        n = len(self.records)
        try:  # fast path: present (and not null) everywhere
            vals = [r[field] for r in self.records]
        except KeyError:
            vals = None
        if vals is not None and not any(v is None for v in vals):
            return self._convert(field, vals, shape, kind, None), np.ones(n, bool)
        present = self.has(field)
        dtype = {"float": np.float64, "int": np.int64, "bool": bool}[kind]
        out = np.full((n, *shape), fill, dtype=dtype)
        if present.any():
            rows = np.flatnonzero(present)
            out[rows] = self.column(field, shape, kind, rows=rows)
        return out, present

    def strings(self, field: str, default=_MISSING) -> np.ndarray:
        vals = self.raw(field, default, "str")
        if not all(type(v) is str for v in vals):
            i = next(i for i, v in enumerate(vals) if not isinstance(v, str))
            raise self.error(i, field, "a string", got=vals[i])
        out = np.empty(len(vals), object)
        out[:] = vals
        return out


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
