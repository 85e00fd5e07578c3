"""Shared builders for the "beyond the paper" tests: hand-made BoxSets, Pairs and APInputs."""

from __future__ import annotations

import numpy as np

from ov3d_core.eval.ap import APInputs
from ov3d_core.geometry.boxes import corners_from_pose, projected_box2d, rotation_y
from ov3d_core.model import BoxSet

K_INTR = np.array([[500.0, 0, 320], [0, 500.0, 240], [0, 0, 1]])


def make_boxset(image_id, category, center, dims, yaw=None, R=None, score=None, ignore=None) -> BoxSet:
    n = len(image_id)
    center = np.asarray(center, np.float64).reshape(n, 3)
    dims = np.asarray(dims, np.float64).reshape(n, 3)
    if R is None:
        R = rotation_y(np.zeros(n) if yaw is None else np.asarray(yaw, np.float64))
    R = np.asarray(R, np.float64).reshape(n, 3, 3)
    corners = corners_from_pose(center, dims, R)
    box2d, _ = projected_box2d(corners, K_INTR)
    return BoxSet(image_id=np.asarray(image_id, np.int64), category=np.asarray(category, dtype=object),
                  center=center, dims=dims, R=R, corners=corners, box2d=box2d, depth=center[:, 2].copy(),
                  score=np.ones(n) if score is None else np.asarray(score, np.float64),
                  ignore=np.zeros(n, bool) if ignore is None else np.asarray(ignore, bool),
                  record=np.arange(n, dtype=np.int64))


def inputs_from_pairs(gt_image, gt_label, pred_image, pred_label, pred_score, pairs, gt_ignore=None,
                      depth=5.0, pair_iou2d=None) -> APInputs:
    """APInputs from hand-written (gt, pred, iou3d) triples."""
    pairs = np.asarray(pairs, np.float64).reshape(-1, 3)
    n_gt, n_pred = len(gt_image), len(pred_image)
    return APInputs(gt_image=np.asarray(gt_image, np.int64), gt_label=np.asarray(gt_label, np.int64),
                    gt_ignore=np.zeros(n_gt, bool) if gt_ignore is None else np.asarray(gt_ignore, bool),
                    gt_range_value=np.full(n_gt, depth), pred_image=np.asarray(pred_image, np.int64),
                    pred_label=np.asarray(pred_label, np.int64), pred_score=np.asarray(pred_score, np.float64),
                    pred_range_value=np.full(n_pred, depth), pair_gt=pairs[:, 0].astype(np.int64),
                    pair_pred=pairs[:, 1].astype(np.int64), pair_iou=pairs[:, 2].copy(),
                    pair_iou2d=None if pair_iou2d is None else np.asarray(pair_iou2d, np.float64))
