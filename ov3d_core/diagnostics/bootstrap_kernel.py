"""The bootstrap's kernel (numba): COCO accumulation under integer image weights over a fixed matching, for one
weight vector (:func:`accumulate_weighted`, full arrays) or many resamples in parallel (:func:`accumulate_resamples`,
means over the recall points). :mod:`ov3d_core.diagnostics.bootstrap` builds the :class:`Streams` and reads the
numbers.

Weighted accumulation over "streams": for each segment s (a category in one range), the detections that are not
neutral there, in accumulation order. Item q: dense image it_img[q]; it_row[q] >= 0 points to its outcomes
st[row] (T,) (and errors err[row] (T, E)); -1 = FP at every threshold (error 1); -2 = neutral at every threshold
but kept because it can be the segment's first detection (error 1); it_tie[q]: same tie block as item q-1 (same
image and score).

An image of weight w stands for w copies of it. The evaluator on the replicated images sees each tie block
repeated w times (copies are distinct images, ordered one after another), so a block of several items is walked
max(w) times with unit increments (zero once a column's copies are used up); a single item adds w at once, which
is exact: between its w copies precision only rises, so the envelope over them is the last copy's value and the
recall points they cover sample it. Several columns (resamples) are walked together, so a TP is an event in all
of them, with zero increment where the image has weight 0: such an event has the recall of the event before it
and no higher precision, so it changes neither the envelope nor which event a recall point samples.

The walk runs backwards (after a forward pass for the totals), so the envelope is a running maximum and each
recall point is assigned when the walk passes the event that first reaches it: no event list is stored. Counts
are integers held in float64, so every cumulative value is the forward evaluator's. The envelope is kept as the
numerator and denominator of its precision, tp / ((fp + tp) + eps), and compared by cross-multiplication (exact
for integer counts below 2**26; the one non-integer denominator, 1 + 2**-52 for a first detection that is a TP,
only ever meets integer ones): the division runs only when a recall point takes the value, on the same operands
as the evaluator's. A recall point r is reached by a cumulative TP count x when x / n_pos >= r, i.e. x >=
tp_min[r], the smallest such integer, found once per segment with the same division.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from ov3d_core.eval import threads
from ov3d_core.eval.matching import STATE_FP, STATE_TP
from ov3d_core.eval.ordering import read_only

__all__ = ["Streams", "accumulate_weighted", "accumulate_resamples"]


class Streams(NamedTuple):
    """The kernels' input: segment items in score order (``seg_ptr (S + 1,)``, CSR pointers over the items; per item
    ``it_img``, ``it_row``, ``it_tie``), the outcome rows ``st (n_rows, T)`` uint8 and errors
    ``err (n_rows, T, E)``, and the positives (``gt_seg``, ``gt_img``: segment and dense image of each)."""

    seg_ptr: np.ndarray
    it_img: np.ndarray
    it_row: np.ndarray
    it_tie: np.ndarray
    st: np.ndarray
    err: np.ndarray
    gt_seg: np.ndarray
    gt_img: np.ndarray

    def full(self, w: np.ndarray, rec_thrs: np.ndarray):
        """:func:`accumulate_weighted` under the integer image weights ``w (n_img,)``."""
        w = np.ascontiguousarray(w, np.int64).astype(np.float64)
        return accumulate_weighted(self.kernel_args(), *read_only(w, _thresholds(rec_thrs)))

    def resampled(self, weights: np.ndarray, rec_thrs: np.ndarray, block: int = 32):
        """:func:`accumulate_resamples` for the rows of ``weights (B, n_img)``."""
        weights = np.ascontiguousarray(weights, np.int32)
        return accumulate_resamples(self.kernel_args(), *read_only(weights, _thresholds(rec_thrs)), int(block))

    def kernel_args(self) -> "Streams":
        """The streams with read-only arrays: whatever the caller holds (a drawn resample matrix is read-only, a
        sliced one writable; thresholds either), the kernels see one variant, the one the warm-up compiles."""
        return Streams(*read_only(*self))


def _thresholds(rec_thrs) -> np.ndarray:
    return np.ascontiguousarray(rec_thrs, np.float64)


class _Walk(NamedTuple):
    """Scratch of one segment walk over a block of C columns: running counts ``tp, fp (T, C)`` and
    ``fp_all (C,)``, the first detection of weight > 0 ``first (C,)``, the increment ``inc (C,)``, the envelope
    ``e_num, e_den (T, C)``, the next recall point ``qp (T, C)`` and the TP count that reaches it ``nxt (T, C)``,
    and ``tp_min (R, C)``."""

    tp: np.ndarray
    fp: np.ndarray
    fp_all: np.ndarray
    first: np.ndarray
    inc: np.ndarray
    e_num: np.ndarray
    e_den: np.ndarray
    qp: np.ndarray
    nxt: np.ndarray
    tp_min: np.ndarray


class _Sampled(NamedTuple):
    """What the walk samples: precision ``p (T, R, ...)``, errors ``e (E, T, R, ...)`` and the final recall
    ``rc (T, ...)``; ``...`` is the columns, or segments and columns in a full result."""

    p: np.ndarray
    e: np.ndarray
    rc: np.ndarray


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
def _weighted_segment(streams, s0, s1, wb, n_pos, rec_thrs, walk, out):
    """Accumulate the items ``s0:s1`` of ``streams`` for a block of columns: image weights ``wb (n_img, C)``
    (float64), weighted positives ``n_pos (C,)`` (columns with 0 give garbage; the caller drops them); ``walk`` is
    the scratch (:class:`_Walk`).

    Writes into ``out`` (:class:`_Sampled`) the sampled precision ``(T, R, C)``, the sampled errors
    ``(E, T, R, C)`` (the error of the detection at each sampled index: the first detection for recall points
    <= 0, 1 where unreached) and the final recall ``(T, C)``."""
    it_img, it_row, it_tie, st, err = streams.it_img, streams.it_row, streams.it_tie, streams.st, streams.err
    tp, fp, fp_all, first, inc, e_num, e_den, qp, nxt, tp_min = walk
    out_p, out_e, out_rc = out
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
def _column_block(streams, wb, rec_thrs, full, mean_p, mean_e):
    """All segments of ``streams`` for one block of columns ``wb (n_img, C)``: full arrays into ``full``
    (:class:`_Sampled`, ``(T, R, S, C)`` etc.) when its precision is non-empty, else means over the recall points
    into ``mean_p (T, S, C)`` / ``mean_e (E, T, S, C)``; segments without weighted positives in a column stay as
    given (NaN)."""
    seg_ptr, st, err, gt_seg, gt_img = streams.seg_ptr, streams.st, streams.err, streams.gt_seg, streams.gt_img
    full_p, full_e, full_rc = full
    n_seg = seg_ptr.shape[0] - 1
    n_thr = st.shape[1]
    n_err = err.shape[2]
    n_rec = rec_thrs.shape[0]
    n_col = wb.shape[1]
    n_pos = np.zeros((n_seg, n_col))
    for g in range(gt_seg.shape[0]):
        for c in range(n_col):
            n_pos[gt_seg[g], c] += wb[gt_img[g], c]
    walk = _Walk(np.zeros((n_thr, n_col)), np.zeros((n_thr, n_col)), np.zeros(n_col), np.zeros(n_col, np.int64),
                 np.zeros(n_col), np.zeros((n_thr, n_col)), np.ones((n_thr, n_col)),
                 np.zeros((n_thr, n_col), np.int64), np.zeros((n_thr, n_col)), np.zeros((n_rec, n_col)))
    out = _Sampled(np.empty((n_thr, n_rec, n_col)), np.empty((n_err, n_thr, n_rec, n_col)), np.empty((n_thr, n_col)))
    out_p, out_e, out_rc = out
    want_full = full_p.shape[0] > 0
    for s in range(n_seg):
        if n_pos[s].max() == 0:
            continue
        _weighted_segment(streams, seg_ptr[s], seg_ptr[s + 1], wb, n_pos[s], rec_thrs, walk, out)
        for c in range(n_col):
            if n_pos[s, c] == 0:
                continue
            for t in range(n_thr):
                if want_full:
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
def accumulate_weighted(streams, w, rec_thrs):
    """COCO accumulation of the segments of ``streams`` (:class:`Streams`) under one vector of integer image
    weights ``w (n_img,)`` (float64).

    ``streams.gt_seg``, ``streams.gt_img``: segment and dense image of each positive (a non-ignored GT, once per
    range it counts in). Returns ``precision (T, R, S)``, ``recall (T, S)`` and ``errors (E, T, R, S)``, NaN for
    segments without weighted positives: with weights 1 the arrays of
    :func:`~ov3d_core.eval.accumulation.accumulate_precision`, with integer weights those of the evaluator run on
    the images replicated that many times (tested)."""
    n_seg = streams.seg_ptr.shape[0] - 1
    n_thr, n_err, n_rec = streams.st.shape[1], streams.err.shape[2], rec_thrs.shape[0]
    wb = np.empty((w.shape[0], 1))
    wb[:, 0] = w
    full = _Sampled(np.full((n_thr, n_rec, n_seg, 1), np.nan), np.full((n_err, n_thr, n_rec, n_seg, 1), np.nan),
                    np.full((n_thr, n_seg, 1), np.nan))
    _column_block(streams, wb, rec_thrs, full, np.empty((0, 0, 0)), np.empty((0, 0, 0, 0)))
    return full.p[..., 0], full.rc[..., 0], full.e[..., 0]


def accumulate_resamples(streams, weights, rec_thrs, block):
    """:func:`accumulate_weighted` for each row of ``weights (B, n_img)`` (int), reduced to means over the recall
    points: ``ap (B, T, S)`` (mean sampled precision) and ``err (B, E, T, S)``; NaN for segments without weighted
    positives in that resample. Resamples are walked ``block`` at a time (one pass over the items for all of them);
    the blocks are cut into contiguous spans run on the kernel threads (``ov3d_core.eval.threads``), each block
    writing its own rows. (A ``prange`` kernel did the same, but compiling its parallel loop cost more than all the
    other bootstrap kernels together: 8 of the warm-up's 40 s.)"""
    n_b = weights.shape[0]
    n_seg = streams.seg_ptr.shape[0] - 1
    n_thr, n_err = streams.st.shape[1], streams.err.shape[2]
    ap = np.full((n_b, n_thr, n_seg), np.nan)
    er = np.full((n_b, n_err, n_thr, n_seg), np.nan)
    n_blocks = -(-n_b // block)
    n_spans = max(1, min(threads.kernel_threads(), n_blocks))

    def span(k0: int, k1: int) -> None:
        for b0 in range(k0 * block, min(k1 * block, n_b), block):
            _resample_block(streams, weights, rec_thrs, b0, min(block, n_b - b0), ap, er)

    threads.run_spans(span, [(n_blocks * t // n_spans, n_blocks * (t + 1) // n_spans) for t in range(n_spans)])
    return ap, er


@njit(cache=True, nogil=True)
def _resample_block(streams, weights, rec_thrs, b0, n_col, ap, er):
    """Resamples ``b0 .. b0 + n_col`` of :func:`accumulate_resamples`: their rows of ``ap`` and ``er`` (in place)."""
    n_img = weights.shape[1]
    n_seg = streams.seg_ptr.shape[0] - 1
    n_thr, n_err = streams.st.shape[1], streams.err.shape[2]
    wb = np.empty((n_img, n_col))
    for c in range(n_col):
        for i in range(n_img):
            wb[i, c] = weights[b0 + c, i]
    mean_p = np.full((n_thr, n_seg, n_col), np.nan)
    mean_e = np.full((n_err, n_thr, n_seg, n_col), np.nan)
    empty = _Sampled(np.empty((0, 0, 0, 0)), np.empty((0, 0, 0, 0, 0)), np.empty((0, 0, 0)))
    _column_block(streams, wb, rec_thrs, empty, mean_p, mean_e)
    for c in range(n_col):
        for t in range(n_thr):
            for s in range(n_seg):
                ap[b0 + c, t, s] = mean_p[t, s, c]
                for e in range(n_err):
                    er[b0 + c, e, t, s] = mean_e[e, t, s, c]
