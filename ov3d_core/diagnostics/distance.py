"""Centre-distance AP and true-positive errors: 3D-MOOD / WildDet3D ODS (ours and 3D-MOOD's own) and nuScenes.

Pure functions of box centres, dimensions, rotations, labels, scores and (for proximity evaluation) 2D boxes; no 3D
IoU is needed, so nothing here reads the pair cache. References: ``reference/siglip_metrics_prompts.md`` §2
(nuScenes) and §3 (3D-MOOD, WildDet3D); every difference between the modes is tabulated in
``docs/distance_modes.md``. The modes (:data:`DISTANCE_MODES`, names accepted by :func:`evaluate_distance_view`):

* ``"3dmood"`` — our clean reading of the 3D-MOOD / WildDet3D protocol (:func:`center_distance_eval`).
* ``"3dmood-compat"`` — cvg/3D-MOOD's evaluator as its code runs (``opendet3d/eval/detect3d.py``): the same function
  with ``DistanceParams(compat=True)``.
* ``"nuscenes"`` — nuscenes-devkit ``detection_cvpr_2019`` in the camera frame (:func:`nuscenes_eval`).

**"3dmood" rules** (:func:`center_distance_eval`):

- A detection may match a GT of its class in its image when ``‖c_d − c_g‖₂ <= t · r_gt`` with
  ``r_gt = ‖(w, h, l)_gt‖₂ / 2`` and ``t`` in 0.50:0.05:1.00 (11 ratios; ``t`` capped at ``1 − 1e-10`` as in the
  reference loop).
- COCO greedy per (image, category): detections by descending score (stable; top ``max_dets`` = 100 per image and
  category), each GT used once, ignored GT last, a detection matched to an ignored GT is neutral (neither TP nor FP;
  WildDet3D's "ignore objects are neutral"), unmatched detections outside the depth range are ignored. With
  ``proximity`` on, a pair needs a 2D IoU above ``proximity_thresh`` and a detection with no GT of its class in
  proximity (in an image that has GT of that class) is ignored (3D-MOOD's ``eval_prox``, used for Argoverse 2).
- Among the admissible GT the detection takes the *nearest* (non-ignored first, then ignored; ties to the lower GT
  row). 3D-MOOD's loop instead overwrites the limit by the previous candidate's distance in metres; only the compat
  mode replicates that.
- Per-match errors, each in [0, 1]: ``ATE = dist / (r_gt · t)``; ``AOE = θ / π`` with θ the SO(3) geodesic angle
  ``arccos((trace(R_dᵀ R_g) − 1) / 2)`` (cosine clipped to [−1, 1]); ``ASE = 1 − (Π min(dims)) / (V_d + V_g −
  Π min(dims))``. Unmatched detections carry 1.
- Accumulation as Omni3D / COCO (ignored detections stay in the sorted list but count as neither TP nor FP):
  precision envelope sampled at 101 recall points with ``searchsorted(recall, r, "left")``; the TP errors are the
  errors *of the detection at that index* (where each recall point is first reached); unreached recall points
  keep precision 0 and error 1. Classes with no non-ignored GT are absent (NaN).
- mAP, mATE, mAOE, mASE: means over all non-NaN (threshold × recall × class) entries; ``ODS = (3·AP + (1 − mATE) +
  (1 − mAOE) + (1 − mASE)) / 6`` (AP as a fraction). Per-class ODS uses the same formula on the class's entries;
  ``ODS_Base`` / ``ODS_Novel`` are means of per-class ODS over the present base / other classes.
- WildDet3D variants reported beside: ``AOE_sym = min(θ, π − θ) / (π/2)`` and ``AOE_canonical`` (both rotations
  canonicalised first: W <= L forced by a right-multiplied Ry(90°) with w and l swapped, then yaw folded into
  [0, π) by a right-multiplied Ry(180°); both leave the box itself unchanged), with ``ODS_sym`` and
  ``ODS_canonical`` (WildDet3D's primary open-vocabulary ranking number). Yaw is ``ov3d_core.geometry.boxes.yaw_of``;
  as in WildDet3D, two nearly equal boxes on either side of the fold boundary (yaw ≈ 0 or ≈ π, or w ≈ l) can still
  come out 180° or 90° apart.

**"3dmood-compat"** differs in exactly these points (each reproduced from 3D-MOOD's code): the matching loop's
limit overwrite (a detection can match a GT outside that GT's own ``t · r``; ATE is then divided by the overwritten
limit), ``cos_bound = 1e-2`` in the angle (pytorch3d's linear arccos extrapolation: a perfect rotation has AOE
0.0225, i.e. θ = 0.0707 rad), the GT ignore flag of 3D-MOOD's COCO3D loader (:func:`mood_gt_ignore`), a GT whose
annotation id is 0 never counts as matched, ``ODS_Base`` / ``ODS_Novel`` as ``np.mean`` (one absent class makes
them NaN), and :meth:`DistanceResult.mood_summary` returns 3D-MOOD's own dict (fractions; all 0.0 when there is no
prediction at all). The angle is computed in float64 (3D-MOOD: float32 torch, about 1e-7 apart).

**"nuscenes"** (:func:`nuscenes_eval`): nuscenes-devkit's ``accumulate`` / ``calc_ap`` / ``calc_tp`` rules with the
camera frame's (x, z) as the BEV plane: thresholds 0.5 / 1 / 2 / 4 m, match when distance < threshold (strict), each
detection takes the nearest unmatched GT of its class in its image (ties to the lower GT row), globally in the
devkit's order: descending score, **equal scores in the reverse of record order** (its ``sorted((score, i))[::-1]``;
record order = the rows grouped by image in the order each image first appears, as an ``EvalBoxes`` built from the
rows lists them). Precision not enveloped, ``np.interp`` onto 101 recall points with ``right=0``; AP =
mean(clip(prec[11:] − 0.1, 0)) / 0.9; TP errors at the 2 m matching: ATE (m, BEV), ASE (1 − aligned IoU), AOE
(|devkit ``angle_diff``| of the BEV yaws, period 2π, π for barriers, NaN for traffic cones), NaN-aware cumulative
means re-sampled by confidence and averaged over recall bins 11 … max-recall bin (1.0 if max recall < 10 %).
Decisions: classes with no non-ignored GT are absent (NaN) unless ``score_absent_classes`` (the devkit: AP 0, TP
errors 1); ignored GT are neutral as above (the devkit has none); there is no velocity or attribute, so the
NDS-style score is ``(5·mAP + Σ_{ATE,ASE,AOE} max(0, 1 − mTP)) / 8``. nuScenes' class-range filter is optional
(``class_range``, distance from the camera instead of the ego vehicle); the 500-boxes-per-sample check is not applied.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from numba import njit

from ov3d_core.eval.grouping import dense_image_keys
from ov3d_core.eval.labels import gt_codes
from ov3d_core.geometry.boxes import rotation_y, yaw_of
from ov3d_core.geometry.iou2d import paired_iou_2d

__all__ = ["DISTANCE_MODES", "DistanceParams", "DistanceResult", "center_distance_eval", "evaluate_distance_view",
           "mood_gt_ignore", "NuScenesParams", "NuScenesResult", "nuscenes_eval", "geodesic_angle",
           "canonicalize_rotation", "aligned_scale_iou", "same_group_pairs", "devkit_order"]

#: Mode names of :func:`evaluate_distance_view`.
DISTANCE_MODES = ("3dmood", "3dmood-compat", "nuscenes")

#: The cosine bound 3D-MOOD passes to ``so3_relative_angle``.
MOOD_COS_BOUND = 1e-2


# ---------------------------------------------------------------------------------------------------- geometry bits
def geodesic_angle(R_a: np.ndarray, R_b: np.ndarray, cos_bound: float = 0.0) -> np.ndarray:
    """SO(3) geodesic angle ``(N,)`` in [0, π] between rotations ``(N, 3, 3)``: arccos((trace(R_aᵀ R_b) − 1) / 2).

    ``cos_bound`` > 0 replaces arccos outside ``[−1 + cos_bound, 1 − cos_bound]`` by its linear extrapolation at the
    bound (pytorch3d ``so3_relative_angle``, as 3D-MOOD calls it with 1e-2); 0 (default) clips the cosine."""
    R_a = np.asarray(R_a, np.float64).reshape(-1, 3, 3)
    R_b = np.asarray(R_b, np.float64).reshape(-1, 3, 3)
    tr = np.einsum("nij,nij->n", R_a, R_b)  # trace(R_aᵀ R_b)
    c = (tr - 1.0) * 0.5
    if cos_bound > 0.0:
        b = 1.0 - cos_bound
        slope = -1.0 / np.sqrt(1.0 - b * b)
        inner = np.arccos(np.clip(c, -b, b))
        hi = np.arccos(b) + slope * (c - b)
        lo = np.arccos(-b) + slope * (c + b)
        return np.where(c > b, hi, np.where(c < -b, lo, inner))
    return np.arccos(np.clip(c, -1.0, 1.0))


def canonicalize_rotation(R: np.ndarray, dims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """WildDet3D canonical pose: rotations ``(N, 3, 3)`` and dims ``(N, 3)`` [w, h, l] describing the same boxes with
    w <= l (else ``R @ Ry(90°)`` and w, l swapped) and yaw (``yaw_of``) in [0, π) (else ``R @ Ry(180°)``)."""
    R = np.asarray(R, np.float64).reshape(-1, 3, 3)
    dims = np.asarray(dims, np.float64).reshape(-1, 3).copy()
    swap = dims[:, 0] > dims[:, 2]
    R = np.where(swap[:, None, None], R @ rotation_y(np.array([np.pi / 2]))[0], R)
    dims[swap] = dims[swap][:, [2, 1, 0]]
    yaw = yaw_of(R)
    flip = (yaw < 0.0) | (yaw >= np.pi)
    R = np.where(flip[:, None, None], R @ rotation_y(np.array([np.pi]))[0], R)
    return R, dims


def aligned_scale_iou(dims_a: np.ndarray, dims_b: np.ndarray) -> np.ndarray:
    """IoU ``(N,)`` of boxes with aligned centres and orientation: Π min(dims) / (V_a + V_b − Π min(dims))."""
    dims_a = np.asarray(dims_a, np.float64).reshape(-1, 3)
    dims_b = np.asarray(dims_b, np.float64).reshape(-1, 3)
    inter = np.prod(np.minimum(dims_a, dims_b), axis=1)
    union = np.prod(dims_a, axis=1) + np.prod(dims_b, axis=1) - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def _devkit_yaw_error(yaw_gt: np.ndarray, yaw_pred: np.ndarray, period: np.ndarray) -> np.ndarray:
    """|nuscenes-devkit ``angle_diff(yaw_gt, yaw_pred, period)``|, the same arithmetic, vectorised."""
    d = np.mod(yaw_gt - yaw_pred + period / 2, period) - period / 2
    d = np.where(d > np.pi, d - 2 * np.pi, d)
    return np.abs(d)


# ---------------------------------------------------------------------------------------------------- candidates
def same_group_pairs(gt_key: np.ndarray, pred_key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All (gt row, pred row) pairs with equal integer keys (e.g. image × category), vectorised; keys < 0 never pair.
    Sorted by pred row, then GT row."""
    gt_key = np.asarray(gt_key, np.int64)
    pred_key = np.asarray(pred_key, np.int64)
    gv = np.flatnonzero(gt_key >= 0)
    order = gv[np.argsort(gt_key[gv], kind="stable")]
    sk = gt_key[order]
    lo = np.searchsorted(sk, pred_key, "left")
    hi = np.searchsorted(sk, pred_key, "right")
    cnt = np.where(pred_key >= 0, hi - lo, 0)
    pp = np.repeat(np.arange(len(pred_key), dtype=np.int64), cnt)
    start = np.repeat(lo, cnt)
    offs = np.arange(len(pp), dtype=np.int64) - np.repeat(np.cumsum(cnt) - cnt, cnt)
    pg = order[start + offs] if len(pp) else np.zeros(0, np.int64)
    return pg.astype(np.int64), pp


