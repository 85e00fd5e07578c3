"""Checksummed, pickle-free array files: the on-disk format of every cache (parsed inputs, pair geometry).

A file is an uncompressed ``.npz`` (``np.savez``) holding plain numeric/bool/fixed-width-string arrays and one
``__meta__`` member: UTF-8 JSON bytes with the caller's metadata, each array's dtype, shape and xxh3-128 digest, and a
digest of the metadata itself. ``read`` opens it with ``allow_pickle=False`` (an object array or a pickle cannot be
loaded, let alone run), checks the member list, every dtype and shape and every digest, and raises ``StoreError`` on
the first thing that does not match: a truncated file, a flipped bit, a planted pickle or a foreign file never comes
back as data. Files are written atomically (temporary file + ``os.replace``) and never modified in place.

Uncompressed members can be memory-mapped (``read(..., mmap=True)``): the arrays are read-only views of the file, so
a large pair table costs page cache, not a private copy.

``write(..., background=True)`` checks the arrays and takes their digests at once, then writes the file on one
worker thread while the caller goes on (a cold ``evaluate`` scores while its caches are written; the interpreter
waits for the writer before it exits). ``read`` and ``wait`` wait for a pending write of that path first. An array
changed after the call makes a file whose digests do not match: ``read`` refuses it, so it is recomputed, never used.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import struct
import tempfile
import threading
import zipfile
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import xxhash

from ov3d_core.digest import digest_array

__all__ = ["StoreError", "write", "read", "wait", "deferred_writes", "FORMAT"]

log = logging.getLogger(__name__)

FORMAT = "ov3d-npz-1"
_META = "__meta__"
_KINDS = "biufcSU"  # numpy kinds that np.load reads without pickle (no object, void or datetime arrays)


class StoreError(ValueError):
    """A cache file that cannot be trusted (unreadable, damaged, of another format or for other inputs)."""


def _meta_digest(doc: dict) -> str:
    body = {k: v for k, v in doc.items() if k != "digest"}
    return xxhash.xxh3_128(json.dumps(body, sort_keys=True, allow_nan=False).encode()).hexdigest()


def write(path: str | os.PathLike, arrays: dict[str, np.ndarray], meta: dict, *,
          background: bool | None = None) -> None:
    """Write ``arrays`` (names must be identifiers, dtypes plain) and JSON-able ``meta`` to ``path`` atomically.

    Raises ``TypeError`` for an array that would need pickle, ``OSError`` when the folder is not writable (with
    ``background``, at once if the folder cannot be made; a later write failure is logged as a warning and leaves no
    file). ``background=None``: as ``deferred_writes`` says (off by default)."""
    path = Path(path)
    if background is None:
        background = _defer.on
    listing = {}
    for name, a in arrays.items():
        if name == _META or not name.isidentifier():
            raise ValueError(f"array name {name!r} not allowed")
        if not isinstance(a, np.ndarray) or a.dtype.kind not in _KINDS:
            raise TypeError(f"array {name!r}: dtype {getattr(a, 'dtype', type(a))} cannot be stored without pickle")
        listing[name] = [a.dtype.str, list(a.shape), digest_array(a)]
    doc = {"format": FORMAT, "meta": meta, "arrays": listing}
    doc["digest"] = _meta_digest(doc)
    head = np.frombuffer(json.dumps(doc, sort_keys=True, allow_nan=False).encode(), dtype=np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not background:
        _write_file(path, head, arrays)
        return
    wait(path)  # one writer per path at a time
    global _writer
    with _pending_lock:
        if _writer is None:
            _writer = ThreadPoolExecutor(1, thread_name_prefix="ov3d-cache-writer")
        fut = _writer.submit(_write_logged, path, head, dict(arrays))
        _pending[str(path)] = fut
    fut.add_done_callback(lambda f, p=path: _finished(p, f))


def _write_file(path: Path, head: np.ndarray, arrays: dict[str, np.ndarray]) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".npz")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **{_META: head}, **arrays)
        os.replace(tmp, path)
        tmp = None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


_writer: ThreadPoolExecutor | None = None
_pending: dict[str, Future] = {}
_pending_lock = threading.Lock()


def _write_logged(path: Path, head: np.ndarray, arrays: dict[str, np.ndarray]) -> None:
    """The background job: a failure is logged inside the job, before its future completes, so that ``wait``
    returns only after the warning is out (a done-callback could log after ``wait`` returned)."""
    try:
        _write_file(path, head, arrays)
    except Exception as exc:
        log.warning("could not write cache file %s (%s: %s); continuing without it", path, type(exc).__name__, exc)
        raise


def _finished(path: Path, fut: Future) -> None:
    with _pending_lock:
        if _pending.get(str(path)) is fut:
            del _pending[str(path)]


class _Defer(threading.local):
    on = False


_defer = _Defer()


@contextlib.contextmanager
def deferred_writes():
    """Within the block, this thread's cache writes go to the background writer; on leaving it, every pending write
    is waited for (the CLI runs each command inside one: its caches are written while it scores)."""
    before = _defer.on
    _defer.on = True
    try:
        yield
    finally:
        _defer.on = before
        wait()


def wait(path: str | os.PathLike | None = None) -> None:
    """Return once the background write of ``path`` (of every path: None) is finished; its errors were logged."""
    with _pending_lock:
        futs = list(_pending.values()) if path is None else [_pending.get(str(Path(path)))]
    for fut in futs:
        if fut is not None:
            try:
                fut.result()
            except Exception:  # noqa: BLE001 - logged by the job (_write_logged)
                pass


def _member_offset(fh, info: zipfile.ZipInfo) -> int:
    """Byte offset of a stored (uncompressed) member's data: after its local header, name and extra field."""
    fh.seek(info.header_offset)
    local = fh.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise StoreError(f"member {info.filename}: bad local header")
    name_len, extra_len = struct.unpack("<HH", local[26:30])
    return info.header_offset + 30 + name_len + extra_len


