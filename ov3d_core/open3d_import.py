"""open3d, imported so that its first import cannot fail on a concurrent change of ``sys.modules``.

open3d 0.20's ``__init__`` iterates ``sys.modules`` without copying it (``_insert_pybind_names``); an import that
lands in another thread, or in a garbage-collector finaliser of the importing thread, during that loop fails the
whole import with "RuntimeError: dictionary changed size during iteration" (seen once in a fresh-clone CI run, in a
demo-build worker process). The first import therefore runs with the cyclic GC paused and a long thread switch
interval, so the pure-Python loop runs to its end without another Python frame in between; later calls return the
imported module at once. Every open3d use in the project goes through :func:`open3d`.
"""
from __future__ import annotations

import gc
import sys
import threading
from types import ModuleType

_LOCK = threading.Lock()
_MODULE: ModuleType | None = None
#: Seconds another thread waits before it may force the GIL from the importing thread (Python's default: 0.005).
#: The import releases the GIL for its file reads anyway, so other threads still run in between.
_SWITCH_INTERVAL = 0.5


def open3d() -> ModuleType:
    """The ``open3d`` module (imported on the first call; raises ImportError as ``import open3d`` does)."""
    global _MODULE
    if _MODULE is not None:
        return _MODULE
    with _LOCK:
        if _MODULE is None:
            was_enabled, interval = gc.isenabled(), sys.getswitchinterval()
            gc.disable()
            sys.setswitchinterval(max(interval, _SWITCH_INTERVAL))
            try:
                import open3d as o3d
            finally:
                sys.setswitchinterval(interval)
                if was_enabled:
                    gc.enable()
            _MODULE = o3d
    return _MODULE