@njit(cache=True)
def _greedy_nearest(det_order, indptr, cand_gt, cand_dist, cand_scale, thresholds, strict, n_gt, n_pred):
    """For each threshold t and each detection in ``det_order``: take the first candidate (candidates are pre-sorted
    by (GT ignored, distance, GT row)) whose GT is still free and ``dist <= t * scale`` (``<`` when ``strict``)."""
    n_thr = thresholds.shape[0]
    dt_match = np.full((n_thr, n_pred), -1, np.int64)
    taken = np.zeros(n_gt, np.bool_)
    for t in range(n_thr):
        taken[:] = False
        for i in range(det_order.shape[0]):
            d = det_order[i]
            for q in range(indptr[d], indptr[d + 1]):
                g = cand_gt[q]
                if taken[g]:
                    continue
                lim = thresholds[t] * cand_scale[q]
                ok = cand_dist[q] < lim if strict else cand_dist[q] <= lim
                if ok:
                    taken[g] = True
                    dt_match[t, d] = g
                    break
    return dt_match


@njit(cache=True)
def _greedy_mood(det_order, indptr, cand_gt, cand_dist, cand_ign, cand_radius, thresholds, n_gt, n_pred):
    """3D-MOOD's ``evaluateImg`` dist loop. Candidates of a detection are its GT in 3D-MOOD's order (non-ignored
    first, then file order). The limit starts at the ratio t; a GT is admissible when ``dist <= radius * limit``;
    each admissible GT becomes the match, records ``radius * limit`` (the ATE divisor) and sets the limit to its
    distance in metres; the scan stops at the first ignored GT once a non-ignored one is held."""
    n_thr = thresholds.shape[0]
    dt_match = np.full((n_thr, n_pred), -1, np.int64)
    dt_limit = np.ones((n_thr, n_pred))
    taken = np.zeros(n_gt, np.bool_)
    for t in range(n_thr):
        taken[:] = False
        for i in range(det_order.shape[0]):
            d = det_order[i]
            lim = thresholds[t]
            m = -1
            m_ign = False
            at = 1.0
            for q in range(indptr[d], indptr[d + 1]):
                g = cand_gt[q]
                if taken[g]:
                    continue
                if m > -1 and not m_ign and cand_ign[q]:
                    break
                if cand_dist[q] > cand_radius[q] * lim:
                    continue
                at = cand_radius[q] * lim
                lim = cand_dist[q]
                m = g
                m_ign = cand_ign[q]
            if m > -1:
                taken[m] = True
                dt_match[t, d] = m
                dt_limit[t, d] = at
    return dt_match, dt_limit


