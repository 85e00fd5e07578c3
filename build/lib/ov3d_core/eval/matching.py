"""Matching kernels over flat, sorted arrays (numba).

Everything here works on the sparse GT x prediction pairs: a pair not listed has IoU 0. No Python loop runs per
image or per pair; the kernels walk flat arrays in a precomputed order.

- :func:`stable_bucket` / :func:`pairs_by_pred`: O(n) stable counting sorts (CSR layouts).
- :func:`argsort_desc_stable`: O(n) stable descending sort of float scores (LSD radix), Omni3D's mergesort order.
- :func:`truncate_per_group`: COCO's per-(image, category) ``maxDets`` truncation after the score sort.
- :func:`coco_greedy_match`: Omni3D / COCO ``evaluateImg`` greedy matching for all IoU thresholds and ranges.
- :func:`accumulate_precision`: COCO accumulation (cumulative TP/FP, envelope, recall-threshold sampling).
- :func:`greedy_one_to_one`: confidence-ordered best-IoU one-to-one matching (class-agnostic recall).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["stable_bucket", "argsort_desc_stable", "radix_order", "descending_keys", "pairs_by_pred",
           "truncate_per_group", "coco_greedy_match", "accumulate_precision", "greedy_one_to_one",
           "STATE_FP", "STATE_TP", "STATE_IGNORED"]

#: Per (detection, range, threshold) outcome codes written by :func:`coco_greedy_match`.
STATE_FP, STATE_TP, STATE_IGNORED = 0, 1, 2


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


@njit(cache=True)
def pairs_by_pred(pair_gt, pair_pred, select, n_gt, n_pred):
    """CSR of the selected pairs grouped by ``pair_pred`` (a prediction row, or any key in ``[0, n_pred)`` such as
    the prediction's accumulation position), each group sorted by GT row (ties: input order).

    Returns ``(perm, indptr)``: the pairs of key d are ``perm[indptr[d]:indptr[d+1]]`` (pair indices).
    """
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


@njit(cache=True)
def coco_greedy_match(rows, indptr, cand_gt, cand_iou, cand_in_prox, det_prox, gt_ignore_r, thresholds, unmatched,
                      record_range):
    """Omni3D / COCO greedy matching of every detection at every IoU threshold and range.

    Detections are addressed by their position i in the accumulation order (category, -score, image, tie-break):
    within each (image, category) group that is score order, and groups never interact (a GT belongs to one group),
    so one walk in this order gives evaluateImg's matches. For each range a and threshold t, a detection scans the GTs
    of its group in evaluateImg's sorted order (non-ignored first, then ignored, each by row), skipping GTs already
    matched at t, with proximity skipping GTs whose 2D IoU is not above the proximity threshold, stopping at the
    ignored ones once it holds a non-ignored match, and taking any GT whose IoU is >= the best so far (start
    ``min(t, 1 - 1e-10)``; ties go to the later GT). The detection inherits the GT's ignore flag. An unmatched
    detection gets ``unmatched[i, a]`` (ignored when its range value is out of range, or far from every GT of its
    group under proximity; else FP). Detections without candidate pairs are never matched, so only ``rows`` (the
    positions with candidates) are walked and stored.

    Args:
        rows: ``(n_rows,)`` positions i (ascending) of the detections that have candidate pairs.
        indptr: ``(n_acc + 1,)`` CSR pointers: the candidates of position i are ``indptr[i]:indptr[i+1]`` in the
            arrays below, GT rows ascending (gathered in position order, so the walk reads memory sequentially).
        cand_gt, cand_iou: GT row and IoU of each candidate pair (same category only).
        cand_in_prox: bool, 2D IoU > proximity threshold.
        det_prox: ``(n_acc,)`` bool, proximity evaluation on for this position's dataset.
        gt_ignore_r: ``(A, n_gt)`` bool, GT ignored for range a (flag or out of range).
        thresholds: ``(T,)`` IoU thresholds.
        unmatched: ``(n_acc, A)`` uint8 outcome of an unmatched detection.
        record_range: range whose matched GT rows are returned (-1: none).

    Returns:
        ``state (n_rows, A, T)`` uint8 (STATE_FP, STATE_TP or STATE_IGNORED), row ii for position ``rows[ii]``, and
        ``match (n_rows, T)`` int64 GT row or -1 in ``record_range`` (``(0, T)`` when not recording).
    """
    n_ranges = gt_ignore_r.shape[0]
    n_thr = thresholds.shape[0]
    n_gt = gt_ignore_r.shape[1]
    n_rows = rows.shape[0]
    ign = gt_ignore_r.T.copy()  # (n_gt, A): a GT's flags in one cache line
    matched = np.zeros((n_gt, n_ranges, n_thr), np.bool_)
    state = np.empty((n_rows, n_ranges, n_thr), np.uint8)
    match = np.full((n_rows if record_range >= 0 else 0, n_thr), -1, np.int64)
    start = np.empty(n_thr, np.float64)
    for t in range(n_thr):
        start[t] = min(thresholds[t], 1.0 - 1e-10)
    width = 1
    for ii in range(n_rows):
        width = max(width, indptr[rows[ii] + 1] - indptr[rows[ii]])
    cand_g = np.empty(width, np.int64)
    cand_v = np.empty(width, np.float64)
    for ii in range(n_rows):
        i = rows[ii]
        p0 = indptr[i]
        p1 = indptr[i + 1]
        prox = det_prox[i]
        for a in range(n_ranges):
            # the GTs this detection may take, in evaluateImg's scan order: non-ignored by row, then ignored by row
            nc = 0
            n_non = 0
            for ign_pass in range(2):
                if ign_pass == 1:
                    n_non = nc
                for q in range(p0, p1):
                    g = cand_gt[q]
                    if ign[g, a] != (ign_pass == 1):
                        continue
                    if prox and not cand_in_prox[q]:
                        continue
                    cand_g[nc] = g
                    cand_v[nc] = cand_iou[q]
                    nc += 1
            for t in range(n_thr):
                best = start[t]
                m = -1
                for c in range(nc):
                    if c == n_non and m >= 0:
                        break  # holding a non-ignored match: ignored GTs cannot take over
                    g = cand_g[c]
                    if matched[g, a, t]:
                        continue
                    if cand_v[c] < best:
                        continue
                    best = cand_v[c]
                    m = g
                if m >= 0:
                    matched[m, a, t] = True
                    state[ii, a, t] = STATE_IGNORED if ign[m, a] else STATE_TP
                    if a == record_range:
                        match[ii, t] = m
                else:
                    state[ii, a, t] = unmatched[i, a]
    return state, match


@njit(cache=True)
def greedy_one_to_one(det_order, indptr, perm, pair_gt, pair_iou, n_gt):
    """Confidence-ordered one-to-one matching: each detection in ``det_order`` takes the highest-IoU unmatched GT
    among its (pre-filtered) pairs; IoU ties go to the lowest GT row.

    Returns ``(matched_det (n_gt,), matched_iou (n_gt,))`` with -1 / NaN for unmatched GT.
    """
    matched_det = np.full(n_gt, -1, np.int64)
    matched_iou = np.full(n_gt, np.nan)
    for i in range(det_order.shape[0]):
        d = det_order[i]
        best = -1.0
        bg = -1
        for q in range(indptr[d], indptr[d + 1]):
            p = perm[q]
            g = pair_gt[p]
            if matched_det[g] >= 0:
                continue
            if pair_iou[p] > best:
                best = pair_iou[p]
                bg = g
        if bg >= 0:
            matched_det[bg] = d
            matched_iou[bg] = best
    return matched_det, matched_iou


@njit(cache=True)
def accumulate_precision(state, row_of, unmatched, cat_indptr, npig, rec_thrs):
    """Per (category, range, threshold), over the detections in score order: recall = tp / npig, precision =
    tp / (tp + fp + eps), made non-increasing from the right, sampled at ``searchsorted(recall, r, "left")`` for each
    recall threshold r (0 beyond the last recall); final recall = tp / npig (0 without detections). Categories with
    npig = 0 stay NaN (Omni3D's -1).

    Detections are positions in accumulation order (category segments ``cat_indptr``); position i has outcomes
    ``state[row_of[i]]`` ``(A, T)`` when it had candidate pairs, else ``unmatched[i]`` ``(A,)`` at every threshold.
    Only the TP events are kept, which gives the same numbers as COCO's full arrays: recall rises only at a TP, so
    for r > 0 the first index with recall >= r is a TP event, and between TPs precision only falls, so the envelope
    at a TP event is the maximum precision over the TP events from there on. For r <= 0 the index is 0, whose
    envelope is the maximum over all events (0 if there is none). Each TP takes a distinct non-ignored GT, so a
    (category, range) has at most npig events.
    """
    n_ranges = unmatched.shape[1]
    n_thr = state.shape[2]
    n_cat = cat_indptr.shape[0] - 1
    n_rec = rec_thrs.shape[0]
    eps = np.spacing(1.0)
    precision = np.full((n_thr, n_rec, n_cat, n_ranges), np.nan)
    recall = np.full((n_thr, n_cat, n_ranges), np.nan)
    cap = 1
    for k in range(n_cat):
        for a in range(n_ranges):
            cap = max(cap, npig[k, a])
    ev_rc = np.empty((n_ranges, n_thr, cap))
    ev_pr = np.empty((n_ranges, n_thr, cap))
    ne = np.zeros((n_ranges, n_thr), np.int64)
    tp = np.zeros((n_ranges, n_thr))
    fp = np.zeros((n_ranges, n_thr))
    fp_all = np.zeros(n_ranges)  # FPs of detections without candidates: the same at every threshold
    for k in range(n_cat):
        s0 = cat_indptr[k]
        nd = cat_indptr[k + 1] - s0
        ne[:] = 0
        tp[:] = 0.0
        fp[:] = 0.0
        fp_all[:] = 0.0
        for i in range(s0, s0 + nd):
            r = row_of[i]
            if r < 0:
                for a in range(n_ranges):
                    if unmatched[i, a] == STATE_FP:
                        fp_all[a] += 1.0
                continue
            for a in range(n_ranges):
                n_pos = npig[k, a]
                if n_pos == 0:
                    continue
                for t in range(n_thr):
                    s = state[r, a, t]
                    if s == STATE_TP:
                        tp[a, t] += 1.0
                        j = ne[a, t]
                        ev_rc[a, t, j] = tp[a, t] / n_pos
                        ev_pr[a, t, j] = tp[a, t] / ((fp[a, t] + fp_all[a]) + tp[a, t] + eps)
                        ne[a, t] = j + 1
                    elif s == STATE_FP:
                        fp[a, t] += 1.0
        for a in range(n_ranges):
            n_pos = npig[k, a]
            if n_pos == 0:
                continue
            for t in range(n_thr):
                n_ev = ne[a, t]
                recall[t, k, a] = tp[a, t] / n_pos if nd > 0 else 0.0
                rc = ev_rc[a, t]
                pr = ev_pr[a, t]
                for j in range(n_ev - 2, -1, -1):
                    if pr[j + 1] > pr[j]:
                        pr[j] = pr[j + 1]
                for q in range(n_rec):
                    thr = rec_thrs[q]
                    if thr <= 0.0:
                        precision[t, q, k, a] = pr[0] if n_ev > 0 else 0.0
                        continue
                    lo = 0
                    hi = n_ev
                    while lo < hi:
                        mid = (lo + hi) // 2
                        if rc[mid] < thr:
                            lo = mid + 1
                        else:
                            hi = mid
                    precision[t, q, k, a] = pr[lo] if lo < n_ev else 0.0
    return precision, recall
