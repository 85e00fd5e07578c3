"""Matching kernels over the sparse GT x prediction pairs (numba): a pair not listed has IoU 0. No Python loop runs
per image or per pair; the kernels walk flat arrays in a precomputed order (:mod:`ov3d_core.eval.ordering`).

- :func:`candidate_csr`: the pairs that can match, as a CSR by accumulation position.
- :func:`coco_greedy_match`: Omni3D / COCO ``evaluateImg`` greedy matching for all IoU thresholds and ranges (with
  :func:`unmatched_outcome`, the outcome of a detection left unmatched, and :func:`ignore_records`, the
  per-detection records).
- :func:`greedy_one_to_one`: confidence-ordered best-IoU one-to-one matching (class-agnostic recall).

The outcome codes ``STATE_*`` are what the accumulation (:mod:`ov3d_core.eval.accumulation`) and the bootstrap's
weighted accumulation (:mod:`ov3d_core.diagnostics.bootstrap_kernel`) read.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ov3d_core.eval import threads
from ov3d_core.eval.ordering import read_only, span_starts

__all__ = ["STATE_FP", "STATE_TP", "STATE_IGNORED", "unmatched_outcome", "candidate_csr", "coco_greedy_match",
           "ignore_records", "greedy_one_to_one"]

#: Per (detection, range, threshold) outcome codes written by :func:`coco_greedy_match`.
STATE_FP, STATE_TP, STATE_IGNORED = 0, 1, 2


@njit(cache=True, nogil=True)
def unmatched_outcome(value, lo, hi):
    """``(n, A)`` uint8 outcome of each detection when unmatched in range a: ignored if its range value
    ``value[i]`` is out of ``[lo[a], hi[a]]``, else FP (NaN: FP)."""
    n = value.shape[0]
    n_ranges = lo.shape[0]
    out = np.empty((n, n_ranges), np.uint8)
    for i in range(n):
        v = value[i]
        for a in range(n_ranges):
            out[i, a] = STATE_IGNORED if (v < lo[a] or v > hi[a]) else STATE_FP
    return out


def candidate_csr(pair_gt, pair_pred, pair_iou, pair_iou2d, gt_label, pred_label, acc_pos, n_acc, det_prox, t_min,
                  prox_thresh):
    """The pairs that can match, as a CSR keyed by accumulation position with GT rows ascending.

    A pair can match when its detection is kept (``acc_pos[pred] >= 0``), its GT is evaluated and of the
    detection's category, and its IoU is >= ``t_min`` or, under proximity (``pair_iou2d`` given and
    ``det_prox[pred]``), its 2D IoU is above ``prox_thresh``. The pair table must be sorted by GT row (as
    :class:`~ov3d_core.eval.pairs.Pairs` is): then one stable counting pass by position gives GT rows ascending.
    Spans of the pairs are counted and filled on threads, each in its own slots.

    Returns ``(indptr (n_acc + 1,), cand_gt, cand_iou, cand_in_prox, pos_of (P,))``: the candidates of position i
    are ``indptr[i]:indptr[i + 1]``; ``pos_of`` is each pair's position, -1 where it cannot match.
    """
    use_prox = pair_iou2d is not None
    pair_gt, pair_pred, pair_iou, gt_label, pred_label, acc_pos, det_prox = read_only(
        pair_gt, pair_pred, pair_iou, gt_label, pred_label, acc_pos, det_prox)
    iou2d = read_only(pair_iou2d if use_prox else np.zeros(0))
    spans = threads.even_spans(len(pair_gt))
    counts = np.zeros((len(spans), n_acc), np.int64)
    pos_of = np.empty(len(pair_gt), np.int64)
    row = {s: t for t, s in enumerate(spans)}
    threads.run_spans(lambda p0, p1: _candidate_count(pair_gt, pair_pred, pair_iou, iou2d, gt_label, pred_label,
                                                      acc_pos, det_prox, float(t_min), float(prox_thresh), use_prox,
                                                      p0, p1, pos_of, counts[row[p0, p1]]), spans)
    indptr = np.empty(n_acc + 1, np.int64)
    span_starts(counts, indptr)
    n = int(indptr[-1])
    cand_gt, cand_iou, cand_prox = np.empty(n, np.int64), np.empty(n, np.float64), np.empty(n, np.bool_)
    threads.run_spans(lambda p0, p1: _candidate_fill(pos_of, pair_gt, pair_iou, iou2d, float(prox_thresh), use_prox,
                                                     p0, p1, counts[row[p0, p1]], cand_gt, cand_iou, cand_prox), spans)
    return indptr, cand_gt, cand_iou, cand_prox, pos_of


@njit(cache=True, nogil=True)
def _candidate_count(pair_gt, pair_pred, pair_iou, iou2d, gt_label, pred_label, acc_pos, det_prox, t_min,
                     prox_thresh, use_prox, p0, p1, pos_of, counts):
    for p in range(p0, p1):
        pos_of[p] = -1
        d = pair_pred[p]
        i = acc_pos[d]
        if i < 0:
            continue
        lg = gt_label[pair_gt[p]]
        if lg < 0 or lg != pred_label[d]:
            continue
        if pair_iou[p] >= t_min or (use_prox and det_prox[d] and iou2d[p] > prox_thresh):
            pos_of[p] = i
            counts[i] += 1


@njit(cache=True, nogil=True)
def _candidate_fill(pos_of, pair_gt, pair_iou, iou2d, prox_thresh, use_prox, p0, p1, starts, cand_gt, cand_iou,
                    cand_prox):
    for p in range(p0, p1):
        i = pos_of[p]
        if i < 0:
            continue
        j = starts[i]
        starts[i] = j + 1
        cand_gt[j] = pair_gt[p]
        cand_iou[j] = pair_iou[p]
        cand_prox[j] = use_prox and iou2d[p] > prox_thresh


def coco_greedy_match(rows, indptr, cand_gt, cand_iou, cand_in_prox, det_prox, gt_ignore_r, thresholds, unmatched,
                      record_range, cat_ptr=None, record_rows=None, n_pred=0):
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
        record_range: range whose matches are recorded (-1: none).
        cat_ptr: optional ``(K + 1,)`` category segments of the positions: the categories are then matched in
            spans on threads (:mod:`ov3d_core.eval.threads`; a GT belongs to one category, so spans never
            interact and the result is the one-thread result).
        record_rows: ``(n_acc,)`` the prediction row of each position (the accumulation order), needed when
            recording; n_pred: the number of prediction rows.

    Returns:
        ``state (n_rows, A, T)`` uint8 (STATE_FP, STATE_TP or STATE_IGNORED), row ii for position ``rows[ii]``;
        ``dt_match (T, n_pred)`` int32, the GT row each prediction row matched in ``record_range`` or -1, and
        ``gt_match (T, n_gt)`` int64, the prediction row each GT matched or -1 (both ``(T, 0)`` when not
        recording). They are written by prediction row during the walk: an intermediate per-position table would be
        the largest array of a 4M-prediction score.
    """
    n_ranges, n_gt = gt_ignore_r.shape
    n_thr = len(thresholds)
    state = np.empty((len(rows), n_ranges, n_thr), np.uint8)
    recording = record_range >= 0
    dt_match = np.full((n_thr, n_pred if recording else 0), -1, np.int32)  # GT rows below 2**31
    gt_match = np.full((n_thr, n_gt if recording else 0), -1, np.int64)
    ign = np.ascontiguousarray(gt_ignore_r.T)  # (n_gt, A): a GT's flags in one cache line
    record_rows = np.zeros(0, np.int64) if record_rows is None else np.ascontiguousarray(record_rows, np.int64)
    rows, indptr, cand_gt, cand_iou, cand_in_prox, det_prox, ign, thresholds, unmatched, record_rows = read_only(
        rows, indptr, cand_gt, cand_iou, cand_in_prox, det_prox, ign, thresholds, unmatched, record_rows)
    if cat_ptr is None or len(rows) == 0:
        row_spans = [(0, len(rows))]
    else:  # categories split by their candidate pairs, then mapped to the rows (positions) they hold
        row_spans = [tuple(np.searchsorted(rows, cat_ptr[[k0, k1]]).tolist())
                     for k0, k1 in threads.weighted_spans(indptr[cat_ptr])]

    def span(r0, r1):
        _greedy_match_span(rows, indptr, cand_gt, cand_iou, cand_in_prox, det_prox, ign, thresholds, unmatched,
                           record_range, record_rows, r0, r1, state, dt_match, gt_match)

    threads.run_spans(span, row_spans)
    return state, dt_match, gt_match


