"""The process heap (glibc): large blocks straight from and back to the system, and free memory handed back after a
step that dropped many temporaries (loading, pair geometry, scoring). No-ops off glibc."""

from __future__ import annotations

import ctypes
import sys

__all__ = ["large_blocks_to_os", "trim_heap"]

_MMAP_THRESHOLD_SET = False


def large_blocks_to_os() -> None:
    """Fix glibc's mmap threshold at 32 MiB: allocations above it get their own mmap and go back to the system when
    freed. Left alone, glibc raises the threshold after every large free, and the scan's freed blocks stayed in the
    heap (+50% peak RSS at 2M predictions, bench/bench_load.py). A lower threshold costs time instead: at 2M predictions
    128 KiB gave 30.2 s / 1,710 MiB, 4 MiB 26.8 s / 1,793 MiB, 32 MiB 24.1 s / 1,878 MiB (cold ``evaluate``, one run
    each; every fresh map is a zeroed page per 4 KiB). Done once per process; a no-op off glibc."""
    global _MMAP_THRESHOLD_SET
    if _MMAP_THRESHOLD_SET:
        return
    _MMAP_THRESHOLD_SET = True
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD
        except (OSError, AttributeError):
            pass


def trim_heap() -> None:
    """Hand the heap's free memory back to the system (glibc ``malloc_trim``) once a load has dropped its
    temporaries: below the 32 MiB threshold freed blocks otherwise stay in the process (at 200k GT, 137 of the
    319 MiB a GT load added). A no-op off glibc."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL(None).malloc_trim(0)
        except (OSError, AttributeError):
            pass
