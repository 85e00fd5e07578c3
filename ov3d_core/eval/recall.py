"""Class-agnostic 3D recall: the fraction of non-ignored GT matched one-to-one to a kept prediction at
IoU >= threshold, whatever the categories. It separates localization from classification: a box found but
mislabelled still counts here.
"""

from __future__ import annotations

import numpy as np

from ov3d_core.digest import content_key
from ov3d_core.eval.assignment import hungarian_matches
from ov3d_core.eval.constants import RECALL_IOU
from ov3d_core.eval.matching import greedy_one_to_one
from ov3d_core.eval.ordering import argsort_desc_stable, pairs_by_pred, read_only
from ov3d_core.eval.results import RecallResult
from ov3d_core.memo import Memo

__all__ = ["class_agnostic_recall", "recall_for_view"]


def _select(n_gt, gt_ignore, pair_gt, pair_pred, pair_iou, pred_keep, iou_threshold):
    pair_gt = np.ascontiguousarray(pair_gt, np.int64)
    pair_pred = np.ascontiguousarray(pair_pred, np.int64)
    pair_iou = np.ascontiguousarray(pair_iou, np.float64)
    if not (len(pair_gt) == len(pair_pred) == len(pair_iou)):
        raise ValueError(f"class_agnostic_recall: expected pair arrays of one length, got "
                         f"{len(pair_gt)}, {len(pair_pred)}, {len(pair_iou)}")
    if len(pair_gt) and (pair_gt.min() < 0 or pair_gt.max() >= n_gt or pair_pred.min() < 0
                         or pair_pred.max() >= len(pred_keep)):
        raise ValueError(f"class_agnostic_recall: expected pair indices within {n_gt} GT x {len(pred_keep)} "
                         "predictions")
    sel = (pair_iou >= iou_threshold) & ~gt_ignore[pair_gt] & pred_keep[pair_pred]
    return pair_gt, pair_pred, pair_iou, sel


def class_agnostic_recall(n_gt: int, gt_ignore, pair_gt, pair_pred, pair_iou, pred_score, pred_keep, *,
                          iou_threshold: float = RECALL_IOU, method: str = "greedy", pred_order=None) -> RecallResult:
    """One-to-one recall of the non-ignored GT by kept predictions at ``pair_iou >= iou_threshold``.

    Args:
        n_gt: number of GT rows.
        gt_ignore: ``(n_gt,)`` bool; ignored GT neither count nor absorb predictions.
        pair_gt, pair_pred, pair_iou: ``(P,)`` the cached sparse pairs (same image; unlisted pairs have IoU 0).
        pred_score: ``(n_pred,)`` confidences (greedy order).
        pred_keep: ``(n_pred,)`` bool; only kept predictions match.
        iou_threshold: minimum IoU of a match (inclusive).
        method: "greedy": predictions by descending score (stable; ties by ``pred_order``, default row order), each
            taking the unmatched non-ignored GT of highest IoU (IoU ties: lowest GT row); "hungarian": a maximum
            total-IoU one-to-one assignment over the pairs >= threshold (``scipy.optimize.linear_sum_assignment`` per
            connected component of the pair graph, which is finer than per image and gives the same optimum).
        pred_order: ``(n_pred,)`` tie-break key for equal scores (greedy only).

    Returns:
        :class:`~ov3d_core.eval.results.RecallResult`.
    """
    n_gt = int(n_gt)
    gt_ignore = np.asarray(gt_ignore, bool)
    pred_keep = np.asarray(pred_keep, bool)
    pred_score = np.asarray(pred_score, np.float64)
    if gt_ignore.shape != (n_gt,):
        raise ValueError(f"class_agnostic_recall: expected `gt_ignore` of shape ({n_gt},), got {gt_ignore.shape}")
    if pred_score.shape != pred_keep.shape or pred_keep.ndim != 1:
        raise ValueError(f"class_agnostic_recall: expected `pred_score` and `pred_keep` of one shape (n_pred,), got "
                         f"{pred_score.shape} and {pred_keep.shape}")
    pair_gt, pair_pred, pair_iou, sel = _select(n_gt, gt_ignore, pair_gt, pair_pred, pair_iou, pred_keep,
                                                float(iou_threshold))
    if method == "greedy":
        matched, miou = _greedy(n_gt, pair_gt, pair_pred, pair_iou, sel, pred_score, pred_order)
    elif method == "hungarian":
        matched, miou = _hungarian(n_gt, len(pred_keep), pair_gt, pair_pred, pair_iou, sel)
    else:
        raise ValueError(f"class_agnostic_recall: expected method 'greedy' or 'hungarian', got {method!r}")
    n_pos = int((~gt_ignore).sum())
    n_matched = int((matched >= 0).sum())
    matched.flags.writeable = False
    miou.flags.writeable = False
    return RecallResult(recall=n_matched / n_pos if n_pos else float("nan"), n_matched=n_matched, n_gt=n_pos,
                        matched_pred=matched, matched_iou=miou, gt_ignore=gt_ignore.copy(),
                        iou_threshold=float(iou_threshold), method=method)


