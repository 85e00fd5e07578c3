"""Matching kernels over flat, sorted arrays (numba).

Everything here works on the sparse GT x prediction pairs: a pair not listed has IoU 0. No Python loop runs per
image or per pair; the kernels walk flat arrays in a precomputed order.

- :func:`stable_bucket` / :func:`pairs_by_pred`: O(n) stable counting sorts (CSR layouts).
- :func:`truncate_per_group`: COCO's per-(image, category) ``maxDets`` truncation after the score sort.
- :func:`coco_greedy_match`: Omni3D / COCO ``evaluateImg`` greedy matching for all IoU thresholds and ranges.
- :func:`greedy_one_to_one`: confidence-ordered best-IoU one-to-one matching (class-agnostic recall).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["stable_bucket", "pairs_by_pred", "truncate_per_group", "coco_greedy_match", "greedy_one_to_one",
           "STATE_FP", "STATE_TP", "STATE_IGNORED"]

#: Per (range, threshold, detection) outcome codes written by :func:`coco_greedy_match`.
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


@njit(cache=True)
def pairs_by_pred(pair_gt, pair_pred, select, n_gt, n_pred):
    """CSR of the selected pairs grouped by prediction, each group sorted by GT row (ties: input order).

    Returns ``(perm, indptr)``: the pairs of prediction d are ``perm[indptr[d]:indptr[d+1]]`` (pair indices).
    """
    idx = np.flatnonzero(select)
    by_gt, _ = stable_bucket(idx, pair_gt, n_gt)
    return stable_bucket(by_gt, pair_pred, n_pred)


@njit(cache=True)
def truncate_per_group(order_by_image, image_indptr, label, n_categories, max_dets):
    """Keep mask ``(n_pred,)``: the first ``max_dets`` detections of each (image, category) in ``order_by_image``.

    ``order_by_image`` lists evaluated detection rows grouped by image (``image_indptr``), score-sorted within each image.
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
def coco_greedy_match(det_order, indptr, perm, pair_gt, pair_iou, pair_in_prox, det_prox, det_has_gt,
                      gt_ignore_r, det_out_r, thresholds, acc_pos, n_acc, record_range, dt_match, gt_match):
    """Omni3D / COCO greedy matching of every detection at every IoU threshold and range.

    Per (image, category) group the detections are visited in score order (``det_order`` is a global score order;
    groups never interact, so one global walk keeps each group's order). For each range a and threshold t, a
    detection scans the GTs of its group in the sorted order of ``evaluateImg`` (non-ignored first, then ignored,
    each by row), skipping GTs already matched at t, with proximity skipping GTs whose 2D IoU is not above the
    proximity threshold, stopping at the ignored ones once it holds a non-ignored match, and taking any GT whose IoU
    is >= the best so far (start ``min(t, 1 - 1e-10)``; ties go to the later GT). The detection inherits the GT's
    ignore flag. Unmatched detections whose range value is out of range are ignored; with proximity, so are
    detections whose 2D IoU with every GT of their group is <= the threshold, when the group has GT.

    Args:
        det_order: ``(n_det,)`` detection rows to match, in global (-score, image, tie-break) order.
        indptr, perm: CSR of candidate pairs per detection row (``pairs_by_pred``), GT rows ascending.
        pair_gt, pair_iou: ``(P,)`` GT row and IoU of each pair (pairs of the same category only).
        pair_in_prox: ``(P,)`` bool, 2D IoU > proximity threshold.
        det_prox: ``(n_pred,)`` bool, proximity evaluation on for this detection's dataset.
        det_has_gt: ``(n_pred,)`` bool, the detection's (image, category) has at least one GT (ignored included).
        gt_ignore_r: ``(A, n_gt)`` bool, GT ignored for range a (flag or out of range).
        det_out_r: ``(A, n_pred)`` bool, detection range value out of range a.
        thresholds: ``(T,)`` IoU thresholds.
        acc_pos: ``(n_pred,)`` position of each detection in the accumulation order (``n_acc`` positions).
        record_range: range index whose matches go to ``dt_match`` / ``gt_match`` (-1: none).
        dt_match: ``(T, n_pred)`` int64 out (GT row or -1), or an empty ``(T, 0)`` array.
        gt_match: ``(T, n_gt)`` int64 out (detection row or -1), or an empty ``(T, 0)`` array.

    Returns:
        ``state (A, T, n_acc)`` uint8: STATE_FP, STATE_TP or STATE_IGNORED in accumulation order.
    """
    n_ranges = gt_ignore_r.shape[0]
    n_thr = thresholds.shape[0]
    n_gt = gt_ignore_r.shape[1]
    state = np.zeros((n_ranges, n_thr, n_acc), np.uint8)
    matched = np.zeros((n_ranges, n_thr, n_gt), np.bool_)
    start = np.empty(n_thr, np.float64)
    for t in range(n_thr):
        start[t] = min(thresholds[t], 1.0 - 1e-10)
    record = dt_match.shape[1] > 0
    for i in range(det_order.shape[0]):
        d = det_order[i]
        p0 = indptr[d]
        p1 = indptr[d + 1]
        prox = det_prox[d]
        far = False
        if prox and det_has_gt[d]:
            far = True
            for q in range(p0, p1):
                if pair_in_prox[perm[q]]:
                    far = False
                    break
        pos = acc_pos[d]
        for a in range(n_ranges):
            for t in range(n_thr):
                best = start[t]
                m = -1
                # pass 0: non-ignored GTs by row; pass 1: ignored GTs, only if no non-ignored match is held
                for ign_pass in range(2):
                    if ign_pass == 1 and m >= 0:
                        break
                    for q in range(p0, p1):
                        p = perm[q]
                        g = pair_gt[p]
                        if gt_ignore_r[a, g] != (ign_pass == 1):
                            continue
                        if prox and not pair_in_prox[p]:
                            continue
                        if matched[a, t, g]:
                            continue
                        if pair_iou[p] < best:
                            continue
                        best = pair_iou[p]
                        m = g
                if m >= 0:
                    matched[a, t, m] = True
                    state[a, t, pos] = STATE_IGNORED if gt_ignore_r[a, m] else STATE_TP
                    if record and a == record_range:
                        dt_match[t, d] = m
                        gt_match[t, m] = d
                elif det_out_r[a, d] or far:
                    state[a, t, pos] = STATE_IGNORED
                else:
                    state[a, t, pos] = STATE_FP
    return state


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