def _group_rank(grp: np.ndarray) -> np.ndarray:
    """Rank of each position within its group, in the given order."""
    srt = np.argsort(grp, kind="stable")
    g_sorted = grp[srt]
    first = np.r_[True, g_sorted[1:] != g_sorted[:-1]]
    start_idx = np.maximum.accumulate(np.where(first, np.arange(len(srt)), 0))
    rank = np.empty(len(grp), np.int64)
    rank[srt] = np.arange(len(srt)) - start_idx
    return rank


def _detection_order(pred_icode, pred_label, pred_score, max_dets: int | None, evaluated: np.ndarray) -> np.ndarray:
    """Evaluated detection rows in global (-score, image, row) order, truncated to ``max_dets`` per (image, label)."""
    ev = np.flatnonzero(evaluated)
    order = ev[np.lexsort((ev, pred_icode[ev], -pred_score[ev]))]
    if max_dets is None or len(order) == 0:
        return order
    grp = pred_icode[order] * (int(pred_label.max()) + 1) + pred_label[order]
    return order[_group_rank(grp) < max_dets]


def devkit_order(pred_icode, pred_score, evaluated) -> np.ndarray:
    """Evaluated rows in nuscenes-devkit ``accumulate`` order: descending score, equal scores in the reverse of record
    order. Record order is ``EvalBoxes.all`` of boxes added row by row: images in order of first appearance, rows in
    order within an image (the devkit sorts ``(score, index)`` pairs ascending and walks the list backwards)."""
    pred_icode = np.asarray(pred_icode, np.int64)
    n = len(pred_icode)
    first = np.full(int(pred_icode.max()) + 1 if n else 0, n, np.int64)
    np.minimum.at(first, pred_icode, np.arange(n, dtype=np.int64))
    position = np.empty(n, np.int64)
    position[np.lexsort((np.arange(n), first[pred_icode]))] = np.arange(n)
    ev = np.flatnonzero(evaluated)
    return ev[np.lexsort((-position[ev], -np.asarray(pred_score, np.float64)[ev]))]


def _candidates(gt_icode, gt_label, pred_icode, pred_label, det_order, n_cat):
    """All (gt row, pred row) pairs of the same image and label, for the detections in ``det_order``."""
    K = max(n_cat, 1)
    gkey = np.where(gt_label >= 0, gt_icode * K + gt_label, -1)
    in_order = np.zeros(len(pred_label), bool)
    in_order[det_order] = True
    pkey = np.where(in_order & (pred_label >= 0), pred_icode * K + pred_label, -1)
    return same_group_pairs(gkey, pkey)


def _csr(pp: np.ndarray, n_pred: int) -> np.ndarray:
    indptr = np.zeros(n_pred + 1, np.int64)
    np.cumsum(np.bincount(pp, minlength=n_pred), out=indptr[1:])
    return indptr


def _match(gt_icode, gt_label, gt_ignore, pred_icode, pred_label, det_order, n_cat, dist_fn, scale_g, thresholds,
           strict: bool, max_thr: float):
    """Candidate pairs of the same image and label within the loosest threshold, then greedy nearest matching.

    Returns ``dt_match (T, n_pred)``."""
    n_gt, n_pred = len(gt_label), len(pred_label)
    pg, pp = _candidates(gt_icode, gt_label, pred_icode, pred_label, det_order, n_cat)
    d = dist_fn(pg, pp)
    s = scale_g[pg]
    near = d < max_thr * s if strict else d <= max_thr * s
    pg, pp, d, s = pg[near], pp[near], d[near], s[near]
    o = np.lexsort((pg, d, gt_ignore[pg], pp))
    pg, pp, d, s = pg[o], pp[o], d[o], s[o]
    return _greedy_nearest(det_order.astype(np.int64), _csr(pp, n_pred), pg, d, s,
                           np.asarray(thresholds, np.float64), strict, max(n_gt, 1), n_pred)


# ---------------------------------------------------------------------------------------------------- 3D-MOOD
@dataclass(frozen=True)
class DistanceParams:
    """Parameters of the 3D-MOOD / WildDet3D centre-distance evaluation.

    Attributes:
        thresholds: ratios t of the GT radius (0.50:0.05:1.00, 11 values); each is capped at ``1 − 1e-10``.
        recall_thresholds: 101 recall sampling points.
        max_dets: detections kept per (image, category) after the score sort.
        depth_range: (lo, hi) inclusive range of the depth (centre z) for "all" (3D-MOOD: [0, 1e5]); GT outside are
            ignored, unmatched detections outside are ignored.
        cos_bound: None = the mode's own (0, exact clipped arccos; compat: 1e-2, pytorch3d's linear extrapolation
            as 3D-MOOD calls it); a number forces it.
        proximity: 3D-MOOD's ``eval_prox`` (on for Argoverse 2): pairs need a 2D IoU > ``proximity_thresh``;
            detections near no GT of their class (in an image with GT of that class) are ignored.
        compat: reproduce cvg/3D-MOOD's evaluator (mode "3dmood-compat"; module docstring).
    """

    thresholds: tuple = field(default_factory=lambda: tuple(np.linspace(0.5, 1.0, 11)))
    recall_thresholds: tuple = field(default_factory=lambda: tuple(np.linspace(0.0, 1.0, 101)))
    max_dets: int = 100
    depth_range: tuple = (0.0, 1e5)
    cos_bound: float | None = None
    proximity: bool = False
    proximity_thresh: float = 0.3
    compat: bool = False

    @property
    def angle_cos_bound(self) -> float:
        """The cosine bound in use."""
        if self.cos_bound is not None:
            return float(self.cos_bound)
        return MOOD_COS_BOUND if self.compat else 0.0


_ERR_NAMES = ("ATE", "AOE", "ASE", "AOE_sym", "AOE_canonical")


