"""Scoring one run on one dataset under a label view: Omni3D AP (cached geometry, re-matched only) and 3D
class-agnostic recall, with per-box statuses. The steps of a view (protocol filter, score threshold) are here as
pure functions; ``ov3d_core.analysis.Analysis.label_view`` is the one place that chains them. Pure: no I/O, no
caching.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ov3d_core.eval.ap import APInputs, APParams, evaluate_ap_pooled, evaluate_view
from ov3d_core.eval.constants import PROTOCOLS, RECALL_IOU, STATUS_IOU
from ov3d_core.eval.grouping import best_gt_overlap
from ov3d_core.eval.labels import LabelView, gt_codes
from ov3d_core.eval.protocols import target_aware_view
from ov3d_core.eval.recall import recall_for_view
from ov3d_core.eval.results import APResult, RecallResult
from ov3d_core.heap import trim_heap

__all__ = ["PROTOCOLS", "apply_protocol", "threshold_view", "RunScore", "score_view", "score_pooled"]


def apply_protocol(view: LabelView, dataset, run, protocol: str = "dataset-level", *,
                   count_ignored_as_present: bool = True, only_images_with_gt: bool = False) -> LabelView:
    """The label view under a protocol: dataset-level (unchanged) or the target-aware oracle."""
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol: expected one of {PROTOCOLS}, got {protocol!r}")
    if protocol == "dataset-level":
        return view

    return target_aware_view(view, run.pred.image_id, dataset.gt.image_id,
                             gt_codes(dataset.gt.category, view.vocabulary), dataset.gt.ignore,
                             count_ignored_as_present=count_ignored_as_present,
                             only_images_with_gt=only_images_with_gt)


def threshold_view(view: LabelView, min_score: float = 0.0) -> LabelView:
    """Drop predictions scoring below ``min_score`` (0 keeps all)."""
    if min_score <= 0:
        return view
    return view.filtered(view.score >= min_score)


@dataclass(frozen=True, eq=False)
class RunScore:
    """AP, recall and per-box status of one (dataset, run, view).

    Attributes:
        dataset, run: names. protocol: the protocol the view was built under (informational).
        view: the label view scored. ap: the Omni3D APResult (with match records). recall: class-agnostic recall.
    """

    dataset: str
    run: str
    protocol: str
    view: LabelView
    ap: APResult
    recall: RecallResult
    gt_label: np.ndarray
    pairs: object

    @property
    def summary(self) -> dict[str, float]:
        out = dict(self.ap.summary())
        out[f"recall3D@{round(self.recall.iou_threshold * 100)}"] = self.recall.recall
        return out

    @property
    def per_category(self) -> pd.DataFrame:
        """One row per vocabulary category: AP3D (and the other summary keys per category), n_gt, n_pred, recall."""
        df = self.ap.to_frame(self.view.vocabulary)
        rec = self.recall.by_group(self.gt_label, list(self.view.vocabulary))
        df["recall3D"] = rec["recall"].to_numpy()
        return df

    def pred_status(self, iou: float = STATUS_IOU) -> pd.DataFrame:
        """Per prediction row: status "TP" / "FP" / "mislabelled" (an FP that overlaps a GT of another class at
        3D IoU >= ``iou``: well localised, wrong label) / "ignored" / "not evaluated", matched GT row (-1), best IoU
        with any GT and that GT's row."""
        m = self.ap.matches
        status = m.dt_status(iou).astype(object)
        t = m._t(iou)
        n_pred = len(status)
        best_iou, best_gt = best_gt_overlap(self.pairs, n_pred)
        other = (best_gt >= 0) & (best_iou >= iou)
        gl = np.where(best_gt >= 0, self.gt_label[np.maximum(best_gt, 0)], -2)
        other &= gl != self.view.label
        status[(status == "FP") & other] = "mislabelled"
        return pd.DataFrame({"pred": np.arange(n_pred), "status": status, "matched_gt": m.dt_match[t],
                             "best_iou": best_iou, "best_gt": best_gt})

    def gt_status(self, iou: float = STATUS_IOU) -> pd.DataFrame:
        """Per GT row: "TP" (matched at ``iou``), "FN", "ignored" or "not evaluated" (outside the vocabulary)."""
        m = self.ap.matches
        t = m._t(iou)
        status = np.full(len(self.gt_label), "FN", dtype=object)
        status[m.gt_match[t] >= 0] = "TP"
        status[m.gt_ignore] = "ignored"
        status[~m.gt_evaluated] = "not evaluated"
        return pd.DataFrame({"gt": np.arange(len(status)), "status": status, "matched_pred": m.gt_match[t]})


def score_view(dataset, run, pairs, view: LabelView, *, protocol: str = "dataset-level",
               params: APParams | None = None, recall_iou: float = RECALL_IOU,
               recall_method: str = "greedy") -> RunScore:
    """Score a label view of a run against cached geometry (no geometry is computed here)."""
    params = params or APParams.omni3d_3d()
    gl = gt_codes(dataset.gt.category, view.vocabulary)
    # The recall first, then its working arrays handed back to the system (tens of MB each at 4M predictions, below
    # the mmap threshold, they would stay resident beside the AP's match records; evaluate_ap does the same)
    evaluated = view.filtered(view.label >= 0)
    rec = recall_for_view(dataset.gt, pairs, evaluated, gt_mask=gl >= 0, iou_threshold=recall_iou,
                          method=recall_method)
    trim_heap()
    ap = evaluate_view(dataset.gt, run.pred, pairs, view, params, gt_label=gl, proximity=dataset.proximity,
                       return_matches=True)
    return RunScore(dataset=dataset.name, run=run.name, protocol=protocol, view=view, ap=ap, recall=rec,
                    gt_label=gl, pairs=pairs)


def score_pooled(parts, *, params: APParams | None = None, recall_iou: float = RECALL_IOU) -> dict:
    """Omni3D's pooled row: several (dataset, run, pairs, view) evaluated as one dataset over the union vocabulary.

    Returns ``{"summary": {...}, "per_category": DataFrame}``; per-category AP is NaN for categories without GT.
    """
    params = params or APParams.omni3d_3d()
    vocab = tuple(dict.fromkeys(c for ds, _, _, v in parts for c in v.vocabulary))
    inputs, n_matched, n_gt = [], 0, 0
    for ds, run, pairs, v in parts:
        remap = np.array([vocab.index(c) for c in v.vocabulary] + [-1], np.int64)
        pv = LabelView(remap[np.where(v.label >= 0, v.label, len(v.vocabulary))], v.score, v.keep, vocab)
        gl = gt_codes(ds.gt.category, vocab)
        inputs.append(APInputs.from_view(ds.gt, run.pred, pairs, pv, params, gt_label=gl, proximity=ds.proximity))
        rec = recall_for_view(ds.gt, pairs, pv.filtered(pv.label >= 0), gt_mask=gl >= 0, iou_threshold=recall_iou)
        n_matched += rec.n_matched
        n_gt += rec.n_gt
    ap = evaluate_ap_pooled(inputs, n_categories=len(vocab), params=params, vocabulary=vocab)
    summary = dict(ap.summary())
    summary[f"recall3D@{round(recall_iou * 100)}"] = n_matched / n_gt if n_gt else float("nan")
    return {"summary": summary, "per_category": ap.to_frame(vocab), "ap": ap}