def _greedy(n_gt, pair_gt, pair_pred, pair_iou, sel, pred_score, pred_order):
    n_pred = len(pred_score)
    has = np.zeros(n_pred, bool)
    has[pair_pred[sel]] = True
    cand = np.flatnonzero(has)
    if pred_order is not None:
        po = np.asarray(pred_order)
        if po.shape != (n_pred,):
            raise ValueError(f"class_agnostic_recall: expected `pred_order` of shape ({n_pred},), got {po.shape}")
        cand = cand[np.argsort(po[cand], kind="stable")]
    order = argsort_desc_stable(pred_score, cand)
    perm, indptr = pairs_by_pred(pair_gt, pair_pred, sel, max(n_gt, 1), n_pred)
    return greedy_one_to_one(*read_only(order, indptr, perm, pair_gt, pair_iou), n_gt)  # the one compiled variant


def _hungarian(n_gt, n_pred, pair_gt, pair_pred, pair_iou, sel):
    """Maximum total-IoU one-to-one matching over the selected pairs (:func:`ov3d_core.eval.assignment.hungarian_matches`):
    matched prediction and IoU per GT (-1 / NaN when unmatched)."""
    matched = np.full(n_gt, -1, np.int64)
    miou = np.full(n_gt, np.nan)
    g, d, w = pair_gt[sel], pair_pred[sel], pair_iou[sel]
    chosen = hungarian_matches(g, d, w)
    matched[g[chosen]] = d[chosen]
    miou[g[chosen]] = w[chosen]
    return matched, miou


def recall_for_view(gt, pairs, view, *, gt_ignore=None, gt_mask=None, iou_threshold: float = RECALL_IOU,
                    method: str = "greedy", use: str = "3d") -> RecallResult:
    """Class-agnostic recall of a label view: kept predictions (``view.keep``; their labels are not used) against
    the GT (``gt.ignore`` unless ``gt_ignore`` is given; ``gt_mask`` False rows are treated as ignored, e.g. GT
    outside the vocabulary). ``use``: "3d" or "2d" IoU."""
    ign = np.asarray(gt.ignore if gt_ignore is None else gt_ignore, bool)
    if gt_mask is not None:
        ign = ign | ~np.asarray(gt_mask, bool)
    iou = pairs.iou3d if use == "3d" else pairs.iou2d
    args = (len(gt), ign, pairs.gt, pairs.pred, iou, np.asarray(view.score), np.asarray(view.keep, bool))
    # Labels do not enter: a label change that keeps the kept set (e.g. a relabelling within the vocabulary) re-uses
    # the result of the same inputs.
    return _RECALL.get(content_key(*args, float(iou_threshold), method),
                       lambda: class_agnostic_recall(*args, iou_threshold=iou_threshold, method=method))


_RECALL = Memo(4, read_only=True)