def _mean(a, *, skip_nan: bool) -> float:
    """Mean of ``a``; NaN entries skipped (or propagated); NaN for nothing to average (no warning)."""
    a = np.asarray(a, np.float64).reshape(-1)
    if skip_nan:
        a = a[~np.isnan(a)]
    return float(a.mean()) if a.size else float("nan")


@dataclass(frozen=True, eq=False)
class DistanceResult:
    """3D-MOOD / WildDet3D centre-distance evaluation.

    Attributes:
        precision: ``(T, R, K)`` interpolated precision (NaN for classes with no non-ignored GT).
        errors: name -> ``(T, R, K)`` TP error sampled at each recall point (ATE, AOE, ASE, AOE_sym,
            AOE_canonical), NaN where absent.
        recall: ``(T, K)`` final recall (NaN where absent).
        n_gt: ``(K,)`` non-ignored GT per class.
        n_pred: ``(K,)`` detections evaluated per class.
        dt_match: ``(T, n_pred)`` GT row matched at each threshold or -1.
        dt_ignore: ``(T, n_pred)`` bool, neutral at that threshold (matched an ignored GT, or unmatched and out of
            the depth range, or far from every GT under proximity).
        dt_errors: name -> ``(T, n_pred)`` per-detection errors (1 where unmatched).
        params: the :class:`DistanceParams`.
        vocabulary: class names, if given.
        base_classes: names of the base classes, if given (adds ``ODS_Base`` / ``ODS_Novel``).
    """

    precision: np.ndarray
    errors: dict
    recall: np.ndarray
    n_gt: np.ndarray
    n_pred: np.ndarray
    dt_match: np.ndarray
    dt_ignore: np.ndarray
    dt_errors: dict
    params: DistanceParams
    vocabulary: tuple | None = None
    base_classes: tuple | None = None

    @staticmethod
    def _nanmean(a) -> float:
        return _mean(a, skip_nan=True)

    @staticmethod
    def ods(ap: float, ate: float, aoe: float, ase: float) -> float:
        """ODS from AP as a fraction and errors in [0, 1]: (3·AP + (1−ATE) + (1−AOE) + (1−ASE)) / 6."""
        return (3.0 * ap + (1.0 - ate) + (1.0 - aoe) + (1.0 - ase)) / 6.0

    def _names(self) -> list[str]:
        K = self.precision.shape[2]
        return list(self.vocabulary) if self.vocabulary is not None else [str(k) for k in range(K)]

    def _class_ods(self, aoe: str) -> np.ndarray:
        """Per-class ODS (fraction) with the given orientation error; NaN for absent classes."""
        K = self.precision.shape[2]
        out = np.full(K, np.nan)
        for k in range(K):
            ap = self._nanmean(self.precision[:, :, k])
            e = {n: self._nanmean(self.errors[n][:, :, k]) for n in ("ATE", "ASE", aoe)}
            out[k] = self.ods(ap, e["ATE"], e[aoe], e["ASE"])
        return out

    def _base_novel(self, aoe: str) -> tuple[float, float]:
        """Mean per-class ODS over base and over the other classes: absent classes skipped, or (compat) ``np.mean``
        as 3D-MOOD (one absent class makes the figure NaN)."""
        ods = self._class_ods(aoe)
        base = np.isin(np.array(self._names(), object), np.array(self.base_classes or (), object))
        return (_mean(ods[base], skip_nan=not self.params.compat),
                _mean(ods[~base], skip_nan=not self.params.compat))

    def summary(self) -> dict[str, float]:
        """AP and ODS variants in percent, mean TP errors as fractions in [0, 1]."""
        ap = self._nanmean(self.precision)
        e = {k: self._nanmean(v) for k, v in self.errors.items()}
        out = {"AP": 100 * ap, "mATE": e["ATE"], "mAOE": e["AOE"], "mASE": e["ASE"],
               "ODS": 100 * self.ods(ap, e["ATE"], e["AOE"], e["ASE"]),
               "mAOE_sym": e["AOE_sym"], "ODS_sym": 100 * self.ods(ap, e["ATE"], e["AOE_sym"], e["ASE"]),
               "mAOE_canonical": e["AOE_canonical"],
               "ODS_canonical": 100 * self.ods(ap, e["ATE"], e["AOE_canonical"], e["ASE"])}
        if self.base_classes is not None:
            for key, aoe in (("ODS", "AOE"), ("ODS_canonical", "AOE_canonical")):
                b, n = self._base_novel(aoe)
                out[f"{key}_Base"], out[f"{key}_Novel"] = 100 * b, 100 * n
        return out

    def mood_summary(self, flavour: str = "3dmood") -> dict[str, float]:
        """The score dict of 3D-MOOD's ``Detect3DEvaluator.evaluate`` (``flavour="3dmood"``) or WildDet3D's
        (``"wilddet3d"``: AOE_Sym / AOE_Canonical / ODS_Sym / ODS_Canonical added, base/novel on ODS_Canonical):
        fractions, not percent; every entry 0.0 when there was no prediction at all, as there."""
        if flavour not in ("3dmood", "wilddet3d"):
            raise ValueError(f"flavour: expected '3dmood' or 'wilddet3d', got {flavour!r}")
        main = "ODS" if flavour == "3dmood" else "ODS_Canonical"
        keys = ["AP", "ATE", "ASE", "AOE", "ODS"]
        if flavour == "wilddet3d":
            keys = ["AP", "ATE", "ASE", "AOE", "AOE_Sym", "AOE_Canonical", "ODS", "ODS_Sym", "ODS_Canonical"]
        if self.base_classes is not None:
            keys += [f"{main}_Base", f"{main}_Novel"]
        if self.dt_match.shape[1] == 0:
            return dict.fromkeys(keys, 0.0)
        s = self.summary()
        out = {"AP": s["AP"] / 100, "ATE": s["mATE"], "ASE": s["mASE"], "AOE": s["mAOE"], "ODS": s["ODS"] / 100,
               "AOE_Sym": s["mAOE_sym"], "AOE_Canonical": s["mAOE_canonical"], "ODS_Sym": s["ODS_sym"] / 100,
               "ODS_Canonical": s["ODS_canonical"] / 100}
        if self.base_classes is not None:
            b, n = self._base_novel("AOE" if flavour == "3dmood" else "AOE_canonical")
            out[f"{main}_Base"], out[f"{main}_Novel"] = b, n
        return {k: out[k] for k in keys}

    def per_category(self) -> pd.DataFrame:
        """One row per class: n_gt, n_pred, AP (%), ATE, AOE, ASE, ODS (%), AOE_canonical, ODS_canonical (%)."""
        K = self.precision.shape[2]
        names = self._names()
        rows = []
        for k in range(K):
            ap = self._nanmean(self.precision[:, :, k])
            e = {n: self._nanmean(v[:, :, k]) for n, v in self.errors.items()}
            rows.append({"category": names[k], "n_gt": int(self.n_gt[k]), "n_pred": int(self.n_pred[k]),
                         "AP": 100 * ap, "ATE": e["ATE"], "AOE": e["AOE"], "ASE": e["ASE"],
                         "ODS": 100 * self.ods(ap, e["ATE"], e["AOE"], e["ASE"]),
                         "AOE_canonical": e["AOE_canonical"],
                         "ODS_canonical": 100 * self.ods(ap, e["ATE"], e["AOE_canonical"], e["ASE"])})
        return pd.DataFrame(rows)

    def per_threshold(self) -> pd.DataFrame:
        """One row per distance ratio: AP (%), mATE, mAOE, mASE over classes and recall points."""
        thr = np.asarray(self.params.thresholds)
        return pd.DataFrame({"threshold": thr,
                             "AP": [100 * self._nanmean(self.precision[t]) for t in range(len(thr))],
                             "mATE": [self._nanmean(self.errors["ATE"][t]) for t in range(len(thr))],
                             "mAOE": [self._nanmean(self.errors["AOE"][t]) for t in range(len(thr))],
                             "mASE": [self._nanmean(self.errors["ASE"][t]) for t in range(len(thr))]})


