"""TIDE-style 3D error attribution and monocular oracles, as pure functions of the cached pairs and a label view.

**3D TIDE** (:func:`tide_3d`; TIDE = dbolya/tide ``tidecv`` v1.0.1, ``reference/dashboard_anchors.md`` §2).
Matching runs once at the foreground threshold ``fg`` (default 3D IoU 0.25) with the evaluator's Omni3D greedy
matching. Every evaluated false positive at ``fg`` is binned by the first rule that holds, in TIDE's order, using the
class-agnostic pair IoUs with the evaluated, non-ignored GT of its image:

1. ``loc``  — same class, ``bg <= max same-class IoU < fg`` (that GT is the one it points to);
2. ``cls``  — other class, ``max other-class IoU >= fg`` (split into ``cls_within`` / ``cls_across``
   super-category, ``ov3d_core.taxonomy.super_category``; two "other" classes count as *across*);
3. ``dupe`` — same class, ``IoU >= fg`` with a GT already matched (by a higher-scoring detection, greedy order);
4. ``bkg``  — ``IoU < bg`` with every GT (or the image has none);
5. ``both`` — anything else (wrong class and ``bg <= IoU < fg``).

A GT is ``missed`` when it is evaluated, not ignored, not matched at ``fg``, and not *usable*: no ``loc``/``cls``
error points to it while it is unmatched (TIDE's ``usable`` flag). Intervals are half-open as in the brief
(TIDE's own code uses ``bg <= IoU <= fg`` for Loc and ``IoU <= bg`` for Bkg; this only differs at exact ties).

Fix-one-bin (TIDE's ``fix_main_errors``, non-progressive): for each bin, only that bin's errors are fixed on copies of
the evaluation arrays and mAP_3D (the Omni3D mean over ``params.iou_thresholds`` in the "all" range) is recomputed
with :func:`ov3d_core.eval.ap.evaluate_ap`; ``delta_ap = max(fixed − base, 0)`` (TIDE clips negatives;
``delta_ap_raw`` keeps the sign).

- ``loc`` / ``cls`` (TIDE ``BestGTMatch``): among all loc and cls errors pointing to one *unmatched* GT only the
  highest-scoring one is fixed, the others — and any pointing to an already matched GT — are suppressed.
  ``loc`` fix: that pair's IoU is set to 1 (the box becomes the GT's box; no geometry is recomputed).
  ``cls`` fix: the detection is relabelled to the GT's class (pair IoUs unchanged).
- ``dupe``, ``bkg``, ``both``: the detections are suppressed (label −1).
- ``missed``: TIDE lowers the positive count; here the missed GT are flagged ignored, which removes them from the
  positives and leaves every detection's status at ``fg`` unchanged (a detection that overlaps one at a looser
  threshold becomes neutral there).
- special (TIDE): ``false_pos`` suppresses every false positive at ``fg``; ``false_neg`` ignores every GT unmatched at
  ``fg``.

Because fixes are applied to arrays and the full multi-threshold evaluation is re-run, a fixed detection is a TP at
every threshold where greedy matching gives it that GT. **The bins are computed independently and do not sum to the
gap between the base mAP and 100.**

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

from ov3d_core.eval.ap import APInputs, APParams, evaluate_ap
from ov3d_core.geometry.boxes import corners_from_pose
from ov3d_core.taxonomy import OTHER, super_category

__all__ = ["TIDE_BINS", "TideResult", "tide_3d", "tide_3d_view", "OracleResult", "monocular_oracles",
           "monocular_oracles_view", "evaluate_inputs", "map3d"]

#: Main bins in TIDE's test order, then the classification split and the special errors.
TIDE_BINS = ("cls", "loc", "both", "dupe", "bkg", "missed")
_SUB_BINS = ("cls_within", "cls_across")
_SPECIAL = ("false_pos", "false_neg")

BINS_DO_NOT_SUM = ("Each bin's delta_ap fixes only that bin (TIDE, non-progressive); the bins overlap in effect and "
                   "do not sum to the gap between the base mAP and 100.")


# ---------------------------------------------------------------------------------------------------- evaluation
def evaluate_inputs(inputs: APInputs, *, n_categories: int, params: APParams | None = None,
                    return_matches: bool = False):
    """:func:`~ov3d_core.eval.ap.evaluate_ap` on an :class:`~ov3d_core.eval.ap.APInputs` bundle."""
    params = params or APParams()
    if inputs.proximity is not None:
        params = params.with_(proximity=bool(inputs.proximity))
    return evaluate_ap(**inputs.arrays(), n_categories=n_categories, params=params, pair_iou2d=inputs.pair_iou2d,
                       pred_order=inputs.pred_order, return_matches=return_matches)


def map3d(inputs: APInputs, *, n_categories: int, params: APParams | None = None) -> float:
    """mAP_3D in percent: mean precision over all IoU thresholds of ``params``, recall points and present
    categories, range "all" (Omni3D's AP3D)."""
    params = params or APParams()
    return evaluate_inputs(inputs, n_categories=n_categories, params=params).ap("all" if "all" in params.ranges
                                                                                else params.range_names[0])


def _single_threshold(params: APParams, thr: float) -> APParams:
    return params.with_(iou_thresholds=np.array([thr]), summary_spec=(("AP", None, params.range_names[0]),))


def _matches_at(inputs: APInputs, thr: float, n_categories: int, params: APParams):
    res = evaluate_inputs(inputs, n_categories=n_categories, params=_single_threshold(params, thr),
                          return_matches=True)
    return res.matches


def _clip_score(x: float) -> float:
    return float(x) if np.isfinite(x) else float("nan")


# ---------------------------------------------------------------------------------------------------- TIDE
@dataclass(frozen=True, eq=False)
class TideResult:
    """3D TIDE attribution.

    Attributes:
        table: one row per bin: ``bin``, ``kind`` ("main", "cls split", "special"), ``count``, ``delta_ap``
            (percentage points, clipped at 0 as TIDE), ``delta_ap_raw``, ``ap_fixed``. **Bins do not sum** to the
            gap to 100 (see ``note``).
        base_ap: mAP_3D (percent) of the unmodified arrays.
        pred_bin: ``(n_pred,)`` object array: the bin of each false positive at ``fg``; "tp", "ignored" or
            "not evaluated" otherwise.
        pred_gt: ``(n_pred,)`` int64 GT row the error points to (loc, cls, dupe, both: the best-IoU GT), -1 if none.
        gt_status: ``(n_gt,)`` object array: "tp", "missed", "usable" (unmatched but pointed to by a loc/cls error),
            "ignored" or "not evaluated".
        dets: per false positive: pred, bin, gt (nullable), iou (with that GT), score, label, gt_label, fix
            ("tp", "relabel", "suppress").
        fg, bg: the thresholds.
        note: the "bins do not sum" statement.
    """

    table: pd.DataFrame
    base_ap: float
    pred_bin: np.ndarray
    pred_gt: np.ndarray
    gt_status: np.ndarray
    dets: pd.DataFrame
    fg: float
    bg: float
    note: str = BINS_DO_NOT_SUM

    def examples(self, bin: str, n: int = 10) -> pd.DataFrame:
        """The highest-scoring detections of one bin (or missed GT rows for "missed")."""
        if bin == "missed":
            return pd.DataFrame({"gt": np.flatnonzero(self.gt_status == "missed")[:n]})
        d = self.dets[self.dets["bin"] == bin] if not bin.startswith("cls_") else \
            self.dets[self.dets["cls_split"] == bin]
        return d.sort_values("score", ascending=False, kind="stable").head(n)


def _argmax_by_group(group: np.ndarray, value: np.ndarray, other: np.ndarray, n_groups: int):
    """Per group: max value and the ``other`` at the max (ties: smallest ``other``); -inf / -1 where empty."""
    best = np.full(n_groups, -np.inf)
    arg = np.full(n_groups, -1, np.int64)
    if len(group) == 0:
        return best, arg
    o = np.lexsort((other, -value, group))
    g = group[o]
    first = np.r_[True, g[1:] != g[:-1]]
    best[g[first]] = value[o][first]
    arg[g[first]] = other[o][first]
    return best, arg


def _pair_index(pg: np.ndarray, pp: np.ndarray, g: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Positions of the pairs (g[i], d[i]) in (pg, pp), -1 where not stored."""
    g = np.asarray(g, np.int64)
    d = np.asarray(d, np.int64)
    out = np.full(len(g), -1, np.int64)
    if len(pg) == 0 or len(g) == 0:
        return out
    n = int(max(pp.max(), d.max())) + 1
    key = pg * n + pp
    order = np.argsort(key, kind="stable")
    ks = key[order]
    want = g * n + d
    pos = np.clip(np.searchsorted(ks, want), 0, len(ks) - 1)
    hit = (ks[pos] == want) & (g >= 0) & (d >= 0)
    out[hit] = order[pos[hit]]
    return out


def tide_3d(inputs: APInputs, *, n_categories: int, params: APParams | None = None, fg: float = 0.25,
            bg: float = 0.1, vocabulary=None, super_categories=None) -> TideResult:
    """TIDE-style error bins and fix-one-bin ΔmAP_3D (module docstring has the rules).

    Args:
        inputs: the evaluation arrays (``APInputs.from_view`` of a GT BoxSet, prediction BoxSet, Pairs, LabelView).
            ``pair_iou`` must be the 3D IoU.
        n_categories: vocabulary size.
        params: AP parameters (default Omni3D 3D); mAP is their mean over all thresholds, range "all".
        fg, bg: foreground and background IoU thresholds.
        vocabulary: class names (for the super-category split and the tables).
        super_categories: optional ``(n_categories,)`` group name of each class (default: ``super_category`` of
            the vocabulary names; without a vocabulary the split is skipped).
    """
    params = params or APParams()
    if not 0 < bg < fg <= 1:
        raise ValueError(f"tide_3d: expected 0 < bg < fg <= 1, got bg={bg}, fg={fg}")
    K = int(n_categories)
    gt_label = np.asarray(inputs.gt_label, np.int64)
    pred_label = np.asarray(inputs.pred_label, np.int64)
    score = np.asarray(inputs.pred_score, np.float64)
    pg = np.asarray(inputs.pair_gt, np.int64)
    pp = np.asarray(inputs.pair_pred, np.int64)
    piou = np.asarray(inputs.pair_iou, np.float64)
    n_gt, n_pred = len(gt_label), len(pred_label)

    base_ap = map3d(inputs, n_categories=K, params=params)
    m = _matches_at(inputs, fg, K, params)
    dt_m, dt_ign, dt_ev = m.dt_match[0], m.dt_ignore[0], m.dt_evaluated
    gt_m = m.gt_match[0]
    gt_ign = m.gt_ignore
    gt_ok = (gt_label >= 0) & ~gt_ign  # evaluated, non-ignored
    gt_used = gt_ok & (gt_m >= 0)
    fp = dt_ev & (dt_m < 0) & ~dt_ign

    # pairs of false positives with evaluated non-ignored GT
    sel = fp[pp] & gt_ok[pg]
    qg, qp, qi = pg[sel], pp[sel], piou[sel]
    same = gt_label[qg] == pred_label[qp]
    best_same, arg_same = _argmax_by_group(qp[same], qi[same], qg[same], n_pred)
    best_other, arg_other = _argmax_by_group(qp[~same], qi[~same], qg[~same], n_pred)
    us = same & gt_used[qg]
    best_used, arg_used = _argmax_by_group(qp[us], qi[us], qg[us], n_pred)
    best_all, arg_all = _argmax_by_group(qp, qi, qg, n_pred)

    pred_bin = np.full(n_pred, "not evaluated", dtype=object)
    pred_bin[dt_ev & dt_ign] = "ignored"
    pred_bin[dt_ev & (dt_m >= 0) & ~dt_ign] = "tp"
    pred_gt = np.full(n_pred, -1, np.int64)
    todo = fp.copy()
    for name, cond, arg in (("loc", (best_same >= bg) & (best_same < fg), arg_same),
                            ("cls", best_other >= fg, arg_other),
                            ("dupe", best_used >= fg, arg_used),
                            ("bkg", ~(best_all >= bg), None),
                            ("both", np.ones(n_pred, bool), arg_all)):
        hit = todo & cond
        pred_bin[hit] = name
        if arg is not None:
            pred_gt[hit] = arg[hit]
        todo &= ~hit

    # TIDE BestGTMatch over loc and cls errors that point to an unmatched GT
    claim = np.flatnonzero(((pred_bin == "loc") | (pred_bin == "cls")) & (pred_gt >= 0))
    claim_free = claim[~gt_used[pred_gt[claim]]]
    usable = np.zeros(n_gt, bool)
    usable[pred_gt[claim_free]] = True
    is_best = np.zeros(n_pred, bool)
    if len(claim_free):
        o = np.lexsort((claim_free, -score[claim_free], pred_gt[claim_free]))
        c = claim_free[o]
        g = pred_gt[c]
        first = np.r_[True, g[1:] != g[:-1]]
        is_best[c[first]] = True

    missed = gt_ok & (gt_m < 0) & ~usable
    gt_status = np.full(n_gt, "not evaluated", dtype=object)
    gt_status[(gt_label >= 0) & gt_ign] = "ignored"
    gt_status[gt_used] = "tp"
    gt_status[gt_ok & (gt_m < 0) & usable] = "usable"
    gt_status[missed] = "missed"

    # classification split by super-category
    split = np.full(n_pred, None, dtype=object)
    if super_categories is None and vocabulary is not None:
        super_categories = [super_category(str(v)) for v in vocabulary]
    if super_categories is not None:
        sc = np.asarray(list(super_categories), dtype=object)
        ci = np.flatnonzero(pred_bin == "cls")
        a, b = sc[pred_label[ci]], sc[gt_label[pred_gt[ci]]]
        split[ci] = np.where((a == b) & (a != OTHER), "cls_within", "cls_across")

    # ---- fixes
    def fixed_ap(det_mask=None, gt_mask=None, fix_tp=True) -> float:
        lab = pred_label.copy()
        iou = piou.copy()
        ign = np.asarray(inputs.gt_ignore, bool).copy()
        if det_mask is not None:
            dets = np.flatnonzero(det_mask)
            fixable = dets[is_best[dets]] if fix_tp else dets[:0]
            suppress = np.setdiff1d(dets, fixable)
            lab[suppress] = -1
            is_cls = pred_bin[fixable] == "cls"
            lab[fixable[is_cls]] = gt_label[pred_gt[fixable[is_cls]]]
            loc = fixable[~is_cls]  # loc: the box becomes the GT's box
            q = _pair_index(pg, pp, pred_gt[loc], loc)
            iou[q[q >= 0]] = 1.0
        if gt_mask is not None:
            ign |= gt_mask
        mod = replace(inputs, pred_label=lab, pair_iou=iou, gt_ignore=ign)
        return map3d(mod, n_categories=K, params=params)

    rows = []

    def add(name, kind, count, ap_fixed):
        raw = ap_fixed - base_ap
        rows.append({"bin": name, "kind": kind, "count": int(count), "delta_ap": max(raw, 0.0) if np.isfinite(raw)
                     else float("nan"), "delta_ap_raw": _clip_score(raw), "ap_fixed": _clip_score(ap_fixed)})

    for name in TIDE_BINS:
        if name == "missed":
            n = int(missed.sum())
            add(name, "main", n, fixed_ap(gt_mask=missed) if n else base_ap)
        else:
            mask = pred_bin == name
            n = int(mask.sum())
            add(name, "main", n, fixed_ap(det_mask=mask, fix_tp=name in ("cls", "loc")) if n else base_ap)
    if super_categories is not None:
        for name in _SUB_BINS:
            mask = split == name
            n = int(mask.sum())
            add(name, "cls split", n, fixed_ap(det_mask=mask) if n else base_ap)
    n_fp = int(fp.sum())
    add("false_pos", "special", n_fp, fixed_ap(det_mask=fp, fix_tp=False) if n_fp else base_ap)
    fn = gt_ok & (gt_m < 0)
    add("false_neg", "special", int(fn.sum()), fixed_ap(gt_mask=fn) if fn.any() else base_ap)
    table = pd.DataFrame(rows, columns=["bin", "kind", "count", "delta_ap", "delta_ap_raw", "ap_fixed"])

    fpi = np.flatnonzero(fp)
    g = pred_gt[fpi]
    q = _pair_index(pg, pp, g, fpi)
    iou_with = np.where(q >= 0, piou[np.maximum(q, 0)] if len(piou) else np.nan, np.nan)
    fix = np.where(np.isin(pred_bin[fpi], ("loc", "cls")) & is_best[fpi],
                   np.where(pred_bin[fpi] == "cls", "relabel", "tp"), "suppress")
    vocab = None if vocabulary is None else np.asarray(list(vocabulary) + [None], dtype=object)
    dets = pd.DataFrame({"pred": fpi, "bin": pred_bin[fpi], "cls_split": split[fpi],
                         "gt": pd.array(np.where(g >= 0, g, 0), dtype="Int64"), "iou": iou_with,
                         "score": score[fpi], "label": pred_label[fpi],
                         "gt_label": pd.array(np.where(g >= 0, gt_label[np.maximum(g, 0)], 0), dtype="Int64"),
                         "fix": fix})
    dets.loc[g < 0, "gt"] = pd.NA
    dets.loc[g < 0, "gt_label"] = pd.NA
    if vocab is not None:
        dets["category"] = vocab[dets["label"].to_numpy()]
        gl = dets["gt_label"].to_numpy(dtype=np.int64, na_value=-1)
        dets["gt_category"] = vocab[gl]
    return TideResult(table=table, base_ap=base_ap, pred_bin=pred_bin, pred_gt=pred_gt, gt_status=gt_status,
                      dets=dets, fg=float(fg), bg=float(bg))


def tide_3d_view(gt, pred, pairs, view, *, params: APParams | None = None, fg: float = 0.25, bg: float = 0.1,
                 proximity: bool | None = None, super_categories=None) -> TideResult:
    """:func:`tide_3d` from a GT BoxSet, a prediction BoxSet, their cached Pairs and a LabelView."""
    params = params or APParams()
    inputs = APInputs.from_view(gt, pred, pairs, view, params, proximity=proximity)
    return tide_3d(inputs, n_categories=view.n_categories, params=params, fg=fg, bg=bg,
                   vocabulary=view.vocabulary, super_categories=super_categories)


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
        m = _matches_at(inputs, thr, K, params)
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
    best, arg = _argmax_by_group(pp[sel], v[sel], pg[sel], n_pred)
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
    from ov3d_core.geometry.iou3d import paired_iou_3d

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
    q_assoc = _pair_index(pg, pp, g_idx, d_idx)
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
