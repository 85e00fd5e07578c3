"""A visible notice while numba compiles: the first run on an install (or after the kernels change) compiles the
numeric kernels (about a minute of CPU), so it says so on stderr rather than look hung.

Every kernel is ``@njit(cache=True)``: numba compiles it on its first call for the argument types and writes the
machine code to its cache (``__pycache__`` beside the module, or ``NUMBA_CACHE_DIR``); later processes load it in
milliseconds, and a cache hit compiles nothing and prints nothing. ``python -m ov3d_core.analysis.warmup`` compiles
every kernel a user can reach ahead, e.g. right after installing. The entry points (``ov3d``, ``Analysis``) install
the notice; importing a kernel module does not.
"""

from __future__ import annotations

import sys
import threading

__all__ = ["announce_compiles", "MESSAGE"]

MESSAGE = ("ov3d: compiling the numeric kernels for this machine (first run only, up to ~40 s of CPU; "
           "`python -m ov3d_core.analysis.warmup` does it ahead) ...")

_installed = False
_lock = threading.Lock()


def announce_compiles(stream=None) -> None:
    """Print :data:`MESSAGE` on ``stream`` (stderr) the first time numba compiles anything in this process;
    idempotent."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    from numba.core import event  # numba is imported by the kernels anyway; not by this module's importers

    class _Notice(event.Listener):
        said = False

        def on_start(self, ev):
            if not self.said:
                self.said = True
                print(MESSAGE, file=stream or sys.stderr, flush=True)

        def on_end(self, ev):
            pass

    event.register("numba:compile", _Notice())