@njit(cache=True, nogil=True)
def _greedy_match_span(rows, indptr, cand_gt, cand_iou, cand_in_prox, det_prox, ign, thresholds, unmatched,
                       record_range, record_rows, r0, r1, state, dt_match, gt_match):
    """:func:`coco_greedy_match` for the rows ``r0:r1`` (whole categories), written into ``state`` and the match
    records (the predictions and GTs of different categories are different rows)."""
    n_gt, n_ranges = ign.shape
    n_thr = thresholds.shape[0]
    matched = np.zeros((n_gt, n_ranges, n_thr), np.bool_)
    start = np.empty(n_thr, np.float64)
    for t in range(n_thr):
        start[t] = min(thresholds[t], 1.0 - 1e-10)
    width = 1
    for ii in range(r0, r1):
        width = max(width, indptr[rows[ii] + 1] - indptr[rows[ii]])
    cand_g = np.empty(width, np.int64)
    cand_v = np.empty(width, np.float64)
    for ii in range(r0, r1):
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
                        dt_match[t, record_rows[i]] = m
                        gt_match[t, m] = record_rows[i]
                else:
                    state[ii, a, t] = unmatched[i, a]


@njit(cache=True, nogil=True)
def ignore_records(acc_order, rows, state, unmatched, a, n_pred):
    """The per-prediction-row records of range ``a`` that :func:`coco_greedy_match` does not write:
    ``dt_ignore (T, n_pred)`` and ``dt_eval (n_pred,)`` (evaluated, after the ``max_dets`` cut). A detection without
    candidates is ignored where its unmatched outcome is; one with candidates takes its state."""
    n_thr = state.shape[2]
    dt_ignore = np.zeros((n_thr, n_pred), np.bool_)
    dt_eval = np.zeros(n_pred, np.bool_)
    for i in range(acc_order.shape[0]):
        d = acc_order[i]
        dt_eval[d] = True
        if unmatched[i, a] == STATE_IGNORED:
            for t in range(n_thr):
                dt_ignore[t, d] = True
    for ii in range(rows.shape[0]):
        d = acc_order[rows[ii]]
        for t in range(n_thr):
            dt_ignore[t, d] = state[ii, a, t] == STATE_IGNORED
    return dt_ignore, dt_eval


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
