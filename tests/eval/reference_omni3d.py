"""Test-only, slow, literal re-implementation of Omni3D's ``Omni3Deval`` (COCOeval-derived) evaluateImg + accumulate.

Written from reference/omni3d_protocol.md §3 in the loop structure of the original (dicts per annotation, Python loops
over images, categories, ranges, thresholds, detections and GT), sharing no code with ``ov3d_core.eval``. IoUs come
from dicts keyed by (gt row, det row); a missing key means IoU 0. Annotation ids are 1-based, as COCO's (0 means
"unmatched" in the match arrays).

Outputs use Omni3D's conventions: -1 in precision/recall for absent categories.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np


class ReferenceOmni3DEval:
    """One dataset. ``gts`` / ``dts`` are lists of dicts with keys:

    gt:  row, image_id, category_id (0..K-1), ignore (bool), range_value
    dt:  row, image_id, category_id, score, range_value   (listed in file order: ties keep it)
    """

    def __init__(self, gts, dts, iou, iou2d, *, n_categories, iou_thresholds, recall_thresholds, ranges,
                 max_det=100, prox=False, prox_thresh=0.3):
        self.gts = [dict(g, id=g["row"] + 1) for g in gts]
        self.dts = [dict(d, id=d["row"] + 1) for d in dts]
        self.iou = iou
        self.iou2d = iou2d
        self.cat_ids = list(range(n_categories))
        self.iou_thrs = list(iou_thresholds)
        self.rec_thrs = np.asarray(recall_thresholds)
        self.ranges = list(ranges)
        self.max_det = max_det
        self.prox = prox
        self.prox_thresh = prox_thresh
        self.img_ids = sorted({g["image_id"] for g in self.gts} | {d["image_id"] for d in self.dts})
        self._gts = defaultdict(list)
        self._dts = defaultdict(list)
        for g in self.gts:
            self._gts[g["image_id"], g["category_id"]].append(g)
        for d in self.dts:
            self._dts[d["image_id"], d["category_id"]].append(d)

    # ------------------------------------------------------------------ computeIoU
    def compute_iou(self, img, cat, table):
        gt = self._gts[img, cat]
        dt = self._dts[img, cat]
        if len(gt) == 0 or len(dt) == 0:
            return []
        inds = np.argsort([-d["score"] for d in dt], kind="mergesort")
        dt = [dt[i] for i in inds]
        if len(dt) > self.max_det:
            dt = dt[0:self.max_det]
        out = np.zeros((len(dt), len(gt)))
        for i, d in enumerate(dt):
            for j, g in enumerate(gt):
                out[i, j] = table.get((g["row"], d["row"]), 0.0)
        return out

    # ------------------------------------------------------------------ evaluateImg
    def evaluate_img(self, img, cat, a_rng, max_det):
        gt = self._gts[img, cat]
        dt = self._dts[img, cat]
        if len(gt) == 0 and len(dt) == 0:
            return None
        for g in gt:
            if g["ignore"] or (g["range_value"] < a_rng[0] or g["range_value"] > a_rng[1]):
                g["_ignore"] = 1
            else:
                g["_ignore"] = 0
        gtind = np.argsort([g["_ignore"] for g in gt], kind="mergesort")
        gt = [gt[i] for i in gtind]
        dtind = np.argsort([-d["score"] for d in dt], kind="mergesort")
        dt = [dt[i] for i in dtind[0:max_det]]
        ious = self.ious[img, cat]
        ious = ious[:, gtind] if len(ious) > 0 else ious
        if self.prox:
            ious2d = self.ious2d[img, cat]
            in_prox = (ious2d[:, gtind] > self.prox_thresh) if len(ious2d) > 0 else []
        T = len(self.iou_thrs)
        G = len(gt)
        D = len(dt)
        gtm = np.zeros((T, G))
        dtm = np.zeros((T, D))
        gt_ig = np.array([g["_ignore"] for g in gt])
        dt_ig = np.zeros((T, D))
        if not len(ious) == 0:
            for tind, t in enumerate(self.iou_thrs):
                for dind, d in enumerate(dt):
                    iou = min([t, 1 - 1e-10])
                    m = -1
                    for gind, g in enumerate(gt):
                        if self.prox and not in_prox[dind, gind]:
                            continue
                        if gtm[tind, gind] > 0:
                            continue
                        if m > -1 and gt_ig[m] == 0 and gt_ig[gind] == 1:
                            break
                        if ious[dind, gind] < iou:
                            continue
                        iou = ious[dind, gind]
                        m = gind
                    if m == -1:
                        continue
                    dt_ig[tind, dind] = gt_ig[m]
                    dtm[tind, dind] = gt[m]["id"]
                    gtm[tind, m] = d["id"]
        a = np.array([d["range_value"] < a_rng[0] or d["range_value"] > a_rng[1] for d in dt]).reshape((1, len(dt)))
        dt_ig = np.logical_or(dt_ig, np.logical_and(dtm == 0, np.repeat(a, T, 0)))
        if self.prox and len(in_prox) > 0:
            dt_far = in_prox.any(1) == 0
            dt_ig = np.logical_or(dt_ig, np.repeat(dt_far.reshape((1, len(dt))), T, 0))
        return {"image_id": img, "category_id": cat, "dtIds": [d["id"] for d in dt], "gtIds": [g["id"] for g in gt],
                "dtMatches": dtm, "gtMatches": gtm, "dtScores": [d["score"] for d in dt], "gtIgnore": gt_ig,
                "dtIgnore": dt_ig}

    def evaluate(self):
        """Per (category, range index): the list of per-image evaluations, images ascending."""
        self.ious = {(i, c): self.compute_iou(i, c, self.iou) for i in self.img_ids for c in self.cat_ids}
        if self.prox:
            self.ious2d = {(i, c): self.compute_iou(i, c, self.iou2d) for i in self.img_ids for c in self.cat_ids}
        self.evals = {}
        for k in self.cat_ids:
            for a, rng in enumerate(self.ranges):
                self.evals[k, a] = [self.evaluate_img(i, k, rng, self.max_det) for i in self.img_ids]
        return self.evals


def accumulate(evals_list, *, n_categories, n_ranges, iou_thresholds, recall_thresholds, max_det=100):
    """COCO accumulate over the concatenation of one or more datasets' per-(category, range) evaluation lists."""
    T, R, K, A = len(iou_thresholds), len(recall_thresholds), n_categories, n_ranges
    precision = -np.ones((T, R, K, A))
    recall = -np.ones((T, K, A))
    for k in range(K):
        for a in range(A):
            E = [e for evals in evals_list for e in evals[k, a]]
            E = [e for e in E if e is not None]
            if len(E) == 0:
                continue
            dt_scores = np.concatenate([e["dtScores"][0:max_det] for e in E])
            inds = np.argsort(-dt_scores, kind="mergesort")
            dtm = np.concatenate([e["dtMatches"][:, 0:max_det] for e in E], axis=1)[:, inds]
            dt_ig = np.concatenate([e["dtIgnore"][:, 0:max_det] for e in E], axis=1)[:, inds]
            gt_ig = np.concatenate([e["gtIgnore"] for e in E])
            npig = np.count_nonzero(gt_ig == 0)
            if npig == 0:
                continue
            tps = np.logical_and(dtm, np.logical_not(dt_ig))
            fps = np.logical_and(np.logical_not(dtm), np.logical_not(dt_ig))
            tp_sum = np.cumsum(tps, axis=1).astype(dtype=float)
            fp_sum = np.cumsum(fps, axis=1).astype(dtype=float)
            for t, (tp, fp) in enumerate(zip(tp_sum, fp_sum)):
                tp = np.array(tp)
                fp = np.array(fp)
                nd = len(tp)
                rc = tp / npig
                pr = tp / (fp + tp + np.spacing(1))
                q = np.zeros((R,))
                recall[t, k, a] = rc[-1] if nd else 0
                pr = pr.tolist()
                q = q.tolist()
                for i in range(nd - 1, 0, -1):
                    if pr[i] > pr[i - 1]:
                        pr[i - 1] = pr[i]
                inds_r = np.searchsorted(rc, recall_thresholds, side="left")
                try:
                    for ri, pi in enumerate(inds_r):
                        q[ri] = pr[pi]
                except IndexError:
                    pass
                precision[t, :, k, a] = np.array(q)
    return precision, recall


