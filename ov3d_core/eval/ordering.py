"""Stable orders and CSR layouts over flat arrays (numba): the sorts and buckets the evaluator and the bootstrap
walk their arrays in. Everything is O(n) and stable (ties keep the input order).

- :func:`stable_bucket` / :func:`bucket_rows` / :func:`pairs_by_pred`: stable counting sorts (CSR layouts).
- :func:`argsort_desc_stable`: stable descending sort of float scores (LSD radix), Omni3D's mergesort order.
- :func:`truncate_per_group`: COCO's per-(image, category) ``maxDets`` truncation after the score sort.
- :func:`span_starts`: per-span counts to CSR pointers, for kernels that count and fill on threads.
- :func:`read_only`: the one array variant the kernels are compiled for.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ov3d_core.eval import threads

__all__ = ["stable_bucket", "bucket_rows", "span_starts", "descending_keys", "radix_order", "argsort_desc_stable",
           "pairs_by_pred", "truncate_per_group", "read_only"]


@njit(cache=True)
def stable_bucket(order, keys, n_keys):
    """Reorder ``order`` (row indices) stably by ``keys[row]`` in ``[0, n_keys)``.

    Returns the new order and ``indptr (n_keys + 1,)`` so that rows with key k are ``new[indptr[k]:indptr[k+1]]``.
    """
    indptr = np.zeros(n_keys + 1, np.int64)
    for i in range(order.shape[0]):
        indptr[keys[order[i]] + 1] += 1
    for k in range(n_keys):
        indptr[k + 1] += indptr[k]
    pos = indptr[:-1].copy()
    out = np.empty(order.shape[0], np.int64)
    for i in range(order.shape[0]):
        k = keys[order[i]]
        out[pos[k]] = order[i]
        pos[k] += 1
    return out, indptr


def bucket_rows(order: np.ndarray, keys: np.ndarray, n_keys: int, carry: np.ndarray | None = None):
    """:func:`stable_bucket` of the rows of ``order`` whose key ``keys[row]`` is not negative (negative: dropped):
    the same ``(new order, indptr)``. With ``carry`` (float64, one value per position of ``order``), also the carried
    values in the new order.

    Each row's key is read once, in one pass that also counts; the fill then reads sequentially. Both passes run on
    threads over spans of ``order`` (each span fills its own slots, placed by the counts of the spans before it)."""
    order, keys = read_only(np.ascontiguousarray(order, np.int64), keys)
    values = read_only(np.zeros(0) if carry is None else np.ascontiguousarray(carry, np.float64))
    spans = threads.even_spans(len(order))
    counts = np.zeros((len(spans), n_keys), np.int64)
    ks = np.empty(len(order), np.int64)
    row = {s: t for t, s in enumerate(spans)}
    threads.run_spans(lambda i0, i1: _bucket_count(order, keys, i0, i1, ks, counts[row[i0, i1]]), spans)
    indptr = np.empty(n_keys + 1, np.int64)
    span_starts(counts, indptr)  # counts[t] become span t's first slots
    out = np.empty(int(indptr[-1]), np.int64)
    carried = np.empty(len(out) if carry is not None else 0, np.float64)
    threads.run_spans(lambda i0, i1: _bucket_fill(order, ks, values, i0, i1, counts[row[i0, i1]], out, carried),
                      spans)
    return (out, indptr) if carry is None else (out, indptr, carried)


@njit(cache=True, nogil=True)
def _bucket_count(order, keys, i0, i1, ks, counts):
    for i in range(i0, i1):
        k = keys[order[i]]
        ks[i] = k
        if k >= 0:
            counts[k] += 1


@njit(cache=True, nogil=True)
def _bucket_fill(order, ks, values, i0, i1, pos, out, carried):
    with_values = carried.shape[0] > 0
    for i in range(i0, i1):
        k = ks[i]
        if k >= 0:
            j = pos[k]
            out[j] = order[i]
            if with_values:
                carried[j] = values[i]
            pos[k] = j + 1


@njit(cache=True, nogil=True)
def span_starts(counts, indptr):
    """Per-span counts ``(S, n)`` -> CSR pointers ``indptr (n + 1,)``; ``counts[t, i]`` becomes the first slot of
    span t in segment i (the spans before it fill the slots before)."""
    n_spans, n = counts.shape
    total = 0
    for i in range(n):
        indptr[i] = total
        for t in range(n_spans):
            c = counts[t, i]
            counts[t, i] = total
            total += c
    indptr[n] = total


def descending_keys(values: np.ndarray) -> np.ndarray:
    """uint64 keys whose ascending order is the descending order of the float64 ``values`` (-0.0 == 0.0; no NaN)."""
    u = (np.asarray(values, np.float64) + 0.0).view(np.uint64)  # + 0.0 turns -0.0 into 0.0
    neg = (u >> np.uint64(63)) == np.uint64(1)
    asc = np.where(neg, ~u, u | np.uint64(1 << 63))
    return ~asc


@njit(cache=True)
def radix_order(keys, order):
    """Reorder ``order`` (row indices) stably by ``keys[row]`` (uint64, ascending): LSD radix sort with 11-bit digits;
    passes whose digit is constant are skipped. O(n); ties keep the input order."""
    n = order.shape[0]
    cur = order.copy()
    nxt = np.empty(n, np.int64)
    k = np.empty(n, np.uint64)
    for i in range(n):
        k[i] = keys[cur[i]]
    kn = np.empty(n, np.uint64)
    counts = np.zeros((6, 2049), np.int64)
    mask = np.uint64(0x7FF)
    for i in range(n):  # all six histograms in one read
        x = k[i]
        for p in range(6):
            counts[p, np.int64((x >> np.uint64(11 * p)) & mask) + 1] += 1
    for p in range(6):
        c = counts[p]
        if n == 0 or c.max() == n:
            continue
        for b in range(2048):
            c[b + 1] += c[b]
        shift = np.uint64(11 * p)
        for i in range(n):
            b = np.int64((k[i] >> shift) & mask)
            j = c[b]
            nxt[j] = cur[i]
            kn[j] = k[i]
            c[b] = j + 1
        cur, nxt = nxt, cur
        k, kn = kn, k
    return cur


def argsort_desc_stable(values: np.ndarray, order: np.ndarray) -> np.ndarray:
    """``order`` reordered by descending ``values[row]``, ties keeping their order in ``order`` (a stable sort on
    -value, as Omni3D's mergesort)."""
    return radix_order(descending_keys(values), np.ascontiguousarray(order, np.int64))


def pairs_by_pred(pair_gt, pair_pred, select, n_gt, n_pred):
    """CSR of the selected pairs grouped by ``pair_pred`` (a prediction row, or any key in ``[0, n_pred)`` such as
    the prediction's accumulation position), each group sorted by GT row (ties: input order).

    Returns ``(perm, indptr)``: the pairs of key d are ``perm[indptr[d]:indptr[d+1]]`` (pair indices).
    """
    return _pairs_by_pred(*read_only(pair_gt, pair_pred, select), n_gt, n_pred)


def read_only(*arrays: np.ndarray):
    """Read-only views (no copy) of the arrays (one array: the view itself). Memory-mapped tables are read-only and
    computed ones writable, and numba compiles one machine-code variant per combination; this way there is one, the
    one ``python -m ov3d_core.analysis.warmup`` compiles ahead."""
    out = []
    for a in arrays:
        if a.flags.writeable:
            a = a.view()
            a.flags.writeable = False
        out.append(a)
    return out[0] if len(out) == 1 else out


@njit(cache=True)
def _pairs_by_pred(pair_gt, pair_pred, select, n_gt, n_pred):
    idx = np.flatnonzero(select)
    by_gt, _ = stable_bucket(idx, pair_gt, n_gt)
    return stable_bucket(by_gt, pair_pred, n_pred)


@njit(cache=True)
def truncate_per_group(order_by_image, image_indptr, label, n_categories, max_dets):
    """Keep mask ``(n_pred,)``: the first ``max_dets`` detections of each (image, category) in ``order_by_image``.

    ``order_by_image`` lists evaluated detection rows grouped by image (``image_indptr``), score-sorted within each
    image.
    """
    n_pred = label.shape[0]
    keep = np.zeros(n_pred, np.bool_)
    count = np.zeros(n_categories, np.int64)
    for b in range(image_indptr.shape[0] - 1):
        for i in range(image_indptr[b], image_indptr[b + 1]):
            d = order_by_image[i]
            k = label[d]
            if count[k] < max_dets:
                keep[d] = True
            count[k] += 1
        for i in range(image_indptr[b], image_indptr[b + 1]):
            count[label[order_by_image[i]]] = 0
    return keep