def _prep(gt_image, gt_label, gt_ignore, gt_center, gt_dims, gt_R, pred_image, pred_label, pred_score, pred_center,
          pred_dims, pred_R):
    f64 = np.float64
    out = dict(
        gt_label=np.asarray(gt_label, np.int64).reshape(-1), gt_ignore=np.asarray(gt_ignore, bool).reshape(-1),
        gt_center=np.asarray(gt_center, f64).reshape(-1, 3), gt_dims=np.asarray(gt_dims, f64).reshape(-1, 3),
        gt_R=np.asarray(gt_R, f64).reshape(-1, 3, 3),
        pred_label=np.asarray(pred_label, np.int64).reshape(-1), pred_score=np.asarray(pred_score, f64).reshape(-1),
        pred_center=np.asarray(pred_center, f64).reshape(-1, 3), pred_dims=np.asarray(pred_dims, f64).reshape(-1, 3),
        pred_R=np.asarray(pred_R, f64).reshape(-1, 3, 3))
    n_gt, n_pred = len(out["gt_label"]), len(out["pred_label"])
    for k, v in out.items():
        n = n_gt if k.startswith("gt") else n_pred
        if len(v) != n:
            raise ValueError(f"distance evaluation: expected `{k}` of length {n}, got {len(v)}")
    gi, pi, _ = dense_image_keys(np.asarray(gt_image), np.asarray(pred_image))
    out["gt_icode"], out["pred_icode"] = gi, pi
    return out


def _n_classes(n_categories, vocabulary) -> int:
    K = int(n_categories)
    if vocabulary is not None and len(vocabulary) != K:
        raise ValueError(f"distance evaluation: expected a vocabulary of {K} names, got {len(vocabulary)}")
    return K


def _sample_curves(order_k, tp, fp, errs, npig, rec_thrs):
    """COCO accumulation for one class and all thresholds: precision (T, R) and sampled errors name -> (T, R)."""
    T = tp.shape[0]
    R = len(rec_thrs)
    prec = np.zeros((T, R))
    samp = {n: np.ones((T, R)) for n in errs}
    rec_final = np.zeros(T)
    nd = len(order_k)
    if nd == 0:
        return prec, samp, rec_final
    tps = np.cumsum(tp[:, order_k], axis=1).astype(np.float64)
    fps = np.cumsum(fp[:, order_k], axis=1).astype(np.float64)
    rc = tps / npig
    pr = tps / (tps + fps + np.spacing(1))
    pr = np.maximum.accumulate(pr[:, ::-1], axis=1)[:, ::-1]
    rec_final = rc[:, -1]
    for t in range(T):
        inds = np.searchsorted(rc[t], rec_thrs, side="left")
        ok = inds < nd
        prec[t, ok] = pr[t, inds[ok]]
        for n, e in errs.items():
            samp[n][t, ok] = e[t, order_k[inds[ok]]]
    return prec, samp, rec_final


def _box2d(x, n: int, what: str) -> np.ndarray:
    if x is None:
        raise ValueError(f"distance evaluation: proximity needs `{what}` (XYXY 2D boxes)")
    b = np.asarray(x, np.float64).reshape(-1, 4)
    if len(b) != n:
        raise ValueError(f"distance evaluation: expected `{what}` of length {n}, got {len(b)}")
    return b


def _mood_match(a, gt_ign, det_order, K, radius, thr, p: DistanceParams, gt_box2d, pred_box2d):
    """Matching of both 3D-MOOD modes: ``dt_match (T, n_pred)``, the ATE divisor ``(T, n_pred)`` and the detections
    that proximity evaluation ignores ``(n_pred,)``."""
    n_gt, n_pred = len(a["gt_label"]), len(a["pred_label"])
    T = len(thr)
    pg, pp = _candidates(a["gt_icode"], a["gt_label"], a["pred_icode"], a["pred_label"], det_order, K)
    far = np.zeros(n_pred, bool)
    if p.proximity:
        near2d = paired_iou_2d(_box2d(gt_box2d, n_gt, "gt_box2d"), _box2d(pred_box2d, n_pred, "pred_box2d"),
                               pg, pp) > p.proximity_thresh
        has_gt = np.bincount(pp, minlength=n_pred) > 0
        far = has_gt & (np.bincount(pp[near2d], minlength=n_pred) == 0)
        pg, pp = pg[near2d], pp[near2d]
    d = np.linalg.norm(a["pred_center"][pp] - a["gt_center"][pg], axis=1)
    r = radius[pg]
    order = det_order.astype(np.int64)
    if p.compat:
        o = np.lexsort((pg, gt_ign[pg], pp))  # 3D-MOOD: GT ignored last, else file order
        pg, pp, d, r = pg[o], pp[o], d[o], r[o]
        dt_match, limit = _greedy_mood(order, _csr(pp, n_pred), pg, d, gt_ign[pg], r, thr, max(n_gt, 1), n_pred)
        return dt_match, limit, far
    near = d <= (float(thr.max()) if T else 0.0) * r
    pg, pp, d, r = pg[near], pp[near], d[near], r[near]
    o = np.lexsort((pg, d, gt_ign[pg], pp))
    pg, pp, d, r = pg[o], pp[o], d[o], r[o]
    dt_match = _greedy_nearest(order, _csr(pp, n_pred), pg, d, r, thr, False, max(n_gt, 1), n_pred)
    matched = dt_match >= 0
    limit = np.where(matched, radius[np.maximum(dt_match, 0)] * thr[:, None], 1.0)
    return dt_match, limit, far


