"""Frozen result containers of the evaluator, with ``to_frame()`` tables.

Outputs never carry -1 sentinels for missing values: absent categories get NaN; index arrays (matched row) use -1
internally but tables show a missing value (pandas ``<NA>``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:  # pragma: no cover
    from ov3d_core.eval.ap import APParams

__all__ = ["APResult", "Matches", "RecallResult"]

_range = range  # methods below take a `range` argument (Omni3D's name), which shadows the builtin


def _nullable_index(a: np.ndarray):
    """An index array with -1 as pandas ``<NA>`` (nullable Int64)."""
    a = np.asarray(a, np.int64)
    out = pd.array(a, dtype="Int64")
    out[a < 0] = pd.NA
    return out


@dataclass(frozen=True, eq=False)
class Matches:
    """Per-detection and per-GT match records of one AP evaluation, for one range (normally "all").

    Attributes:
        iou_thresholds: ``(T,)`` the thresholds of the rows below.
        range_name: the range these records belong to.
        dt_match: ``(T, n_pred)`` int32 GT row matched at each threshold, or -1.
        dt_ignore: ``(T, n_pred)`` bool, detection ignored at that threshold (matched an ignored GT, out of range,
            or far from every GT under proximity evaluation). False for detections not evaluated.
        dt_evaluated: ``(n_pred,)`` bool, label in vocabulary, kept, and within the per-(image, category) max_dets.
        gt_match: ``(T, n_gt)`` int64 detection row matched at each threshold, or -1.
        gt_ignore: ``(n_gt,)`` bool, GT ignored for this range (ignore flag or range value out of range).
        gt_evaluated: ``(n_gt,)`` bool, GT category in vocabulary.
    """

    iou_thresholds: np.ndarray
    range_name: str
    dt_match: np.ndarray
    dt_ignore: np.ndarray
    dt_evaluated: np.ndarray
    gt_match: np.ndarray
    gt_ignore: np.ndarray
    gt_evaluated: np.ndarray

    def _t(self, iou: float) -> int:
        hit = np.flatnonzero(np.isclose(self.iou_thresholds, iou))
        if len(hit) == 0:
            raise ValueError(f"iou: expected one of {np.round(self.iou_thresholds, 4).tolist()}, got {iou}")
        return int(hit[0])

    def dt_tp(self, iou: float) -> np.ndarray:
        """``(n_pred,)`` bool: true positives at threshold ``iou``."""
        t = self._t(iou)
        return self.dt_evaluated & (self.dt_match[t] >= 0) & ~self.dt_ignore[t]

    def dt_fp(self, iou: float) -> np.ndarray:
        """``(n_pred,)`` bool: false positives at threshold ``iou``."""
        t = self._t(iou)
        return self.dt_evaluated & (self.dt_match[t] < 0) & ~self.dt_ignore[t]

    def dt_status(self, iou: float) -> np.ndarray:
        """``(n_pred,)`` object array: "TP", "FP", "ignored" or "not evaluated" at threshold ``iou``."""
        t = self._t(iou)
        out = np.full(self.dt_match.shape[1], "not evaluated", dtype=object)
        ev = self.dt_evaluated
        out[ev & self.dt_ignore[t]] = "ignored"
        out[ev & ~self.dt_ignore[t] & (self.dt_match[t] >= 0)] = "TP"
        out[ev & ~self.dt_ignore[t] & (self.dt_match[t] < 0)] = "FP"
        return out

    def gt_matched(self, iou: float) -> np.ndarray:
        """``(n_gt,)`` bool: non-ignored evaluated GT matched at threshold ``iou`` (the recall numerator)."""
        t = self._t(iou)
        return self.gt_evaluated & ~self.gt_ignore & (self.gt_match[t] >= 0)

    def slice(self, gt: slice, pred: slice) -> "Matches":
        """Records of one part of a pooled evaluation, with row indices made local to that part."""
        g0, p0 = gt.start or 0, pred.start or 0
        dm = self.dt_match[:, pred]
        gm = self.gt_match[:, gt]
        return Matches(self.iou_thresholds, self.range_name, np.where(dm >= 0, dm - g0, -1),
                       self.dt_ignore[:, pred], self.dt_evaluated[pred], np.where(gm >= 0, gm - p0, -1),
                       self.gt_ignore[gt], self.gt_evaluated[gt])

    def to_frame(self, iou: float) -> pd.DataFrame:
        """One row per detection at threshold ``iou``: row, status, matched GT row (nullable)."""
        t = self._t(iou)
        return pd.DataFrame({"pred": np.arange(self.dt_match.shape[1]), "status": self.dt_status(iou),
                             "gt": _nullable_index(self.dt_match[t]), "evaluated": self.dt_evaluated})


@dataclass(frozen=True, eq=False)
class APResult:
    """Omni3D / COCO AP of one evaluation (one dataset, or a pool of datasets evaluated as one).

    Attributes:
        precision: ``(T, R, K, A)`` float64 interpolated precision (IoU threshold, recall threshold, category,
            range) at max_dets; NaN where the category has no non-ignored GT in that range (Omni3D's -1).
        recall: ``(T, K, A)`` float64 final recall; NaN where absent.
        n_gt: ``(K, A)`` int64 non-ignored GT per category and range.
        n_pred: ``(K,)`` int64 detections evaluated per category (after the per-(image, category) max_dets cut).
        params: the :class:`~ov3d_core.eval.ap.APParams` used.
        matches: per-detection match records for the "all" range when requested, else None.
        vocabulary: category names of the K codes, if known.
        part_offsets: for pooled evaluations, ``((gt_start, gt_stop), (pred_start, pred_stop))`` row ranges of each
            part in the concatenated arrays; empty otherwise.
    """

    precision: np.ndarray
    recall: np.ndarray
    n_gt: np.ndarray
    n_pred: np.ndarray
    params: "APParams"
    matches: Matches | None = None
    vocabulary: tuple[str, ...] | None = None
    part_offsets: tuple = field(default=())

    def __post_init__(self):
        for name in ("precision", "recall", "n_gt", "n_pred"):
            getattr(self, name).flags.writeable = False

    # ------------------------------------------------------------------ lookups
    @property
    def n_categories(self) -> int:
        return self.precision.shape[2]

    @property
    def range_names(self) -> tuple[str, ...]:
        return tuple(self.params.ranges)

    def range_index(self, name: str) -> int:
        names = self.range_names
        if name not in names:
            raise ValueError(f"range: expected one of {list(names)}, got {name!r}")
        return names.index(name)

    def iou_index(self, iou: float | None) -> np.ndarray:
        """Indices of the IoU thresholds selected by value (``np.isclose``); all when None."""
        thr = np.asarray(self.params.iou_thresholds)
        if iou is None:
            return np.arange(len(thr))
        hit = np.flatnonzero(np.isclose(iou, thr))
        if len(hit) == 0:
            raise ValueError(f"iou: expected one of {np.round(thr, 4).tolist()}, got {iou}")
        return hit

    def _codes(self, categories) -> np.ndarray:
        cats = list(np.atleast_1d(np.asarray(categories, dtype=object)))
        codes = []
        for c in cats:
            if isinstance(c, (int, np.integer)):
                codes.append(int(c))
            elif self.vocabulary is not None and c in self.vocabulary:
                codes.append(self.vocabulary.index(c))
            else:
                raise ValueError(f"categories: expected codes or names in the vocabulary, got {c!r}")
        codes = np.asarray(codes, np.int64)
        if len(codes) and (codes.min() < 0 or codes.max() >= self.n_categories):
            raise ValueError(f"categories: expected codes in [0, {self.n_categories}), got {codes.tolist()}")
        return codes

    # ------------------------------------------------------------------ metrics
    def per_category_ap(self, range: str = "all", iou: float | None = None) -> np.ndarray:
        """``(K,)`` AP in percent per category: mean of precision over the selected IoU thresholds and all recall
        thresholds (Omni3D's per-category AP), NaN where the category has no non-ignored GT in the range."""
        a = self.range_index(range)
        p = self.precision[self.iou_index(iou), :, :, a]  # (T', R, K)
        out = np.full(self.n_categories, np.nan)
        for k in _range(self.n_categories):
            v = p[:, :, k]
            v = v[~np.isnan(v)]
            if v.size:
                out[k] = np.mean(v) * 100.0
        return out

    def per_category_recall(self, range: str = "all", iou: float | None = None) -> np.ndarray:
        """``(K,)`` final recall in percent, averaged over the selected IoU thresholds; NaN where absent."""
        a = self.range_index(range)
        r = self.recall[self.iou_index(iou), :, a]
        out = np.full(self.n_categories, np.nan)
        for k in _range(self.n_categories):
            v = r[:, k][~np.isnan(r[:, k])]
            if v.size:
                out[k] = np.mean(v) * 100.0
        return out

    def ap(self, range: str = "all", iou: float | None = None) -> float:
        """Summary AP in percent: mean of all non-NaN precision entries of the slice (Omni3D ``summarize``)."""
        s = self.precision[self.iou_index(iou)][:, :, :, self.range_index(range)]
        s = s[~np.isnan(s)]
        return float(np.mean(s) * 100.0) if s.size else float("nan")

    def summary(self) -> dict[str, float]:
        """The summary numbers named by ``params.summary_spec`` (Omni3D 3D: AP3D, AP3D@15, AP3D@25, AP3D@50,
        AP3D-N, AP3D-M, AP3D-F), in percent, NaN when the slice is empty."""
        return {key: self.ap(rng, iou) for key, iou, rng in self.params.summary_spec}

    def mean_ap(self, categories, range: str = "all", iou: float | None = None) -> float:
        """Mean per-category AP over ``categories`` (codes or names), NaN unless every one of them has GT
        (Omni3D's per-dataset subsets and pooled In/Out rows). See :meth:`nanmean_ap` for the lenient version."""
        codes = self._codes(categories)
        if len(codes) == 0:
            return float("nan")
        v = self.per_category_ap(range, iou)[codes]
        return float(np.mean(v)) if not np.isnan(v).any() else float("nan")

    def nanmean_ap(self, categories=None, range: str = "all", iou: float | None = None) -> float:
        """Mean per-category AP over the categories (default: all) that have GT, skipping absent ones; NaN if none.
        Not an Omni3D number: use :meth:`mean_ap` for those."""
        v = self.per_category_ap(range, iou)
        if categories is not None:
            v = v[self._codes(categories)]
        v = v[~np.isnan(v)]
        return float(np.mean(v)) if v.size else float("nan")

    # ------------------------------------------------------------------ tables
    def to_frame(self, vocabulary=None) -> pd.DataFrame:
        """One row per category: category, n_gt (range "all"), n_pred, then one column per summary key holding the
        per-category value (e.g. AP3D, AP3D@15, ..., AP3D-F) and AR (final recall, mean over thresholds)."""
        vocab = tuple(vocabulary) if vocabulary is not None else self.vocabulary
        if vocab is None:
            vocab = tuple(str(k) for k in range(self.n_categories))
        if len(vocab) != self.n_categories:
            raise ValueError(f"vocabulary: expected {self.n_categories} names, got {len(vocab)}")
        a_all = self.range_index("all") if "all" in self.range_names else 0
        df = pd.DataFrame({"category": list(vocab), "n_gt": self.n_gt[:, a_all], "n_pred": self.n_pred})
        for key, iou, rng in self.params.summary_spec:
            df[key] = self.per_category_ap(rng, iou)
        df["AR"] = self.per_category_recall(self.range_names[a_all])
        return df

    def to_long_frame(self, vocabulary=None) -> pd.DataFrame:
        """One row per (category, IoU threshold, range): ap, recall (percent, NaN when absent), n_gt, n_pred."""
        vocab = tuple(vocabulary) if vocabulary is not None else self.vocabulary
        if vocab is None:
            vocab = tuple(str(k) for k in range(self.n_categories))
        thr = np.asarray(self.params.iou_thresholds)
        T, _, K, A = self.precision.shape
        with np.errstate(invalid="ignore"):
            ap = self.precision.mean(axis=1) * 100.0  # (T, K, A); NaN rows stay NaN
        tt, kk, aa = np.meshgrid(np.arange(T), np.arange(K), np.arange(A), indexing="ij")
        tt, kk, aa = tt.ravel(), kk.ravel(), aa.ravel()
        return pd.DataFrame({"category": np.asarray(vocab, dtype=object)[kk], "iou_thr": thr[tt],
                             "range": np.asarray(self.range_names, dtype=object)[aa], "ap": ap[tt, kk, aa],
                             "recall": self.recall[tt, kk, aa] * 100.0, "n_gt": self.n_gt[kk, aa],
                             "n_pred": self.n_pred[kk]})

    def pr_curve(self, category, iou: float, range: str = "all") -> tuple[np.ndarray, np.ndarray]:
        """(recall thresholds, interpolated precision) of one category at one IoU threshold."""
        k = int(self._codes([category])[0])
        t = int(self.iou_index(iou)[0])
        return np.asarray(self.params.recall_thresholds), self.precision[t, :, k, self.range_index(range)].copy()


@dataclass(frozen=True, eq=False)
class RecallResult:
    """Class-agnostic one-to-one recall of GT by kept predictions.

    Attributes:
        recall: matched / non-ignored GT (NaN when there is no non-ignored GT).
        n_matched: number of non-ignored GT matched.
        n_gt: number of non-ignored GT.
        matched_pred: ``(n_gt_total,)`` int64 prediction row matched to each GT, -1 if none (ignored GT: -1).
        matched_iou: ``(n_gt_total,)`` float64 IoU of that match, NaN if none.
        gt_ignore: ``(n_gt_total,)`` bool, the ignore flags used.
        iou_threshold: the IoU threshold.
        method: "greedy" or "hungarian".
    """

    recall: float
    n_matched: int
    n_gt: int
    matched_pred: np.ndarray
    matched_iou: np.ndarray
    gt_ignore: np.ndarray
    iou_threshold: float
    method: str

    @property
    def gt_matched(self) -> np.ndarray:
        return self.matched_pred >= 0

    def by_group(self, codes, names=None) -> pd.DataFrame:
        """Recall per GT group (e.g. GT category codes ``(n_gt_total,)``; -1 rows are skipped): group, n_gt,
        n_matched, recall (NaN for a group with no non-ignored GT)."""
        codes = np.asarray(codes, np.int64)
        if codes.shape != self.matched_pred.shape:
            raise ValueError(f"codes: expected shape {self.matched_pred.shape}, got {codes.shape}")
        n = int(codes.max()) + 1 if codes.size and codes.max() >= 0 else 0
        if names is not None:
            n = max(n, len(names))
        ok = (codes >= 0) & ~self.gt_ignore
        n_gt = np.bincount(codes[ok], minlength=n)
        n_m = np.bincount(codes[ok & self.gt_matched], minlength=n)
        with np.errstate(invalid="ignore", divide="ignore"):
            rec = np.where(n_gt > 0, n_m / np.maximum(n_gt, 1), np.nan)
        group = list(names) if names is not None else list(range(n))
        return pd.DataFrame({"group": group, "n_gt": n_gt, "n_matched": n_m, "recall": rec})

    def to_frame(self) -> pd.DataFrame:
        """One row per GT: gt row, ignored, matched prediction row (nullable), IoU (NaN if unmatched)."""
        return pd.DataFrame({"gt": np.arange(len(self.matched_pred)), "ignored": self.gt_ignore,
                             "pred": _nullable_index(self.matched_pred), "iou": self.matched_iou})
