"""Field columns of an array of records (JSON objects, or dicts from a ``.pth``), with one set of rules for both ways
of reading them.

* ``DictColumns``: records already parsed into Python dicts (small JSON files parsed by msgspec, ``.pth`` files).
* ``ScannedColumns``: records read by the numba kernel of ``ov3d_core.io.jsonscan`` straight into arrays (JSON
  record sections of at least ``SCAN_MIN_BYTES``; set ``OV3D_JSON_READER=dicts`` or ``scan`` to force one way).
  What the kernel marks ``EXACT`` is re-read record by record with Python's ``json`` and judged by the same rules.

Both answer ``column``, ``optional``, ``has``, ``strings`` and ``names`` identically, and raise identical
``InputError``s: per field, the first record where it is missing (if required), then the first where it is null,
then the first whose value breaks the rules (``ov3d_core.io._validate``), each named by ``label(i, record)``.
"""

from __future__ import annotations

import codecs
import mmap
import os
import re
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ov3d_core.errors import InputError
from ov3d_core.heap import large_blocks_to_os
from ov3d_core.io import jsonscan as K
from ov3d_core.io import progress
from ov3d_core.io._validate import (
    DTYPES, MISSING, convert_many, file_size, convert_value, describe, first_true, os_error, read_bytes,
)
from ov3d_core.io.jsontext import huge_integer, loads_stdlib, parse_json, too_deep
from ov3d_core.memo import Memo

#: Record sections at least this large are read by the kernel (below it, msgspec into dicts is as fast).
SCAN_MIN_BYTES = 24 << 20
#: Files up to this size that the kernel finds malformed are re-parsed whole by ``json`` for its exact message.
_REPARSE_MAX_BYTES = 256 << 20
_BLOCK_BYTES = 32 << 20
_BLOCK_RECORDS = 1 << 16
_MAX_THREADS = min(8, os.cpu_count() or 1)
_MIN_REGION_BYTES = 16 << 20
#: Regions whose speculative start turned out not to be an item boundary (their scan was redone); for tests.
speculation_misses = 0

_ABSENT, _OK, _NULL, _EXACT = K.ABSENT, K.OK, K.NULL, K.EXACT
_KIND_CODES = {"float": K.K_FLOAT, "int": K.K_INT, "bool": K.K_BOOL, "str": K.K_STR}

Label = Callable[[int, object], str]


@dataclass(frozen=True)
class Field:
    """A field read from every record: its JSON key, value kind ("float", "int", "bool", "str") and shape."""

    name: str
    kind: str = "float"
    shape: tuple[int, ...] = ()


def reader_choice(size: int) -> str:
    """ "scan" or "dicts" for a record section of ``size`` bytes (``OV3D_JSON_READER`` overrides)."""
    forced = os.environ.get("OV3D_JSON_READER", "auto")
    if forced in ("scan", "dicts"):
        return forced
    return "scan" if size >= SCAN_MIN_BYTES else "dicts"


# ======================================================================================================= columns

