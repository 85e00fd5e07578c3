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

Monocular oracles live in :mod:`ov3d_core.diagnostics.oracles`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ov3d_core.eval.ap import APInputs, APParams, map3d, matches_at
from ov3d_core.eval.grouping import argmax_by_group, pair_index
from ov3d_core.taxonomy import OTHER, super_category

__all__ = ["TIDE_BINS", "TideResult", "tide_3d", "tide_3d_view", "BINS_DO_NOT_SUM"]

#: Main bins in TIDE's test order, then the classification split and the special errors.
TIDE_BINS = ("cls", "loc", "both", "dupe", "bkg", "missed")
_SUB_BINS = ("cls_within", "cls_across")
_SPECIAL = ("false_pos", "false_neg")

BINS_DO_NOT_SUM = ("Each bin's delta_ap fixes only that bin (TIDE, non-progressive); the bins overlap in effect and "
                   "do not sum to the gap between the base mAP and 100.")



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
    m = matches_at(inputs, fg, K, params)
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
    best_same, arg_same = argmax_by_group(qp[same], qi[same], qg[same], n_pred)
    best_other, arg_other = argmax_by_group(qp[~same], qi[~same], qg[~same], n_pred)
    us = same & gt_used[qg]
    best_used, arg_used = argmax_by_group(qp[us], qi[us], qg[us], n_pred)
    best_all, arg_all = argmax_by_group(qp, qi, qg, n_pred)

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
            q = pair_index(pg, pp, pred_gt[loc], loc)
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
    q = pair_index(pg, pp, g, fpi)
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
