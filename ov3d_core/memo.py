"""The one memo of the product: a bounded, thread-safe LRU that computes each key once.

Every in-memory cache of results is a :class:`Memo` (the Analysis memo of views, the app's per-server tables, the
engine's content-keyed intermediates, pair tables, remap rankings, text embeddings, re-read JSON records). What they
share, and why one type: several threads (app sessions, scoring threads, the app's background warm-up) ask for the
same key at the same moment, and the value must be computed once while the others wait for it; a value whose
computation raises is not stored, so the next caller computes (and fails with its own message) again.

``ov3d_core.digest.content_key`` keys a memo by the content of arrays rather than by object identity.

Not a Memo: ``Benchmark``'s loaded runs, which are let go by their size in bytes (``OV3D_RUN_MEMORY_MB``), not by
count, and are read back from the load cache when needed again.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import OrderedDict
from typing import Any, Callable, Generic, Hashable, Iterator, TypeVar

import numpy as np

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

__all__ = ["Memo"]

_MISSING = object()


def _freeze(value) -> None:
    """Mark an array value, or the array fields of a dataclass value, read-only (values are shared by callers)."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for v in vars(value).values():
            if isinstance(v, np.ndarray):
                v.flags.writeable = False


class Memo(Generic[K, V]):
    """``key -> value`` for at most ``max_items`` keys, least recently used first out.

    ``get(key, compute)`` returns the stored value or computes it once: concurrent callers of one key wait for the
    first (each key has its own lock, so different keys compute in parallel, and a computation may ask the memo for
    other keys). ``hits`` / ``misses`` count lookups answered from memory and computations. With ``read_only``,
    stored arrays (or a dataclass value's array fields) are made read-only, since every caller gets the same object.
    """

    def __init__(self, max_items: int, *, read_only: bool = False):
        if max_items < 1:
            raise ValueError(f"Memo: expected max_items >= 1, got {max_items}")
        self.max_items = int(max_items)
        self.read_only = bool(read_only)
        self.hits = 0
        self.misses = 0
        self._data: OrderedDict = OrderedDict()
        self._locks: dict = {}
        self._lock = threading.Lock()

    def get(self, key: K, compute: Callable[[], V]) -> V:
        with self._lock:
            value = self._data.get(key, _MISSING)
            if value is not _MISSING:
                self._data.move_to_end(key)
                self.hits += 1
                return value
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                value = self._data.get(key, _MISSING)
                if value is not _MISSING:  # computed by the caller this one waited for
                    self._data.move_to_end(key)
                    self.hits += 1
                    return value
            try:
                value = compute()
            except BaseException:
                with self._lock:
                    self._locks.pop(key, None)
                raise
            if self.read_only:
                _freeze(value)
            with self._lock:
                self.misses += 1
                self._data[key] = value
                self._locks.pop(key, None)
                self._evict()
            return value

    def peek(self, key: K, default: Any = None):
        """The stored value (without computing or counting), else ``default``."""
        with self._lock:
            return self._data.get(key, default)

    def put(self, key: K, value: V) -> None:
        """Store a value computed elsewhere (e.g. by a batch computation for many keys at once)."""
        if self.read_only:
            _freeze(value)
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            self._evict()

    def keep_last(self, predicate: Callable[[K], bool], n: int) -> None:
        """Keep only the ``n`` most recently used keys for which ``predicate`` holds (e.g. one kind of large value)."""
        with self._lock:
            chosen = [k for k in self._data if predicate(k)]
            for k in chosen[:max(0, len(chosen) - n)]:
                del self._data[k]

    def resize(self, max_items: int) -> None:
        with self._lock:
            self.max_items = max(1, int(max_items))
            self._evict()

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key) -> bool:
        return key in self._data

    def keys(self) -> Iterator[K]:
        with self._lock:
            return iter(list(self._data))

    def _evict(self) -> None:
        while len(self._data) > self.max_items:
            self._data.popitem(last=False)
