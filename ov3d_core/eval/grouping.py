"""Group-wise operations on sparse pair tables and image keys, shared by the engine and the diagnostics.

One owner each: dense image indices shared by GT and predictions, the best value per group (best IoU per prediction
or per GT), the position of (gt, pred) pairs in a pair table.
"""

from __future__ import annotations

import numpy as np

__all__ = ["dense_image_keys", "argmax_by_group", "pair_index", "best_gt_overlap"]


def dense_image_keys(gt_image: np.ndarray, pred_image: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Dense image indices ``(gt_codes, pred_codes, n_images)`` over the union of both key arrays, in ascending key
    order (the order Omni3D visits images in); keys are 1-D ids or ``(N, 2)`` composites such as (dataset, image)."""
    ng = len(gt_image)
    if gt_image.ndim == 2 or pred_image.ndim == 2:
        keys = np.concatenate([gt_image.reshape(ng, -1), pred_image.reshape(len(pred_image), -1)])
        if len(keys) == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), 0
        _, inv = np.unique(keys, axis=0, return_inverse=True)
        inv = inv.reshape(-1).astype(np.int64)
        return inv[:ng], inv[ng:], int(inv.max()) + 1
    keys = np.concatenate([gt_image, pred_image])
    if len(keys) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), 0
    if np.issubdtype(keys.dtype, np.integer):
        lo, hi = int(keys.min()), int(keys.max())
        if hi - lo < max(8 * len(keys), 1 << 20):
            present = np.zeros(hi - lo + 1, bool)
            off = (keys - lo).astype(np.int64)
            present[off] = True
            rank = np.cumsum(present, dtype=np.int64) - 1
            inv = rank[off]
            return inv[:ng], inv[ng:], int(rank[-1]) + 1
    _, inv = np.unique(keys, return_inverse=True)
    inv = inv.astype(np.int64)
    return inv[:ng], inv[ng:], int(inv.max()) + 1


def argmax_by_group(group: np.ndarray, value: np.ndarray, other: np.ndarray, n_groups: int):
    """Per group: max value and the ``other`` at the max (ties: smallest ``other``); -inf / -1 where empty."""
    best = np.full(n_groups, -np.inf)
    arg = np.full(n_groups, -1, np.int64)
    if len(group) == 0:
        return best, arg
    o = np.lexsort((other, -value, group))
    g = group[o]
    first = np.r_[True, g[1:] != g[:-1]]
    best[g[first]] = value[o][first]
    arg[g[first]] = other[o][first]
    return best, arg


def pair_index(pg: np.ndarray, pp: np.ndarray, g: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Positions of the pairs (g[i], d[i]) in (pg, pp), -1 where not stored."""
    g = np.asarray(g, np.int64)
    d = np.asarray(d, np.int64)
    out = np.full(len(g), -1, np.int64)
    if len(pg) == 0 or len(g) == 0:
        return out
    n = int(max(pp.max(), d.max())) + 1
    # a few boxes (one image's) against a whole run's table: sort only the pairs of those predictions
    rows = np.flatnonzero(np.isin(pp, d)) if 8 * len(d) < len(pp) else np.arange(len(pp))
    key = np.asarray(pg[rows], np.int64) * n + np.asarray(pp[rows], np.int64)
    if len(key) == 0:
        return out
    order = np.argsort(key, kind="stable")
    ks = key[order]
    want = g * n + d
    pos = np.clip(np.searchsorted(ks, want), 0, len(ks) - 1)
    hit = (ks[pos] == want) & (g >= 0) & (d >= 0)
    out[hit] = rows[order[pos[hit]]]
    return out


def best_gt_overlap(pairs, n_pred: int) -> tuple[np.ndarray, np.ndarray]:
    """For each prediction, its highest 3D IoU with any GT and that GT's row (0 and -1 when it overlaps none;
    ties: the lower GT row)."""
    best, arg = argmax_by_group(np.asarray(pairs.pred, np.int64), np.asarray(pairs.iou3d, np.float64),
                                np.asarray(pairs.gt, np.int64), n_pred)
    hit = best > 0
    return np.where(hit, best, 0.0), np.where(hit, arg, -1)
