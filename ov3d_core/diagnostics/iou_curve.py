"""AP against the IoU threshold (Pro-Bench §B "Evaluation Protocol" and Fig. 3), in 3D and in 2D.

Pro-Bench reports mAP.5, mAP.75 and mAP.5:.95 (AP averaged over IoU 0.5 to 0.95 in steps of 0.05), extends the sweep
to IoU 0.1-0.9 and 0.95, plots mAP against the IoU threshold and quotes the share of mAP.5 kept under mAP.5:.95
("85.1% of SAM3's mAP.5 is retained"). This module computes all of them from the project's AP engine
(:mod:`ov3d_core.eval.ap`) in one evaluation per IoU kind: the engine matches every threshold independently (COCO /
Omni3D greedy matching per threshold), so one run over all thresholds equals one run per threshold.

Conventions (those of the engine, reference/omni3d_protocol.md §3):

- **Thresholds** :data:`CURVE_THRESHOLDS`: 0.05 to 0.95 in steps of 0.05 (19 values), built as the union of
  Omni3D's 3D list ``np.linspace(0.05, 0.5, 10)`` and COCO's ``np.linspace(0.5, 0.95, 10)``, so that every value is
  bit-for-bit the one those protocols use (``np.linspace(0.05, 0.95, 19)`` differs from them in the last bit at eight
  thresholds, which matters for a pair whose IoU equals a threshold). A detection matches a GT when IoU >= t.
- **AP at a threshold** = the mean of the 101-point interpolated precision (recall 0, 0.01, ..., 1) over the
  categories that have non-ignored GT (Omni3D's / COCO's ``summarize``), in percent; at most 100 detections per
  (image, category), highest scores first (``max_dets``); range "all" (3D: depth 0-1e5 m; 2D: area 0-1e10 px²).
  Proximity evaluation (SUNRGBD, Objectron) follows the inputs' switch, in 2D and in 3D, as Omni3D does.
- **mAP@.5:.95** = the mean of every precision entry over the ten thresholds 0.5, ..., 0.95 (pycocotools'
  ``stats[0]`` for 2D); **mAP@.05:.5** = the same over 0.05, ..., 0.5 (Omni3D's AP3D for 3D). Because the categories
  present do not depend on the threshold, each equals the mean of the per-threshold mAPs.
- **retained** = mAP@.5:.95 / mAP@.5, a fraction; NaN when mAP@.5 is 0 or NaN.
- 3D IoU is the exact float64 cuboid IoU of the pair cache; 2D IoU is that of the projected (truncated) 2D boxes,
  Omni3D's 2D GT boxes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ov3d_core.eval.ap import APInputs, APParams, evaluate_inputs

__all__ = ["CURVE_THRESHOLDS", "IoUCurve", "curve_params", "ap_vs_iou", "ap_vs_iou_from_view", "iou_summary_table"]

#: 0.05, 0.10, ..., 0.95: Omni3D's 3D thresholds and COCO's, exactly as those protocols build them.
CURVE_THRESHOLDS = np.unique(np.r_[np.linspace(0.05, 0.5, 10), np.linspace(0.5, 0.95, 10)])
CURVE_THRESHOLDS.flags.writeable = False

_COCO_THRESHOLDS = np.linspace(0.5, 0.95, 10)
_OMNI3D_THRESHOLDS = np.linspace(0.05, 0.5, 10)


def _iou_kind(iou: str) -> str:
    if iou not in ("3d", "2d"):
        raise ValueError(f"iou: expected '3d' or '2d', got {iou!r}")
    return iou


def curve_params(iou: str = "3d", thresholds=CURVE_THRESHOLDS, *, proximity: bool = False) -> APParams:
    """The AP parameters of the curve: Omni3D's 3D parameters (depth ranges) or its 2D ones (COCO area ranges), with
    ``thresholds`` as the IoU thresholds and a one-key summary (``AP`` over all of them, range "all")."""
    base = APParams.omni3d_3d(proximity) if _iou_kind(iou) == "3d" else APParams.omni3d_2d(proximity)
    return base.with_(iou_thresholds=np.asarray(thresholds, np.float64), summary_spec=(("AP", None, "all"),))


@dataclass(frozen=True, eq=False)
class IoUCurve:
    """AP against the IoU threshold of one evaluation.

    Attributes:
        iou: "3d" or "2d".
        thresholds: ``(T,)`` IoU thresholds, ascending.
        map: ``(T,)`` mAP in percent at each threshold (NaN when no category has GT).
        per_category: ``(T, K)`` AP in percent per threshold and category (NaN where the category has no GT).
        precision: ``(T, R, K)`` the engine's interpolated precision of range "all" (NaN: category without GT).
        n_gt: ``(K,)`` non-ignored GT per category.
        vocabulary: the K category names, if known.
    """

    iou: str
    thresholds: np.ndarray
    map: np.ndarray
    per_category: np.ndarray
    precision: np.ndarray
    n_gt: np.ndarray
    vocabulary: tuple[str, ...] | None = None

    def _index(self, t: float) -> int:
        hit = np.flatnonzero(np.isclose(self.thresholds, t, rtol=0, atol=1e-9))
        if len(hit) == 0:
            raise ValueError(f"iou threshold: expected one of {np.round(self.thresholds, 4).tolist()}, got {t}")
        return int(hit[0])

    def at(self, t: float) -> float:
        """mAP (percent) at IoU threshold ``t``."""
        return float(self.map[self._index(t)])

    def mean_over(self, thresholds) -> float:
        """Mean of every precision entry (percent) over the given thresholds (all of them must be on the curve)."""
        idx = [self._index(t) for t in np.atleast_1d(thresholds)]
        s = self.precision[idx]
        s = s[~np.isnan(s)]
        return float(s.mean() * 100.0) if s.size else float("nan")

    @property
    def map_50(self) -> float:
        return self.at(0.5)

    @property
    def map_75(self) -> float:
        return self.at(0.75)

    @property
    def map_50_95(self) -> float:
        """COCO's mAP (IoU 0.5:0.05:0.95)."""
        return self.mean_over(_COCO_THRESHOLDS)

    @property
    def map_05_50(self) -> float:
        """Omni3D's threshold range (IoU 0.05:0.05:0.5): AP3D for 3D IoU."""
        return self.mean_over(_OMNI3D_THRESHOLDS)

    @property
    def retained(self) -> float:
        """mAP@.5:.95 / mAP@.5 as a fraction (Pro-Bench's "share of mAP.5 retained"); NaN if mAP@.5 is 0 or NaN."""
        m50 = self.map_50
        return float(self.map_50_95 / m50) if np.isfinite(m50) and m50 > 0 else float("nan")

    def summary(self) -> dict[str, float]:
        """``mAP@.5``, ``mAP@.75``, ``mAP@.5:.95``, ``mAP@.05:.5`` (percent) and ``retained`` (fraction)."""
        return {"mAP@.5": self.map_50, "mAP@.75": self.map_75, "mAP@.5:.95": self.map_50_95,
                "mAP@.05:.5": self.map_05_50, "retained": self.retained}

    def to_frame(self) -> pd.DataFrame:
        """One row per threshold: ``iou``, ``iou_thr``, ``mAP`` (percent)."""
        return pd.DataFrame({"iou": self.iou, "iou_thr": self.thresholds, "mAP": self.map})

    def per_category_frame(self) -> pd.DataFrame:
        """One row per (category, threshold): ``category``, ``iou_thr``, ``AP`` (percent, NaN without GT), ``n_gt``."""
        T, K = self.per_category.shape
        vocab = self.vocabulary if self.vocabulary is not None else tuple(str(k) for k in range(K))
        kk, tt = np.meshgrid(np.arange(K), np.arange(T), indexing="ij")
        return pd.DataFrame({"category": np.asarray(vocab, dtype=object)[kk.ravel()],
                             "iou_thr": self.thresholds[tt.ravel()], "AP": self.per_category.T.ravel(),
                             "n_gt": self.n_gt[kk.ravel()]})


