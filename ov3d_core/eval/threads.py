"""How many threads the GIL-free numba kernels use, and running one kernel over independent spans on them.

The geometry kernels split the pair computation into work units; the scoring kernels split the categories (no
Omni3D group spans two categories, so each span is matched and accumulated on its own). Results never depend on the
thread count: each span writes its own rows of a preallocated output.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

import numpy as np

__all__ = ["kernel_threads", "weighted_spans", "even_spans", "run_spans"]


def kernel_threads() -> int:
    """Kernels run at once: the usable cores, at most 4 (``OV3D_GEOMETRY_THREADS`` overrides)."""
    forced = os.environ.get("OV3D_GEOMETRY_THREADS", "")
    if forced.isdigit() and int(forced) > 0:
        return int(forced)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


#: Below this much work (rows or pairs) a split costs more than it saves.
MIN_SPAN_WORK = 50_000


def weighted_spans(ptr: np.ndarray, n_spans: int | None = None) -> list[tuple[int, int]]:
    """Contiguous segment ranges ``[(k0, k1), ...]`` covering the ``len(ptr) - 1`` segments of the CSR pointers
    ``ptr``, each holding about the same number of items (a segment is never split); at most ``n_spans`` (default
    :func:`kernel_threads`) and one per ``MIN_SPAN_WORK`` items."""
    n_seg = len(ptr) - 1
    total = int(ptr[-1] - ptr[0]) if n_seg > 0 else 0
    n_spans = kernel_threads() if n_spans is None else int(n_spans)
    n_spans = max(1, min(n_spans, n_seg, total // max(MIN_SPAN_WORK, 1)))
    if n_spans <= 1:
        return [(0, max(n_seg, 0))]
    targets = ptr[0] + total * np.arange(1, n_spans) / n_spans
    cuts = np.unique(np.clip(np.searchsorted(ptr, targets, side="left"), 1, n_seg - 1))
    bounds = [0, *cuts.tolist(), n_seg]
    return [(a, b) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def even_spans(n: int, n_spans: int | None = None) -> list[tuple[int, int]]:
    """``[0, n)`` cut into equal contiguous spans: at most ``n_spans`` (default :func:`kernel_threads`) and one per
    ``MIN_SPAN_WORK`` items."""
    n_spans = kernel_threads() if n_spans is None else int(n_spans)
    n_spans = max(1, min(n_spans, n // max(MIN_SPAN_WORK, 1)))
    bounds = [n * t // n_spans for t in range(n_spans + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def run_spans(fn: Callable[[int, int], object], spans: Sequence[tuple[int, int]]) -> list:
    """``[fn(k0, k1) for (k0, k1) in spans]``, on threads when there is more than one span."""
    if len(spans) <= 1:
        return [fn(*s) for s in spans]
    with ThreadPoolExecutor(len(spans), thread_name_prefix="ov3d-kernels") as pool:
        return list(pool.map(lambda s: fn(*s), spans))