class Columns:
    """Shared rules; subclasses provide ``record(i)`` and ``_entries(field)``."""

    def __init__(self, file: str | None, n: int, label: Label, what: str, fields: Sequence[Field] | None):
        self.file = file
        self.n = n
        self._label = label
        self.what = what
        self.fields = None if fields is None else {f.name: f for f in fields}

    def __len__(self) -> int:
        return self.n

    # -- to override
    def record(self, i: int):
        """The Python value of record i (a dict for an object)."""
        raise NotImplementedError

    def require_objects(self) -> None:
        """``InputError`` at the first record that is not an object."""
        raise NotImplementedError

    def _entries(self, field: str) -> tuple[np.ndarray, np.ndarray | None, np.ndarray, list]:
        """(status per record, values valid where OK or None, indices of present values to convert, those values)."""
        raise NotImplementedError

    def _name_table(self) -> list[str]:
        return []

    # -- shared
    def label(self, i: int) -> str:
        return self._label(i, self.record(i))

    def error(self, i: int, field: str | None, expected: str, got=MISSING) -> InputError:
        if isinstance(got, np.ndarray):  # its repr spans lines
            got = got.tolist()
        return InputError(self.file, self.label(i), field, expected, got=None if got is MISSING else got)

    def _declared(self, field: str, kind: str, shape: tuple[int, ...]) -> None:
        if self.fields is not None:
            f = self.fields.get(field)
            if f is None or f.kind != kind or tuple(f.shape) != tuple(shape):
                raise KeyError(f"field {field!r} ({kind}, {shape}) is not declared as read ({f})")

    def _required(self, st: np.ndarray, field: str, desc: str) -> None:
        i = first_true(st == _ABSENT)
        if i is not None:
            raise self.error(i, field, f"present ({desc})")
        i = first_true(st == _NULL)
        if i is not None:
            raise self.error(i, field, f"{desc}, got null")

    def _converted(self, field, kind, shape, xi, xv) -> np.ndarray:
        arr, bad = convert_many(xv, kind, shape)
        if bad is not None:
            raise self.error(int(xi[bad]), field, describe(kind, shape), got=xv[bad])
        return arr

    def _assemble(self, st, vals, xi, arr, kind, shape, fill) -> np.ndarray:
        if vals is None:
            if len(xi) == self.n:
                return arr
            out = np.empty((self.n, *shape), DTYPES[kind])
        else:
            out = vals
        if len(xi):
            out[xi] = arr
        hole = (st == _ABSENT) | (st == _NULL)
        if hole.any():
            out[hole] = fill
        return out

    def column(self, field: str, shape: tuple[int, ...] = (), kind: str = "float", default=MISSING) -> np.ndarray:
        """``(n, *shape)`` array of the field (float64, int64 or bool by ``kind``); missing or null values become
        ``default`` if one is given, else raise."""
        self._declared(field, kind, shape)
        st, vals, xi, xv = self._entries(field)
        if default is MISSING:
            self._required(st, field, describe(kind, shape))
            fill = None
        else:
            fill = convert_value(default, kind, shape)
        arr = self._converted(field, kind, shape, xi, xv)
        return self._assemble(st, vals, xi, arr, kind, shape, fill)

    def optional(self, field: str, shape: tuple[int, ...] = (), kind: str = "float",
                 fill=np.nan) -> tuple[np.ndarray, np.ndarray]:
        """Field present on some records: ``(values, with `fill` where absent or null; present mask)``."""
        self._declared(field, kind, shape)
        st, vals, xi, xv = self._entries(field)
        arr = self._converted(field, kind, shape, xi, xv)
        out = self._assemble(st, vals, xi, arr, kind, shape, fill)
        return out, (st == _OK) | (st == _EXACT)

    def has(self, field: str) -> np.ndarray:
        """Mask of records where ``field`` is present and not null."""
        st, _, _, _ = self._entries(field)
        return (st == _OK) | (st == _EXACT)

    def strings(self, field: str, default=MISSING) -> np.ndarray:
        """Object array of a string field; missing or null values become ``default`` if given, else raise."""
        self._declared(field, "str", ())
        st, vals, xi, xv = self._entries(field)
        if default is MISSING:
            self._required(st, field, "a string")
        bad = next((j for j, v in enumerate(xv) if type(v) is not str), None)
        if bad is not None:
            raise self.error(int(xi[bad]), field, "a string", got=xv[bad])
        out = np.empty(self.n, object)
        if vals is not None:
            ok = np.flatnonzero(st == _OK)
            out[ok] = np.array(self._name_table() + [None], object)[vals[ok]]
        if len(xi):
            out[xi] = xv
        hole = (st == _ABSENT) | (st == _NULL)
        if hole.any():
            out[hole] = default
        return out

    def names(self, field: str) -> tuple[np.ndarray, list[str]]:
        """A field of non-empty strings present on some records, as ``(codes, names)``: ``names[codes[i]]`` is
        record i's value, ``codes[i] == -1`` where absent or null. Other values raise."""
        self._declared(field, "str", ())
        st, vals, xi, xv = self._entries(field)
        names = list(self._name_table())
        codes = np.full(self.n, -1, np.int64)
        bad_rows = []
        if vals is not None:
            ok = np.flatnonzero(st == _OK)
            codes[ok] = vals[ok]
            empty = [k for k, nm in enumerate(names) if not nm]
            if empty and len(ok):
                hit = ok[np.isin(vals[ok], empty)]
                if len(hit):
                    bad_rows.append((int(hit[0]), ""))
        index: dict[str, int] = {}
        for j, v in enumerate(xv):
            if type(v) is not str or not v:
                bad_rows.append((int(xi[j]), v))
                break
            c = index.get(v)
            if c is None:
                c = index[v] = len(names)
                names.append(v)
            codes[xi[j]] = c
        if bad_rows:
            i, v = min(bad_rows, key=lambda t: t[0])
            raise self.error(i, field, "a non-empty string", got=v)
        return codes, names


