"""The paper's diagnostics and those beyond it, composed for a view: confusion (fine, super-category, pooled over
views, per class), the protocol comparison, class splits, 3D TIDE, monocular oracles, centre-distance AP / ODS,
semantic-distance-weighted confusion, AP against the IoU threshold and by object size (Pro-Bench Fig. 3, FG-OVD
Tables 4-5), class-agnostic NMS (FG-OVD) and recall under greedy and Hungarian assignment."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from ov3d_core.analysis.view import View, score_key, view_error
from ov3d_core.diagnostics import confusion as conf
from ov3d_core.diagnostics.confusion_stats import class_confusion_table, confusion_summary_row, pooled_super_confusion
from ov3d_core.diagnostics.distance import evaluate_distance_view
from ov3d_core.diagnostics.fgovd import class_agnostic_nms
from ov3d_core.diagnostics.iou_curve import ap_vs_iou_from_view, iou_summary_table
from ov3d_core.diagnostics.oracles import monocular_oracles_view
from ov3d_core.diagnostics.protocol_comparison import compare_protocols_boxes
from ov3d_core.diagnostics.semantic import embedding_cost, semantic_confusion_cost, tree_cost
from ov3d_core.diagnostics.sizes import ap_by_size_from_view
from ov3d_core.diagnostics.splits import class_split_sensitivity
from ov3d_core.diagnostics.tide import tide_3d_view
from ov3d_core.eval.constants import CONFUSION_IOU, CROSS_CLASS_IOU, RECALL_IOU
from ov3d_core.eval.recall import recall_for_view
from ov3d_core.eval.scoring import score_view

__all__ = ["Diagnostics", "POOLED", "RECALL_METHODS", "NMS_IOU"]

#: Class-agnostic assignments of the 3D recall (``Analysis.recall_methods``).
RECALL_METHODS = ("greedy", "hungarian")

#: FG-OVD's class-agnostic NMS threshold (suppress a box whose IoU with a higher-scoring one exceeds it).
NMS_IOU = 0.5

#: The run and dataset names of the row pooled over every view (``Analysis.confusion_summary``).
POOLED = "(all)"


class Diagnostics:
    """Mixin of :class:`~ov3d_core.analysis.Analysis`: the diagnostics of a view."""

    def confusion(self, view: View, *, level: str = "fine", iou: float = CONFUSION_IOU, include_missed: bool = True):
        """Hungarian confusion at 3D IoU >= ``iou`` (paper: 0.5): a ``ConfusionMatrix`` (``level="fine"``) or a
        ``SuperCategoryConfusion`` (``level="super"``, the 9 super-categories)."""
        if level not in ("fine", "super"):
            raise view_error("level", "'fine' or 'super'", level)

        def fine():
            sc = self.score(view)
            gt = self.inputs(view).dataset.gt
            return conf.confusion_matrix(sc.pairs, sc.view, sc.gt_label, gt.ignore, gt.image_id,
                                         iou_threshold=float(iou), include_missed=include_missed)

        cm = self._memoised("confusion", (score_key(view), float(iou), include_missed), fine)
        if level == "fine":
            return cm
        return self._memoised("confusion_super", (score_key(view), float(iou), include_missed),
                              lambda: conf.super_category_confusion(cm, self.ontology()))

    def confusion_classes(self, view: View, *, iou: float = CONFUSION_IOU) -> pd.DataFrame:
        """Per GT class of the fine confusion matrix: matched, correctly labelled, missed, the diagonal fraction and
        the class it is most often confused with (``diagnostics.confusion_stats.class_confusion_table``)."""
        return self._memoised("confusion_classes", (score_key(view), float(iou)),
                              lambda: class_confusion_table(self.confusion(view, iou=iou)))

    def confusion_summary(self, views: Sequence[View], *, iou: float = CONFUSION_IOU) -> dict[str, pd.DataFrame]:
        """The super-category confusion summary of every view and pooled over all of them (Fig. 4): ``summary``
        (one row per view, then the pooled row with run and dataset :data:`POOLED`: matches, fine confusions, label
        accuracy, the share of fine confusions that cross super-categories and of all matches that do, 1 - the mean
        diagonal, the diagonal per super-category) and ``pooled`` (the row-normalised pooled super-category matrix
        with matched and missed GT counts). Pooling sums counts (``diagnostics.confusion_stats``)."""
        views = tuple(views)

        def compute():
            supers = list(conf.super_category_names(self.ontology()))
            rows, parts = [], []
            for v in views:
                cm, sup = self.confusion(v, iou=iou), self.confusion(v, level="super", iou=iou)
                parts.append((cm, sup))
                rows.append({"run": v.run, "dataset": v.dataset, **confusion_summary_row(cm, sup, supers)})
            pooled_row, matrix = pooled_super_confusion(parts, supers)
            rows.append({"run": POOLED, "dataset": POOLED, **pooled_row})
            cols = ["run", "dataset", *pooled_row]
            return {"summary": pd.DataFrame(rows, columns=cols), "pooled": matrix}

        return self._memoised("confusion_summary", (tuple(score_key(v) for v in views), float(iou)), compute)

    def protocol_comparison(self, view: View, *, overlap_threshold: float = CROSS_CLASS_IOU):
        """Dataset-level vs target-aware on the same thresholded predictions (Table 7): a ``ProtocolComparison``
        with per-class AP under both, the removed predictions and the cross-class ones among them."""
        base = view.with_(protocol="dataset-level")

        def compute():
            c = self.context(base)
            return compare_protocols_boxes(c.gt, c.pred, c.pairs, c.labels, proximity=c.proximity,
                                           overlap_threshold=overlap_threshold, keep_results=False)

        return self._memoised("protocol_comparison", (score_key(base), overlap_threshold), compute)

    def class_splits(self, view: View, *, subset_size: int = 10, n_subsets: int = 5000, seed: int | None = 0):
        """Class-split sensitivity (Table 9): mAP over random ``subset_size``-class subsets of the per-category AP."""
        def compute():
            pc = self.per_category(view)
            return class_split_sensitivity(pd.Series(pc["AP3D"].to_numpy(np.float64), index=pc["category"]),
                                           subset_size=int(subset_size), n_subsets=int(n_subsets), seed=seed)

        return self._memoised("class_splits", (score_key(view), int(subset_size), int(n_subsets), seed), compute)

    def tide(self, view: View, *, fg: float = 0.25, bg: float = 0.1):
        """3D TIDE error bins (``diagnostics.tide``): a ``TideResult`` (bins do not sum; see its note)."""
        def compute():
            c = self.context(view)
            return tide_3d_view(c.gt, c.pred, c.pairs, c.labels, fg=float(fg), bg=float(bg), proximity=c.proximity)

        return self._memoised("tide", (score_key(view), float(fg), float(bg)), compute)

    def tide_examples(self, view: View, *, fg: float = 0.25, bg: float = 0.1, bin: str | None = None,
                      n: int = 20) -> pd.DataFrame:
        """The highest-scoring false positives of every TIDE bin (``bin``: one bin, or a ``cls_within`` /
        ``cls_across`` split) and up to ``n`` missed GT, with image id and category: ``kind`` ("prediction" / "gt"),
        ``pred`` or ``gt`` row, ``bin``, ``score``, ``iou``, ..."""
        t = self.tide(view, fg=fg, bg=bg)
        c = self.context(view)
        d = t.dets
        if bin is not None and bin != "missed":
            col = "cls_split" if bin.startswith("cls_") and "cls_split" in d else "bin"
            d = d[d[col] == bin]
        d = d.sort_values(["bin", "score"], ascending=[True, False], kind="stable").groupby("bin").head(n)
        p = d["pred"].to_numpy(np.int64)
        det = d.assign(kind="prediction", image_id=c.pred.image_id[p], category=c.pred.category[p])
        g = np.flatnonzero(np.asarray(t.gt_status) == "missed")[:n]
        missed = pd.DataFrame({"bin": "missed", "kind": "gt", "gt": g, "image_id": c.gt.image_id[g],
                               "category": c.gt.category[g], "depth": c.gt.depth[g]})
        parts = [det] if bin not in (None, "missed") else [missed] if bin == "missed" else [det, missed]
        return pd.concat(parts, ignore_index=True)

    def oracles(self, view: View, *, association: str = "greedy"):
        """Monocular oracles (GT depth / size / rotation substituted): an ``OracleResult``."""
        def compute():
            c = self.context(view)
            return monocular_oracles_view(c.gt, c.pred, c.pairs, c.labels, association=association,
                                          proximity=c.proximity)

        return self._memoised("oracles", (score_key(view), association), compute)

    def distance(self, view: View):
        """Centre-distance AP with true-positive errors (``view.distance_mode``: "3dmood" = our reading of WildDet3D /
        3D-MOOD ODS, "3dmood-compat" = 3D-MOOD's evaluator as its code runs, "nuscenes" = nuscenes-devkit's rules;
        ``docs/distance_modes.md``). The dataset's proximity flag applies in the 3D-MOOD modes."""
        def compute():
            c = self.context(view)
            height = None
            if view.distance_mode == "3dmood-compat":
                rows = c.dataset.image_index(c.gt.image_id)
                height = c.dataset.images["height"].to_numpy(np.float64)[np.maximum(rows, 0)]
            return evaluate_distance_view(c.gt, c.pred, c.labels, mode=view.distance_mode, proximity=c.proximity,
                                          image_height=height)

        return self._memoised("distance", (score_key(view), view.distance_mode), compute)

    def distance_table(self, view: View) -> dict[str, pd.DataFrame | dict]:
        """:meth:`distance` as plain tables: ``summary`` (dict), ``per_category`` and ``per_threshold`` (or None)."""
        res = self.distance(view)
        out: dict = {"summary": {k: float(v) for k, v in res.summary().items()}}
        for name in ("per_category", "per_threshold"):
            fn = getattr(res, name, None)
            out[name] = fn() if callable(fn) else None
        return out

    def semantic_confusion(self, view: View, *, cost: str = "tree", iou: float = CONFUSION_IOU):
        """Confusion cost weighted by semantic distance (the paper's future work): ``cost="tree"`` (same
        super-category 0.5, else 1) or ``"embedding"`` (1 - cosine of the remap encoder's text embeddings of the class
        names; needs ``view.remap``)."""
        cm = self.confusion(view, iou=iou)
        names = list(cm.class_names)
        if cost == "tree":
            c = tree_cost(names, self.ontology())
        elif cost == "embedding":
            c = embedding_cost(self.class_text_embeddings(view))
        else:
            raise view_error("cost", "'tree' or 'embedding'", cost)
        return semantic_confusion_cost(cm.counts, c, names)

    # ---------------------------------------------------------------- thresholds, sizes, NMS, assignment
    def ap_vs_iou(self, view: View, *, iou: str = "3d"):
        """AP against the IoU threshold (Pro-Bench Fig. 3; ``diagnostics.iou_curve``): an ``IoUCurve`` over 0.05-0.95
        in 3D (``iou="3d"``) or 2D, with mAP@.5 / .75 / .5:.95 and the share of mAP@.5 retained."""
        if iou not in ("3d", "2d"):
            raise view_error("iou", "'3d' or '2d'", iou)

        def compute():
            c = self.context(view)
            return ap_vs_iou_from_view(c.gt, c.pred, c.pairs, c.labels, iou=iou, proximity=c.proximity)

        return self._memoised("ap_vs_iou", (score_key(view), iou), compute)

    def iou_summary(self, views: Sequence[View]) -> pd.DataFrame:
        """Pro-Bench's Table II localisation columns, one row per (view, IoU kind): ``run``, ``dataset``, ``iou``,
        ``mAP@.5``, ``mAP@.75``, ``mAP@.5:.95``, ``mAP@.05:.5`` (percent), ``retained`` (fraction)."""
        parts = []
        for v in views:
            t = iou_summary_table({v.run: [self.ap_vs_iou(v, iou="3d"), self.ap_vs_iou(v, iou="2d")]})
            parts.append(t.rename(columns={"name": "run"}).assign(dataset=v.dataset))
        cols = ["run", "dataset", "iou", "mAP@.5", "mAP@.75", "mAP@.5:.95", "mAP@.05:.5", "retained"]
        return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)

    def ap_by_size(self, view: View, *, iou: str = "3d"):
        """AP by object size, COCO's small / medium / large bins of the projected 2D box area (FG-OVD Tables 4-5;
        ``diagnostics.sizes``): a ``SizeAP`` for AP3D (``iou="3d"``) or AP2D."""
        if iou not in ("3d", "2d"):
            raise view_error("iou", "'3d' or '2d'", iou)

        def compute():
            c = self.context(view)
            return ap_by_size_from_view(c.gt, c.pred, c.pairs, c.labels, iou=iou, proximity=c.proximity)

        return self._memoised("ap_by_size", (score_key(view), iou), compute)

    def nms_keep(self, view: View, *, iou_threshold: float = NMS_IOU, mode: str = "3d") -> np.ndarray:
        """FG-OVD's class-agnostic NMS over the view's evaluated predictions: per image, label-blind greedy NMS in
        score order (suppress IoU > ``iou_threshold``, 3D or 2D IoU); the keep mask over the run's rows."""
        if mode not in ("3d", "2d"):
            raise view_error("mode", "'3d' or '2d'", mode)

        def compute():
            c = self.context(view)
            lv = c.labels
            return class_agnostic_nms(c.pred.image_id, lv.score, corners=c.pred.corners, box2d=c.pred.box2d,
                                      iou_threshold=float(iou_threshold), mode=mode, keep=lv.evaluated)

        return self._memoised("nms_keep", (score_key(view), float(iou_threshold), mode), compute)

    def nms_summary(self, view: View, *, iou_threshold: float = NMS_IOU, mode: str = "3d") -> dict[str, float]:
        """The view's summary (AP3D and its slices, recall3D@15) after class-agnostic NMS (:meth:`nms_keep`), and
        ``n_suppressed``: how many evaluated predictions the NMS removed."""
        def compute():
            c = self.context(view)
            keep = self.nms_keep(view, iou_threshold=iou_threshold, mode=mode)
            lv = c.labels.with_keep(c.labels.keep & keep)
            sc = score_view(c.dataset, c.run, c.pairs, lv, protocol=view.protocol)
            return {**sc.summary, "n_suppressed": int(np.count_nonzero(c.labels.evaluated & ~keep))}

        return self._memoised("nms_summary", (score_key(view), float(iou_threshold), mode), compute)

    def recall_methods(self, view: View, *, iou: float = RECALL_IOU) -> pd.DataFrame:
        """3D class-agnostic recall at ``iou`` under both one-to-one assignments (``eval.recall``): greedy in score
        order (the paper's, Omni3D-style) and Hungarian (maximum total IoU). One row per method: ``method``,
        ``recall`` (fraction), ``n_matched``, ``n_gt``, ``mean_iou`` (of the matched pairs)."""
        def compute():
            c = self.context(view)
            lv = c.labels
            gl = self.score(view).gt_label
            rows = []
            for method in RECALL_METHODS:
                r = recall_for_view(c.gt, c.pairs, lv.filtered(lv.label >= 0), gt_mask=gl >= 0,
                                    iou_threshold=float(iou), method=method)
                m = r.matched_iou[r.matched_pred >= 0]
                rows.append({"method": method, "recall": r.recall, "n_matched": int(r.n_matched),
                             "n_gt": int(r.n_gt), "mean_iou": float(m.mean()) if m.size else float("nan")})
            return pd.DataFrame(rows, columns=["method", "recall", "n_matched", "n_gt", "mean_iou"])

        return self._memoised("recall_methods", (score_key(view), float(iou)), compute)
