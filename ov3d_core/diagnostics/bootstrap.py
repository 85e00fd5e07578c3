"""Is the difference real? Image-bootstrap confidence intervals and paired tests for the headline numbers.

**Unit.** The image: boxes of one image are not independent (one detector pass, shared depth error, one scene), so
a resample draws the dataset's images with replacement. :class:`ImageResamples` holds ``B`` resamples as a matrix
of image multiplicities ``(B, n_images)`` (optionally drawn within strata, e.g. per dataset of a pooled row), drawn
once from a seed; every run scored on those images reuses the same matrix, which is what makes a comparison paired.

**Re-scoring.** Matching (Omni3D greedy per image and category, class-agnostic recall, ODS centre-distance
matching) is per image, so it does not change under resampling: an image drawn w times is w identical copies.
The accumulation then only needs weights: cumulative TP / FP over the fixed global score order with each detection
counted w times, and positives counted w times (:func:`ov3d_core.diagnostics.bootstrap_kernel.accumulate_weighted`;
with integer weights it equals the evaluator run on the physically replicated images, to the last bit, tested). All
resamples run in one numba kernel, parallel over resamples
(:func:`ov3d_core.diagnostics.bootstrap_kernel.accumulate_resamples`).

**Numbers.** AP3D, AP3D@15/25/50, AP3D-N/M/F (``params.summary_spec``), per-category AP3D, class-agnostic
recall3D@15 (weighted matched / weighted GT) and, on request, ODS / ODS_canonical (3D-MOOD / WildDet3D). A number
undefined in a resample (a category without GT in it) is left out of that number's interval (``n_valid`` says how
many resamples defined it).

**Intervals.** ``method="bca"`` (default): Efron's bias-corrected and accelerated percentiles, the bias from the
share of resamples below the observed value, the acceleration from a grouped delete-d jackknife
(``jackknife_groups`` random groups of images, default 100). ``method="percentile"``: the ``(1 - level) / 2`` and
``(1 + level) / 2`` quantiles of the resampled values. Why BCa: AP is biased upwards in small samples (precision
is read just after each TP, and the envelope is a running maximum of a noisy curve), and the resampled APs sit
higher still, so percentile intervals lie too high. On synthetic data with a known AP (the AP of a 100,000-image
draw; 95 % intervals, 400-1,000 datasets; the generator of ``tests/diagnostics/test_bootstrap.py``, which keeps
the second row as a test, and for the 2-class rows a variant with a 65/35 class split and 15 % wrong labels):

    datasets of                                          percentile    BCa
    300 images, 1 class (~800 GT), AP@25                     94.4 %    94.5 %
    200 images, 1 class (~630 GT), AP@25 (the test, 2,000)   94.2 %    93.8 %
    300 images, 1 class, AP3D (10 thresholds)                94.0 %    94.3 %
    500 images, 2 classes (~1,000 and ~500 GT), AP3D         90.0 %    94.5 %
    50-200 images, 2 classes (~100-400 GT), AP3D            86-91 %   91-93 %

With a few hundred GT per class or fewer both undercover (the bootstrap sees about half of the small-sample bias);
BCa matches percentile within noise where percentile is right and is much closer where the bias is large, hence
the default. Read intervals of rare classes and of AP3D@50 on small sets as optimistic.

**Paired comparisons** (:func:`paired_comparison`): the difference A - B is computed in every resample (same image
multiset for both), its interval is taken by ``method`` (default "percentile": the small-sample bias of AP is
nearly the same in both runs and cancels in the difference, and BCa's estimated bias and acceleration only add
noise: false-positive rate 6.1-6.6 % percentile vs 5.5-7.3 % BCa over 1,000 null pairs, several seeds), and the
two-sided p-value is the inversion of that interval: the smallest ``1 - level`` whose interval excludes 0 (the
quantile level where the resampled differences cross 0, ``p = 2 min(u, 1 - u)`` for percentile intervals), never
below ``1 / (B + 1)``. So "significant" and "the interval excludes 0" agree. A bootstrap test, not a permutation
test: a permutation (swapping the two runs' detections image by image) tests exchangeability of the two runs, i.e.
identical error distributions, which two different detectors with equal AP do not satisfy; the bootstrap tests
equal AP and gives the interval that the tables show. It is slightly liberal on small sets (about 6 % at the 5 %
level with 100-300 images). Per-category differences are corrected for multiple comparisons with Holm's step-down
method (family-wise error, valid under any dependence between categories, which share images) by default, or
Benjamini-Hochberg (``correction="bh"``, false discovery rate).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats

from ov3d_core.diagnostics.bootstrap_kernel import Streams
from ov3d_core.diagnostics.distance import _detection_order, evaluate_distance_view
from ov3d_core.eval.ap import APInputs, APParams, FixedMatching, fixed_matching
from ov3d_core.eval.labels import _readonly, gt_codes
from ov3d_core.eval.matching import STATE_FP, STATE_IGNORED, STATE_TP
from ov3d_core.eval.ordering import stable_bucket

__all__ = ["ImageResamples", "BootstrapResult", "PairedComparison", "weighted_ap", "bootstrap_matching",
           "bootstrap_recall", "bootstrap_ods", "weighted_ods", "bootstrap_score", "paired_comparison", "leaderboard",
           "percentile_interval", "bca_interval", "holm", "benjamini_hochberg", "METHODS", "CORRECTIONS"]

METHODS = ("percentile", "bca")
CORRECTIONS = ("holm", "bh", "none")


# ---------------------------------------------------------------------------------------------------- resamples
@dataclass(frozen=True, eq=False)
class ImageResamples:
    """``B`` bootstrap resamples of a set of images, as multiplicities.

    Attributes:
        image_keys: ``(n,)`` the images (ids), ascending, unique.
        weights: ``(B, n)`` int32; ``weights[b, i]`` = how often image i is drawn in resample b (each row sums to
            n, or to each stratum's size within it).
        jackknife: ``(G, n)`` int32 grouped delete-d jackknife weights (1, and 0 on group g), for BCa.
        seed: the seed they were drawn from.
        strata: ``(n,)`` int64 stratum of each image, or None.
    """

    image_keys: np.ndarray
    weights: np.ndarray
    jackknife: np.ndarray
    seed: int
    strata: np.ndarray | None = None

    @classmethod
    def draw(cls, image_keys, n_resamples: int = 1000, seed: int = 0, *, strata=None,
             jackknife_groups: int = 100) -> "ImageResamples":
        """Draw ``n_resamples`` resamples of ``image_keys`` (e.g. ``Dataset.images["image_id"]``: all images,
        including those without GT or predictions) with replacement, within ``strata`` when given."""
        keys = np.asarray(image_keys).reshape(-1)
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        if len(keys) == 0 or np.any(keys[1:] == keys[:-1]):
            raise ValueError(f"ImageResamples.draw: expected unique image keys, got {len(keys)} with duplicates"
                             if len(keys) else "ImageResamples.draw: expected at least one image")
        B, n = int(n_resamples), len(keys)
        if B < 1:
            raise ValueError(f"ImageResamples.draw: expected n_resamples >= 1, got {n_resamples}")
        rng = np.random.default_rng(seed)
        st = None
        if strata is not None:
            st = np.asarray(strata).reshape(-1)
            if len(st) != n:
                raise ValueError(f"ImageResamples.draw: expected strata of length {n}, got {len(st)}")
            st = np.unique(st[order], return_inverse=True)[1].astype(np.int64).reshape(-1)
        # each stratum (one by default) is drawn with replacement from its own images: draw i of a resample picks
        # among the images of image i's stratum, so every stratum keeps its size
        s_of = np.zeros(n, np.int64) if st is None else st
        members = np.argsort(s_of, kind="stable")
        size = np.bincount(s_of)
        start = np.r_[0, np.cumsum(size)[:-1]]
        weights = np.zeros((B, n), np.int32)
        chunk = max(1, (1 << 22) // n)  # rows per bincount, to keep the temporaries small
        for b0 in range(0, B, chunk):
            nb = min(chunk, B - b0)
            pick = members[start[s_of][None, :] + rng.integers(0, size[s_of][None, :], (nb, n))]
            pick += np.arange(nb, dtype=np.int64)[:, None] * n
            weights[b0:b0 + nb] = np.bincount(pick.ravel(), minlength=nb * n).reshape(nb, n)
        G = max(2, min(int(jackknife_groups), n))
        group_of = rng.permutation(n) % G
        jack = np.ones((G, n), np.int32)
        jack[group_of, np.arange(n)] = 0
        return cls(image_keys=_readonly(keys), weights=_readonly(weights), jackknife=_readonly(jack), seed=int(seed),
                   strata=None if st is None else _readonly(st))

    @property
    def n_resamples(self) -> int:
        return self.weights.shape[0]

    @property
    def n_images(self) -> int:
        return len(self.image_keys)

    def index_of(self, keys) -> np.ndarray:
        """Positions of image ``keys`` among ``image_keys``; ValueError naming the first unknown one."""
        keys = np.asarray(keys).reshape(-1)
        pos = np.clip(np.searchsorted(self.image_keys, keys), 0, self.n_images - 1)
        bad = self.image_keys[pos] != keys
        if bad.any():
            raise ValueError(f"ImageResamples: image {keys[bad][0].tolist()!r} is not among the {self.n_images} "
                             "resampled images (draw them from the dataset's image list)")
        return pos.astype(np.int64)

    def same_as(self, other: "ImageResamples") -> bool:
        """Same images and the same multiplicities (a paired comparison needs this)."""
        return other is self or (np.array_equal(self.image_keys, other.image_keys)
                                 and np.array_equal(self.weights, other.weights)
                                 and np.array_equal(self.jackknife, other.jackknife))


# ---------------------------------------------------------------------------------------------------- streams
def _tie_flags(seg: np.ndarray, img: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Item q continues the tie block of item q-1: same segment, image and score."""
    tie = np.zeros(len(seg), bool)
    if len(seg) > 1:
        tie[1:] = (seg[1:] == seg[:-1]) & (img[1:] == img[:-1]) & (score[1:] == score[:-1])
    return tie


def _streams(seg, img, score, outcome, err, n_seg, gt_seg, gt_img, keep_neutral: bool) -> Streams:
    """Streams from candidate items in score order (segment, dense image, score) with outcomes ``(n, T)`` and
    errors ``(n, T, E)``.

    Items neutral at every threshold are dropped (``keep_neutral``: kept as -2, for the first-detection error);
    items FP at every threshold and without errors become -1; the others keep an outcome row."""
    # a row is needed wherever some threshold has a real error (a match, even to an ignored GT)
    real = (err != 1.0).any(axis=(1, 2)) if err.shape[2] else np.zeros(len(seg), bool)
    short_fp = (outcome == STATE_FP).all(axis=1) & ~real
    short_ign = (outcome == STATE_IGNORED).all(axis=1) & ~real
    idx = np.flatnonzero(~short_ign) if not keep_neutral else np.arange(len(seg), dtype=np.int64)
    idx, _ = stable_bucket(idx, seg, max(n_seg, 1))  # items come in score order; keep it within each segment
    row = np.full(len(idx), -1, np.int64)
    row[short_ign[idx]] = -2
    needs = ~(short_fp[idx] | short_ign[idx])
    row[needs] = np.arange(int(needs.sum()))
    st = np.ascontiguousarray(outcome[idx[needs]], np.uint8)
    er = np.ascontiguousarray(err[idx[needs]])
    seg_i = seg[idx]
    seg_ptr = np.zeros(n_seg + 1, np.int64)
    np.cumsum(np.bincount(seg_i, minlength=n_seg)[:n_seg], out=seg_ptr[1:])
    return Streams(seg_ptr=seg_ptr, it_img=np.ascontiguousarray(img[idx], np.int64), it_row=row,
                   it_tie=_tie_flags(seg_i, img[idx], score[idx]), st=st, err=er,
                   gt_seg=np.ascontiguousarray(gt_seg, np.int64), gt_img=np.ascontiguousarray(gt_img, np.int64))


def _ap_streams(fm: FixedMatching) -> Streams:
    """One segment per (category, range): s = k * A + a."""
    A, T = fm.gt_ignore_r.shape[0], len(fm.params.iou_thresholds)
    n_acc = len(fm.acc_order)
    outcome = np.repeat(fm.unmatched[:, :, None], T, axis=2)  # (n_acc, A, T)
    has = fm.row_of >= 0
    outcome[has] = fm.state[fm.row_of[has]]
    cat = fm.pred_label[fm.acc_order]
    rng = np.tile(np.arange(A, dtype=np.int64), n_acc)
    seg = np.repeat(cat, A) * A + rng
    img = np.repeat(fm.pred_image[fm.acc_order], A)
    score = np.repeat(fm.pred_score[fm.acc_order], A)
    gvalid = fm.gt_label >= 0
    gt_seg, gt_img = [], []
    for a in range(A):
        g = np.flatnonzero(gvalid & ~fm.gt_ignore_r[a])
        gt_seg.append(fm.gt_label[g] * A + a)
        gt_img.append(fm.gt_image[g])
    return _streams(seg, img, score, outcome.reshape(n_acc * A, T), np.zeros((n_acc * A, T, 0)),
                    fm.n_categories * A, np.concatenate(gt_seg), np.concatenate(gt_img), False)


def weighted_ap(fm: FixedMatching, image_weights) -> tuple[np.ndarray, np.ndarray]:
    """Precision ``(T, R, K, A)`` and recall ``(T, K, A)`` of a fixed matching with integer image weights
    ``(n_img,)`` (dense image order, ``fm.image_keys``): what :func:`~ov3d_core.eval.ap.evaluate_ap` gives on the
    images replicated that many times (weight 0 drops the image)."""
    w = np.asarray(image_weights)
    if w.shape != (fm.n_images,) or (len(w) and (not np.issubdtype(w.dtype, np.integer) or w.min() < 0)):
        raise ValueError(f"weighted_ap: expected ({fm.n_images},) non-negative integer weights, got {w.dtype} "
                         f"{w.shape}")
    s = _ap_streams(fm)
    p, r, _ = s.full(w, fm.params.recall_thresholds)
    T, R, K, A = p.shape[0], p.shape[1], fm.n_categories, fm.gt_ignore_r.shape[0]
    return p.reshape(T, R, K, A), r.reshape(T, K, A)


# ---------------------------------------------------------------------------------------------------- statistics
def _nanmean(a: np.ndarray, axis) -> np.ndarray:
    """Mean over ``axis`` of the finite entries, NaN where there is none (no warning)."""
    ok = np.isfinite(a)
    n = ok.sum(axis=axis)
    s = np.where(ok, a, 0.0).sum(axis=axis)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(n > 0, s / np.maximum(n, 1), np.nan)


def _ap_summary(ap_tka: np.ndarray, params: APParams) -> tuple[list[str], np.ndarray]:
    """Summary numbers (percent) from mean-over-recall AP ``(..., T, K, A)``: Omni3D's mean over the non-NaN
    (threshold, category) entries of the slice."""
    thr = params.iou_thresholds
    names, cols = [], []
    for key, iou, rng in params.summary_spec:
        a = params.range_names.index(rng)
        t = np.arange(len(thr)) if iou is None else np.flatnonzero(np.isclose(iou, thr))
        sl = np.take(ap_tka[..., a], t, axis=-2)  # (..., T', K)
        cols.append(100.0 * _nanmean(sl.reshape(*sl.shape[:-2], -1), axis=-1))
        names.append(key)
    return names, np.stack(cols, axis=-1)


def _per_category(ap_tka: np.ndarray, params: APParams) -> np.ndarray:
    a = params.range_names.index("all") if "all" in params.range_names else 0
    return 100.0 * _nanmean(ap_tka[..., :, :, a], axis=-2)


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """Bootstrap distributions of one scored view (a run on a dataset under a protocol / template / threshold).

    Attributes:
        metrics: names of the headline numbers (e.g. AP3D, AP3D@15, ..., recall3D@15, ODS).
        observed: ``(M,)`` the numbers on the original images.
        samples: ``(B, M)`` the numbers in each resample (NaN where undefined).
        jackknife: ``(G, M)`` the numbers with each jackknife group left out (BCa acceleration).
        categories: the category names of the per-category numbers.
        category_observed, category_samples, category_jackknife: the same for per-category AP3D ``(K,)``,
            ``(B, K)``, ``(G, K)``.
        resamples: the :class:`ImageResamples` used.
        level, method: the defaults of :meth:`to_frame` (0.95, "bca").
    """

    metrics: tuple[str, ...]
    observed: np.ndarray
    samples: np.ndarray
    jackknife: np.ndarray
    categories: tuple[str, ...]
    category_observed: np.ndarray
    category_samples: np.ndarray
    category_jackknife: np.ndarray
    resamples: ImageResamples
    level: float = 0.95
    method: str = "bca"

    def __post_init__(self):
        for name in ("observed", "samples", "jackknife", "category_observed", "category_samples",
                     "category_jackknife"):
            _readonly(np.asarray(getattr(self, name)))

    def _col(self, metric: str) -> int:
        if metric not in self.metrics:
            raise ValueError(f"metric: expected one of {list(self.metrics)}, got {metric!r}")
        return self.metrics.index(metric)

    def value(self, metric: str) -> float:
        return float(self.observed[self._col(metric)])

    def interval(self, metric: str, level: float | None = None, method: str | None = None) -> tuple[float, float]:
        """(lo, hi) of one headline number."""
        j = self._col(metric)
        lo, hi = _interval(self.samples[:, j:j + 1], self.observed[j:j + 1], self.jackknife[:, j:j + 1],
                           self.level if level is None else level, method or self.method)
        return float(lo[0]), float(hi[0])

    def to_frame(self, level: float | None = None, method: str | None = None) -> pd.DataFrame:
        """One row per headline number: ``metric, value, lo, hi, se`` (sd of the resampled values), ``n_valid``
        (resamples where it is defined), ``level, method``."""
        return _frame("metric", self.metrics, self.observed, self.samples, self.jackknife,
                      self.level if level is None else level, method or self.method)

    def per_category_frame(self, level: float | None = None, method: str | None = None) -> pd.DataFrame:
        """One row per category: ``category, value`` (AP3D, percent), ``lo, hi, se, n_valid, level, method``."""
        return _frame("category", self.categories, self.category_observed, self.category_samples,
                      self.category_jackknife, self.level if level is None else level, method or self.method)

    def join(self, other: "BootstrapResult") -> "BootstrapResult":
        """The headline numbers of both (same resamples); per-category numbers of ``self`` unless it has none."""
        if not self.resamples.same_as(other.resamples):
            raise ValueError("BootstrapResult.join: expected results over the same image resamples")
        cat = self if len(self.categories) or not len(other.categories) else other
        return BootstrapResult(self.metrics + other.metrics, np.r_[self.observed, other.observed],
                               np.c_[self.samples, other.samples], np.c_[self.jackknife, other.jackknife],
                               cat.categories, cat.category_observed, cat.category_samples, cat.category_jackknife,
                               self.resamples, self.level, self.method)


def _no_categories(resamples: ImageResamples):
    B, G = resamples.n_resamples, resamples.jackknife.shape[0]
    return (), np.zeros(0), np.zeros((B, 0)), np.zeros((G, 0))


def _matching_weights(fm_keys: np.ndarray, resamples: ImageResamples):
    """Resample and jackknife weights restricted to the matching's images (dense order) and all-ones."""
    idx = resamples.index_of(fm_keys)
    return (np.ones(len(idx), np.int32), np.ascontiguousarray(resamples.weights[:, idx]),
            np.ascontiguousarray(resamples.jackknife[:, idx]))


def bootstrap_matching(fm: FixedMatching, resamples: ImageResamples, *, vocabulary=None) -> BootstrapResult:
    """Bootstrap of the AP summary (``fm.params.summary_spec``) and per-category AP3D of a fixed matching.

    ``fm`` from :func:`~ov3d_core.eval.ap.fixed_matching`; its images must be among ``resamples.image_keys``."""
    one, W, J = _matching_weights(fm.image_keys, resamples)
    s = _ap_streams(fm)
    rec = fm.params.recall_thresholds
    K, A, T = fm.n_categories, fm.gt_ignore_r.shape[0], len(fm.params.iou_thresholds)

    def run(weights):
        ap, _ = s.resampled(weights, rec)
        return ap.reshape(len(weights), T, K, A)

    obs, boot, jack = run(one[None, :]), run(W), run(J)
    names, values = _ap_summary(np.concatenate([obs, boot, jack]), fm.params)
    cats = _per_category(np.concatenate([obs, boot, jack]), fm.params)
    B = len(W)
    vocab = tuple(vocabulary) if vocabulary is not None else tuple(str(k) for k in range(K))
    return BootstrapResult(tuple(names), values[0], values[1:B + 1], values[B + 1:], vocab, cats[0], cats[1:B + 1],
                           cats[B + 1:], resamples)


def bootstrap_recall(recall, gt_image, resamples: ImageResamples, *, name: str | None = None) -> BootstrapResult:
    """Bootstrap of class-agnostic recall (a ``RecallResult``; its matching is per image): weighted matched over
    weighted non-ignored GT. ``gt_image``: ``(n_gt,)`` image ids of the GT rows. The number is a fraction, as
    ``RunScore.summary`` reports it."""
    gt_image = np.asarray(gt_image).reshape(-1)
    if len(gt_image) != len(recall.matched_pred):
        raise ValueError(f"bootstrap_recall: expected {len(recall.matched_pred)} GT image ids, got {len(gt_image)}")
    idx = resamples.index_of(gt_image)
    pos = ~np.asarray(recall.gt_ignore, bool)
    n = np.bincount(idx[pos], minlength=resamples.n_images).astype(np.float64)
    m = np.bincount(idx[pos & recall.gt_matched], minlength=resamples.n_images).astype(np.float64)

    def ratio(W):
        num, den = W @ m, W @ n
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)[:, None]

    key = name or f"recall3D@{round(recall.iou_threshold * 100)}"
    W = resamples.weights.astype(np.float64)
    J = resamples.jackknife.astype(np.float64)
    return BootstrapResult((key,), np.array([recall.recall]), ratio(W), ratio(J), *_no_categories(resamples),
                           resamples)


