"""A disk cache of parsed inputs, so a second start skips JSON parsing and the torch import of ``.pth`` files.

Keyed by what was loaded (loader name, its arguments, a format version) and by each input file's identity: absolute
path, size, modification time and a SHA-1 of its first and last MiB. A changed file therefore misses; a corrupt or
unreadable cache entry is recomputed, never an error. The cache holds only what this program wrote (pickles of
numpy/pandas objects under the benchmark's cache folder). Warnings the loader raised (e.g. corner mismatches) are
stored and raised again on a hit, so a cached load says what a fresh one says.
"""

from __future__ import annotations

import hashlib
import logging
import os
import pickle
import tempfile
import warnings
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")
log = logging.getLogger(__name__)

#: Bump when the loaders' output changes meaning (invalidates every entry).
LOADER_VERSION = 1
_EDGE = 1 << 20


def file_fingerprint(path: str | Path) -> str:
    """Path, size, mtime and a hash of the first and last MiB (cheap even for a 400 MB prediction file)."""
    p = Path(path).resolve()
    st = p.stat()
    h = hashlib.sha1(f"{p}|{st.st_size}|{st.st_mtime_ns}".encode())
    with open(p, "rb") as f:
        h.update(f.read(_EDGE))
        if st.st_size > 2 * _EDGE:
            f.seek(-_EDGE, os.SEEK_END)
            h.update(f.read(_EDGE))
    return h.hexdigest()


def cache_key(kind: str, files, params: dict) -> str:
    h = hashlib.sha1(f"{kind}|v{LOADER_VERSION}|{sorted(params.items())!r}".encode())
    for f in files:
        if f is not None and Path(f).is_file():
            h.update(file_fingerprint(f).encode())
        else:
            h.update(f"missing:{f}".encode())
    return h.hexdigest()


def cached_load(root: str | Path | None, kind: str, files, params: dict, load: Callable[[], T]) -> T:
    """``load()`` through the cache under ``root`` (None: no caching). Errors of ``load`` propagate unchanged."""
    if root is None:
        return load()
    try:
        key = cache_key(kind, files, params)
    except OSError:  # a missing file: let the loader raise its own InputError
        return load()
    path = Path(root) / "loads" / f"{kind}-{key}.pkl"
    if path.is_file():
        try:
            with open(path, "rb") as f:
                obj, caught = pickle.load(f)
            for category, message in caught:
                warnings.warn(message, category, stacklevel=2)
            return obj
        except Exception as exc:  # noqa: BLE001 - a broken cache entry is recomputed
            log.warning("load cache entry %s unreadable (%s); reloading", path, exc)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        obj = load()
    caught = [(w.category, str(w.message)) for w in rec]
    for category, message in caught:
        warnings.warn(message, category, stacklevel=2)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            pickle.dump((obj, caught), f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("could not write load cache %s: %s", path, exc)
    return obj