class DictColumns(Columns):
    """Records already parsed into Python values."""

    def __init__(self, file: str | None, records: Sequence, label: Label, what: str = "an object",
                 fields: Sequence[Field] | None = None):
        super().__init__(file, len(records), label, what, fields)
        self.records = records

    def record(self, i: int):
        return self.records[i]

    def require_objects(self) -> None:
        bad = next((i for i, r in enumerate(self.records) if not isinstance(r, dict)), None)
        if bad is not None:
            raise self.error(bad, None, self.what, got=type(self.records[bad]).__name__)

    def _entries(self, field):
        vals = [r.get(field, MISSING) for r in self.records]
        if not any(v is MISSING or v is None for v in vals):
            return np.full(len(vals), _EXACT, np.uint8), None, np.arange(len(vals)), vals
        st = np.fromiter((_ABSENT if v is MISSING else _NULL if v is None else _EXACT for v in vals), np.uint8,
                         len(vals))
        xi = np.flatnonzero(st == _EXACT)
        return st, None, xi, [vals[i] for i in xi]


class ScannedColumns(Columns):
    """Records read by the kernel: arrays per field, statuses, and each record's byte span for exact re-reads."""

    def __init__(self, file: str, scan: dict, label: Label, what: str, fields: Sequence[Field],
                 read_span: Callable[[int, int], bytes]):
        super().__init__(file, len(scan["rec_kind"]), label, what, fields)
        self._scan = scan
        self._read_span = read_span
        self._cache: Memo[int, object] = Memo(4096)
        self._names: list[str] | None = None
        self._exact_records = np.flatnonzero(scan["rec_kind"] == K.REC_EXACT)

    def record(self, i: int):
        def read() -> object:
            start, end = self._scan["rec"][i]
            return loads_stdlib(self.file, self._read_span(int(start), int(end)))

        return self._cache.get(i, read)

    def require_objects(self) -> None:
        i = first_true(self._scan["rec_kind"] == K.REC_OTHER)
        if i is not None:
            raise self.error(i, None, self.what, got=type(self.record(i)).__name__)

    def _entries(self, field):
        st = self._scan["status"][field].copy()
        if len(self._exact_records):
            st[self._exact_records] = _EXACT
        xi = np.flatnonzero(st == _EXACT)
        xv = []
        keep = []
        for i in xi.tolist():
            rec = self.record(i)
            v = rec.get(field, MISSING) if isinstance(rec, dict) else MISSING
            if v is MISSING:
                st[i] = _ABSENT
            elif v is None:
                st[i] = _NULL
            else:
                keep.append(i)
                xv.append(v)
        return st, self._scan["values"][field], np.array(keep, np.int64), xv

    def _name_table(self) -> list[str]:
        if self._names is None:
            self._names = [loads_stdlib(self.file, b'"' + raw + b'"') for raw in self._scan["names"]]
        return self._names


# ======================================================================================================= scanning