_ODS_ERRORS = ("ATE", "AOE", "ASE", "AOE_sym", "AOE_canonical")


def _ods_streams(gt, pred, view, result, gt_label, gt_ignore):
    """Streams of a 3D-MOOD centre-distance evaluation (one segment per class) and the dense image keys."""
    p = result.params
    keys = np.unique(np.concatenate([gt.image_id, pred.image_id]))
    gi, pi = np.searchsorted(keys, gt.image_id), np.searchsorted(keys, pred.image_id)
    label = view.codes
    K = view.n_categories
    order = _detection_order(pi, label, view.score, p.max_dets, label >= 0)
    order, ptr = stable_bucket(order.astype(np.int64), label, max(K, 1))
    order = order[:ptr[K]] if K else order[:0]
    lab = label[order]
    matched = result.dt_match[:, order] >= 0
    ign = result.dt_ignore[:, order]
    outcome = np.where(ign, STATE_IGNORED, np.where(matched, STATE_TP, STATE_FP)).T.astype(np.uint8)
    err = np.stack([result.dt_errors[n][:, order] for n in _ODS_ERRORS], axis=-1).transpose(1, 0, 2)  # (n, T, E)
    lo, hi = p.depth_range
    gz = gt.center[:, 2]
    g = np.flatnonzero((gt_label >= 0) & ~(gt_ignore | (gz < lo) | (gz > hi)))
    s = _streams(lab, pi[order], view.score[order], outcome, np.ascontiguousarray(err), K,
                 gt_label[g], gi[g], True)
    return s, keys


