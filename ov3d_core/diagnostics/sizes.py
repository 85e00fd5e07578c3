"""AP by object size, small / medium / large (FG-OVD Appendix E, Tables 4-5: mAP_S, mAP_M, mAP_L), for AP3D and AP2D.

The size of an object is the area in pixels of its projected 2D box (Omni3D's 2D GT box: the truncated projected
cuboid; ``BoxSet.box2d_area``), binned with COCO's area ranges:

- small: area in [0, 32²], medium: [32², 96²], large: [96², 1e10]; "all": [0, 1e10].
- Ranges are inclusive at both ends, as in COCO / Omni3D (an object of exactly 32² px² is small *and* medium).

The bins act exactly as COCO's area ranges do in the engine (reference/omni3d_protocol.md §3.2): a GT outside the bin
is ignored (it still absorbs a detection, which is then ignored, not a false positive), and an unmatched detection
whose own 2D area is outside the bin is ignored; each bin's AP is the mean over the categories with non-ignored GT in
that bin (NaN when none). The detection's own area is that of its projected 2D box.

- **AP3D by size**: Omni3D's 3D IoU thresholds (0.05:0.05:0.5), 101 recall points, 100 detections per (image,
  category), with the COCO area bins in place of Omni3D's depth bins (our combination: FG-OVD bins 2D detections
  by area; a 3D box is binned by the area of its projection).
- **AP2D by size**: Omni3D's 2D evaluation as it is (COCO thresholds 0.5:0.05:0.95 and area ranges): AP2D-S/M/L.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ov3d_core.eval.ap import APInputs, APParams, evaluate_inputs

__all__ = ["SIZE_BINS", "SizeAP", "size_params", "ap_by_size", "ap_by_size_from_view"]

#: (bin name, range name in APParams.omni3d_2d().ranges), smallest first.
SIZE_BINS = (("small", "small"), ("medium", "medium"), ("large", "large"))


def size_params(iou: str = "3d", *, proximity: bool = False) -> APParams:
    """AP parameters with COCO's area ranges: Omni3D's 3D thresholds on 3D IoU, or Omni3D's 2D parameters."""
    p2 = APParams.omni3d_2d(proximity)
    if iou == "2d":
        return p2.with_(summary_spec=(("AP2D", None, "all"), ("AP2D-small", None, "small"),
                                      ("AP2D-medium", None, "medium"), ("AP2D-large", None, "large")))
    if iou != "3d":
        raise ValueError(f"iou: expected '3d' or '2d', got {iou!r}")
    return APParams.omni3d_3d(proximity).with_(
        ranges=dict(p2.ranges), range_variable="area",
        summary_spec=(("AP3D", None, "all"), ("AP3D-small", None, "small"), ("AP3D-medium", None, "medium"),
                      ("AP3D-large", None, "large")))


@dataclass(frozen=True, eq=False)
class SizeAP:
    """AP by size bin of one evaluation.

    Attributes:
        iou: "3d" or "2d".
        table: one row per bin ("all", "small", "medium", "large"): ``size``, ``area_lo``, ``area_hi`` (px²),
            ``AP`` (percent, NaN when no category has GT in the bin), ``n_gt`` (non-ignored GT in the bin).
        per_category: one row per category: ``category``, then ``AP-all``, ``AP-small``, ``AP-medium``,
            ``AP-large`` (percent, NaN where the category has no GT in the bin) and ``n_gt-<bin>``.
    """

    iou: str
    table: pd.DataFrame
    per_category: pd.DataFrame

    def summary(self) -> dict[str, float]:
        """``AP3D``, ``AP3D-small``, ``AP3D-medium``, ``AP3D-large`` (or the ``AP2D`` keys), percent."""
        pre = "AP3D" if self.iou == "3d" else "AP2D"
        ap = dict(zip(self.table["size"], self.table["AP"]))
        return {pre: ap["all"], **{f"{pre}-{b}": ap[b] for b, _ in SIZE_BINS}}

    def to_frame(self) -> pd.DataFrame:
        return self.table


def ap_by_size(inputs: APInputs, *, n_categories: int, iou: str = "3d", vocabulary=None) -> SizeAP:
    """AP in COCO's area bins (module docstring).

    Args:
        inputs: evaluation arrays whose range values are the 2D box areas (px²) of GT and predictions and whose
            ``pair_iou`` is the IoU of ``iou`` (``APInputs.from_view`` with :func:`size_params` builds them;
            :func:`ap_by_size_from_view` does it). ``inputs.proximity`` is honoured.
        n_categories: K.
        iou: "3d" (Omni3D 3D thresholds) or "2d" (COCO thresholds).
        vocabulary: the K names for the per-category table.
    """
    params = size_params(iou)
    res = evaluate_inputs(inputs, n_categories=int(n_categories), params=params)
    names = ["all"] + [b for b, _ in SIZE_BINS]
    rng = {"all": "all", **dict(SIZE_BINS)}
    table = pd.DataFrame({"size": names,
                          "area_lo": [params.ranges[rng[b]][0] for b in names],
                          "area_hi": [params.ranges[rng[b]][1] for b in names],
                          "AP": [res.ap(rng[b]) for b in names],
                          "n_gt": [int(res.n_gt[:, res.range_index(rng[b])].sum()) for b in names]})
    K = res.n_categories
    vocab = tuple(vocabulary) if vocabulary is not None else tuple(str(k) for k in range(K))
    per = {"category": list(vocab)}
    for b in names:
        per[f"AP-{b}"] = res.per_category_ap(rng[b])
    for b in names:
        per[f"n_gt-{b}"] = res.n_gt[:, res.range_index(rng[b])].astype(np.int64)
    return SizeAP(iou=iou, table=table, per_category=pd.DataFrame(per))


def ap_by_size_from_view(gt, pred, pairs, label_view, *, iou: str = "3d", proximity: bool | None = None,
                         pred_order=None) -> SizeAP:
    """:func:`ap_by_size` of a label view of a run: GT and prediction ``BoxSet`` (their ``box2d_area`` are the
    sizes), the cached ``Pairs`` and the ``LabelView``; ``proximity`` is the dataset's switch."""
    inp = APInputs.from_view(gt, pred, pairs, label_view, size_params(iou), proximity=proximity,
                             pred_order=pred_order)
    return ap_by_size(inp, n_categories=label_view.n_categories, iou=iou, vocabulary=label_view.vocabulary)