def center_distance_eval(gt_image, gt_label, gt_ignore, gt_center, gt_dims, gt_R, pred_image, pred_label,
                         pred_score, pred_center, pred_dims, pred_R, *, n_categories: int,
                         params: DistanceParams | None = None, vocabulary=None, gt_box2d=None, pred_box2d=None,
                         gt_id=None, base_classes=None) -> DistanceResult:
    """3D-MOOD / WildDet3D centre-distance AP, TP errors and ODS (module docstring has the rules).

    Args:
        gt_image, pred_image: image keys ``(N,)`` (or ``(N, 2)`` composites).
        gt_label, pred_label: int codes in [0, n_categories); -1 = not evaluated.
        gt_ignore: ``(n_gt,)`` bool, ignored GT (neutral).
        gt_center, pred_center: ``(N, 3)`` camera-frame centres (m); dims ``(N, 3)`` [w, h, l]; R ``(N, 3, 3)``.
        pred_score: ``(n_pred,)`` confidences.
        n_categories: K.
        params: :class:`DistanceParams` (``compat=True`` for 3D-MOOD's own evaluator).
        vocabulary: optional class names for the tables.
        gt_box2d, pred_box2d: XYXY 2D boxes, needed with ``params.proximity``.
        gt_id: GT annotation ids; in compat mode a match to a GT with id 0 does not count (3D-MOOD tests ``dtm``,
            which holds the GT id, for truth).
        base_classes: base class names for ``ODS_Base`` / ``ODS_Novel`` (the rest of the vocabulary is novel).
    """
    p = params or DistanceParams()
    a = _prep(gt_image, gt_label, gt_ignore, gt_center, gt_dims, gt_R, pred_image, pred_label, pred_score,
              pred_center, pred_dims, pred_R)
    K = _n_classes(n_categories, vocabulary)
    n_gt, n_pred = len(a["gt_label"]), len(a["pred_label"])
    lo, hi = p.depth_range
    gz, pz = a["gt_center"][:, 2], a["pred_center"][:, 2]
    gt_ign = a["gt_ignore"] | (gz < lo) | (gz > hi)
    pred_out = (pz < lo) | (pz > hi)
    thr = np.minimum(np.asarray(p.thresholds, np.float64), 1.0 - 1e-10)
    T = len(thr)
    det_order = _detection_order(a["pred_icode"], a["pred_label"], a["pred_score"], p.max_dets,
                                 a["pred_label"] >= 0)
    radius = np.linalg.norm(a["gt_dims"], axis=1) / 2.0
    gc, pc = a["gt_center"], a["pred_center"]
    dt_match, limit, far = _mood_match(a, gt_ign, det_order, K, radius, thr, p, gt_box2d, pred_box2d)
    matched = dt_match >= 0
    g = np.where(matched, dt_match, 0)
    counted = matched
    if p.compat and gt_id is not None:
        gid = np.asarray(gt_id).reshape(-1)
        if len(gid) != n_gt:
            raise ValueError(f"distance evaluation: expected `gt_id` of length {n_gt}, got {len(gid)}")
        counted = matched & (gid[g] != 0)
    # 3D-MOOD: dtIg = gtIg[match]; unmatched (dtm == 0) and out of the depth range; far under proximity
    dt_ignore = np.where(matched, gt_ign[g], False) | (~counted & pred_out[None, :]) | far[None, :]

    # per-detection errors (T, n_pred); 1 where unmatched
    cos_bound = p.angle_cos_bound
    errs = {n: np.ones((T, n_pred)) for n in _ERR_NAMES}
    tt, dd = np.nonzero(matched)
    if len(dd):
        gg = dt_match[tt, dd]
        dist = np.linalg.norm(pc[dd] - gc[gg], axis=1)
        errs["ATE"][tt, dd] = dist / limit[tt, dd]
        ang = geodesic_angle(a["pred_R"][dd], a["gt_R"][gg], cos_bound)
        errs["AOE"][tt, dd] = ang / np.pi
        errs["AOE_sym"][tt, dd] = np.minimum(ang, np.pi - ang) / (np.pi / 2)
        Rd, _ = canonicalize_rotation(a["pred_R"][dd], a["pred_dims"][dd])
        Rg, _ = canonicalize_rotation(a["gt_R"][gg], a["gt_dims"][gg])
        errs["AOE_canonical"][tt, dd] = geodesic_angle(Rd, Rg, cos_bound) / np.pi
        errs["ASE"][tt, dd] = 1.0 - aligned_scale_iou(a["pred_dims"][dd], a["gt_dims"][gg])

    in_order = np.zeros(n_pred, bool)
    in_order[det_order] = True
    tp = counted & ~dt_ignore & in_order[None, :]
    fp = ~counted & ~dt_ignore & in_order[None, :]
    rec_thrs = np.asarray(p.recall_thresholds, np.float64)
    R = len(rec_thrs)
    precision = np.full((T, R, K), np.nan)
    errors = {n: np.full((T, R, K), np.nan) for n in _ERR_NAMES}
    recall = np.full((T, K), np.nan)
    gvalid = a["gt_label"] >= 0
    n_gt_k = np.bincount(a["gt_label"][gvalid & ~gt_ign], minlength=K)[:K]
    lab_order = a["pred_label"][det_order]
    n_pred_k = np.bincount(lab_order, minlength=K)[:K]
    for k in range(K):
        if n_gt_k[k] == 0:
            continue
        order_k = det_order[lab_order == k]
        pr, samp, rec = _sample_curves(order_k, tp, fp, errs, n_gt_k[k], rec_thrs)
        precision[:, :, k] = pr
        recall[:, k] = rec
        for n in _ERR_NAMES:
            errors[n][:, :, k] = samp[n]
    return DistanceResult(precision=precision, errors=errors, recall=recall, n_gt=n_gt_k.astype(np.int64),
                          n_pred=n_pred_k.astype(np.int64), dt_match=dt_match, dt_ignore=dt_ignore & in_order,
                          dt_errors=errs, params=p, vocabulary=None if vocabulary is None else tuple(vocabulary),
                          base_classes=None if base_classes is None else tuple(base_classes))


def mood_gt_ignore(gt, image_height, *, min_height_thres: float = 0.0625, max_height_thres: float = 1.50,
                   truncation_thres: float = 0.33333333, visibility_thres: float = 0.33333333,
                   ignore_names=("dontcare", "ignore", "void")) -> np.ndarray:
    """The GT ignore flag 3D-MOOD's evaluator uses, from a GT ``BoxSet`` made by our Omni3D loader.

    3D-MOOD's evaluator reads each annotation's ``ignore3D``, which its ``COCO3D`` loader always overwrites with its
    own copy of Omni3D's ``is_ignore`` (an ``ignore3D`` stored in the file is never used). That copy takes the 2D
    height from the evaluation box (trunc, else proj if ``proj[0] != -1``, else tight: ``gt.box2d``) where Omni3D
    (and our loader) take ``bbox2D_proj`` whenever the key exists, even all −1. The other rules are the same, so the
    flag is ours with the height rule re-evaluated on ``gt.box2d``. ``image_height``: per GT row."""
    ign = np.asarray(gt.ignore, bool)
    data = gt.data
    if "ignore_reason" not in data:
        return ign.copy()
    H = np.asarray(image_height, np.float64).reshape(-1)
    if len(H) != len(ign):
        raise ValueError(f"mood_gt_ignore: expected `image_height` of length {len(ign)}, got {len(H)}")
    reason = np.asarray(data["ignore_reason"], object)
    box = np.asarray(gt.box2d, np.float64)
    h = box[:, 3] - box[:, 1]
    height_rule = (h <= min_height_thres * H) | (h >= max_height_thres * H)
    height_first = np.isin(reason, np.array(["min_height", "max_height"], object))
    trunc, vis = np.asarray(data["truncation"], np.float64), np.asarray(data["visibility"], np.float64)
    later = (((trunc >= 0) & (trunc >= truncation_thres)) | ((vis >= 0) & (vis <= visibility_thres))
             | np.isin(np.asarray(gt.category, object), np.array(list(ignore_names), object)))
    return (ign & ~height_first) | height_rule | (height_first & later)