def _ods_numbers(ap_tk: np.ndarray, err_etk: np.ndarray) -> np.ndarray:
    """(..., 2): ODS and ODS_canonical (percent) from mean-over-recall precision (..., T, K) and errors
    (..., E, T, K)."""
    def m(a):
        return _nanmean(a.reshape(*a.shape[:-2], -1), axis=-1)

    ap = m(ap_tk)
    e = {n: m(err_etk[..., i, :, :]) for i, n in enumerate(_ODS_ERRORS)}
    ods = (3 * ap + (1 - e["ATE"]) + (1 - e["AOE"]) + (1 - e["ASE"])) / 6
    canon = (3 * ap + (1 - e["ATE"]) + (1 - e["AOE_canonical"]) + (1 - e["ASE"])) / 6
    return 100.0 * np.stack([ods, canon], axis=-1)


def _distance_eval(gt, pred, view, params, gt_label, gt_ignore):
    gl = gt_codes(gt.category, view.vocabulary) if gt_label is None else np.asarray(gt_label, np.int64)
    gi = np.asarray(gt.ignore if gt_ignore is None else gt_ignore, bool)
    res = evaluate_distance_view(gt, pred, view, params=params, gt_label=gl, gt_ignore=gi)
    s, keys = _ods_streams(gt, pred, view, res, gl, gi)
    return res, s, keys