class _Spec:
    """The declared fields as the kernel's arrays."""

    def __init__(self, fields: Sequence[Field]):
        self.fields = list(fields)
        nf = len(self.fields)
        self.kinds = np.zeros(nf, np.int64)
        self.slots = np.zeros(nf, np.int64)
        self.rows = np.zeros(nf, np.int64)
        self.cols = np.zeros(nf, np.int64)
        width = {k: 0 for k in _KIND_CODES}
        keys = b""
        self.key_off = np.zeros(nf + 1, np.int64)
        self.key_hash = np.full(256, -1, np.int64)
        for i, f in enumerate(self.fields):
            if f.kind not in _KIND_CODES or len(f.shape) > 2 or (f.shape and f.kind != "float"):
                raise ValueError(f"unsupported field {f}")
            self.kinds[i] = _KIND_CODES[f.kind]
            self.slots[i] = width[f.kind]
            if len(f.shape) == 2:
                self.rows[i], self.cols[i] = f.shape
            elif len(f.shape) == 1:
                self.cols[i] = f.shape[0]
            width[f.kind] += int(np.prod(f.shape)) if f.shape else 1
            key = f.name.encode()
            if not key or not key.isascii() or b"\\" in key or b'"' in key:
                raise ValueError(f"unsupported key {f.name!r}")
            keys += key
            self.key_off[i + 1] = len(keys)
            n = len(key)
            h = (n * 131 + key[0] * 7 + key[-1] * 3 + key[n // 2]) & 255
            while self.key_hash[h] >= 0:
                h = (h + 1) & 255
            self.key_hash[h] = i
        self.keys = np.frombuffer(keys, np.uint8).copy()
        self.width = width


class _Scanner:
    """Runs the kernel over one record array, block by block, and gathers its output per field.

    Each block's rows are copied once, into per-field arrays sized from the bytes the scanner is expected to cover
    (``span``, estimated from the first block's bytes per record) and grown by doubling when the estimate was short;
    rows never written stay untouched pages of an ``np.empty`` allocation."""

    def __init__(self, file: str, fields: Sequence[Field], cap: int | None = None, span: int = 0):
        large_blocks_to_os()
        self.file = file
        self.spec = sp = _Spec(fields)
        self.cap = cap = _BLOCK_RECORDS if cap is None else cap
        self.span = int(span)
        self.out_f = np.zeros((cap, max(sp.width["float"], 1)), np.float64)
        self.out_i = np.zeros((cap, max(sp.width["int"], 1)), np.int64)
        self.out_b = np.zeros((cap, max(sp.width["bool"], 1)), np.uint8)
        self.out_s = np.full((cap, max(sp.width["str"], 1)), -1, np.int32)
        self.status = np.zeros((cap, len(sp.fields)), np.uint8)
        self.rec = np.zeros((cap, 2), np.int64)
        self.rec_kind = np.zeros(cap, np.uint8)
        self.tab = np.full(1 << 13, -1, np.int32)
        self.names = np.zeros(1 << 20, np.uint8)
        self.name_off = np.zeros((1 << 12) + 1, np.int64)
        self.stack = np.zeros(K.MAX_DEPTH + 2, np.uint8)
        self.state = np.zeros(8, np.int64)
        self.state[5] = sys.get_int_max_str_digits()
        self.n = 0  # rows kept
        self.values: dict[str, np.ndarray] = {}
        self.st: dict[str, np.ndarray] = {}
        self.rec_all = np.zeros((0, 2), np.int64)
        self.kind_all = np.zeros(0, np.uint8)

    def call(self, buf, end, eof, pos, expect):
        sp = self.spec
        return K.scan_array(buf, end, eof, pos, expect, sp.keys, sp.key_off, sp.key_hash, sp.kinds, sp.slots,
                            sp.rows, sp.cols, self.out_f, self.out_i, self.out_b, self.out_s, self.status, self.rec,
                            self.rec_kind, self.tab, self.names, self.name_off, self.stack, self.state, K.POW10,
                            K.POW5, K.LITERALS)

    def _reserve(self, rows: int, estimate: int) -> None:
        """Room for ``rows`` kept rows (at least ``estimate``, else double): the kept rows move once if it grows."""
        if rows <= len(self.kind_all):
            return
        cap = max(rows, estimate, 2 * len(self.kind_all))
        sp, n = self.spec, self.n

        def grown(old, shape, dtype):
            new = np.empty((cap, *shape), dtype)
            new[:n] = old[:n]
            return new

        for f in sp.fields:
            dt = DTYPES.get(f.kind, np.int64)  # str: name ids
            self.values[f.name] = grown(self.values.get(f.name, np.zeros((0, *f.shape), dt)), f.shape, dt)
            self.st[f.name] = grown(self.st.get(f.name, np.zeros(0, np.uint8)), (), np.uint8)
        self.rec_all = grown(self.rec_all, (2,), np.int64)
        self.kind_all = grown(self.kind_all, (), np.uint8)

    def keep(self, n: int, base: int) -> None:
        """Copy the first n rows of the kernel's output (record spans shifted by ``base``)."""
        if not n:
            return
        sp = self.spec
        estimate = 0
        if not self.n and self.span:
            used = int(self.rec[n - 1, 1] - self.rec[0, 0]) + 1
            estimate = int(n * self.span / max(used, 1) * 1.05) + 64
        self._reserve(self.n + n, estimate)
        a, b = self.n, self.n + n
        for j, f in enumerate(sp.fields):
            s = int(sp.slots[j])
            dest = self.values[f.name]
            if f.kind == "float":
                size = int(np.prod(f.shape)) if f.shape else 1
                dest[a:b] = self.out_f[:n, s:s + size].reshape(n, *f.shape)
            elif f.kind == "int":
                dest[a:b] = self.out_i[:n, s]
            elif f.kind == "bool":
                dest[a:b] = self.out_b[:n, s]
            else:
                dest[a:b] = self.out_s[:n, s]
            self.st[f.name][a:b] = self.status[:n, j]
        np.add(self.rec[:n], base, out=self.rec_all[a:b])
        self.kind_all[a:b] = self.rec_kind[:n]
        self.n = b

    def result(self) -> dict:
        return collect([self])

    def name_list(self) -> list[bytes]:
        return [self.names[self.name_off[k]:self.name_off[k + 1]].tobytes() for k in range(int(self.state[4]))]

    @property
    def flags(self) -> int:
        return int(self.state[3])


def _scan_failure(file: str, code: int, offset: int, size: int, data_of: Callable[[], bytes]):
    """The ``InputError`` for a kernel SYNTAX / TOO_DEEP result at byte ``offset``.

    Small files are re-parsed by ``json`` for its own message (and if it accepts them, the caller reads them that
    way: returns the parsed document)."""
    if code == K.TOO_DEEP:
        raise too_deep(file)
    if size <= _REPARSE_MAX_BYTES:
        return parse_json(file, data_of())
    line, col = _line_col(file, offset)
    raise InputError(file, f"line {line} column {col}", None, "valid JSON")


def _line_col(file: str, offset: int) -> tuple[int, int]:
    line, last_nl, pos = 1, -1, 0
    with open(file, "rb") as f:
        while pos < offset:
            chunk = f.read(min(1 << 24, offset - pos))
            if not chunk:
                break
            k = chunk.count(b"\n")
            if k:
                line += k
                last_nl = pos + chunk.rindex(b"\n")
            pos += len(chunk)
    return line, offset - last_nl


def _check_utf8(file: str, chunks) -> None:
    dec = codecs.getincrementaldecoder("utf-8")()
    pos = 0
    for chunk in chunks:
        try:
            dec.decode(chunk)
        except UnicodeDecodeError as e:
            raise InputError(file, f"byte {pos + e.start}", None, "UTF-8 encoded JSON text") from None
        pos += len(chunk)
    try:
        dec.decode(b"", final=True)
    except UnicodeDecodeError as e:
        raise InputError(file, f"byte {pos + e.start}", None, "UTF-8 encoded JSON text") from None


def _check_flags(file: str, flags: int, chunks: Callable) -> None:
    if flags & 4:
        raise huge_integer(file)
    if flags & 2:
        _check_utf8(file, chunks())


def _file_chunks(path: Path):
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            yield chunk


def _scan_memory(file: str, buf: np.ndarray, start: int, end: int, fields,
                 bar: progress.Counter | None = None) -> tuple[int, dict]:
    """Scan the array whose '[' is at ``buf[start]``, in a buffer that ends at ``end``; returns (code, result).

    Large arrays (a GT file's annotations) are scanned in regions on threads (``_scan_regions``), as files of records
    are. ``bar`` counts the bytes scanned."""
    starts = [start + 1] + _split_points(lambda at, n: buf[at:min(end, at + n)].tobytes(), start + 1, end,
                                         _threads(end - start))
    code, pos, used = _scan_regions(file, fields, starts, end,
                                    lambda sc, at, stop, expect, bar_: _scan_memory_region(buf, sc, at, stop, expect,
                                                                                           stop == end, bar=bar_),
                                    bar)
    if code != K.DONE:
        return code, {"offset": int(used[-1].state[1])}
    flags = 0
    for sc in used:
        flags |= sc.flags
    return code, {**collect(used), "end": pos, "flags": flags}


def _scan_memory_region(buf: np.ndarray, sc: _Scanner, pos: int, stop: int, expect: int, last: bool,
                        bar: progress.Counter | None = None):
    """Scan ``buf[pos:stop)`` (items of an array in state ``expect``); ``last``: the region runs to the array's end.
    Returns ``(code, pos, expect)``: DONE with pos after ']', NEED with pos where a region that is not the last
    stopped, or an error (offset in ``sc.state[1]``)."""
    while True:
        code, p, expect, n = sc.call(buf, stop, last, pos, expect)
        sc.keep(n, 0)
        if bar is not None and p > pos:
            bar.add(p - pos)
        if code == K.FULL:
            pos = p
            continue
        return code, p, expect


def read_json_list(path, fields: Sequence[Field], label: Label, what: str, not_list: str) -> Columns:
    """A file holding one JSON array of records, as columns (``not_list``: what to say if it holds something else).
    """
    p, size = file_size(path)
    file = str(p)
    if size and reader_choice(size) == "scan":
        cols = _scan_list_file(p, fields, label, what, size)
        if cols is not None:
            return cols
    doc = parse_json(file, read_bytes(p))
    if not isinstance(doc, list):
        raise InputError(file, None, None, not_list, got=type(doc).__name__)
    return DictColumns(file, doc, label, what, fields)


def _scan_list_file(p: Path, fields, label, what, size: int) -> Columns | None:
    """Stream the file through the kernel, in parallel regions; None if it does not start with '[' (the caller
    parses it whole)."""
    file = str(p)
    try:
        with open(p, "rb") as f:
            head = f.read(1 << 16)
    except OSError as e:
        raise os_error(p, e) from None
    lead = len(head) - len(head.lstrip(b" \t\r\n"))
    if lead >= len(head) or head[lead:lead + 1] != b"[":
        return None
    bar = progress.Counter(progress.reporter(), f"parse {p.name}", size)
    with open(p, "rb") as f:
        def read(at, n):
            f.seek(at)
            return f.read(n)

        starts = [lead + 1] + _split_points(read, lead + 1, size, _threads(size))
    code, pos, used = _scan_regions(file, fields, starts, size,
                                    lambda sc, at, stop, expect, bar_: _scan_region(p, size, sc, at, stop, expect,
                                                                                    bar=bar_),
                                    bar)
    bar.finish()
    if code != K.DONE:
        if code == K.NEED:
            code = K.SYNTAX
        doc = _scan_failure(file, code, int(used[-1].state[1]), size, p.read_bytes)
        return _as_dict_columns(file, doc, label, what, fields, "a JSON list")
    with open(p, "rb") as f:
        f.seek(pos)
        if f.read().strip(b" \t\r\n"):
            doc = _scan_failure(file, K.SYNTAX, pos, size, p.read_bytes)
            return _as_dict_columns(file, doc, label, what, fields, "a JSON list")
    flags = 0
    for sc in used:
        flags |= sc.flags
    _check_flags(file, flags, lambda: _file_chunks(p))
    return ScannedColumns(file, collect(used), label, what, fields, _span_reader(p))


def _threads(size: int) -> int:
    """Regions scanned in parallel: one per core (at most 8; ``OV3D_JSON_THREADS`` overrides), at least
    ``_MIN_REGION_BYTES`` each."""
    forced = os.environ.get("OV3D_JSON_THREADS", "")
    cap = int(forced) if forced.isdigit() and int(forced) > 0 else _MAX_THREADS
    return max(1, min(cap, size // _MIN_REGION_BYTES))


def _split_points(read: Callable[[int, int], bytes], start: int, end: int, n: int) -> list[int]:
    """Candidate item starts (a '{' after ``}`` ``,``) near ``start + k * (end - start) / n``, found in the bytes
    ``read(at, nbytes)`` gives; each is confirmed (or refuted) by the scan of the region before it."""
    out: list[int] = []
    for k in range(1, n):
        at = max(start, start + k * (end - start) // n, out[-1] + 1 if out else 0)
        m = _BOUNDARY.search(read(at, 1 << 20))
        if m is not None:
            out.append(at + m.end() - 1)
    return out


def _scan_regions(file: str, fields, starts: list[int], end: int, scan: Callable, bar=None):
    """Scan the regions ``[starts[k], starts[k + 1])`` of an array's items (the last up to ``end``) on threads, one
    ``_Scanner`` each; ``scan(sc, start, stop, expect, bar)`` returns ``(code, pos, expect)``. A region counts only if
    the one before it ended exactly at its start between items; else that one goes on to ``end`` and the later
    regions are void. Returns ``(code, pos, scanners used)``."""
    global speculation_misses
    stops = starts[1:] + [end]
    scanners = [_Scanner(file, fields, span=(end if k == 0 else stop) - at)
                for k, (at, stop) in enumerate(zip(starts, stops))]
    jobs = [(sc, at, stop, K.EXPECT_FIRST if k == 0 else K.EXPECT_ITEM)
            for k, (sc, at, stop) in enumerate(zip(scanners, starts, stops))]
    if len(jobs) > 1:
        with ThreadPoolExecutor(len(jobs)) as pool:
            outcomes = list(pool.map(lambda job: scan(*job, bar), jobs))
    else:
        outcomes = [scan(*jobs[0], bar)]
    used = []
    for k, (code, pos, expect) in enumerate(outcomes):
        used.append(scanners[k])
        if k == len(outcomes) - 1:
            break
        if code == K.NEED and pos == stops[k] and expect == K.EXPECT_ITEM:
            continue  # the next region's start is a true item boundary: its speculative scan stands
        speculation_misses += 1
        if code == K.NEED:  # the split fell inside an item: go on from here (its bytes were counted once already)
            code, pos, expect = scan(scanners[k], pos, end, expect, None)
        break
    return code, pos, used


_BOUNDARY = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")


def _scan_region(p: Path, size: int, sc: _Scanner, start: int, stop: int, expect: int,
                 bar: progress.Counter | None = None):
    """Scan bytes ``[start, stop)`` of the file (an array's items from ``start`` in state ``expect``). Returns
    ``(code, absolute pos, expect)``: for ``stop == size`` DONE (pos after ']') or an error (offset in
    ``sc.state[1]``, pos -1); before the end NEED with pos where the scan stopped (== stop if it ended between
    items); ``bar`` counts the bytes read."""
    last = stop == size
    buf = np.empty(min(_BLOCK_BYTES, max(stop - start, 1)), np.uint8)
    with open(p, "rb") as f:
        f.seek(start)
        base = start
        filled = _fill(f, buf, 0, stop - base)
        if bar is not None:
            bar.add(filled)
        pos = 0
        while True:
            eof = last and base + filled >= size
            code, q, expect, n = sc.call(buf, filled, eof, pos, expect)
            sc.keep(n, base)
            if code == K.FULL:
                pos = q
                continue
            if code == K.NEED:
                if not last and base + filled >= stop:
                    return K.NEED, base + q, expect
                keep = filled - q
                if q == 0:  # one record larger than the buffer
                    bigger = np.empty(2 * len(buf), np.uint8)
                    bigger[:filled] = buf[:filled]
                    buf = bigger
                else:
                    buf[:keep] = buf[q:filled]
                    base += q
                filled = _fill(f, buf, keep, stop - base)
                if bar is not None:
                    bar.add(filled - keep)
                pos = 0
                continue
            if code == K.DONE:
                return code, base + q, expect
            sc.state[1] += base
            return code, -1, expect


def collect(scanners: list[_Scanner]) -> dict:
    """One scan result from consecutive scanners (their name tables merged): the first scanner's arrays, with the
    later scanners' rows copied after its own (into its spare room when the estimate left enough, else joined)."""
    fields = scanners[0].spec.fields
    index: dict[bytes, int] = {}
    for sc in scanners:
        remap = np.array([index.setdefault(raw, len(index)) for raw in sc.name_list()] + [-1], np.int64)
        if len(scanners) > 1:
            for f in fields:
                if f.kind == "str" and sc.n:
                    vals, st = sc.values[f.name][:sc.n], sc.st[f.name][:sc.n]
                    ok = st == _OK
                    vals[ok] = remap[vals[ok]]
    total = sum(sc.n for sc in scanners)
    first = scanners[0]
    out: dict = {"names": list(index), "values": {}, "status": {}}

    def merged(get, empty_shape, dtype):
        parts = [get(sc)[:sc.n] for sc in scanners if sc.n]
        if not parts:
            return np.zeros(empty_shape, dtype)
        head = get(first)
        if first.n and len(head) >= total:  # room after the first scanner's rows: copy the others there
            at = first.n
            for part in parts[1:]:
                head[at:at + len(part)] = part
                at += len(part)
            return head[:total]
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    for f in fields:
        dt = DTYPES.get(f.kind, np.int64)  # str: name ids
        out["values"][f.name] = merged(lambda sc: sc.values.get(f.name, np.zeros((0, *f.shape), dt)),
                                       (0, *f.shape), dt)
        out["status"][f.name] = merged(lambda sc: sc.st.get(f.name, np.zeros(0, np.uint8)), (0,), np.uint8)
        for sc in scanners:
            sc.values.pop(f.name, None)
            sc.st.pop(f.name, None)
    out["rec"] = merged(lambda sc: sc.rec_all, (0, 2), np.int64)
    out["rec_kind"] = merged(lambda sc: sc.kind_all, (0,), np.uint8)
    for sc in scanners:
        sc.rec_all, sc.kind_all = np.zeros((0, 2), np.int64), np.zeros(0, np.uint8)
    return out


def _joined(parts: list, empty_shape, dtype) -> np.ndarray:
    if not parts:
        return np.zeros(empty_shape, dtype)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _as_dict_columns(file, doc, label, what, fields, not_list):
    if not isinstance(doc, list):
        raise InputError(file, None, None, not_list, got=type(doc).__name__)
    return DictColumns(file, doc, label, what, fields)


def _fill(f, buf: np.ndarray, start: int, limit: int | None = None) -> int:
    """Read into ``buf[start:]`` until full, ``limit`` bytes filled in all, or end of file; returns the filled
    length."""
    view = memoryview(buf)
    pos = start
    top = len(buf) if limit is None else min(len(buf), limit)
    while pos < top:
        got = f.readinto(view[pos:top])
        if not got:
            break
        pos += got
    return pos


def _span_reader(p: Path) -> Callable[[int, int], bytes]:
    def read(start: int, end: int) -> bytes:
        with open(p, "rb") as f:
            f.seek(start)
            return f.read(end - start)
    return read


def read_json_document(path, sections: dict[str, tuple[Sequence[Field], Label, str]]):
    """A file holding one JSON value; for an object, each key named in ``sections`` whose value is an array becomes
    ``Columns`` of ``(fields, label, what)``. Returns the Python value (with those keys replaced)."""
    p, size = file_size(path)
    file = str(p)
    if size and reader_choice(size) == "scan":
        bar = progress.Counter(progress.reporter(), f"parse {p.name}", size)  # bytes of the record arrays scanned
        buf = _read_array(p, size)
        doc = _scan_document(file, buf, sections, bar)
        bar.finish()
        if doc is not None:
            return doc
        data = buf.tobytes()
        del buf
    else:
        data = read_bytes(p)
    doc = parse_json(file, data)
    return _sections_to_columns(file, doc, sections)


def _read_array(p: Path, size: int) -> np.ndarray:
    """The whole file in a writable uint8 array (the kernel is compiled for writable buffers only): a private
    (copy-on-write) map of the page cache, which the kernel only reads, so nothing is copied; reading into fresh memory
    instead cost a zeroed page per 4 KiB (0.8 s for 158 MB). Read into memory when the file cannot be mapped."""
    try:
        with open(p, "rb") as f:
            return np.ndarray(size, np.uint8, buffer=mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY))
    except (OSError, ValueError):
        pass
    buf = np.empty(size, np.uint8)
    try:
        with open(p, "rb") as f:
            n = _fill(f, buf, 0)
    except OSError as e:
        raise os_error(p, e) from None
    return buf[:n]


def _sections_to_columns(file, doc, sections):
    if isinstance(doc, dict):
        for key, (fields, label, what) in sections.items():
            if isinstance(doc.get(key), list):
                doc[key] = DictColumns(file, doc[key], label, what, fields)
    return doc


def _scan_document(file: str, buf: np.ndarray, sections, bar: progress.Counter | None = None) -> dict | None:
    """The top-level object member by member: arrays of ``sections`` go through the kernel, other values are parsed
    by msgspec from their bytes. None if the document is not an object (the caller parses it and says so)."""
    stack = np.zeros(K.MAX_DEPTH + 2, np.uint8)
    state = np.zeros(8, np.int64)
    state[5] = sys.get_int_max_str_digits()
    size = len(buf)
    head = buf[:min(size, 1 << 16)].tobytes()
    p = len(head) - len(head.lstrip(b" \t\r\n"))
    if p >= len(head) or head[p:p + 1] != b"{":
        return None
    members: list[tuple[str, object]] = []
    p += 1
    code, q, more = K.object_next(buf, p, size, state)
    if code == K.DONE and not more:  # "{}"
        p = q
    else:
        more = True
    while more:
        code, ks, ke, vs = K.object_member(buf, p, size, state)
        if code != K.DONE:
            return _document_failure(file, code, state, buf, sections)
        key = loads_stdlib(file, buf[ks:ke].tobytes())
        if key in sections and buf[vs] == 0x5B:  # '['
            fields, label, what = sections[key]
            code, res = _scan_memory(file, buf, vs, size, fields, bar)
            if code != K.DONE:
                return _document_failure(file, code, state if "offset" not in res else _at(res["offset"]), buf,
                                         sections)
            ve = res["end"]
            value = ("columns", res, fields, label, what)
        else:
            code, ve = K.skip_at(buf, vs, size, 1, stack, state, K.LITERALS)
            if code != K.DONE:
                return _document_failure(file, code, state, buf, sections)
            value = ("json", vs, ve)
        members.append((key, value))
        code, p, more = K.object_next(buf, ve, size, state)
        if code != K.DONE:
            return _document_failure(file, code, state, buf, sections)
    if buf[p:].tobytes().strip(b" \t\r\n"):
        state[1] = p
        return _document_failure(file, K.SYNTAX, state, buf, sections)
    flags = int(state[3]) | max((v[1].get("flags", 0) for _, v in members if v[0] == "columns"), default=0)
    _check_flags(file, flags, lambda: (buf[k:k + (1 << 24)].tobytes() for k in range(0, size, 1 << 24)))
    doc: dict = {}
    for key, value in members:
        if value[0] == "columns":
            _, res, fields, label, what = value
            doc[key] = ScannedColumns(file, res, label, what, fields, lambda s, e: buf[s:e].tobytes())
        else:
            doc[key] = parse_json(file, buf[value[1]:value[2]].tobytes())
    return doc


def _at(offset: int) -> np.ndarray:
    state = np.zeros(8, np.int64)
    state[1] = offset
    return state


def _document_failure(file, code, state, buf, sections):
    doc = _scan_failure(file, code, int(state[1]), len(buf), buf.tobytes)
    return _sections_to_columns(file, doc, sections)


#: Fields of every kind and shape the loaders declare (the kernels compile once for all of them).
_WARM_FIELDS = (Field("image_id", "int"), Field("name", "str"), Field("flag", "bool"), Field("score"),
                Field("box", "float", (4,)), Field("corners", "float", (8, 3)))


def warm() -> None:
    """Compile (first use on an install: ~10-25 s of CPU) or load from numba's cache every kernel entry point, on a
    tiny document. Call it at install time or early in a process (a thread will do: the kernels release the GIL)."""
    buf = np.frombuffer(b'{"a": [{"image_id": 1, "score": 0.5, "x": [1, {"b": "c"}]}]}', np.uint8).copy()
    state = np.zeros(8, np.int64)
    K.object_member(buf, 1, len(buf), state)
    K.object_next(buf, len(buf) - 1, len(buf), state)
    K.skip_at(buf, 0, len(buf), 1, np.zeros(K.MAX_DEPTH + 2, np.uint8), state, K.LITERALS)
    _scan_memory("<warm>", buf, 6, len(buf) - 1, _WARM_FIELDS)