def ap_vs_iou(inputs: APInputs, *, n_categories: int, iou: str = "3d", thresholds=CURVE_THRESHOLDS,
              vocabulary=None) -> IoUCurve:
    """The AP-vs-IoU curve of one evaluation bundle.

    Args:
        inputs: evaluation arrays built for :func:`curve_params` of the same ``iou`` (``APInputs.from_view`` with
            those params puts 3D IoU and depths, or 2D IoU and 2D box areas, in ``pair_iou`` / the range values;
            :func:`ap_vs_iou_from_view` does it). ``inputs.proximity`` is honoured.
        n_categories: K.
        iou: "3d" or "2d" (which Omni3D parameters: depth or area ranges).
        thresholds: the IoU thresholds (default :data:`CURVE_THRESHOLDS`).
        vocabulary: the K names, stored in the result.
    """
    thr = np.asarray(thresholds, np.float64).reshape(-1)
    if thr.size == 0 or np.any(np.diff(thr) <= 0):
        raise ValueError(f"thresholds: expected ascending distinct values, got {thr.tolist()}")
    params = curve_params(iou, thr)
    res = evaluate_inputs(inputs, n_categories=int(n_categories), params=params)
    a = res.range_index("all")
    prec = np.array(res.precision[:, :, :, a])  # (T, R, K)
    with np.errstate(invalid="ignore"):
        per_cat = prec.mean(axis=1) * 100.0  # NaN stays NaN (a category without GT is NaN at every recall point)
    m = np.array([_mean_finite(prec[t]) for t in range(len(thr))])  # Omni3D / COCO summarize, per threshold
    for arr in (prec, per_cat, m):
        arr.flags.writeable = False
    thr = thr.copy()
    thr.flags.writeable = False
    return IoUCurve(iou=iou, thresholds=thr, map=m, per_category=per_cat, precision=prec,
                    n_gt=np.asarray(res.n_gt[:, a]), vocabulary=None if vocabulary is None else tuple(vocabulary))