def evaluate_distance_view(gt, pred, view, *, params=None, mode: str = "3dmood", gt_label=None, gt_ignore=None,
                           proximity: bool | None = None, base_classes=None, image_height=None):
    """Centre-distance evaluation of a label view in one of :data:`DISTANCE_MODES`: "3dmood" / "3dmood-compat"
    (:func:`center_distance_eval`) or "nuscenes" (:func:`nuscenes_eval`). ``gt``/``pred`` are ``BoxSet``s, ``view`` a
    ``LabelView`` over ``pred``; GT codes default to ``gt.category`` coded in ``view.vocabulary``.

    ``proximity`` (3D-MOOD modes; None: ``params.proximity``) switches proximity evaluation on (the dataset's
    ``proximity`` flag; 3D-MOOD uses it for Argoverse 2). ``base_classes`` adds ODS_Base / ODS_Novel.
    ``image_height`` (per GT row) lets "3dmood-compat" use 3D-MOOD's own GT ignore flag (:func:`mood_gt_ignore`);
    without it ``gt.ignore`` is used. An explicit ``gt_ignore`` always wins."""
    if mode not in DISTANCE_MODES:
        raise ValueError(f"mode: expected one of {', '.join(DISTANCE_MODES)}, got {mode!r}")
    gl = gt_codes(gt.category, view.vocabulary) if gt_label is None else np.asarray(gt_label, np.int64)
    if gt_ignore is not None:
        gi = np.asarray(gt_ignore, bool)
    elif mode == "3dmood-compat" and image_height is not None:
        gi = mood_gt_ignore(gt, image_height)
    else:
        gi = gt.ignore
    args = (gt.image_id, gl, gi, gt.center, gt.dims, gt.R, pred.image_id, view.codes, view.score, pred.center,
            pred.dims, pred.R)
    if mode == "nuscenes":
        return nuscenes_eval(*args, n_categories=view.n_categories, params=params, vocabulary=view.vocabulary)
    p = replace(params or DistanceParams(), compat=mode == "3dmood-compat")
    if proximity is not None:
        p = replace(p, proximity=bool(proximity))
    return center_distance_eval(*args, n_categories=view.n_categories, params=p, vocabulary=view.vocabulary,
                                gt_box2d=gt.box2d, pred_box2d=pred.box2d, gt_id=gt.record, base_classes=base_classes)


# ---------------------------------------------------------------------------------------------------- nuScenes
@dataclass(frozen=True)
class NuScenesParams:
    """nuScenes ``detection_cvpr_2019`` constants (reference §2), adapted to the camera frame (BEV = x, z).

    Attributes:
        dist_ths: BEV centre-distance thresholds (m), strict ``<``.
        dist_th_tp: the threshold whose matches give the TP errors.
        min_recall, min_precision: AP / TP-error normalisation.
        n_recall: recall sampling points (101).
        orientation_period: class name -> yaw period (rad) for AOE; default 2π (nuScenes: π for barrier).
        orientation_nan: class names whose AOE is NaN (nuScenes: traffic cone).
        class_range: optional class name -> max BEV distance from the camera (m); GT and detections beyond are
            removed (nuScenes' pre-filter, ego distance there). None: no filter.
        score_absent_classes: a class with no non-ignored GT scores AP 0 and TP errors 1 and enters the means, as
            in the devkit (whose 10 classes are always present); False (default): absent (NaN), left out.
    """

    dist_ths: tuple = (0.5, 1.0, 2.0, 4.0)
    dist_th_tp: float = 2.0
    min_recall: float = 0.1
    min_precision: float = 0.1
    n_recall: int = 101
    orientation_period: dict = field(default_factory=lambda: {"barrier": np.pi})
    orientation_nan: tuple = ("traffic cone", "traffic_cone")
    class_range: dict | None = None
    score_absent_classes: bool = False


@dataclass(frozen=True, eq=False)
class NuScenesResult:
    """nuScenes-style evaluation.

    Attributes:
        ap: ``(D, K)`` AP per distance threshold and class (fraction; NaN where the class is absent).
        tp_errors: ``DataFrame`` per class: ATE (m), ASE, AOE (rad) (NaN where absent or not defined).
        precision: ``(D, 101, K)`` interpolated precision.
        n_gt: ``(K,)``.
        params, vocabulary.
    """

    ap: np.ndarray
    tp_errors: pd.DataFrame
    precision: np.ndarray
    n_gt: np.ndarray
    params: NuScenesParams
    vocabulary: tuple | None = None

    def per_category(self) -> pd.DataFrame:
        df = self.tp_errors.copy()
        df.insert(2, "AP", 100 * self.ap.mean(axis=0))
        for i, d in enumerate(self.params.dist_ths):
            df[f"AP@{d:g}m"] = 100 * self.ap[i]
        return df

    def summary(self) -> dict[str, float]:
        """mAP (%), mATE (m), mASE, mAOE (rad) and the NDS-style score (%) (5·mAP + Σ max(0, 1 − mTP)) / 8."""
        scored = ~np.isnan(self.ap).all(axis=0)
        if not scored.any():
            return {"mAP": float("nan"), "mATE": float("nan"), "mASE": float("nan"), "mAOE": float("nan"),
                    "NDS": float("nan")}
        m_ap = float(np.mean(self.ap[:, scored].mean(axis=0)))
        tp = {n: _mean(self.tp_errors[n].to_numpy()[scored], skip_nan=True) for n in ("ATE", "ASE", "AOE")}
        tp_scores = [max(0.0, 1.0 - tp[n]) if not np.isnan(tp[n]) else 0.0 for n in ("ATE", "ASE", "AOE")]
        nds = (5.0 * m_ap + sum(tp_scores)) / (5.0 + 3.0)
        return {"mAP": 100 * m_ap, "mATE": tp["ATE"], "mASE": tp["ASE"], "mAOE": tp["AOE"], "NDS": 100 * nds}