def weighted_ods(gt, pred, view, image_weights, *, params=None, gt_label=None,
                 gt_ignore=None) -> tuple[np.ndarray, dict]:
    """Precision ``(T, R, K)`` and sampled TP errors (name -> ``(T, R, K)``) of the 3D-MOOD centre-distance
    evaluation with integer weights per image (``image_weights (n_img,)`` over the sorted unique image ids of GT
    and predictions): what :func:`~ov3d_core.diagnostics.distance.center_distance_eval` gives on the images
    replicated that many times."""
    res, s, keys = _distance_eval(gt, pred, view, params, gt_label, gt_ignore)
    w = np.asarray(image_weights)
    if w.shape != (len(keys),) or (len(w) and (not np.issubdtype(w.dtype, np.integer) or w.min() < 0)):
        raise ValueError(f"weighted_ods: expected ({len(keys)},) non-negative integer weights, got {w.dtype} "
                         f"{w.shape}")
    p, _, e = s.full(w, np.asarray(res.params.recall_thresholds, np.float64))
    return p, {n: e[i] for i, n in enumerate(_ODS_ERRORS)}


def bootstrap_ods(gt, pred, view, resamples: ImageResamples, *, params=None, gt_label=None,
                  gt_ignore=None) -> BootstrapResult:
    """Bootstrap of ODS and ODS_canonical (3D-MOOD / WildDet3D centre-distance evaluation, whose matching is per
    image). ``gt``/``pred`` are ``BoxSet``s, ``view`` the ``LabelView`` over ``pred``."""
    res, s, keys = _distance_eval(gt, pred, view, params, gt_label, gt_ignore)
    one, W, J = _matching_weights(keys, resamples)
    rec = np.asarray(res.params.recall_thresholds, np.float64)

    def run(weights):
        ap, er = s.resampled(weights, rec)
        return _ods_numbers(ap, er)

    return BootstrapResult(("ODS", "ODS_canonical"), run(one[None, :])[0], run(W), run(J),
                           *_no_categories(resamples), resamples)


