"""COCO accumulation (numba): cumulative TP / FP over the detections in score order, the precision envelope and
its sampling at the recall thresholds, per (category, range, threshold), from the outcomes of
:func:`~ov3d_core.eval.matching.coco_greedy_match`. The bootstrap's weighted form of it lives beside the bootstrap
(:mod:`ov3d_core.diagnostics.bootstrap_kernel`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ov3d_core.eval import threads
from ov3d_core.eval.matching import STATE_FP, STATE_TP
from ov3d_core.eval.ordering import read_only

__all__ = ["accumulate_precision"]


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
    (category, range) has at most npig events. Spans of categories are accumulated on threads
    (:mod:`ov3d_core.eval.threads`); each category's numbers are computed alone, so the result is the one-thread one.
    """
    n_cat = len(cat_indptr) - 1
    precision = np.full((state.shape[2], len(rec_thrs), n_cat, unmatched.shape[1]), np.nan)
    recall = np.full((state.shape[2], n_cat, unmatched.shape[1]), np.nan)
    state, row_of, unmatched, cat_indptr, npig, rec_thrs = read_only(state, row_of, unmatched, cat_indptr, npig,
                                                                      rec_thrs)
    threads.run_spans(lambda k0, k1: _accumulate_span(state, row_of, unmatched, cat_indptr, npig, rec_thrs, k0, k1,
                                                      precision, recall),
                      threads.weighted_spans(cat_indptr))
    return precision, recall


@njit(cache=True, nogil=True)
def _accumulate_span(state, row_of, unmatched, cat_indptr, npig, rec_thrs, k0, k1, precision, recall):
    """:func:`accumulate_precision` for the categories ``k0:k1``, written into ``precision`` and ``recall``."""
    n_ranges = unmatched.shape[1]
    n_thr = state.shape[2]
    n_rec = rec_thrs.shape[0]
    eps = np.spacing(1.0)
    cap = 1
    for k in range(k0, k1):
        for a in range(n_ranges):
            cap = max(cap, npig[k, a])
    ev_rc = np.empty((n_ranges, n_thr, cap))
    ev_pr = np.empty((n_ranges, n_thr, cap))
    ne = np.zeros((n_ranges, n_thr), np.int64)
    tp = np.zeros((n_ranges, n_thr))
    fp = np.zeros((n_ranges, n_thr))
    fp_all = np.zeros(n_ranges)  # FPs of detections without candidates: the same at every threshold
    for k in range(k0, k1):
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