def _cummean(x: np.ndarray) -> np.ndarray:
    """nuscenes-devkit ``cummean``: NaN-aware running mean; all NaN -> ones."""
    if np.isnan(x).all():
        return np.ones(len(x))
    s = np.nancumsum(x.astype(float))
    c = np.cumsum(~np.isnan(x))
    return np.divide(s, c, out=np.zeros_like(s), where=c != 0)


def _nusc_accumulate(o, m, npos: int, score, rec_interp, err_of=None) -> dict | None:
    """nuscenes-devkit ``accumulate`` for one class at one threshold. ``o``: the class's detections in devkit order
    (neutral ones removed), ``m``: their GT row or -1. None where nothing matched (``no_predictions``)."""
    is_tp = m >= 0
    if not is_tp.any():
        return None
    tp = np.cumsum(is_tp).astype(float)
    fp = np.cumsum(~is_tp).astype(float)
    rec = tp / float(npos)
    out = {"precision": np.interp(rec_interp, rec, tp / (fp + tp), right=0),
           "confidence": np.interp(rec_interp, rec, score[o], right=0)}
    if err_of is not None:
        conf_tp = score[o[is_tp]]
        for name, v in err_of(o[is_tp], m[is_tp]).items():
            out[name] = np.interp(out["confidence"][::-1], conf_tp[::-1], _cummean(v)[::-1])[::-1]
    return out


def _calc_ap(md: dict | None, min_recall: float, min_precision: float, n_rec: int) -> float:
    """nuscenes-devkit ``calc_ap``."""
    prec = np.zeros(n_rec) if md is None else md["precision"].copy()
    prec = prec[round(100 * min_recall) + 1:] - min_precision
    prec[prec < 0] = 0
    return float(np.mean(prec)) / (1.0 - min_precision)


def _calc_tp(md: dict | None, min_recall: float, name: str) -> float:
    """nuscenes-devkit ``calc_tp`` (1.0 when the max recall bin is below ``min_recall``)."""
    first = round(100 * min_recall) + 1
    if md is None:
        return 1.0
    nz = np.flatnonzero(md["confidence"])
    last = int(nz[-1]) if len(nz) else 0
    return 1.0 if last < first else float(np.mean(md[name][first:last + 1]))


def nuscenes_eval(gt_image, gt_label, gt_ignore, gt_center, gt_dims, gt_R, pred_image, pred_label, pred_score,
                  pred_center, pred_dims, pred_R, *, n_categories: int, params: NuScenesParams | None = None,
                  vocabulary=None) -> NuScenesResult:
    """nuScenes-style BEV centre-distance AP, TP errors and NDS-style score (module docstring has the rules)."""
    p = params or NuScenesParams()
    a = _prep(gt_image, gt_label, gt_ignore, gt_center, gt_dims, gt_R, pred_image, pred_label, pred_score,
              pred_center, pred_dims, pred_R)
    K = _n_classes(n_categories, vocabulary)
    names = list(vocabulary) if vocabulary is not None else [str(k) for k in range(K)]
    gl, pl = a["gt_label"].copy(), a["pred_label"].copy()
    gc, pc = a["gt_center"], a["pred_center"]
    if p.class_range:
        rng = np.array([p.class_range.get(n, np.inf) for n in names] + [np.inf])
        gl[np.hypot(gc[:, 0], gc[:, 2]) > rng[gl]] = -1
        pl[np.hypot(pc[:, 0], pc[:, 2]) > rng[pl]] = -1
    gt_ign = a["gt_ignore"]
    score = a["pred_score"]
    det_order = devkit_order(a["pred_icode"], score, pl >= 0)
    ths = np.asarray(p.dist_ths, np.float64)
    all_ths = np.unique(np.r_[ths, p.dist_th_tp])

    def bev(pg, pp):  # devkit center_distance: xy there, (x, z) of the camera frame here
        dx, dz = pc[pp, 0] - gc[pg, 0], pc[pp, 2] - gc[pg, 2]
        return np.sqrt(dx * dx + dz * dz)

    dt_match = _match(a["gt_icode"], gl, gt_ign, a["pred_icode"], pl, det_order, K, bev, np.ones(len(gl)),
                      all_ths, True, float(all_ths.max()))
    n_rec = int(p.n_recall)
    rec_interp = np.linspace(0, 1, n_rec)
    n_gt_k = np.bincount(gl[(gl >= 0) & ~gt_ign], minlength=K)[:K]
    lab_order = pl[det_order]
    ap = np.full((len(ths), K), np.nan)
    precision = np.full((len(ths), n_rec, K), np.nan)
    t_tp = int(np.flatnonzero(np.isclose(all_ths, p.dist_th_tp))[0])
    # BEV yaw as the devkit's quaternion_yaw would see it: camera (x, y, z) -> (x, z, -y) turns Ry(θ) into Rz(-θ)
    yaw_p, yaw_g = -yaw_of(a["pred_R"]), -yaw_of(a["gt_R"])
    rows = []
    for k in range(K):
        row = {"category": names[k], "n_gt": int(n_gt_k[k]), "ATE": np.nan, "ASE": np.nan, "AOE": np.nan}
        rows.append(row)
        if n_gt_k[k] == 0 and not p.score_absent_classes:
            continue
        order_k = det_order[lab_order == k]
        period = p.orientation_period.get(names[k], 2 * np.pi)

        def err_of(d_tp, g_tp, period=period):
            return {"ATE": bev(g_tp, d_tp),
                    "ASE": 1.0 - aligned_scale_iou(a["pred_dims"][d_tp], a["gt_dims"][g_tp]),
                    "AOE": _devkit_yaw_error(yaw_g[g_tp], yaw_p[d_tp], period)}

        def curve(t, order_k=order_k, npos=int(n_gt_k[k]), errors=None):
            if npos == 0:  # scored as absent: the devkit's no_predictions
                return None
            m = dt_match[t, order_k]
            keep = ~((m >= 0) & gt_ign[np.maximum(m, 0)])  # neutral: matched an ignored GT
            return _nusc_accumulate(order_k[keep], m[keep], npos, score, rec_interp, errors)

        for i, th in enumerate(ths):
            md = curve(int(np.flatnonzero(np.isclose(all_ths, th))[0]))
            precision[i, :, k] = 0.0 if md is None else md["precision"]
            ap[i, k] = _calc_ap(md, p.min_recall, p.min_precision, n_rec)
        md = curve(t_tp, errors=err_of)
        for n in ("ATE", "ASE", "AOE"):
            row[n] = np.nan if (n == "AOE" and names[k] in p.orientation_nan) else _calc_tp(md, p.min_recall, n)
    tp_df = pd.DataFrame(rows, columns=["category", "n_gt", "ATE", "ASE", "AOE"])
    return NuScenesResult(ap=ap, tp_errors=tp_df, precision=precision, n_gt=n_gt_k.astype(np.int64), params=p,
                          vocabulary=None if vocabulary is None else tuple(vocabulary))