def bootstrap_score(dataset, run, score, resamples: ImageResamples | None = None, *, n_resamples: int = 1000,
                    seed: int = 0, ods: bool = False, level: float = 0.95,
                    method: str = "bca") -> BootstrapResult:
    """Bootstrap of every headline number of a ``RunScore`` (``Benchmark.score(...)``): the AP summary keys,
    ``recall3D@15``, per-category AP3D and, with ``ods=True``, ODS / ODS_canonical.

    ``resamples`` default: ``ImageResamples.draw(dataset.images["image_id"], n_resamples, seed)``; pass the same
    object (or the same seed) to every run that will be compared."""
    if method not in METHODS:
        raise ValueError(f"method: expected one of {METHODS}, got {method!r}")
    if resamples is None:
        resamples = ImageResamples.draw(np.asarray(dataset.images["image_id"]), n_resamples, seed)
    params = score.ap.params
    inputs = APInputs.from_view(dataset.gt, run.pred, score.pairs, score.view, params, gt_label=score.gt_label,
                                proximity=params.proximity)
    fm = fixed_matching(inputs, n_categories=score.view.n_categories, params=params)
    out = bootstrap_matching(fm, resamples, vocabulary=score.view.vocabulary)
    out = out.join(bootstrap_recall(score.recall, dataset.gt.image_id, resamples))
    if ods:
        out = out.join(bootstrap_ods(dataset.gt, run.pred, score.view, resamples, gt_label=score.gt_label))
    return BootstrapResult(out.metrics, out.observed, out.samples, out.jackknife, out.categories,
                           out.category_observed, out.category_samples, out.category_jackknife, resamples, level,
                           method)


