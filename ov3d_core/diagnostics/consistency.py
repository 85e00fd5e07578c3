"""Prompt consistency across templates (Pro-Bench, seeds/003 and reference §6.2), in 3D.

- **PCR** (prompt-consistent recall): the fraction of evaluated, non-ignored GT recovered under *every* template of a
  group. "Recovered" = matched to a prediction of the same class at 3D IoU >= ``iou`` (0.5) by the evaluator's
  Omni3D greedy matching (one-to-one, score order), run separately for each template's labels and predictions.
- **PLC** (prompt localisation consistency): over the GT recovered under all templates, the mean pairwise 3D IoU
  among the predictions matched to that GT under the different templates (T(T−1)/2 pairs per GT), then the mean
  over those GT. With remapping the boxes are shared between templates, so the same box matched under two templates
  gives IoU 1 exactly; with a prompt-conditioned detector each template has its own prediction set and the matched
  boxes are compared with ``paired_iou_3d`` (only the matched boxes, batched; no validity check, as both are
  predictions that already matched a GT). PLC is NaN with fewer than two templates or no GT recovered by all.
- **Prompt-conditioned detectors** (one prediction file per template: OVMono3D / DetAny3D / WildDet3D style):
  :func:`prompt_consistency_per_template` takes each template's own (inputs, corners); the templates' prediction
  sets may differ in rows, order and count, each template's corners are checked against its own prediction count,
  and PLC compares the boxes each template's predictions put on a GT (below 1 as soon as a box moves).
- Reported beside: recall under each template, the mean single-template recall and the recall under *any* template,
  so a high PLC with a low PCR is visible (Pro-Bench: SAM3 PLC 0.984, PCR 0.024).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ov3d_core.eval.ap import APInputs, APParams, matches_at
from ov3d_core.geometry.iou3d import paired_iou_3d

__all__ = ["ConsistencyResult", "recovered_by", "prompt_consistency", "prompt_consistency_from_inputs",
           "prompt_consistency_per_template"]


def recovered_by(inputs: APInputs, *, n_categories: int, iou: float = 0.5,
                 params: APParams | None = None) -> np.ndarray:
    """``(n_gt,)`` prediction row matched to each GT at 3D IoU >= ``iou`` (same class, Omni3D greedy), -1 if none
    (ignored and non-evaluated GT: -1)."""
    m = matches_at(inputs, iou, int(n_categories), params or APParams())
    ok = m.gt_evaluated & ~m.gt_ignore
    return np.where(ok, m.gt_match[0], -1)


@dataclass(frozen=True, eq=False)
class ConsistencyResult:
    """PCR / PLC of one template group.

    Attributes:
        pcr: recovered under every template / evaluated non-ignored GT (NaN if there is none).
        plc: mean pairwise 3D IoU of the matched predictions over GT recovered under all templates (NaN if none).
        recall_any: recovered under at least one template / GT.
        recall_mean: mean over templates of the single-template recall.
        per_template: ``template``, ``recall``, ``n_recovered``.
        per_gt: ``gt``, ``n_templates`` (recovered under how many), ``all`` (bool), ``plc`` (NaN unless ``all``).
        per_class: ``category`` (or code), ``n_gt``, ``pcr``, ``plc``, ``recall_any`` when GT labels are given.
        n_gt: number of evaluated non-ignored GT.
        templates: template names.
    """

    pcr: float
    plc: float
    recall_any: float
    recall_mean: float
    per_template: pd.DataFrame
    per_gt: pd.DataFrame
    per_class: pd.DataFrame | None
    n_gt: int
    templates: tuple

    def summary(self) -> dict:
        return {"PCR": self.pcr, "PLC": self.plc, "recall_any": self.recall_any, "recall_mean": self.recall_mean,
                "n_gt": self.n_gt, "n_templates": len(self.templates)}


def _pairwise_plc(matched: np.ndarray, corners: Sequence[np.ndarray]) -> np.ndarray:
    """``(G,)`` mean pairwise IoU over template pairs for rows of ``matched (T, G)`` (all >= 0)."""
    T, G = matched.shape
    if T < 2 or G == 0:
        return np.full(G, np.nan)
    total = np.zeros(G)
    n_pairs = 0
    for a in range(T):
        for b in range(a + 1, T):
            ca = np.asarray(corners[a], np.float64)[matched[a]]
            cb = np.asarray(corners[b], np.float64)[matched[b]]
            same = np.all(ca == cb, axis=(1, 2))
            iou = np.ones(G)
            if (~same).any():
                idx = np.flatnonzero(~same)
                iou[idx] = paired_iou_3d(ca, cb, idx, idx, check_valid=False)
            total += iou
            n_pairs += 1
    return total / n_pairs


def prompt_consistency(matched_pred, pred_corners, *, gt_mask, template_names=None, gt_label=None,
                       vocabulary=None) -> ConsistencyResult:
    """PCR and PLC from per-template matches.

    Args:
        matched_pred: ``(T, n_gt)`` prediction row matched to each GT under template t (rows of that template's
            prediction set), -1 if not recovered.
        pred_corners: T corner arrays ``(n_pred_t, 8, 3)``, one per template (the same array repeated when the
            templates share one prediction set, e.g. remapping).
        gt_mask: ``(n_gt,)`` bool, the GT that count (evaluated, non-ignored).
        template_names: T names (default "0", "1", ...).
        gt_label: optional ``(n_gt,)`` codes for the per-class table; ``vocabulary`` their names.
    """
    M = np.asarray(matched_pred, np.int64)
    if M.ndim != 2:
        raise ValueError(f"matched_pred: expected shape (T, n_gt), got {M.shape}")
    T, n_gt = M.shape
    if len(pred_corners) != T:
        raise ValueError(f"pred_corners: expected {T} arrays (one per template), got {len(pred_corners)}")
    names = tuple(str(t) for t in (template_names if template_names is not None else range(T)))
    mask = np.asarray(gt_mask, bool).reshape(-1)
    rows = np.flatnonzero(mask)
    Mr = M[:, rows]
    rec = Mr >= 0
    n_tpl = rec.sum(axis=0)
    all_rec = n_tpl == T
    plc_gt = np.full(len(rows), np.nan)
    if all_rec.any() and T >= 2:
        plc_gt[all_rec] = _pairwise_plc(Mr[:, all_rec], pred_corners)
    G = len(rows)

    def frac(x):
        return float(x.sum() / G) if G else float("nan")

    def nanmean(x):
        x = x[~np.isnan(x)]
        return float(x.mean()) if x.size else float("nan")

    per_template = pd.DataFrame({"template": list(names), "recall": [frac(rec[t]) for t in range(T)],
                                 "n_recovered": rec.sum(axis=1).astype(np.int64)})
    per_gt = pd.DataFrame({"gt": rows, "n_templates": n_tpl.astype(np.int64), "all": all_rec, "plc": plc_gt})
    per_class = None
    if gt_label is not None:
        gl = np.asarray(gt_label, np.int64)[rows]
        out = []
        for k in np.unique(gl):
            s = gl == k
            out.append({"category": vocabulary[k] if vocabulary is not None and k >= 0 else int(k),
                        "n_gt": int(s.sum()), "pcr": float(all_rec[s].mean()), "plc": nanmean(plc_gt[s]),
                        "recall_any": float((n_tpl[s] > 0).mean())})
        per_class = pd.DataFrame(out, columns=["category", "n_gt", "pcr", "plc", "recall_any"])
    return ConsistencyResult(pcr=frac(all_rec), plc=nanmean(plc_gt), recall_any=frac(n_tpl > 0),
                             recall_mean=float(np.mean([frac(rec[t]) for t in range(T)])) if G and T else
                             float("nan"), per_template=per_template, per_gt=per_gt, per_class=per_class,
                             n_gt=int(G), templates=names)


def prompt_consistency_per_template(per_template: Mapping[str, tuple[APInputs, np.ndarray]], *, n_categories: int,
                                    iou: float = 0.5, params: APParams | None = None,
                                    vocabulary=None) -> ConsistencyResult:
    """PCR / PLC of a prompt-conditioned detector: one prediction set per template (its own file, rows and count).

    Args:
        per_template: template id -> (its :class:`~ov3d_core.eval.ap.APInputs` against the shared GT, its
            ``(n_pred_t, 8, 3)`` predicted corners). PLC compares the boxes each template's own predictions put on a
            GT, so it is below 1 as soon as a box moves between templates.
        n_categories, iou, params: matching settings (recovery = same class at 3D IoU >= ``iou``).
        vocabulary: category names for the per-class table.
    """
    names = list(per_template)
    if not names:
        raise ValueError("prompt_consistency_per_template: expected at least one template")
    inputs = [per_template[t][0] for t in names]
    corners = [np.asarray(per_template[t][1], np.float64) for t in names]
    return prompt_consistency_from_inputs(inputs, corners, n_categories=n_categories, iou=iou, params=params,
                                          template_names=names, vocabulary=vocabulary)


def prompt_consistency_from_inputs(inputs_per_template: Sequence[APInputs], pred_corners, *, n_categories: int,
                                   iou: float = 0.5, params: APParams | None = None, template_names=None,
                                   vocabulary=None) -> ConsistencyResult:
    """PCR / PLC from one evaluation bundle per template (all over the same GT rows).

    Args:
        inputs_per_template: T :class:`~ov3d_core.eval.ap.APInputs` (labels, scores and pairs of each template; with
            remapping they share the pairs and differ in labels / keep).
        pred_corners: one ``(n_pred, 8, 3)`` array shared by all templates, or a sequence of T arrays.
        n_categories, iou, params: matching settings (recovery = 3D IoU >= ``iou``, same class).
    """
    T = len(inputs_per_template)
    if T == 0:
        raise ValueError("prompt_consistency_from_inputs: expected at least one template")
    first = inputs_per_template[0]
    n_gt = len(first.gt_label)
    for i, inp in enumerate(inputs_per_template):
        if len(inp.gt_label) != n_gt or not (np.array_equal(inp.gt_label, first.gt_label)
                                             and np.array_equal(inp.gt_image, first.gt_image)
                                             and np.array_equal(inp.gt_ignore, first.gt_ignore)):
            raise ValueError(f"prompt_consistency_from_inputs: template {i} has different GT rows, images, labels "
                             f"or ignore flags")
    if isinstance(pred_corners, np.ndarray) and pred_corners.ndim == 3:
        pred_corners = [pred_corners] * T
    if len(pred_corners) != T:
        raise ValueError(f"prompt_consistency_from_inputs: expected {T} corner arrays (one per template), got "
                         f"{len(pred_corners)}")
    for i, (inp, c) in enumerate(zip(inputs_per_template, pred_corners)):
        shape = np.shape(c)
        if shape != (len(inp.pred_label), 8, 3):
            raise ValueError(f"prompt_consistency_from_inputs: template {i}: expected corners of shape "
                             f"({len(inp.pred_label)}, 8, 3) (its own predictions), got {shape}")
    M = np.stack([recovered_by(inp, n_categories=n_categories, iou=iou, params=params)
                  for inp in inputs_per_template])
    gl = np.asarray(first.gt_label, np.int64)
    p = params or APParams()
    lo, hi = p.ranges["all"] if "all" in p.ranges else next(iter(p.ranges.values()))
    rv = np.asarray(first.gt_range_value, np.float64)
    mask = (gl >= 0) & ~np.asarray(first.gt_ignore, bool) & (rv >= lo) & (rv <= hi)
    return prompt_consistency(M, pred_corners, gt_mask=mask, template_names=template_names, gt_label=gl,
                              vocabulary=vocabulary)