def reference_ap(gts, dts, iou, iou2d=None, *, n_categories, params, prox=None):
    """Evaluate one dataset; returns (precision, recall, evals) with -1 for absent."""
    ev = ReferenceOmni3DEval(gts, dts, iou, iou2d or {}, n_categories=n_categories,
                             iou_thresholds=params.iou_thresholds, recall_thresholds=params.recall_thresholds,
                             ranges=list(params.ranges.values()), max_det=params.max_dets,
                             prox=params.proximity if prox is None else prox, prox_thresh=params.proximity_thresh)
    evals = ev.evaluate()
    p, r = accumulate([evals], n_categories=n_categories, n_ranges=len(params.ranges),
                      iou_thresholds=params.iou_thresholds, recall_thresholds=params.recall_thresholds,
                      max_det=params.max_dets)
    return p, r, evals


def reference_matches(evals, n_pred, n_thr, range_index=0):
    """(T, n_pred) matched GT row (-1) and ignore flags of the detections evaluated in range ``range_index``."""
    dt_match = -np.ones((n_thr, n_pred), np.int64)
    dt_ig = np.zeros((n_thr, n_pred), bool)
    seen = np.zeros(n_pred, bool)
    for (k, a), lst in evals.items():
        if a != range_index:
            continue
        for e in lst:
            if e is None:
                continue
            for j, did in enumerate(e["dtIds"]):
                row = did - 1
                seen[row] = True
                dt_match[:, row] = e["dtMatches"][:, j].astype(np.int64) - 1
                dt_ig[:, row] = e["dtIgnore"][:, j].astype(bool)
    return dt_match, dt_ig, seen
