"""Matching kernels over flat, sorted arrays (numba).

Everything here works on the sparse GT x prediction pairs: a pair not listed has IoU 0. No Python loop runs per
image or per pair; the kernels walk flat arrays in a precomputed order.

- :func:`stable_bucket` / :func:`bucket_rows` / :func:`pairs_by_pred`: O(n) stable counting sorts (CSR layouts).
- :func:`argsort_desc_stable`: O(n) stable descending sort of float scores (LSD radix), Omni3D's mergesort order.
- :func:`truncate_per_group`: COCO's per-(image, category) ``maxDets`` truncation after the score sort.
- :func:`candidate_csr`: the pairs that can match, as a CSR by accumulation position.
- :func:`coco_greedy_match`: Omni3D / COCO ``evaluateImg`` greedy matching for all IoU thresholds and ranges (with
  :func:`ignore_records`, the per-detection records).
- :func:`accumulate_precision`: COCO accumulation (cumulative TP/FP, envelope, recall-threshold sampling).
- :func:`greedy_one_to_one`: confidence-ordered best-IoU one-to-one matching (class-agnostic recall).
- :func:`accumulate_weighted` / :func:`accumulate_resamples`: the same accumulation with integer image weights
  (multiplicities) over a fixed matching, for one weight vector (full arrays) or many in parallel (bootstrap).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ov3d_core.eval.threads import even_spans, run_spans, weighted_spans

__all__ = ["stable_bucket", "bucket_rows", "unmatched_outcome", "candidate_csr", "argsort_desc_stable", "radix_order",
           "descending_keys", "pairs_by_pred", "truncate_per_group", "coco_greedy_match", "ignore_records",
           "accumulate_precision", "greedy_one_to_one", "accumulate_weighted", "accumulate_resamples", "STATE_FP",
           "STATE_TP", "STATE_IGNORED"]

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


def bucket_rows(order: np.ndarray, keys: np.ndarray, n_keys: int, carry: np.ndarray | None = None):
    """:func:`stable_bucket` of the rows of ``order`` whose key ``keys[row]`` is not negative (negative: dropped):
    the same ``(new order, indptr)``. With ``carry`` (float64, one value per position of ``order``), also the carried
    values in the new order.

    Each row's key is read once, in one pass that also counts; the fill then reads sequentially. Both passes run on
    threads over spans of ``order`` (each span fills its own slots, placed by the counts of the spans before it)."""
    order, keys = _read_only(np.ascontiguousarray(order, np.int64), keys)
    values = _read_only(np.zeros(0) if carry is None else np.ascontiguousarray(carry, np.float64))
    spans = even_spans(len(order))
    counts = np.zeros((len(spans), n_keys), np.int64)
    ks = np.empty(len(order), np.int64)
    row = {s: t for t, s in enumerate(spans)}
    run_spans(lambda i0, i1: _bucket_count(order, keys, i0, i1, ks, counts[row[i0, i1]]), spans)
    indptr = np.empty(n_keys + 1, np.int64)
    _span_starts(counts, indptr)  # counts[t] become span t's first slots
    out = np.empty(int(indptr[-1]), np.int64)
    carried = np.empty(len(out) if carry is not None else 0, np.float64)
    run_spans(lambda i0, i1: _bucket_fill(order, ks, values, i0, i1, counts[row[i0, i1]], out, carried), spans)
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
    pair_gt, pair_pred, pair_iou, gt_label, pred_label, acc_pos, det_prox = _read_only(
        pair_gt, pair_pred, pair_iou, gt_label, pred_label, acc_pos, det_prox)
    iou2d = _read_only(pair_iou2d if use_prox else np.zeros(0))
    spans = even_spans(len(pair_gt))
    counts = np.zeros((len(spans), n_acc), np.int64)
    pos_of = np.empty(len(pair_gt), np.int64)
    row = {s: t for t, s in enumerate(spans)}
    run_spans(lambda p0, p1: _candidate_count(pair_gt, pair_pred, pair_iou, iou2d, gt_label, pred_label, acc_pos,
                                              det_prox, float(t_min), float(prox_thresh), use_prox, p0, p1, pos_of,
                                              counts[row[p0, p1]]), spans)
    indptr = np.empty(n_acc + 1, np.int64)
    _span_starts(counts, indptr)
    n = int(indptr[-1])
    cand_gt, cand_iou, cand_prox = np.empty(n, np.int64), np.empty(n, np.float64), np.empty(n, np.bool_)
    run_spans(lambda p0, p1: _candidate_fill(pos_of, pair_gt, pair_iou, iou2d, float(prox_thresh), use_prox, p0, p1,
                                             counts[row[p0, p1]], cand_gt, cand_iou, cand_prox), spans)
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
def _span_starts(counts, indptr):
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
    return _pairs_by_pred(*_read_only(pair_gt, pair_pred, select), n_gt, n_pred)


def _read_only(*arrays: np.ndarray):
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
    rows, indptr, cand_gt, cand_iou, cand_in_prox, det_prox, ign, thresholds, unmatched, record_rows = _read_only(
        rows, indptr, cand_gt, cand_iou, cand_in_prox, det_prox, ign, thresholds, unmatched, record_rows)
    if cat_ptr is None or len(rows) == 0:
        row_spans = [(0, len(rows))]
    else:  # categories split by their candidate pairs, then mapped to the rows (positions) they hold
        row_spans = [tuple(np.searchsorted(rows, cat_ptr[[k0, k1]]).tolist())
                     for k0, k1 in weighted_spans(indptr[cat_ptr])]

    def span(r0, r1):
        _greedy_match_span(rows, indptr, cand_gt, cand_iou, cand_in_prox, det_prox, ign, thresholds, unmatched,
                           record_range, record_rows, r0, r1, state, dt_match, gt_match)

    run_spans(span, row_spans)
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
    state, row_of, unmatched, cat_indptr, npig, rec_thrs = _read_only(state, row_of, unmatched, cat_indptr, npig,
                                                                      rec_thrs)
    run_spans(lambda k0, k1: _accumulate_span(state, row_of, unmatched, cat_indptr, npig, rec_thrs, k0, k1,
                                              precision, recall),
              weighted_spans(cat_indptr))
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


# ---------------------------------------------------------------------------------------------------- weighted
# Weighted accumulation over "streams": for each segment s (a category in one range), the detections that are not
# neutral there, in accumulation order. Item q: dense image it_img[q]; it_row[q] >= 0 points to its outcomes
# st[row] (T,) (and errors err[row] (T, E)); -1 = FP at every threshold (error 1); -2 = neutral at every threshold
# but kept because it can be the segment's first detection (error 1); it_tie[q]: same tie block as item q-1 (same
# image and score).
#
# An image of weight w stands for w copies of it. The evaluator on the replicated images sees each tie block
# repeated w times (copies are distinct images, ordered one after another), so a block of several items is walked
# max(w) times with unit increments (zero once a column's copies are used up); a single item adds w at once, which
# is exact: between its w copies precision only rises, so the envelope over them is the last copy's value and the
# recall points they cover sample it. Several columns (resamples) are walked together, so a TP is an event in all
# of them, with zero increment where the image has weight 0: such an event has the recall of the event before it
# and no higher precision, so it changes neither the envelope nor which event a recall point samples.
#
# The walk runs backwards (after a forward pass for the totals), so the envelope is a running maximum and each
# recall point is assigned when the walk passes the event that first reaches it: no event list is stored. Counts
# are integers held in float64, so every cumulative value is the forward evaluator's. The envelope is kept as the
# numerator and denominator of its precision, tp / ((fp + tp) + eps), and compared by cross-multiplication (exact
# for integer counts below 2**26; the one non-integer denominator, 1 + 2**-52 for a first detection that is a TP,
# only ever meets integer ones): the division runs only when a recall point takes the value, on the same operands
# as the evaluator's. A recall point r is reached by a cumulative TP count x when x / n_pos >= r, i.e. x >=
# tp_min[r], the smallest such integer, found once per segment with the same division.

@njit(cache=True)
def _recall_steps(rec_thrs, n_pos, tp_min):
    """``tp_min (R, C)``: the smallest integer x with ``x / n_pos[c] >= rec_thrs[q]`` (float64 division)."""
    for c in range(n_pos.shape[0]):
        n = max(n_pos[c], 1.0)
        for q in range(rec_thrs.shape[0]):
            x = max(np.ceil(rec_thrs[q] * n), 0.0)
            while x > 0.0 and (x - 1.0) / n >= rec_thrs[q]:
                x -= 1.0
            while x / n < rec_thrs[q]:
                x += 1.0
            tp_min[q, c] = x


@njit(cache=True)
def _weighted_segment(s0, s1, it_img, it_row, it_tie, st, err, wb, n_pos, rec_thrs, tp, fp, fp_all, first, inc,
                      e_num, e_den, qp, nxt, tp_min, out_p, out_e, out_rc):
    """Accumulate segment items ``s0:s1`` for a block of columns: image weights ``wb (n_img, C)`` (float64),
    weighted positives ``n_pos (C,)`` (columns with 0 give garbage; the caller drops them).

    Writes the sampled precision ``out_p (T, R, C)``, the sampled errors ``out_e (E, T, R, C)`` (the error of the
    detection at each sampled index: the first detection for recall points <= 0, 1 where unreached) and the final
    recall ``out_rc (T, C)``."""
    n_thr = st.shape[1]
    n_err = err.shape[2]
    n_rec = rec_thrs.shape[0]
    n_col = wb.shape[1]
    eps = np.spacing(1.0)
    tp[:] = 0.0
    fp[:] = 0.0
    fp_all[:] = 0.0
    first[:] = -3  # row of the first detection of weight > 0 (-3: none); only needed for errors
    n_first = n_col if n_err > 0 else 0
    # forward: totals
    i = s0
    while i < s1:
        j = i + 1
        while j < s1 and it_tie[j]:
            j += 1
        img = it_img[i]
        if n_first > 0:
            for c in range(n_col):
                if first[c] == -3 and wb[img, c] > 0:
                    first[c] = it_row[i]
                    n_first -= 1
        reps = 1
        if j - i > 1:
            for c in range(n_col):
                reps = max(reps, np.int64(wb[img, c]))
        for rep in range(reps):
            for c in range(n_col):
                inc[c] = wb[img, c] if j - i == 1 else (1.0 if rep < wb[img, c] else 0.0)
            for q in range(i, j):
                r = it_row[q]
                if r == -1:
                    for c in range(n_col):
                        fp_all[c] += inc[c]
                elif r >= 0:
                    for t in range(n_thr):
                        s = st[r, t]
                        if s == STATE_TP:
                            for c in range(n_col):
                                tp[t, c] += inc[c]
                        elif s == STATE_FP:
                            for c in range(n_col):
                                fp[t, c] += inc[c]
        i = j
    # recall points beyond the final recall are never reached
    _recall_steps(rec_thrs, n_pos, tp_min)
    for t in range(n_thr):
        for c in range(n_col):
            out_rc[t, c] = tp[t, c] / max(n_pos[c], 1.0)
            e_num[t, c] = 0.0
            e_den[t, c] = 1.0
            q = n_rec - 1
            while q >= 0 and tp[t, c] < tp_min[q, c]:
                out_p[t, q, c] = 0.0
                for e in range(n_err):
                    out_e[e, t, q, c] = 1.0
                q -= 1
            qp[t, c] = q
            nxt[t, c] = tp_min[q, c] if q >= 0 else -1.0
    # backward: running envelope; a TP event assigns the recall points its increment reaches (the points <= 0, left
    # to the end, take the envelope of the first event, which is the final maximum)
    j = s1
    while j > s0:
        i = j - 1
        while i > s0 and it_tie[i]:
            i -= 1
        img = it_img[i]
        reps = 1
        if j - i > 1:
            for c in range(n_col):
                reps = max(reps, np.int64(wb[img, c]))
        for rep in range(reps - 1, -1, -1):
            for c in range(n_col):
                inc[c] = wb[img, c] if j - i == 1 else (1.0 if rep < wb[img, c] else 0.0)
            for q in range(j - 1, i - 1, -1):
                r = it_row[q]
                if r == -1:
                    for c in range(n_col):
                        fp_all[c] -= inc[c]
                elif r >= 0:
                    for t in range(n_thr):
                        s = st[r, t]
                        if s == STATE_FP:
                            for c in range(n_col):
                                fp[t, c] -= inc[c]
                        elif s == STATE_TP:
                            hit = False
                            for c in range(n_col):  # branch-free: envelope and count
                                cur = tp[t, c]
                                den = ((fp[t, c] + fp_all[c]) + cur) + eps
                                upd = cur * e_den[t, c] > e_num[t, c] * den
                                e_num[t, c] = cur if upd else e_num[t, c]
                                e_den[t, c] = den if upd else e_den[t, c]
                                prev = cur - inc[c]
                                tp[t, c] = prev
                                hit |= prev < nxt[t, c]
                            if hit:  # some column passes a recall point
                                for c in range(n_col):
                                    prev = tp[t, c]
                                    if prev < nxt[t, c]:
                                        v = e_num[t, c] / e_den[t, c]
                                        k = qp[t, c]
                                        while k >= 0 and prev < tp_min[k, c]:
                                            out_p[t, k, c] = v
                                            for e in range(n_err):
                                                out_e[e, t, k, c] = err[r, t, e]
                                            k -= 1
                                        qp[t, c] = k
                                        nxt[t, c] = tp_min[k, c] if k >= 0 else -1.0
        j = i
    for t in range(n_thr):
        for c in range(n_col):
            v = e_num[t, c] / e_den[t, c]  # 0 without a TP
            for k in range(qp[t, c] + 1):  # points <= 0
                out_p[t, k, c] = v
            if n_err > 0:  # points <= 0 sample the first detection
                r = first[c]
                for k in range(n_rec):
                    if rec_thrs[k] > 0.0:
                        break
                    for e in range(n_err):
                        out_e[e, t, k, c] = err[r, t, e] if r >= 0 else 1.0


@njit(cache=True)
def _column_block(seg_ptr, it_img, it_row, it_tie, st, err, gt_seg, gt_img, wb, rec_thrs, full_p, full_e, full_rc,
                  mean_p, mean_e):
    """All segments for one block of columns ``wb (n_img, C)``: full arrays ``(T, R, S, C)`` etc. when ``full_p``
    is non-empty, else means over the recall points into ``mean_p (T, S, C)`` / ``mean_e (E, T, S, C)``; segments
    without weighted positives in a column stay as given (NaN)."""
    n_seg = seg_ptr.shape[0] - 1
    n_thr = st.shape[1]
    n_err = err.shape[2]
    n_rec = rec_thrs.shape[0]
    n_col = wb.shape[1]
    n_pos = np.zeros((n_seg, n_col))
    for g in range(gt_seg.shape[0]):
        for c in range(n_col):
            n_pos[gt_seg[g], c] += wb[gt_img[g], c]
    tp, fp, fp_all = np.zeros((n_thr, n_col)), np.zeros((n_thr, n_col)), np.zeros(n_col)
    first, inc = np.zeros(n_col, np.int64), np.zeros(n_col)
    e_num, e_den, qp = np.zeros((n_thr, n_col)), np.ones((n_thr, n_col)), np.zeros((n_thr, n_col), np.int64)
    nxt = np.zeros((n_thr, n_col))
    tp_min = np.zeros((n_rec, n_col))
    out_p, out_e = np.empty((n_thr, n_rec, n_col)), np.empty((n_err, n_thr, n_rec, n_col))
    out_rc = np.empty((n_thr, n_col))
    full = full_p.shape[0] > 0
    for s in range(n_seg):
        if n_pos[s].max() == 0:
            continue
        _weighted_segment(seg_ptr[s], seg_ptr[s + 1], it_img, it_row, it_tie, st, err, wb, n_pos[s], rec_thrs, tp,
                          fp, fp_all, first, inc, e_num, e_den, qp, nxt, tp_min, out_p, out_e, out_rc)
        for c in range(n_col):
            if n_pos[s, c] == 0:
                continue
            for t in range(n_thr):
                if full:
                    full_rc[t, s, c] = out_rc[t, c]
                    for q in range(n_rec):
                        full_p[t, q, s, c] = out_p[t, q, c]
                        for e in range(n_err):
                            full_e[e, t, q, s, c] = out_e[e, t, q, c]
                else:
                    acc = 0.0
                    for q in range(n_rec):
                        acc += out_p[t, q, c]
                    mean_p[t, s, c] = acc / n_rec
                    for e in range(n_err):
                        acc = 0.0
                        for q in range(n_rec):
                            acc += out_e[e, t, q, c]
                        mean_e[e, t, s, c] = acc / n_rec


@njit(cache=True)
def accumulate_weighted(seg_ptr, it_img, it_row, it_tie, st, err, gt_seg, gt_img, w, rec_thrs):
    """COCO accumulation of the stream segments under one vector of integer image weights ``w (n_img,)``.

    ``gt_seg``, ``gt_img``: segment and dense image of each positive (a non-ignored GT, once per range it counts
    in). Returns ``precision (T, R, S)``, ``recall (T, S)`` and ``errors (E, T, R, S)``, NaN for segments without
    weighted positives: with weights 1 the arrays of :func:`accumulate_precision`, with integer weights those of
    the evaluator run on the images replicated that many times (tested)."""
    n_seg = seg_ptr.shape[0] - 1
    n_thr, n_err, n_rec = st.shape[1], err.shape[2], rec_thrs.shape[0]
    wb = np.empty((w.shape[0], 1))
    wb[:, 0] = w
    full_p = np.full((n_thr, n_rec, n_seg, 1), np.nan)
    full_e = np.full((n_err, n_thr, n_rec, n_seg, 1), np.nan)
    full_rc = np.full((n_thr, n_seg, 1), np.nan)
    _column_block(seg_ptr, it_img, it_row, it_tie, st, err, gt_seg, gt_img, wb, rec_thrs, full_p, full_e, full_rc,
                  np.empty((0, 0, 0)), np.empty((0, 0, 0, 0)))
    return full_p[..., 0], full_rc[..., 0], full_e[..., 0]


@njit(cache=True, parallel=True)
def accumulate_resamples(seg_ptr, it_img, it_row, it_tie, st, err, gt_seg, gt_img, weights, rec_thrs, block):
    """:func:`accumulate_weighted` for each row of ``weights (B, n_img)`` (int), reduced to means over the recall
    points: ``ap (B, T, S)`` (mean sampled precision) and ``err (B, E, T, S)``; NaN for segments without weighted
    positives in that resample. Resamples are walked ``block`` at a time (one pass over the items for all of them),
    blocks in parallel."""
    n_b, n_img = weights.shape
    n_seg = seg_ptr.shape[0] - 1
    n_thr, n_err = st.shape[1], err.shape[2]
    ap = np.full((n_b, n_thr, n_seg), np.nan)
    er = np.full((n_b, n_err, n_thr, n_seg), np.nan)
    n_blocks = (n_b + block - 1) // block
    for bi in prange(n_blocks):
        b0 = bi * block
        n_col = min(block, n_b - b0)
        wb = np.empty((n_img, n_col))
        for c in range(n_col):
            for i in range(n_img):
                wb[i, c] = weights[b0 + c, i]
        mean_p = np.full((n_thr, n_seg, n_col), np.nan)
        mean_e = np.full((n_err, n_thr, n_seg, n_col), np.nan)
        _column_block(seg_ptr, it_img, it_row, it_tie, st, err, gt_seg, gt_img, wb, rec_thrs,
                      np.empty((0, 0, 0, 0)), np.empty((0, 0, 0, 0, 0)), np.empty((0, 0, 0)), mean_p, mean_e)
        for c in range(n_col):
            ap[b0 + c] = mean_p[:, :, c]
            er[b0 + c] = mean_e[:, :, :, c]
    return ap, er