# ---------------------------------------------------------------------------------------------------- intervals
def percentile_interval(samples, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Per column of ``samples (B, M)``: the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of the finite
    values (NaN where none)."""
    samples = np.asarray(samples, np.float64)
    alpha = (1.0 - level) / 2.0
    q = _quantiles(samples, np.array([alpha, 1.0 - alpha])[None, :].repeat(samples.shape[1], 0))
    return q[:, 0], q[:, 1]


def _quantiles(samples: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """``(M, P)``: per column, quantiles at its own probabilities ``probs (M, P)`` (NaN-skipping, linear)."""
    out = np.full(probs.shape, np.nan)
    for j in range(samples.shape[1]):
        v = samples[:, j]
        v = v[np.isfinite(v)]
        ok = np.isfinite(probs[j])
        if v.size and ok.any():
            out[j, ok] = np.quantile(v, np.clip(probs[j, ok], 0.0, 1.0))
    return out


def _bias_and_acceleration(samples, observed, jackknife) -> tuple[np.ndarray, np.ndarray]:
    """BCa's z0 (share of resamples below the observed value, ties half) and acceleration (jackknife skewness)."""
    ok = np.isfinite(samples)
    below = ((samples < observed[None, :]) & ok).sum(0) + 0.5 * ((samples == observed[None, :]) & ok).sum(0)
    n = ok.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        z0 = stats.norm.ppf(np.where(n > 0, below / np.maximum(n, 1), np.nan))
        jm = _nanmean(jackknife, axis=0)
        d = np.where(np.isfinite(jackknife), jm[None, :] - jackknife, 0.0)
        num, den = (d ** 3).sum(0), 6.0 * ((d ** 2).sum(0)) ** 1.5
        acc = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
    return z0, acc


def bca_interval(samples, observed, jackknife, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Per column: Efron's BCa interval from resampled values ``(B, M)``, the observed values ``(M,)`` and
    jackknife values ``(G, M)``. Falls back to NaN where z0 is infinite (every resample on one side)."""
    samples = np.asarray(samples, np.float64)
    observed = np.asarray(observed, np.float64)
    z0, acc = _bias_and_acceleration(samples, observed, np.asarray(jackknife, np.float64))
    alpha = (1.0 - level) / 2.0
    z = stats.norm.ppf(np.array([alpha, 1.0 - alpha]))
    with np.errstate(invalid="ignore", divide="ignore"):
        zz = z0[:, None] + z[None, :]
        probs = stats.norm.cdf(z0[:, None] + zz / (1.0 - acc[:, None] * zz))
    q = _quantiles(samples, np.where(np.isfinite(probs), probs, np.nan))
    return q[:, 0], q[:, 1]


def _interval(samples, observed, jackknife, level: float, method: str):
    if not 0.0 < level < 1.0:
        raise ValueError(f"level: expected a value in (0, 1), got {level}")
    if method == "percentile":
        return percentile_interval(samples, level)
    if method == "bca":
        return bca_interval(samples, observed, jackknife, level)
    raise ValueError(f"method: expected one of {METHODS}, got {method!r}")


def _frame(key: str, names, observed, samples, jackknife, level: float, method: str) -> pd.DataFrame:
    lo, hi = _interval(samples, observed, jackknife, level, method)
    ok = np.isfinite(samples)
    n = ok.sum(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(ok, samples, 0).sum(0) / np.maximum(n, 1)
        var = (np.where(ok, samples - mean[None, :], 0) ** 2).sum(0) / np.maximum(n - 1, 1)
    se = np.where(n > 1, np.sqrt(var), np.nan)
    return pd.DataFrame({key: list(names), "value": observed, "lo": lo, "hi": hi, "se": se, "n_valid": n,
                         "level": level, "method": method})


# ---------------------------------------------------------------------------------------------------- tests
def _zero_level(samples: np.ndarray) -> np.ndarray:
    """Per column: the probability u at which the empirical quantile function (``np.quantile``'s linear
    interpolation) of the finite values crosses 0: 0 when all are > 0, 1 when all are < 0, the middle of a run of
    zeros. An interval excludes 0 exactly when its quantile levels exclude u."""
    out = np.full(samples.shape[1], np.nan)
    for j in range(samples.shape[1]):
        x = np.sort(samples[np.isfinite(samples[:, j]), j])
        n = len(x)
        if n == 0:
            continue
        if x[0] > 0 or x[-1] < 0:
            out[j] = 0.0 if x[0] > 0 else 1.0
            continue
        if n == 1:
            out[j] = 0.5
            continue
        zero = np.flatnonzero(x == 0)
        if len(zero):
            out[j] = 0.5 * (zero[0] + zero[-1]) / (n - 1)
        else:
            i = int(np.searchsorted(x, 0.0)) - 1  # x[i] < 0 < x[i + 1]
            out[j] = (i - x[i] / (x[i + 1] - x[i])) / (n - 1)
    return out


def _p_values(diff, observed, jackknife, method: str) -> np.ndarray:
    """Two-sided p-values of "the difference is 0", by inverting the interval method: the smallest ``1 - level``
    whose interval (the same quantile rule) excludes 0; reported no smaller than ``1 / (B + 1)``, the resolution of
    B resamples."""
    u = _zero_level(diff)
    n = np.isfinite(diff).sum(0)
    if method == "percentile":
        p = 2.0 * np.minimum(u, 1.0 - u)
    else:  # BCa: the level alpha whose adjusted quantile level equals u, from u = Phi(z0 + y / (1 - a y))
        z0, acc = _bias_and_acceleration(diff, observed, jackknife)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            v = stats.norm.ppf(u) - z0
            den = 1.0 + acc * v
            y = np.where(den > 0, v / den, np.sign(v) * np.inf)  # past the transform's range: extreme
            za = y - z0
            p = 2.0 * np.minimum(stats.norm.cdf(za), stats.norm.sf(za))
    p = np.maximum(np.minimum(p, 1.0), 1.0 / (n + 1))
    return np.where(n > 0, p, np.nan)


def holm(p) -> np.ndarray:
    """Holm step-down adjusted p-values (family-wise error control under any dependence); NaN stays NaN."""
    p = np.asarray(p, np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if len(ok):
        order = ok[np.argsort(p[ok], kind="stable")]
        m = len(order)
        adj = np.maximum.accumulate((m - np.arange(m)) * p[order])
        out[order] = np.minimum(adj, 1.0)
    return out


def benjamini_hochberg(p) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values (false discovery rate; ``scipy.stats.false_discovery_control``)."""
    p = np.asarray(p, np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    if ok.any():
        out[ok] = stats.false_discovery_control(p[ok], method="bh")
    return out


def _adjust(p, correction: str) -> np.ndarray:
    if correction == "holm":
        return holm(p)
    if correction == "bh":
        return benjamini_hochberg(p)
    if correction == "none":
        return np.asarray(p, np.float64)
    raise ValueError(f"correction: expected one of {CORRECTIONS}, got {correction!r}")


@dataclass(frozen=True, eq=False)
class PairedComparison:
    """A - B over the same image resamples.

    Attributes:
        a, b: the two :class:`BootstrapResult` (names ``name_a``, ``name_b``).
        level, method: interval level and method; correction: per-category multiple-comparison control.
    """

    a: BootstrapResult
    b: BootstrapResult
    name_a: str = "A"
    name_b: str = "B"
    level: float = 0.95
    method: str = "percentile"
    correction: str = "holm"

    def _table(self, key, names, oa, ob, sa, sb, ja, jb) -> pd.DataFrame:
        d_obs, d_s, d_j = oa - ob, sa - sb, ja - jb
        lo, hi = _interval(d_s, d_obs, d_j, self.level, self.method)
        p = _p_values(d_s, d_obs, d_j, self.method)
        return pd.DataFrame({key: list(names), self.name_a: oa, self.name_b: ob, "diff": d_obs, "lo": lo,
                             "hi": hi, "p_value": p, "n_valid": np.isfinite(d_s).sum(0)})

    def to_frame(self) -> pd.DataFrame:
        """One row per headline number both have: ``metric, <A>, <B>, diff, lo, hi`` (interval of A - B),
        ``p_value``, ``n_valid``, ``significant`` (p < 1 - level; one test per row, no correction)."""
        common = [m for m in self.a.metrics if m in self.b.metrics]
        ia = [self.a.metrics.index(m) for m in common]
        ib = [self.b.metrics.index(m) for m in common]
        df = self._table("metric", common, self.a.observed[ia], self.b.observed[ib], self.a.samples[:, ia],
                         self.b.samples[:, ib], self.a.jackknife[:, ia], self.b.jackknife[:, ib])
        df["significant"] = df["p_value"] < 1.0 - self.level
        return df

    def per_category_frame(self) -> pd.DataFrame:
        """One row per category both have: ``category, <A>, <B>, diff, lo, hi, p_value, n_valid``, ``p_adjusted``
        (``correction`` over the categories with a p-value) and ``significant`` (p_adjusted < 1 - level)."""
        common = [c for c in self.a.categories if c in self.b.categories]
        ia = [self.a.categories.index(c) for c in common]
        ib = [self.b.categories.index(c) for c in common]
        df = self._table("category", common, self.a.category_observed[ia], self.b.category_observed[ib],
                         self.a.category_samples[:, ia], self.b.category_samples[:, ib],
                         self.a.category_jackknife[:, ia], self.b.category_jackknife[:, ib])
        df["p_adjusted"] = _adjust(df["p_value"].to_numpy(), self.correction)
        df["significant"] = df["p_adjusted"] < 1.0 - self.level
        df["correction"] = self.correction
        return df


def paired_comparison(a: BootstrapResult, b: BootstrapResult, *, name_a: str = "A", name_b: str = "B",
                      level: float = 0.95, method: str = "percentile",
                      correction: str = "holm") -> PairedComparison:
    """Paired bootstrap of A - B: two runs on the same images, or one run under two protocols, templates or θ.
    Both results must come from the same :class:`ImageResamples` (same images, same draws)."""
    if not a.resamples.same_as(b.resamples):
        raise ValueError("paired_comparison: expected both results over the same image resamples (draw one "
                         "ImageResamples for the dataset and pass it to both)")
    if method not in METHODS:
        raise ValueError(f"method: expected one of {METHODS}, got {method!r}")
    _adjust(np.zeros(0), correction)
    if not 0.0 < level < 1.0:
        raise ValueError(f"level: expected a value in (0, 1), got {level}")
    return PairedComparison(a, b, name_a, name_b, level, method, correction)


def leaderboard(results: Mapping[str, BootstrapResult] | Sequence[tuple[str, BootstrapResult]], *,
                metric: str = "AP3D", level: float = 0.95, method: str = "percentile",
                interval_method: str = "bca", correction: str = "holm") -> pd.DataFrame:
    """Runs ranked by ``metric``, each with its interval, and whether the gap to the next run is significant.

    Returns one row per run, best first: ``rank, run, value, lo, hi`` (``interval_method``); for the gap to the run
    ranked just below: ``gap, gap_lo, gap_hi, p_value`` (paired bootstrap, ``method``), ``p_adjusted``
    (``correction`` over the n - 1 gaps), ``significant``; and ``tier``: runs joined by non-significant gaps share a
    tier (1 = top). All results must share one :class:`ImageResamples`."""
    items = list(results.items()) if isinstance(results, Mapping) else list(results)
    if not items:
        raise ValueError("leaderboard: expected at least one run")
    first = items[0][1].resamples
    for name, r in items:
        if not r.resamples.same_as(first):
            raise ValueError(f"leaderboard: run {name!r} was resampled differently from {items[0][0]!r}")
    rows = []
    for name, r in items:
        lo, hi = r.interval(metric, level, interval_method)
        rows.append((name, r.value(metric), lo, hi))
    order = sorted(range(len(items)), key=lambda i: (-np.nan_to_num(rows[i][1], nan=-np.inf), i))
    df = pd.DataFrame([rows[i] for i in order], columns=["run", "value", "lo", "hi"])
    df.insert(0, "rank", np.arange(1, len(df) + 1))
    gap = np.full(len(df), np.nan)
    glo, ghi, p = gap.copy(), gap.copy(), gap.copy()
    for pos in range(len(order) - 1):
        ra, rb = items[order[pos]][1], items[order[pos + 1]][1]
        t = paired_comparison(ra, rb, level=level, method=method).to_frame().set_index("metric").loc[metric]
        gap[pos], glo[pos], ghi[pos], p[pos] = t["diff"], t["lo"], t["hi"], t["p_value"]
    adj = _adjust(p, correction)
    sig = adj < 1.0 - level
    df["gap"], df["gap_lo"], df["gap_hi"], df["p_value"], df["p_adjusted"] = gap, glo, ghi, p, adj
    df["significant"] = sig
    df["tier"] = 1 + np.r_[0, np.cumsum(sig[:-1])].astype(np.int64)
    return df
