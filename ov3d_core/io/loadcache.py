"""A disk cache of parsed inputs, so a second start skips JSON parsing and the torch import of ``.pth`` files.

Trust rules (an entry is data, never code, and never stale):

* **Key**: the loader kind and arguments, ``loader_version()`` (a digest of the loader source: ``ov3d_core/io/*.py``,
  ``ov3d_core/model.py`` and every ``ov3d_core`` module they import, so editing loader code invalidates every entry by
  itself) and, per input file, its resolved path and an xxh3-128 digest of its whole content. A file edited in the
  middle keeps no entry alive, whatever its size and mtime.
* **Format**: ``ov3d_core.io.npzstore`` files (pickle-free ``.npz``, every array and the metadata checksummed). A
  ``Dataset``/``Run`` is stored as a JSON tree of its fields whose leaves are those arrays; strings as UTF-8 bytes +
  offsets of their distinct values and int codes. Types outside a small whitelist are not cached (the load is
  returned as is, with a logged warning) rather than stored approximately.
* **On read**: the entry must carry the same key it is filed under (another input's entry copied to the name
  misses), every digest must match, and the rebuilt objects pass their own shape checks. Anything else (truncated,
  flipped bits, a planted pickle, wrong shapes) is logged and recomputed: never executed, never trusted.

Warnings the loader raised (e.g. corner mismatches) are stored and raised again on a hit, so a cached load says what a
fresh one says. Content digests are memoised within one process by (device, inode, size, mtime, ctime) only;
``file_digest(path, recheck=True)`` always reads the file (what a new app session uses to confirm its inputs).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import math
import mmap
import os
import re
import sys
import threading
import warnings
from pathlib import Path, PurePath
from typing import Callable, TypeVar

import numpy as np
import pandas as pd
import xxhash

from ov3d_core import model
from ov3d_core.io import npzstore, progress

T = TypeVar("T")
log = logging.getLogger(__name__)

__all__ = ["cached_load", "cache_key", "file_digest", "files_digest", "loader_version", "encode", "decode",
           "Unsupported"]

_PACKAGE = Path(__file__).resolve().parents[1]  # .../ov3d_core
_LOADER_ROOTS = ("io", "model.py")
_READ = 8 << 20
_PROGRESS_BYTES = 1 << 30  # show a hashing progress bar above this much input
_memo: dict[str, tuple[tuple, str]] = {}
_memo_lock = threading.Lock()


# ------------------------------------------------------------------------------------------------ content digests
def _stat_key(st: os.stat_result) -> tuple:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def file_digest(path: str | os.PathLike, *, recheck: bool = False, progress=None) -> str:
    """xxh3-128 hex digest of a file's whole content (~0.1-0.3 s per 400 MB from the page cache).

    Memoised within this process by (device, inode, size, mtime_ns, ctime_ns), a pre-check that any write or
    ``os.utime`` defeats (ctime always moves); ``recheck=True`` skips the memo and reads the file. ``progress``: an
    optional ``callable(n_bytes)`` called as the file is read."""
    p = Path(path).resolve()
    st = p.stat()
    sk = _stat_key(st)
    if not recheck:
        with _memo_lock:
            hit = _memo.get(str(p))
        if hit is not None and hit[0] == sk:
            if progress is not None:
                progress(st.st_size)
            return hit[1]
    h = xxhash.xxh3_128()
    with open(p, "rb") as f:
        # Hashed from read-only maps of the page cache, one window at a time: a read() into fresh buffers costs a
        # page fault and a zeroed page per 4 KiB (0.51 s instead of 0.16 s for 476 MB with ``columnar``'s 128 KiB
        # mmap threshold), and one map of the whole file would count it all in this process's peak RSS.
        for s in range(0, st.st_size, _READ):
            n = min(_READ, st.st_size - s)
            with mmap.mmap(f.fileno(), n, offset=s, access=mmap.ACCESS_READ) as m:
                h.update(m)
            if progress is not None:
                progress(n)
    digest = h.hexdigest()
    after = _stat_key(p.stat())
    if after == sk:  # not written while we read it
        with _memo_lock:
            _memo[str(p)] = (sk, digest)
    return digest


def files_digest(files, *, recheck: bool = False) -> list[tuple[str, str]]:
    """``[(resolved path, content digest)]`` of existing files, with a progress bar on stderr when there is more than
    a GiB to read. Raises ``OSError`` for a file that cannot be read."""
    paths = [Path(f).resolve() for f in files]
    total = sum(p.stat().st_size for p in paths)
    bar = None
    if total > _PROGRESS_BYTES:
        from tqdm import tqdm

        bar = tqdm(total=total, desc="hashing inputs", unit="B", unit_scale=True, file=sys.stderr, leave=False)
    try:
        return [(str(p), file_digest(p, recheck=recheck, progress=None if bar is None else bar.update))
                for p in paths]
    finally:
        if bar is not None:
            bar.close()


_IMPORT = re.compile(rb"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)|import[ \t]+([^\n]*))",
                     re.MULTILINE)


def _imported_files(path: Path) -> set[Path]:
    """Files of the ``ov3d_core`` modules (and their packages' ``__init__``) that a source file imports anywhere.

    Import statements are found by a regular expression over the text (an AST walk of the ~65 files cost ~0.7 s of
    CPU on every cold start); one quoted in a docstring counts too, which can only add files to the digest."""
    here = path.relative_to(_PACKAGE.parent).with_suffix("").parts  # ("ov3d_core", "io", "omni3d")
    if path.name == "__init__.py":
        here = here[:-1] + ("__init__",)
    mods: list[tuple[str, ...]] = []
    for m in _IMPORT.finditer(path.read_bytes()):
        if m.group(3) is not None:  # import a.b as c, d
            names = _names(m.group(3))
            mods += [tuple(n.split(".")) for n in names]
            continue
        module = m.group(1).decode()
        level = len(module) - len(module.lstrip("."))
        base = tuple(module[level:].split(".")) if module[level:] else ()
        if level:
            base = here[:len(here) - level] + base
        mods.append(base)
        mods += [base + (n,) for n in _names(m.group(2)) if "." not in n]  # `from pkg import submodule`
    out: set[Path] = set()
    for parts in mods:
        if not parts or parts[0] != _PACKAGE.name:
            continue
        for k in range(1, len(parts) + 1):
            sub = _PACKAGE.parent.joinpath(*parts[:k])
            for cand in (sub.with_suffix(".py"), sub / "__init__.py"):
                if cand.is_file():
                    out.add(cand)
    return out


def _names(text: bytes) -> list[str]:
    """The imported names of ``a as b, c`` or ``(a,\n b,  # note\n)``."""
    body = b"\n".join(line.split(b"#")[0] for line in text.strip(b"()").splitlines())
    out = []
    for item in body.replace(b"\\", b" ").split(b","):
        words = item.split()
        if words and re.fullmatch(rb"[\w.]+", words[0]):
            out.append(words[0].decode())
    return out


@functools.lru_cache(maxsize=None)
def loader_version() -> str:
    """Digest of the loader source: ``ov3d_core/io/*.py``, ``ov3d_core/model.py`` and, transitively, every
    ``ov3d_core`` module they import. Any edit to that code gives a new version (and misses every cache entry)."""
    todo = [p for p in sorted((_PACKAGE / _LOADER_ROOTS[0]).glob("*.py"))] + [_PACKAGE / _LOADER_ROOTS[1]]
    seen: set[Path] = set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        todo += sorted(_imported_files(p) - seen)
    h = xxhash.xxh3_128()
    for p in sorted(seen):
        h.update(str(p.relative_to(_PACKAGE)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


def cache_key(kind: str, files, params: dict) -> tuple[str, list[tuple[str, str]]]:
    """``(key, inputs)``: the entry key of a load and the ``(path, digest)`` of its input files. ``OSError`` when a
    file is missing or unreadable (the caller then loads without the cache, and the loader names the file)."""
    inputs = files_digest([f for f in files if f is not None])
    body = json.dumps([npzstore.FORMAT, kind, loader_version(), repr(sorted(params.items())), inputs])
    return xxhash.xxh3_128(body.encode()).hexdigest(), inputs


# ------------------------------------------------------------------------------------------------ object codec
class Unsupported(TypeError):
    """A value the cache format does not represent exactly (the load is then not cached)."""


def _model_classes() -> dict:
    return {c.__name__: c for c in (model.BoxSet, model.Dataset, model.Run)}


class _Encoder:
    def __init__(self):
        self.arrays: dict[str, np.ndarray] = {}

    def put(self, a: np.ndarray) -> str:
        name = f"a{len(self.arrays)}"
        self.arrays[name] = a  # np.save writes a non-contiguous array block by block (no whole copy)
        return name

    def strings(self, flat: np.ndarray) -> dict:
        """Strings (None allowed: code -1) as distinct UTF-8 values + offsets and int codes."""
        codes, uniq = pd.factorize(flat, use_na_sentinel=True)
        if any(type(u) is not str for u in uniq):  # noqa: E721 - exact str only (no subclasses)
            raise Unsupported("an object array mixing strings and other values")
        raw = [u.encode("utf-8", "surrogatepass") for u in uniq]
        offsets = np.zeros(len(raw) + 1, np.int64)
        np.cumsum([len(b) for b in raw], out=offsets[1:])
        return {"codes": self.put(codes.astype(np.int64)), "offsets": self.put(offsets),
                "blob": self.put(np.frombuffer(b"".join(raw), dtype=np.uint8))}

    def array(self, a: np.ndarray) -> dict:
        if a.dtype.kind in "biufcSU":
            return {"t": "nd", "a": self.put(a)}
        if a.dtype.kind != "O":
            raise Unsupported(f"array dtype {a.dtype}")
        flat = a.reshape(-1)
        shape = list(a.shape)
        if pd.api.types.infer_dtype(flat, skipna=False) in ("string", "empty"):  # fast path: all strings
            return {"t": "str", "shape": shape, **self.strings(flat)}
        kinds = {type(x) for x in flat.tolist()}
        if kinds <= {str, type(None)}:
            return {"t": "str", "shape": shape, **self.strings(flat)}
        if kinds <= {np.ndarray, type(None)}:  # e.g. an optional per-image matrix (KITTI p2)
            have = np.array([x is not None for x in flat], bool)
            items = [x for x in flat if x is not None]
            if items and len({(x.dtype.str, x.shape) for x in items}) != 1:
                raise Unsupported("an object array of arrays of different shapes")
            stack = np.stack(items) if items else np.zeros(0)
            return {"t": "ndlist", "shape": shape, "have": self.put(have), "stack": self.array(stack)}
        return {"t": "objlist", "shape": shape, "v": [self.value(x) for x in flat.tolist()]}

    def frame(self, df: pd.DataFrame) -> dict:
        if not df.columns.is_unique or not all(isinstance(c, str) for c in df.columns) or df.attrs:
            raise Unsupported("a DataFrame with non-string or repeated column names, or attrs")
        idx = df.index
        if isinstance(idx, pd.RangeIndex) and idx.start == 0 and idx.step == 1 and idx.name is None:
            index = None
        else:
            index = self.value(idx.to_numpy())
        cols = []
        for c in df.columns:
            s = df[c]
            if isinstance(s.dtype, np.dtype):
                cols.append([c, self.array(s.to_numpy())])
            elif isinstance(s.dtype, pd.StringDtype):
                na = "nan" if s.dtype.na_value is np.nan else "NA"
                vals = s.to_numpy(dtype=object, na_value=None)
                cols.append([c, {"t": "strcol", "storage": s.dtype.storage, "na": na, "v": self.array(vals)}])
            else:
                raise Unsupported(f"DataFrame column {c!r} of dtype {s.dtype}")
        return {"t": "frame", "cols": cols, "index": index}

    def value(self, x):
        if x is None or type(x) in (bool, str):
            return x
        if type(x) is int:
            return {"t": "int", "v": str(x)} if abs(x) >= 2 ** 53 else x
        if type(x) is float:
            return x if math.isfinite(x) else {"t": "float", "v": repr(x)}
        if isinstance(x, np.ndarray):
            return self.array(x)
        if isinstance(x, np.generic) and x.dtype.kind in "biufc":
            return {"t": "np", "a": self.put(np.asarray(x).reshape(1))}
        if type(x) is tuple:
            return {"t": "tuple", "v": [self.value(v) for v in x]}
        if type(x) is list:
            return {"t": "list", "v": [self.value(v) for v in x]}
        if type(x) is dict:
            return {"t": "dict", "v": [[self.value(k), self.value(v)] for k, v in x.items()]}
        if isinstance(x, PurePath):
            return {"t": "path", "v": str(x)}
        if isinstance(x, pd.DataFrame):
            return self.frame(x)
        if dataclasses.is_dataclass(x) and _model_classes().get(type(x).__name__) is type(x):
            return {"t": "dc", "cls": type(x).__name__,
                    "v": {f.name: self.value(getattr(x, f.name)) for f in dataclasses.fields(x) if f.init}}
        raise Unsupported(f"a value of type {type(x).__module__}.{type(x).__qualname__}")


def encode(obj) -> tuple[object, dict[str, np.ndarray]]:
    """``(tree, arrays)``: a JSON-able tree and the plain arrays it refers to. ``Unsupported`` for other types."""
    enc = _Encoder()
    return enc.value(obj), enc.arrays


def decode(tree, arrays: dict[str, np.ndarray]):
    """Inverse of ``encode``; raises on anything malformed (the cache then reloads)."""
    classes = _model_classes()

    def arr(name):
        return arrays[name]

    def strings(node, shape):
        codes, offsets, blob = arr(node["codes"]), arr(node["offsets"]), arr(node["blob"]).tobytes()
        uniq = [blob[offsets[k]:offsets[k + 1]].decode("utf-8", "surrogatepass") for k in range(len(offsets) - 1)]
        table = np.empty(len(uniq) + 1, object)
        table[:len(uniq)] = uniq
        table[len(uniq)] = None
        if len(codes) and (codes.min() < -1 or codes.max() >= len(uniq)):
            raise ValueError("string codes out of range")
        return table[codes].reshape(shape)

    def val(node):
        if node is None or type(node) in (bool, str, int, float):
            return node
        t = node["t"]
        if t == "int":
            return int(node["v"])
        if t == "float":
            return float(node["v"])
        if t == "nd":
            return arr(node["a"])
        if t == "np":
            return arr(node["a"])[0]
        if t == "str":
            return strings(node, tuple(node["shape"]))
        if t == "ndlist":
            have, stack = arr(node["have"]), val(node["stack"])
            out = np.empty(len(have), object)
            if int(have.sum()) != len(stack):
                raise ValueError("ndlist: mask and stack disagree")
            for k, pos in enumerate(np.flatnonzero(have)):
                out[pos] = stack[k]
            return out.reshape(tuple(node["shape"]))
        if t == "objlist":
            items = [val(v) for v in node["v"]]
            out = np.empty(len(items), object)
            for k, v in enumerate(items):
                out[k] = v
            return out.reshape(tuple(node["shape"]))
        if t == "tuple":
            return tuple(val(v) for v in node["v"])
        if t == "list":
            return [val(v) for v in node["v"]]
        if t == "dict":
            return {val(k): val(v) for k, v in node["v"]}
        if t == "path":
            return Path(node["v"])
        if t == "frame":
            data = {}
            for name, col in node["cols"]:
                if isinstance(col, dict) and col.get("t") == "strcol":
                    dtype = pd.StringDtype(storage=col["storage"], na_value=np.nan if col["na"] == "nan" else pd.NA)
                    data[name] = pd.array(val(col["v"]), dtype=dtype)
                else:
                    data[name] = val(col)
            index = None if node["index"] is None else val(node["index"])
            n = len(next(iter(data.values()))) if data else (0 if index is None else len(index))
            return pd.DataFrame(data, index=pd.RangeIndex(n) if index is None else index, columns=list(data))
        if t == "dc":
            return classes[node["cls"]](**{k: val(v) for k, v in node["v"].items()})
        raise ValueError(f"unknown node type {t!r}")

    return val(tree)


# ------------------------------------------------------------------------------------------------ warnings
def _warning_name(category: type) -> str:
    return f"{category.__module__}:{category.__qualname__}"


def _warning_class(name: str) -> type:
    """The warning class a stored name refers to: a builtin or an already imported ``ov3d_core`` class (nothing is
    imported on the cache's say-so); UserWarning otherwise."""
    mod, _, qual = str(name).partition(":")
    if mod == "builtins" or mod.startswith("ov3d_core.") and mod in sys.modules:
        obj = sys.modules[mod]
        for part in qual.split("."):
            obj = getattr(obj, part, None)
        if isinstance(obj, type) and issubclass(obj, Warning):
            return obj
    return UserWarning


# ------------------------------------------------------------------------------------------------ the cache
def _entry_path(root, kind: str, key: str) -> Path:
    return Path(root) / "loads" / f"{kind}-{key}.npz"


def _read_entry(path: Path, kind: str, key: str):
    arrays, meta = npzstore.read(path)
    if meta.get("key") != key or meta.get("kind") != kind:
        raise npzstore.StoreError(f"entry for other inputs (key {meta.get('key')!r})")
    obj = decode(meta["tree"], arrays)
    caught = [(_warning_class(c), str(m)) for c, m in meta["warnings"]]
    return obj, caught


def cached_load(root: str | Path | None, kind: str, files, params: dict, load: Callable[[], T]) -> T:
    """``load()`` through the cache under ``root`` (None: no caching). Errors of ``load`` propagate unchanged; the
    cache's own problems never raise (they are logged and the load recomputed)."""
    if root is None:
        return load()
    try:
        key, inputs = cache_key(kind, files, params)
    except OSError:  # a missing or unreadable file: let the loader raise its own InputError
        return load()
    path = _entry_path(root, kind, key)
    npzstore.wait(path)
    if path.is_file():
        try:
            obj, caught = _read_entry(path, kind, key)
            for category, message in caught:
                warnings.warn(message, category, stacklevel=2)
            return obj
        except Exception as exc:  # noqa: BLE001 - an untrusted entry is recomputed
            log.warning("load cache entry %s not used (%s: %s); reloading", path, type(exc).__name__, exc)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        obj = load()
    caught = [(w.category, str(w.message)) for w in rec]
    for category, message in caught:
        warnings.warn(message, category, stacklevel=2)
    step = f"cache the {kind}"
    progress.report(step, 0, 1)
    try:
        tree, arrays = encode(obj)
        meta = {"key": key, "kind": kind, "inputs": inputs, "loader_version": loader_version(), "tree": tree,
                "warnings": [[_warning_name(c), m] for c, m in caught]}
        npzstore.write(path, arrays, meta)
    except Unsupported as exc:
        log.warning("load of %s not cached: %s", kind, exc)
    except (OSError, ValueError, TypeError) as exc:
        log.warning("could not write load cache %s: %s", path, exc)
    finally:
        progress.report(step, 1, 1)
    return obj
