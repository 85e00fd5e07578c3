"""Precision-recall curves of one AP evaluation and the operating point of a score threshold. Pure: no I/O.

Two curves per category at one IoU threshold (range "all"):

- the *raw* curve (:func:`pr_points`): the evaluated, non-ignored detections of the category in the engine's
  accumulation order (score descending, then image, then row), with cumulative recall ``tp / n_gt`` and precision
  ``tp / (tp + fp)`` after each one: what a score threshold moves along;
- the *interpolated* curve (:func:`interpolated_pr`): Omni3D/COCO's 101-point envelope that AP averages, read from
  ``APResult.precision`` (the raw curve's envelope sampled at the recall thresholds equals it; a test holds that).

Operating point (:func:`operating_points`): greedy matching and the per-(image, category) ``max_dets`` cut both go in
score order, so keeping only detections scoring at least ``s`` keeps a prefix of the raw curve with the same matches.
The point at ``s`` is therefore the last raw point whose score is >= ``s``: its recall is the final recall of the view
thresholded at ``s``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ov3d_core.eval.results import APResult, Matches

__all__ = ["pr_points", "interpolated_pr", "operating_points", "ALL_CLASSES", "PR_POINT_COLUMNS",
           "PR_CURVE_COLUMNS", "OPERATING_COLUMNS"]

#: Category name of the class-mean rows.
ALL_CLASSES = "(all classes)"
PR_POINT_COLUMNS = ["category", "rank", "pred", "image_id", "score", "tp", "recall", "precision"]
PR_CURVE_COLUMNS = ["category", "recall", "precision"]
OPERATING_COLUMNS = ["category", "min_score", "n_gt", "n_det", "tp", "fp", "recall", "precision"]


def pr_points(matches: Matches, label: np.ndarray, score: np.ndarray, image_id: np.ndarray, n_gt: np.ndarray,
              iou: float, vocabulary) -> pd.DataFrame:
    """The raw precision-recall curve of every category at IoU ``iou`` (see the module docstring).

    Args:
        matches: the match records of the evaluation (``APResult.matches``, range "all").
        label, score, image_id: ``(n_pred,)`` codes, scores and image ids of the evaluated label view.
        n_gt: ``(K,)`` non-ignored GT per category (``APResult.n_gt[:, all]``).
        iou: one of the evaluation's IoU thresholds.
        vocabulary: the K category names.

    Returns:
        One row per non-ignored evaluated detection (``PR_POINT_COLUMNS``), categories in vocabulary order, detections
        in accumulation order; ``rank`` counts from 1 within the category, ``pred`` is the prediction row.
    """
    t = matches._t(iou)
    label = np.asarray(label, np.int64)
    score = np.asarray(score, np.float64)
    image_id = np.asarray(image_id, np.int64)
    live = matches.dt_evaluated & ~matches.dt_ignore[t] & (label >= 0)
    rows = np.flatnonzero(live)
    order = rows[np.lexsort((rows, image_id[rows], -score[rows], label[rows]))]
    lab = label[order]
    tp = matches.dt_match[t][order] >= 0
    starts = np.flatnonzero(np.r_[True, lab[1:] != lab[:-1]]) if len(lab) else np.zeros(0, np.int64)
    seg = np.repeat(starts, np.diff(np.r_[starts, len(lab)]))
    ctp = np.cumsum(tp)
    base = np.where(starts > 0, ctp[np.maximum(starts - 1, 0)], 0)
    seg_base = np.repeat(base, np.diff(np.r_[starts, len(lab)]))
    tp_cum = ctp - seg_base
    rank = np.arange(len(lab)) - seg + 1
    ngt = np.asarray(n_gt, np.float64)[lab] if len(lab) else np.zeros(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.where(ngt > 0, tp_cum / np.where(ngt > 0, ngt, 1.0), np.nan)
    precision = tp_cum / np.maximum(rank, 1)
    vocab = np.asarray(list(vocabulary), dtype=object)
    return pd.DataFrame({"category": vocab[lab] if len(lab) else np.zeros(0, object), "rank": rank.astype(np.int64),
                         "pred": order.astype(np.int64), "image_id": image_id[order], "score": score[order],
                         "tp": tp, "recall": recall, "precision": precision}, columns=PR_POINT_COLUMNS)


def interpolated_pr(ap: APResult, iou: float, vocabulary, range_name: str = "all") -> pd.DataFrame:
    """Omni3D's interpolated precision at every recall threshold per category with GT, then the class mean
    (``ALL_CLASSES``: the mean over those categories, whose average over recall is AP at ``iou``).
    ``PR_CURVE_COLUMNS``, one row per (category, recall threshold)."""
    t = int(ap.iou_index(iou)[0])
    a = ap.range_index(range_name)
    rec = np.asarray(ap.params.recall_thresholds, np.float64)
    prec = ap.precision[t, :, :, a]  # (R, K)
    vocab = list(vocabulary)
    present = [k for k in range(prec.shape[1]) if not np.isnan(prec[:, k]).all()]
    parts = [pd.DataFrame({"category": vocab[k], "recall": rec, "precision": prec[:, k]}) for k in present]
    if present:
        parts.append(pd.DataFrame({"category": ALL_CLASSES, "recall": rec,
                                   "precision": prec[:, present].mean(axis=1)}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=PR_CURVE_COLUMNS)


def operating_points(points: pd.DataFrame, min_score: float, n_gt: np.ndarray, vocabulary,
                     mean_curve: pd.DataFrame | None = None) -> pd.DataFrame:
    """Where a score threshold puts each category on its raw curve (``points`` from :func:`pr_points` of the view
    without a threshold): detections kept (score >= ``min_score``), TP, FP, recall and precision (NaN without a kept
    detection). Categories with GT only, in vocabulary order, then ``ALL_CLASSES``: the mean of their recalls and,
    as precision, the class-mean curve's value at that recall (``mean_curve``: recall, precision of the
    ``ALL_CLASSES`` rows of :func:`interpolated_pr`, read as COCO samples it: at the first recall threshold >= the
    recall), so the point lies on the mean curve; NaN without ``mean_curve``."""
    vocab = list(vocabulary)
    n_gt = np.asarray(n_gt, np.int64)
    kept = points[points["score"].to_numpy(np.float64) >= float(min_score)]
    g = kept.groupby("category", sort=False)["tp"]
    n_det, n_tp = g.size(), g.sum()
    rows = []
    for k, name in enumerate(vocab):
        if n_gt[k] <= 0:
            continue
        d = int(n_det.get(name, 0))
        tp = int(n_tp.get(name, 0))
        rows.append({"category": name, "min_score": float(min_score), "n_gt": int(n_gt[k]), "n_det": d, "tp": tp,
                     "fp": d - tp, "recall": tp / n_gt[k], "precision": tp / d if d else np.nan})
    out = pd.DataFrame(rows, columns=OPERATING_COLUMNS)
    if len(out):
        r = float(out["recall"].mean())
        p = np.nan
        if mean_curve is not None and len(mean_curve):
            rec = mean_curve["recall"].to_numpy(np.float64)
            i = int(np.searchsorted(rec, r - 1e-12, side="left"))
            p = float(mean_curve["precision"].to_numpy(np.float64)[i]) if i < len(rec) else 0.0
        mean = {"category": ALL_CLASSES, "min_score": float(min_score), "n_gt": int(out["n_gt"].sum()),
                "n_det": int(out["n_det"].sum()), "tp": int(out["tp"].sum()), "fp": int(out["fp"].sum()),
                "recall": r, "precision": p}
        out = pd.concat([out, pd.DataFrame([mean], columns=OPERATING_COLUMNS)], ignore_index=True)
    return out
