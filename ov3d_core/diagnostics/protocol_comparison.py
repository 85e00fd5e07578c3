"""Dataset-level vs target-aware on the same predictions (OV3D-Bench Table 7): per-class AP under both protocols and
every prediction the oracle removes, flagged when it sits on a GT of another class (the cross-class false positives
the oracle hides). The filters themselves live in :mod:`ov3d_core.eval.protocols`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ov3d_core.eval.ap import APParams, evaluate_ap
from ov3d_core.eval.labels import gt_codes
from ov3d_core.eval.protocols import CROSS_CLASS_IOU, images_with_gt_view, target_aware_view

__all__ = ["ProtocolComparison", "removed_predictions", "compare_protocols", "compare_protocols_boxes"]


def _image_column(pred_image, rows):
    img = np.asarray(pred_image)
    if img.ndim == 2:  # composite keys: one tuple per row
        out = np.empty(len(rows), dtype=object)
        out[:] = [tuple(int(v) for v in r) for r in img[rows]]
        return out
    return img[rows]


_REMOVED_COLUMNS = ["pred_row", "image_id", "class", "score", "max_iou_other", "other_gt_row", "other_class",
                    "other_gt_ignored", "cross_class"]


def removed_predictions(before, after, pairs, pred_image: np.ndarray, gt_label: np.ndarray, gt_ignore: np.ndarray,
                        *, overlap_threshold: float = CROSS_CLASS_IOU) -> pd.DataFrame:
    """Predictions evaluated under ``before`` but not under ``after``, with their best other-class GT overlap.

    Args:
        before: the dataset-level ``LabelView``.
        after: the filtered view (e.g. from :func:`target_aware_view`), same rows and vocabulary.
        pairs: ``Pairs`` (uses ``gt``, ``pred``, ``iou3d``).
        pred_image: ``(n_pred,)`` int64 image ids.
        gt_label: ``(n_gt,)`` int64 GT codes in the views' vocabulary.
        gt_ignore: ``(n_gt,)`` bool.
        overlap_threshold: 3D IoU at which the prediction counts as a cross-class false positive.

    Returns:
        DataFrame, highest score first: ``pred_row, image_id, class, score, max_iou_other`` (0 when it overlaps
        no other-class GT), ``other_gt_row`` (nullable), ``other_class``, ``other_gt_ignored``, ``cross_class``
        (``max_iou_other >= overlap_threshold``).
    """
    ev_before = np.asarray(before.keep, bool) & (np.asarray(before.label) >= 0)
    ev_after = np.asarray(after.keep, bool) & (np.asarray(after.label) >= 0)
    rows = np.flatnonzero(ev_before & ~ev_after)
    label = np.asarray(before.label, np.int64)
    gt_label = np.asarray(gt_label, np.int64)
    p_gt, p_pred = np.asarray(pairs.gt, np.int64), np.asarray(pairs.pred, np.int64)
    removed = np.zeros(len(label), bool)
    removed[rows] = True
    sel = np.flatnonzero(removed[p_pred] & (gt_label[p_gt] >= 0) & (gt_label[p_gt] != label[p_pred]))
    best_iou = np.zeros(len(label))
    best_gt = np.full(len(label), -1, np.int64)
    if len(sel):
        iou = np.asarray(pairs.iou3d, np.float64)[sel]
        order = np.lexsort((p_gt[sel], -iou, p_pred[sel]))  # per prediction: highest IoU, then lowest GT row
        first = order[np.unique(p_pred[sel][order], return_index=True)[1]]
        best_iou[p_pred[sel][first]] = iou[first]
        best_gt[p_pred[sel][first]] = p_gt[sel][first]
    rows = rows[np.argsort(-np.asarray(before.score)[rows], kind="stable")]
    vocab = np.asarray(tuple(before.vocabulary) + (None,), dtype=object)  # code -1 -> None
    other = best_gt[rows]
    other_row = pd.array(other, dtype="Int64")
    other_row[other < 0] = pd.NA
    gt_ign = np.asarray(gt_ignore, bool)
    return pd.DataFrame({
        "pred_row": rows.astype(np.int64), "image_id": _image_column(pred_image, rows),
        "class": vocab[label[rows]], "score": np.asarray(before.score, np.float64)[rows],
        "max_iou_other": best_iou[rows], "other_gt_row": other_row,
        "other_class": np.where(other >= 0, vocab[gt_label[np.maximum(other, 0)]] if len(gt_label) else None, None),
        "other_gt_ignored": np.where(other >= 0, gt_ign[np.maximum(other, 0)] if len(gt_ign) else False, False),
        "cross_class": best_iou[rows] >= overlap_threshold}, columns=_REMOVED_COLUMNS)


# ------------------------------------------------------------------------------------------------ comparison
@dataclass(frozen=True, eq=False)
class ProtocolComparison:
    """The same predictions scored under the dataset-level protocol and the target-aware oracle.

    Attributes:
        class_names: the vocabulary.
        n_gt: ``(K,)`` non-ignored GT per class.
        ap_dataset_level: ``(K,)`` per-class AP3D (percent, NaN = no GT).
        ap_target_aware: ``(K,)`` per-class AP3D under the oracle.
        map_dataset_level: mean of the finite per-class APs (Omni3D's "AP").
        map_target_aware: the same under the oracle.
        removed: :func:`removed_predictions` of the oracle.
        settings: the protocol options used.
        result_dataset_level: the underlying ``APResult`` (for drill-down), or None.
        result_target_aware: the same under the oracle, or None.
    """

    class_names: tuple[str, ...]
    n_gt: np.ndarray
    ap_dataset_level: np.ndarray
    ap_target_aware: np.ndarray
    map_dataset_level: float
    map_target_aware: float
    removed: pd.DataFrame
    settings: dict = field(default_factory=dict)
    result_dataset_level: Any = None
    result_target_aware: Any = None

    @property
    def ratio(self) -> float:
        """``mAP_target_aware / mAP_dataset_level`` (the paper's "1.9x higher"); NaN if the latter is 0/NaN."""
        d = self.map_dataset_level
        return float(self.map_target_aware / d) if np.isfinite(d) and d != 0 else float("nan")

    def to_frame(self) -> pd.DataFrame:
        """Per-class table: ``class, n_gt, ap_dataset_level, ap_target_aware, delta_abs, delta_rel, n_removed,
        n_removed_cross_class``."""
        k = len(self.class_names)
        dl, ta = self.ap_dataset_level, self.ap_target_aware
        with np.errstate(invalid="ignore", divide="ignore"):
            rel = np.where(np.isfinite(dl) & (dl != 0), (ta - dl) / np.where(dl == 0, 1, dl), np.nan)
        code = pd.Index(list(self.class_names)).get_indexer(self.removed["class"].to_numpy(object))
        cross = self.removed["cross_class"].to_numpy(bool)
        return pd.DataFrame({
            "class": list(self.class_names), "n_gt": self.n_gt, "ap_dataset_level": dl, "ap_target_aware": ta,
            "delta_abs": ta - dl, "delta_rel": rel,
            "n_removed": np.bincount(code[code >= 0], minlength=k),
            "n_removed_cross_class": np.bincount(code[(code >= 0) & cross], minlength=k)})

    def summary(self) -> dict:
        return {"map_dataset_level": self.map_dataset_level, "map_target_aware": self.map_target_aware,
                "delta_abs": self.map_target_aware - self.map_dataset_level, "ratio": self.ratio,
                "n_removed": int(len(self.removed)), "n_removed_cross_class": int(self.removed["cross_class"].sum()),
                **self.settings}

    def to_dict(self) -> dict:
        return {**self.summary(), "per_class": self.to_frame().to_dict(orient="records")}


def _nanmean(a: np.ndarray) -> float:
    a = np.asarray(a, np.float64)
    return float(a[np.isfinite(a)].mean()) if np.isfinite(a).any() else float("nan")


def compare_protocols(pairs, view, *, gt_image: np.ndarray, gt_label: np.ndarray, gt_ignore: np.ndarray,
                      gt_range_value: np.ndarray, pred_image: np.ndarray, pred_range_value: np.ndarray,
                      params=None, count_ignored_as_present: bool = True, only_images_with_gt: bool = False,
                      overlap_threshold: float = CROSS_CLASS_IOU, pred_order: np.ndarray | None = None,
                      keep_results: bool = True) -> ProtocolComparison:
    """Score the same predictions under the dataset-level protocol and the target-aware oracle.

    Args:
        pairs: the cached ``Pairs`` of this (dataset, run).
        view: the dataset-level ``LabelView``.
        gt_image, gt_label, gt_ignore, gt_range_value: ``(n_gt,)`` GT image ids, codes into ``view.vocabulary``,
            ignore flags and range values (depth in m for 3D).
        pred_image, pred_range_value: ``(n_pred,)`` prediction image ids and range values.
        params: ``APParams`` (default ``APParams.omni3d_3d()``); ``params.iou`` picks the pair IoU matched on.
        count_ignored_as_present: see :func:`target_aware_view`.
        only_images_with_gt: evaluate both protocols on images with vocabulary GT only.
        overlap_threshold: see :func:`removed_predictions` (always on 3D IoU).
        pred_order: tie-break key among equal scores (``evaluate_ap``).
        keep_results: keep both ``APResult`` objects in the result.
    """
    params = APParams.omni3d_3d() if params is None else params
    base = images_with_gt_view(view, pred_image, gt_image, gt_label) if only_images_with_gt else view
    oracle = target_aware_view(base, pred_image, gt_image, gt_label, gt_ignore,
                               count_ignored_as_present=count_ignored_as_present)
    k = len(view.vocabulary)
    gt_label = np.asarray(gt_label, np.int64)
    gt_ignore = np.asarray(gt_ignore, bool)
    pair_iou = pairs.iou3d if params.iou == "3d" else pairs.iou2d

    def score(v):
        return evaluate_ap(gt_image, gt_label, gt_ignore, gt_range_value, pred_image, v.codes, v.score,
                           pred_range_value, pairs.gt, pairs.pred, pair_iou, n_categories=k, params=params,
                           pair_iou2d=pairs.iou2d, pred_order=pred_order, vocabulary=view.vocabulary)

    res_dl, res_ta = score(base), score(oracle)
    ap_dl = np.asarray(res_dl.per_category_ap("all"), np.float64)
    ap_ta = np.asarray(res_ta.per_category_ap("all"), np.float64)
    ok = (gt_label >= 0) & ~gt_ignore
    return ProtocolComparison(
        class_names=tuple(view.vocabulary), n_gt=np.bincount(gt_label[ok], minlength=k),
        ap_dataset_level=ap_dl, ap_target_aware=ap_ta, map_dataset_level=_nanmean(ap_dl),
        map_target_aware=_nanmean(ap_ta),
        removed=removed_predictions(base, oracle, pairs, pred_image, gt_label, gt_ignore,
                                    overlap_threshold=overlap_threshold),
        settings={"count_ignored_as_present": count_ignored_as_present, "only_images_with_gt": only_images_with_gt,
                  "overlap_threshold": overlap_threshold},
        result_dataset_level=res_dl if keep_results else None, result_target_aware=res_ta if keep_results else None)


def compare_protocols_boxes(gt, pred, pairs, view, params=None, *, proximity: bool | None = None,
                            **options) -> ProtocolComparison:
    """:func:`compare_protocols` from a GT ``BoxSet`` and a prediction ``BoxSet`` (what the app and CLI hold).

    GT codes come from ``gt.category`` in ``view.vocabulary``; range values are the boxes' ``depth`` (or 2D area
    when ``params.range_variable == "area"``); ``proximity`` overrides ``params.proximity`` (``Dataset.proximity``).
    ``options`` are passed on (``count_ignored_as_present``, ``only_images_with_gt``, ``overlap_threshold``, ...).
    """
    params = APParams.omni3d_3d() if params is None else params
    if proximity is not None:
        params = params.with_(proximity=bool(proximity))
    area = params.range_variable == "area"
    return compare_protocols(
        pairs, view, gt_image=gt.image_id, gt_label=gt_codes(gt.category, view.vocabulary), gt_ignore=gt.ignore,
        gt_range_value=gt.box2d_area if area else gt.depth, pred_image=pred.image_id,
        pred_range_value=pred.box2d_area if area else pred.depth, params=params, **options)
