"""Monocular oracles, as pure functions of the cached pairs and a label view.

**Monocular oracles** (:func:`monocular_oracles`): for every *associated* prediction one factor is replaced by the
GT's — ``depth`` (centre moved along its camera ray to the GT's depth: ``c' = c · z_gt / z_pred``, needs
``z_pred > 0``), ``size`` (dims := GT dims), ``rotation`` (R := GT R) — or all three (``all``). Corners come from
:func:`ov3d_core.geometry.boxes.corners_from_pose` and only the stored pairs of the changed predictions are recomputed
with :func:`ov3d_core.geometry.iou3d.paired_iou_3d` (pairs not in the cache stay 0, as everywhere). Association
(decision): ``"greedy"`` (default) = matched to a non-ignored same-class GT by the evaluator's greedy matching at the
loosest threshold of ``params`` (0.05 for Omni3D), one-to-one, so duplicates stay duplicates; ``"best3d"`` = best
same-class 3D IoU >= ``min_iou``; ``"best2d"`` = best same-class 2D IoU >= ``min_iou2d`` (catches boxes whose depth
error is so large that their 3D IoU is 0).
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ov3d_core.eval.ap import APInputs, APParams, map3d, matches_at
from ov3d_core.eval.grouping import argmax_by_group, pair_index
from ov3d_core.geometry.boxes import corners_from_pose
from ov3d_core.geometry.iou3d import paired_iou_3d

__all__ = ["ORACLE_FACTORS", "OracleResult", "monocular_oracles", "monocular_oracles_view"]


# ---------------------------------------------------------------------------------------------------- oracles
ORACLE_FACTORS = ("depth", "size", "rotation", "all")


@dataclass(frozen=True, eq=False)
class OracleResult:
    """Monocular oracles.

    Attributes:
        table: one row per factor: ``factor``, ``n_changed``, ``AP3D`` (percent), ``gain`` (percentage points over
            ``base_ap``), ``mean_iou_before`` / ``mean_iou_after`` (3D IoU of the associated pairs).
        base_ap: mAP_3D of the unmodified arrays.
        associated_gt: ``(n_pred,)`` int64 GT row each prediction is associated with, or -1.
        association: the rule used.
        iou_after: factor -> ``(n_pred,)`` IoU with the associated GT after the replacement (NaN if not associated).
    """

    table: pd.DataFrame
    base_ap: float
    associated_gt: np.ndarray
    association: str
    iou_after: dict


def _associate(inputs: APInputs, K: int, params: APParams, how: str, min_iou: float, min_iou2d: float):
    gt_label = np.asarray(inputs.gt_label, np.int64)
    pred_label = np.asarray(inputs.pred_label, np.int64)
    n_pred = len(pred_label)
    if how == "greedy":
        thr = float(np.min(params.iou_thresholds))
        m = matches_at(inputs, thr, K, params)
        ok = m.dt_evaluated & (m.dt_match[0] >= 0) & ~m.dt_ignore[0]
        return np.where(ok, m.dt_match[0], -1)
    if how not in ("best3d", "best2d"):
        raise ValueError(f"association: expected 'greedy', 'best3d' or 'best2d', got {how!r}")
    pg = np.asarray(inputs.pair_gt, np.int64)
    pp = np.asarray(inputs.pair_pred, np.int64)
    if how == "best3d":
        v, lim = np.asarray(inputs.pair_iou, np.float64), min_iou
    else:
        if inputs.pair_iou2d is None:
            raise ValueError("association 'best2d' needs pair_iou2d in the inputs")
        v, lim = np.asarray(inputs.pair_iou2d, np.float64), min_iou2d
    gt_ok = (gt_label >= 0) & ~np.asarray(inputs.gt_ignore, bool)
    sel = gt_ok[pg] & (pred_label[pp] >= 0) & (gt_label[pg] == pred_label[pp]) & (v >= lim)
    best, arg = argmax_by_group(pp[sel], v[sel], pg[sel], n_pred)
    return arg


def monocular_oracles(inputs: APInputs, *, n_categories: int, gt_center, gt_dims, gt_R, pred_center, pred_dims,
                      pred_R, gt_corners=None, params: APParams | None = None, association: str = "greedy",
                      min_iou: float = 0.05, min_iou2d: float = 0.5,
                      factors=ORACLE_FACTORS) -> OracleResult:
    """Replace one factor of every associated prediction by its GT's and report the mAP_3D gained.

    Args:
        inputs: evaluation arrays (``pair_iou`` = 3D IoU).
        n_categories: vocabulary size.
        gt_center, gt_dims, gt_R: GT pose ``(n_gt, 3)``, ``(n_gt, 3)`` [w, h, l], ``(n_gt, 3, 3)``.
        pred_center, pred_dims, pred_R: prediction pose.
        gt_corners: GT corners ``(n_gt, 8, 3)`` used for the recomputed IoUs (default: from the GT pose).
        params: AP parameters (default Omni3D 3D).
        association: "greedy" (default), "best3d" or "best2d" (module docstring).
        min_iou, min_iou2d: thresholds of "best3d" / "best2d".
        factors: subset of ("depth", "size", "rotation", "all").
    """
    params = params or APParams()
    K = int(n_categories)
    gc = np.asarray(gt_center, np.float64).reshape(-1, 3)
    gd = np.asarray(gt_dims, np.float64).reshape(-1, 3)
    gR = np.asarray(gt_R, np.float64).reshape(-1, 3, 3)
    pc = np.asarray(pred_center, np.float64).reshape(-1, 3)
    pdm = np.asarray(pred_dims, np.float64).reshape(-1, 3)
    pR = np.asarray(pred_R, np.float64).reshape(-1, 3, 3)
    gcorn = corners_from_pose(gc, gd, gR) if gt_corners is None else np.asarray(gt_corners, np.float64)
    pg = np.asarray(inputs.pair_gt, np.int64)
    pp = np.asarray(inputs.pair_pred, np.int64)
    piou = np.asarray(inputs.pair_iou, np.float64)
    n_pred = len(pc)

    base_ap = map3d(inputs, n_categories=K, params=params)
    assoc = _associate(inputs, K, params, association, min_iou, min_iou2d)
    d_idx = np.flatnonzero(assoc >= 0)
    g_idx = assoc[d_idx]
    # stored IoU of each associated (pred, gt) pair
    q_assoc = pair_index(pg, pp, g_idx, d_idx)
    iou_before = np.where(q_assoc >= 0, piou[np.maximum(q_assoc, 0)] if len(piou) else 0.0, 0.0)

    rows, iou_after_all = [], {}
    for f in factors:
        if f not in ORACLE_FACTORS:
            raise ValueError(f"factors: expected some of {ORACLE_FACTORS}, got {f!r}")
        c, dm, R = pc[d_idx].copy(), pdm[d_idx].copy(), pR[d_idx].copy()
        changed = np.ones(len(d_idx), bool)
        if f in ("depth", "all"):
            z = c[:, 2]
            ok = z > 0
            c[ok] = c[ok] * (gc[g_idx[ok], 2] / z[ok])[:, None]
            if f == "depth":
                changed = ok
        if f in ("size", "all"):
            dm = gd[g_idx].copy()
        if f in ("rotation", "all"):
            R = gR[g_idx].copy()
        dsel, c, dm, R = d_idx[changed], c[changed], dm[changed], R[changed]
        new_corners = corners_from_pose(c, dm, R)
        slot = np.full(n_pred, -1, np.int64)
        slot[dsel] = np.arange(len(dsel))
        aff = slot[pp] >= 0
        new_iou = piou.copy()
        if aff.any():
            new_iou[aff] = paired_iou_3d(gcorn, new_corners, pg[aff], slot[pp[aff]])
        rv = np.asarray(inputs.pred_range_value, np.float64).copy()
        if f in ("depth", "all") and params.range_variable == "depth":
            rv[dsel] = c[:, 2]
        mod = replace(inputs, pair_iou=new_iou, pred_range_value=rv)
        ap = map3d(mod, n_categories=K, params=params)
        after = np.full(n_pred, np.nan)
        if len(d_idx):
            after[d_idx] = np.where(q_assoc >= 0, new_iou[np.maximum(q_assoc, 0)] if len(new_iou) else 0.0, 0.0)
        iou_after_all[f] = after
        rows.append({"factor": f, "n_changed": int(len(dsel)), "AP3D": ap, "gain": ap - base_ap,
                     "mean_iou_before": float(iou_before.mean()) if len(d_idx) else float("nan"),
                     "mean_iou_after": float(np.nanmean(after[d_idx])) if len(d_idx) else float("nan")})
    table = pd.DataFrame(rows, columns=["factor", "n_changed", "AP3D", "gain", "mean_iou_before", "mean_iou_after"])
    return OracleResult(table=table, base_ap=base_ap, associated_gt=assoc, association=association,
                        iou_after=iou_after_all)


def monocular_oracles_view(gt, pred, pairs, view, *, params: APParams | None = None, association: str = "greedy",
                           proximity: bool | None = None, **kw) -> OracleResult:
    """:func:`monocular_oracles` from BoxSets, cached Pairs and a LabelView (GT corners from ``gt.corners``)."""
    params = params or APParams()
    inputs = APInputs.from_view(gt, pred, pairs, view, params, proximity=proximity)
    return monocular_oracles(inputs, n_categories=view.n_categories, gt_center=gt.center, gt_dims=gt.dims,
                             gt_R=gt.R, pred_center=pred.center, pred_dims=pred.dims, pred_R=pred.R,
                             gt_corners=gt.corners, params=params, association=association, **kw)