def _mean_finite(p: np.ndarray) -> float:
    v = p[~np.isnan(p)]
    return float(v.mean() * 100.0) if v.size else float("nan")


def ap_vs_iou_from_view(gt, pred, pairs, label_view, *, iou: str = "3d", proximity: bool | None = None,
                        thresholds=CURVE_THRESHOLDS, pred_order=None) -> IoUCurve:
    """:func:`ap_vs_iou` of a label view of a run: the bundle is built with :func:`curve_params` (3D IoU and depth
    ranges, or 2D IoU and area ranges) from the GT and prediction ``BoxSet``, their cached ``Pairs`` and the
    ``LabelView`` (as :func:`ov3d_core.eval.ap.evaluate_view` does); ``proximity`` is the dataset's switch."""
    params = curve_params(iou, thresholds)
    inp = APInputs.from_view(gt, pred, pairs, label_view, params, proximity=proximity, pred_order=pred_order)
    return ap_vs_iou(inp, n_categories=label_view.n_categories, iou=iou, thresholds=thresholds,
                     vocabulary=label_view.vocabulary)


def iou_summary_table(curves) -> pd.DataFrame:
    """One row per (name, IoU kind) of a mapping ``name -> IoUCurve`` (or ``name -> [IoUCurve, ...]``): ``name``,
    ``iou``, ``mAP@.5``, ``mAP@.75``, ``mAP@.5:.95``, ``mAP@.05:.5`` (percent), ``retained`` (fraction)."""
    rows = []
    for name, cs in dict(curves).items():
        for c in (cs if isinstance(cs, (list, tuple)) else [cs]):
            rows.append({"name": name, "iou": c.iou, **c.summary()})
    return pd.DataFrame(rows, columns=["name", "iou", "mAP@.5", "mAP@.75", "mAP@.5:.95", "mAP@.05:.5", "retained"])