def _mapped(path: Path, fh, info: zipfile.ZipInfo, dtype: np.dtype, shape: tuple) -> np.ndarray:
    if info.compress_type != zipfile.ZIP_STORED:
        raise StoreError(f"member {info.filename} is compressed; cannot map it")
    fh.seek(_member_offset(fh, info))
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        hshape, fortran, hdtype = np.lib.format.read_array_header_1_0(fh)
    elif version in ((2, 0), (3, 0)):
        hshape, fortran, hdtype = np.lib.format.read_array_header_2_0(fh)
    else:
        raise StoreError(f"member {info.filename}: npy version {version}")
    if hdtype != dtype or tuple(hshape) != shape or (fortran and len(shape) > 1):
        raise StoreError(f"member {info.filename}: header {hdtype} {hshape} does not match the listing")
    offset = fh.tell()
    if offset + dtype.itemsize * int(np.prod(shape, dtype=np.int64)) > os.path.getsize(path):
        raise StoreError(f"member {info.filename}: truncated")
    if int(np.prod(shape, dtype=np.int64)) == 0:
        return np.zeros(shape, dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape).view(np.ndarray)


def read(path: str | os.PathLike, *, mmap: bool = False) -> tuple[dict[str, np.ndarray], dict]:
    """``(arrays, meta)`` of a file written by ``write``, every digest verified; ``StoreError`` on any mismatch.

    With ``mmap`` the arrays are read-only memory maps of the file (its members are stored uncompressed)."""
    path = Path(path)
    wait(path)
    try:
        with np.load(path, allow_pickle=False) as z:
            names = set(z.files)
            if _META not in names:
                raise StoreError("no metadata member")
            doc = json.loads(bytes(z[_META]).decode("utf-8"))
            if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("digest") != _meta_digest(doc):
                raise StoreError("metadata digest or format mismatch")
            listing = doc["arrays"]
            if names != set(listing) | {_META}:
                raise StoreError(f"members {sorted(names)} do not match the listing")
            arrays = {}
            if mmap:
                with open(path, "rb") as fh:
                    infos = {i.filename[:-4]: i for i in zipfile.ZipFile(fh).infolist()}
                    for name, (dt, shape, _) in listing.items():
                        arrays[name] = _mapped(path, fh, infos[name], np.dtype(dt), tuple(shape))
            else:
                for name in listing:
                    arrays[name] = z[name]
    except StoreError:
        raise
    except Exception as exc:  # noqa: BLE001 - zip, npy, JSON, pickle refusal, OS errors: all mean "not trusted"
        raise StoreError(f"{type(exc).__name__}: {exc}") from None
    for name, (dt, shape, digest) in listing.items():
        a = arrays[name]
        if a.dtype.str != dt or list(a.shape) != list(shape):
            raise StoreError(f"array {name}: {a.dtype.str} {a.shape}, listed {dt} {shape}")
        if digest_array(a) != digest:
            raise StoreError(f"array {name}: digest mismatch")
    return arrays, doc["meta"]
