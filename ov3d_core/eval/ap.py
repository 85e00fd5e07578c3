"""Omni3D / COCO average precision over cached sparse pairs.

Stages (each pure):

1. order: detections sorted by (-score, image, tie-break) once (stable radix sort), truncated to ``max_dets`` per
   (image, category), and bucketed by category for accumulation;
2. match: :func:`ov3d_core.eval.matching.coco_greedy_match` (numba) for all thresholds and ranges;
3. accumulate: :func:`ov3d_core.eval.accumulation.accumulate_precision` (numba): cumulative TP/FP, precision envelope,
   101-point sampling.

The semantics are those of Omni3D's ``Omni3Deval`` (reference/omni3d_protocol.md §3), with 2D IoU and
:meth:`APParams.coco_2d` they are pycocotools' ``COCOeval`` for bounding boxes.

Image keys: any 1-D integer (or sortable) array, or an ``(N, 2)`` array of composite keys such as
(dataset index, image id). Images are visited in ascending key order, which fixes how score ties across images are
broken. To pool datasets, use :func:`evaluate_ap_pooled`, which evaluates the union as one dataset (Omni3D's
``summarize_all``) and keeps each dataset's own proximity switch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from ov3d_core.digest import content_key
from ov3d_core.eval.accumulation import accumulate_precision
from ov3d_core.eval.grouping import dense_image_keys
from ov3d_core.eval.labels import gt_codes
from ov3d_core.eval.matching import STATE_IGNORED, candidate_csr, coco_greedy_match, ignore_records, unmatched_outcome
from ov3d_core.eval.ordering import argsort_desc_stable, bucket_rows, stable_bucket, truncate_per_group
from ov3d_core.eval.results import APResult, Matches
from ov3d_core.heap import trim_heap
from ov3d_core.memo import Memo

__all__ = ["APParams", "APInputs", "FixedMatching", "fixed_matching", "evaluate_ap", "evaluate_ap_pooled",
           "evaluate_view", "evaluate_inputs", "map3d", "matches_at", "single_threshold", "OMNI3D_3D_SUMMARY",
           "OMNI3D_2D_SUMMARY", "COCO_SUMMARY"]

#: (key, IoU threshold or None for all, range) of Omni3D's 3D summary.
OMNI3D_3D_SUMMARY = (("AP3D", None, "all"), ("AP3D@15", 0.15, "all"), ("AP3D@25", 0.25, "all"),
                     ("AP3D@50", 0.50, "all"), ("AP3D-N", None, "near"), ("AP3D-M", None, "medium"),
                     ("AP3D-F", None, "far"))
#: Omni3D's 2D summary (COCO thresholds and area ranges).
OMNI3D_2D_SUMMARY = (("AP2D", None, "all"), ("AP2D@50", 0.50, "all"), ("AP2D@75", 0.75, "all"),
                     ("AP2D@95", 0.95, "all"), ("AP2D-S", None, "small"), ("AP2D-M", None, "medium"),
                     ("AP2D-L", None, "large"))
#: pycocotools' bbox stats[0:6] (the maxDets=100 ones).
COCO_SUMMARY = (("AP", None, "all"), ("AP50", 0.50, "all"), ("AP75", 0.75, "all"), ("APs", None, "small"),
                ("APm", None, "medium"), ("APl", None, "large"))

_OMNI3D_DEPTH_RANGES = {"all": (0.0, 1e5), "near": (0.0, 10.0), "medium": (10.0, 35.0), "far": (35.0, 1e5)}
_COCO_AREA_RANGES = {"all": (0.0, 1e5 ** 2), "small": (0.0, 32.0 ** 2), "medium": (32.0 ** 2, 96.0 ** 2),
                     "large": (96.0 ** 2, 1e5 ** 2)}


def _ro(a) -> np.ndarray:
    a = np.array(a, dtype=np.float64).reshape(-1)
    a.flags.writeable = False
    return a


@dataclass(frozen=True, eq=False)
class APParams:
    """AP evaluation parameters (defaults: Omni3D 3D).

    Attributes:
        iou_thresholds: ``(T,)`` IoU thresholds in (0, 1]; Omni3D 3D: ``np.linspace(0.05, 0.5, 10)``.
        recall_thresholds: ``(R,)`` ascending recall sampling points; ``np.linspace(0, 1, 101)``.
        max_dets: detections kept per (image, category) after the score sort (100).
        ranges: name -> (lo, hi) of the range variable, inclusive at both ends. "all" is the main range.
        range_variable: "depth" (metres; the box's depth field) or "area" (px^2 of the 2D box). Used by
            :func:`evaluate_view` to pick the values; :func:`evaluate_ap` takes them as arrays.
        proximity: Omni3D proximity evaluation (on for SUNRGBD and Objectron).
        proximity_thresh: a GT is "in proximity" of a detection when their 2D IoU is > this.
        iou: "3d" or "2d": which pair IoU :func:`evaluate_view` matches on.
        summary_spec: (key, IoU threshold or None, range) of the numbers :meth:`APResult.summary` reports.
    """

    iou_thresholds: np.ndarray = field(default_factory=lambda: np.linspace(0.05, 0.5, 10))
    recall_thresholds: np.ndarray = field(default_factory=lambda: np.linspace(0.0, 1.0, 101))
    max_dets: int = 100
    ranges: dict = field(default_factory=lambda: dict(_OMNI3D_DEPTH_RANGES))
    range_variable: str = "depth"
    proximity: bool = False
    proximity_thresh: float = 0.3
    iou: str = "3d"
    summary_spec: tuple = OMNI3D_3D_SUMMARY

    def __post_init__(self):
        thr = _ro(self.iou_thresholds)
        if thr.size == 0 or not np.all((thr > 0) & (thr <= 1)):
            raise ValueError(f"APParams.iou_thresholds: expected values in (0, 1], got {thr.tolist()}")
        rec = _ro(self.recall_thresholds)
        if rec.size == 0 or not np.all((rec >= 0) & (rec <= 1)) or np.any(np.diff(rec) < 0):
            raise ValueError(f"APParams.recall_thresholds: expected ascending values in [0, 1], got {rec.tolist()}")
        if int(self.max_dets) < 1:
            raise ValueError(f"APParams.max_dets: expected >= 1, got {self.max_dets}")
        ranges = {str(k): (float(v[0]), float(v[1])) for k, v in dict(self.ranges).items()}
        if not ranges or any(lo > hi for lo, hi in ranges.values()):
            raise ValueError(f"APParams.ranges: expected a non-empty dict of name -> (lo, hi), got {self.ranges}")
        if self.range_variable not in ("depth", "area"):
            raise ValueError(f"APParams.range_variable: expected 'depth' or 'area', got {self.range_variable!r}")
        if self.iou not in ("3d", "2d"):
            raise ValueError(f"APParams.iou: expected '3d' or '2d', got {self.iou!r}")
        spec = tuple((str(k), None if i is None else float(i), str(r)) for k, i, r in self.summary_spec)
        for key, i, r in spec:
            if r not in ranges or (i is not None and not np.isclose(i, thr).any()):
                raise ValueError(f"APParams.summary_spec: {key!r} needs range {r!r} and IoU {i} among the params")
        object.__setattr__(self, "iou_thresholds", thr)
        object.__setattr__(self, "recall_thresholds", rec)
        object.__setattr__(self, "max_dets", int(self.max_dets))
        object.__setattr__(self, "ranges", ranges)
        object.__setattr__(self, "proximity", bool(self.proximity))
        object.__setattr__(self, "proximity_thresh", float(self.proximity_thresh))
        object.__setattr__(self, "summary_spec", spec)

    # -------------------------------------------------------------- presets
    @classmethod
    def omni3d_3d(cls, proximity: bool = False) -> "APParams":
        """Omni3D AP3D: IoU 0.05:0.05:0.50, depth ranges all/near/medium/far."""
        return cls(proximity=proximity)

    @classmethod
    def omni3d_2d(cls, proximity: bool = False) -> "APParams":
        """Omni3D AP2D: COCO IoU 0.50:0.05:0.95 and area ranges, 2D IoU."""
        return cls(iou_thresholds=np.linspace(0.5, 0.95, 10), ranges=dict(_COCO_AREA_RANGES), range_variable="area",
                   iou="2d", proximity=proximity, summary_spec=OMNI3D_2D_SUMMARY)

    @classmethod
    def coco_2d(cls) -> "APParams":
        """pycocotools COCOeval bbox parameters at maxDets=100 (for parity tests)."""
        return cls(iou_thresholds=np.linspace(0.5, 0.95, 10), ranges=dict(_COCO_AREA_RANGES), range_variable="area",
                   iou="2d", summary_spec=COCO_SUMMARY)

    def with_(self, **changes) -> "APParams":
        return replace(self, **changes)

    # -------------------------------------------------------------- identity
    def to_dict(self) -> dict:
        return {"iou_thresholds": self.iou_thresholds.tolist(), "recall_thresholds": self.recall_thresholds.tolist(),
                "max_dets": self.max_dets, "ranges": {k: list(v) for k, v in self.ranges.items()},
                "range_variable": self.range_variable, "proximity": self.proximity,
                "proximity_thresh": self.proximity_thresh, "iou": self.iou,
                "summary_spec": [list(s) for s in self.summary_spec]}

    @classmethod
    def from_dict(cls, d: dict) -> "APParams":
        d = dict(d)
        if "summary_spec" in d:
            d["summary_spec"] = tuple(tuple(s) for s in d["summary_spec"])
        return cls(**d)

    def key(self) -> str:
        """A canonical string for caching."""
        return json.dumps(self.to_dict(), sort_keys=True)

    def __eq__(self, other) -> bool:
        return isinstance(other, APParams) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    @property
    def range_names(self) -> tuple[str, ...]:
        return tuple(self.ranges)


@dataclass(frozen=True, eq=False)
class APInputs:
    """The arrays of one AP evaluation (one dataset x one label view), as :func:`evaluate_ap` takes them.

    ``proximity`` (None: ``params.proximity``) lets pooled parts keep their own switch.
    """

    gt_image: np.ndarray
    gt_label: np.ndarray
    gt_ignore: np.ndarray
    gt_range_value: np.ndarray
    pred_image: np.ndarray
    pred_label: np.ndarray
    pred_score: np.ndarray
    pred_range_value: np.ndarray
    pair_gt: np.ndarray
    pair_pred: np.ndarray
    pair_iou: np.ndarray
    pair_iou2d: np.ndarray | None = None
    pred_order: np.ndarray | None = None
    proximity: bool | None = None

    @classmethod
    def from_view(cls, gt, pred, pairs, view, params: "APParams | None" = None, *, gt_label=None, gt_ignore=None,
                  proximity: bool | None = None, pred_order=None) -> "APInputs":
        """Inputs from a GT ``BoxSet``, a prediction ``BoxSet``, their cached ``Pairs`` and a ``LabelView``.

        ``gt_label`` defaults to the GT category names coded in ``view.vocabulary``; ``gt_ignore`` to ``gt.ignore``.
        The range values are the boxes' ``depth`` (params.range_variable "depth") or 2D box area ("area"); the pair
        IoU is ``pairs.iou3d`` or ``pairs.iou2d`` by ``params.iou``.
        """
        params = params or APParams()
        if len(view) != len(pred) or pairs.n_pred != len(pred) or pairs.n_gt != len(gt):
            raise ValueError(f"evaluate_view: expected matching sizes, got {len(gt)} GT / {len(pred)} predictions, "
                             f"pairs over {pairs.n_gt} x {pairs.n_pred}, label view of {len(view)}")
        if params.range_variable == "depth":
            gv, pv = gt.depth, pred.depth
        else:
            gv, pv = gt.box2d_area, pred.box2d_area
        return cls(gt_image=gt.image_id, gt_label=gt_codes(gt.category, view.vocabulary) if gt_label is None
                   else gt_label, gt_ignore=gt.ignore if gt_ignore is None else gt_ignore, gt_range_value=gv,
                   pred_image=pred.image_id, pred_label=view.codes, pred_score=view.score, pred_range_value=pv,
                   pair_gt=pairs.gt, pair_pred=pairs.pred,
                   pair_iou=pairs.iou3d if params.iou == "3d" else pairs.iou2d, pair_iou2d=pairs.iou2d,
                   pred_order=pred_order, proximity=proximity)

    def arrays(self) -> dict:
        return {k: getattr(self, k) for k in ("gt_image", "gt_label", "gt_ignore", "gt_range_value", "pred_image",
                                              "pred_label", "pred_score", "pred_range_value", "pair_gt", "pair_pred",
                                              "pair_iou")}


# ---------------------------------------------------------------------------------------------------- helpers
def _as(name: str, a, dtype, n: int | None) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1 or (n is not None and len(a) != n):
        raise ValueError(f"evaluate_ap: expected `{name}` of shape ({n if n is not None else 'P'},), got {a.shape}")
    if dtype is np.int64 and len(a) and not np.issubdtype(a.dtype, np.integer):
        raise ValueError(f"evaluate_ap: expected integer `{name}`, got {a.dtype}")
    return np.ascontiguousarray(a, dtype=dtype)


def _pred_rank(pred_order, n_pred: int) -> np.ndarray | None:
    if pred_order is None:
        return None
    po = np.asarray(pred_order)
    if po.shape != (n_pred,):
        raise ValueError(f"evaluate_ap: expected `pred_order` of shape ({n_pred},), got {po.shape}")
    return po


# ---------------------------------------------------------------------------------------------------- evaluate
@dataclass(frozen=True, eq=False)
class _Checked:
    """Validated, contiguous inputs of :func:`evaluate_ap`, with dense image indices."""

    gi: np.ndarray
    pi: np.ndarray
    n_img: int
    gt_label: np.ndarray
    gt_ignore: np.ndarray
    gt_value: np.ndarray
    pred_label: np.ndarray
    pred_score: np.ndarray
    pred_value: np.ndarray
    pair_gt: np.ndarray
    pair_pred: np.ndarray
    pair_iou: np.ndarray
    pair_iou2d: np.ndarray | None
    det_prox: np.ndarray
    rank: np.ndarray | None
    pairs_by_gt: bool  # pair_gt non-decreasing (as Pairs tables are)


@dataclass(frozen=True, eq=False)
class _ImageIndex:
    gi: np.ndarray
    pi: np.ndarray
    n_img: int
    pairs_by_gt: bool


_IMAGE_INDEX = Memo(4, read_only=True)


def _image_index(gt_image, pred_image, p_gt, p_pred) -> _ImageIndex:
    """Dense image indices of GT and predictions, once the pairs are checked to join rows of one image, and whether
    the pairs come sorted by GT row."""
    n_gt, n_pred, n_pairs = len(gt_image), len(pred_image), len(p_gt)
    if n_pairs and (p_gt.min() < 0 or p_gt.max() >= n_gt or p_pred.min() < 0 or p_pred.max() >= n_pred):
        raise ValueError(f"evaluate_ap: expected pair indices within {n_gt} GT x {n_pred} predictions")
    gi, pi, n_img = dense_image_keys(gt_image, pred_image)
    if n_pairs and np.any(gi[p_gt] != pi[p_pred]):
        raise ValueError("evaluate_ap: expected every pair to join a GT and a prediction of the same image")
    return _ImageIndex(gi, pi, n_img, bool(n_pairs < 2 or (p_gt[1:] >= p_gt[:-1]).all()))


def _check(gt_image, gt_label, gt_ignore, gt_range_value, pred_image, pred_label, pred_score, pred_range_value,
           pair_gt, pair_pred, pair_iou, K, params, pair_iou2d, pred_order, pred_proximity) -> _Checked:
    gt_image, pred_image = np.asarray(gt_image), np.asarray(pred_image)
    n_gt, n_pred = len(gt_image), len(pred_image)
    g_lab = _as("gt_label", gt_label, np.int64, n_gt)
    p_lab = _as("pred_label", pred_label, np.int64, n_pred)
    score = _as("pred_score", pred_score, np.float64, n_pred)
    p_gt = _as("pair_gt", pair_gt, np.int64, None)
    n_pairs = len(p_gt)
    p_pred = _as("pair_pred", pair_pred, np.int64, n_pairs)
    for name, lab in (("gt_label", g_lab), ("pred_label", p_lab)):
        if len(lab) and (lab.min() < -1 or lab.max() >= K):
            raise ValueError(f"evaluate_ap: expected `{name}` codes in [-1, {K}), got [{lab.min()}, {lab.max()}]")
    if n_pred and not np.isfinite(score).all():
        raise ValueError("evaluate_ap: expected finite `pred_score`, got NaN or inf")
    # The image index and the pair checks do not depend on labels or scores: a re-score re-uses them.
    idx = _IMAGE_INDEX.get(content_key(gt_image, pred_image, p_gt, p_pred),
                           lambda: _image_index(gt_image, pred_image, p_gt, p_pred))
    gi, pi, n_img = idx.gi, idx.pi, idx.n_img
    det_prox = (np.full(n_pred, params.proximity) if pred_proximity is None
                else _as("pred_proximity", pred_proximity, bool, n_pred))
    if det_prox.any():
        if pair_iou2d is None:
            raise ValueError("evaluate_ap: proximity evaluation needs `pair_iou2d`")
        pair_iou2d = _as("pair_iou2d", pair_iou2d, np.float64, n_pairs)
    return _Checked(gi=gi, pi=pi, n_img=n_img, gt_label=g_lab, gt_ignore=_as("gt_ignore", gt_ignore, bool, n_gt),
                    gt_value=_as("gt_range_value", gt_range_value, np.float64, n_gt), pred_label=p_lab,
                    pred_score=score, pred_value=_as("pred_range_value", pred_range_value, np.float64, n_pred),
                    pair_gt=p_gt, pair_pred=p_pred, pair_iou=_as("pair_iou", pair_iou, np.float64, n_pairs),
                    pair_iou2d=pair_iou2d if det_prox.any() else None, det_prox=det_prox,
                    rank=_pred_rank(pred_order, n_pred), pairs_by_gt=idx.pairs_by_gt)


def _order(c: _Checked, K: int, max_dets: int):
    """Evaluated detections sorted by (-score, image, tie-break) (stable), cut to ``max_dets`` per (image, category),
    then bucketed by category: ``acc_order`` (category, -score, image, tie-break), its category segments
    ``cat_ptr`` and the range values in that order."""
    n_img = max(c.n_img, 1)
    evaluated = c.pred_label >= 0
    # A stable sort of a subset is the subset of the stable sort of all rows, so the (-score, image, tie-break) order
    # of every row is computed once per (scores, images, tie-break) and filtered to the evaluated rows: a label change
    # re-uses it.
    order_key = content_key(c.pred_score, c.pi, c.rank, n_img)
    all_by_score = _SCORE_ORDER.get(order_key, lambda: _score_order(c.pred_score, c.pi, c.rank, n_img))
    value_by_score = _VALUE_BY_SCORE.get(content_key(order_key, c.pred_value), lambda: c.pred_value[all_by_score])
    if _groups_within(c.pi[evaluated], c.pred_label[evaluated], max(K, 1), max_dets):
        keys = c.pred_label  # no (image, category) holds more than max_dets: nothing is cut (-1: not evaluated)
    else:
        by_score = all_by_score[evaluated[all_by_score]]
        by_image, img_ptr = stable_bucket(by_score, c.pi, n_img)  # (image, -score, tie-break)
        keep = truncate_per_group(by_image, img_ptr, c.pred_label, max(K, 1), max_dets)
        keys = np.where(keep, c.pred_label, -1)
    return bucket_rows(all_by_score, keys, max(K, 1), carry=value_by_score)


_SCORE_ORDER = Memo(4, read_only=True)
#: The range values in that order (they do not change with the labels either).
_VALUE_BY_SCORE = Memo(4, read_only=True)


def _score_order(score: np.ndarray, pi: np.ndarray, rank: np.ndarray | None, n_img: int) -> np.ndarray:
    """Every detection row sorted by (-score, image, tie-break) (stable)."""
    rows = np.arange(len(score), dtype=np.int64)
    if rank is not None:
        rows = rows[np.argsort(rank, kind="stable")]
    base, _ = stable_bucket(rows, pi, n_img)  # (image, tie-break)
    return argsort_desc_stable(score, base)


def _groups_within(image: np.ndarray, label: np.ndarray, K: int, max_dets: int) -> bool:
    """True if every (image, category) group has at most ``max_dets`` detections (checked when the group table is
    small enough to count directly)."""
    if len(image) == 0:
        return True
    n_groups = (int(image.max()) + 1) * K
    if n_groups > 8 * len(image) + (1 << 20):
        return False
    return int(np.bincount(image * K + label, minlength=n_groups).max()) <= max_dets


def _candidates(c: _Checked, acc_order, params: APParams):
    """Pairs that can match: same category, kept detection, IoU >= the lowest threshold (or, under proximity, 2D IoU
    above the proximity threshold). CSR keyed by accumulation position with GT rows ascending, gathered so that the
    matching kernel reads memory sequentially (:func:`~ov3d_core.eval.matching.candidate_csr`). Also returns, under
    proximity, which detections have a candidate within the proximity threshold (else None)."""
    t_min = min(float(params.iou_thresholds.min()), 1.0 - 1e-10)
    acc_pos = np.full(len(c.pred_label), -1, np.int64)
    acc_pos[acc_order] = np.arange(len(acc_order))
    pg, pp, iou, iou2d = c.pair_gt, c.pair_pred, c.pair_iou, c.pair_iou2d
    if not c.pairs_by_gt:  # pairs given in another order: by GT row first (stable)
        perm, _ = stable_bucket(np.arange(len(pg)), pg, max(len(c.gt_label), 1))
        pg, pp, iou = pg[perm], pp[perm], iou[perm]
        iou2d = None if iou2d is None else iou2d[perm]
    indptr, cand_gt, cand_iou, cand_prox, pos_of = candidate_csr(
        pg, pp, iou, iou2d, c.gt_label, c.pred_label, acc_pos, len(acc_order), c.det_prox, t_min,
        params.proximity_thresh)
    near = None
    if iou2d is not None:
        near = np.zeros(len(c.pred_label), bool)
        near[pp[(pos_of >= 0) & (iou2d > params.proximity_thresh)]] = True
    return indptr, cand_gt, cand_iou, cand_prox, near


def _unmatched_outcome(c: _Checked, acc_order, acc_value, near, lo, hi, K: int) -> np.ndarray:
    """``(n_acc, A)`` uint8 outcome of each detection when unmatched in range a: ignored if its range value
    (``acc_value``, in accumulation order) is out of [lo, hi] or, under proximity, if its (image, category) has GT and
    none within 2D IoU > thresh (``near``); else FP."""
    out = unmatched_outcome(acc_value, lo, hi)
    if near is not None:
        gmask = c.gt_label >= 0
        has_gt = np.isin(c.pi[acc_order] * K + c.pred_label[acc_order], c.gi[gmask] * K + c.gt_label[gmask])
        out[c.det_prox[acc_order] & has_gt & ~near[acc_order]] = STATE_IGNORED
    return out


def evaluate_ap(gt_image, gt_label, gt_ignore, gt_range_value, pred_image, pred_label, pred_score,
                pred_range_value, pair_gt, pair_pred, pair_iou, *, n_categories: int, params: APParams | None = None,
                pair_iou2d=None, pred_order=None, return_matches: bool = False, pred_proximity=None,
                vocabulary=None) -> APResult:
    """Omni3D / COCO AP of detections against GT, matched over sparse pairs (unlisted pairs have IoU 0).

    Args:
        gt_image: ``(n_gt,)`` image keys (ints, or ``(n_gt, 2)`` composite keys).
        gt_label: ``(n_gt,)`` int category codes in [0, n_categories), -1 = not evaluated.
        gt_ignore: ``(n_gt,)`` bool Omni3D ignore flags (ignored GT absorb detections but do not count).
        gt_range_value: ``(n_gt,)`` range variable (depth in m for 3D, area in px^2 for 2D).
        pred_image, pred_label, pred_score, pred_range_value: the same for the ``n_pred`` detections; label -1 =
            not evaluated (out of vocabulary, or dropped by a filter).
        pair_gt, pair_pred: ``(P,)`` int row indices of the candidate pairs (same image; any category).
        pair_iou: ``(P,)`` float IoU used for matching (3D or 2D).
        n_categories: K, the vocabulary size.
        params: :class:`APParams` (default Omni3D 3D).
        pair_iou2d: ``(P,)`` 2D IoU, needed with proximity evaluation.
        pred_order: ``(n_pred,)`` tie-break sort key (smaller first) among equal scores; default: row order (the
            file order, as Omni3D's ``loadRes`` ids).
        return_matches: also return per-detection match records for the range "all" (``APResult.matches``).
        pred_proximity: ``(n_pred,)`` bool per-detection proximity switch overriding ``params.proximity``.
        vocabulary: optional category names, stored in the result.

    Returns:
        :class:`~ov3d_core.eval.results.APResult`.
    """
    params = params or APParams()
    fm = _fixed_matching(params, int(n_categories), _check(
        gt_image, gt_label, gt_ignore, gt_range_value, pred_image, pred_label, pred_score, pred_range_value, pair_gt,
        pair_pred, pair_iou, int(n_categories), params, pair_iou2d, pred_order, pred_proximity), return_matches)
    trim_heap()  # the candidate tables are gone: hand their memory back before the records and accumulation
    # 3. accumulate
    npig = fm.npig()
    precision, recall = accumulate_precision(fm.state, fm.row_of, fm.unmatched, fm.cat_ptr, npig,
                                             params.recall_thresholds)
    matches = None
    if return_matches:
        matches = _matches(params, params.range_names[fm.range_index], fm)
    K = fm.n_categories
    return APResult(precision=precision, recall=recall, n_gt=npig,
                    n_pred=np.diff(fm.cat_ptr)[:K].astype(np.int64),  # acc_order is bucketed by category
                    params=params, matches=matches, vocabulary=None if vocabulary is None else tuple(vocabulary))


@dataclass(frozen=True, eq=False)
class FixedMatching:
    """The matching of one AP evaluation (stages 1 and 2), before accumulation.

    Matching is per image, so it is the same for any multiset of the images: a bootstrap resample only changes how
    often each detection and GT counts (``ov3d_core.diagnostics.bootstrap`` re-accumulates with image weights).

    Attributes:
        params: the :class:`APParams` (``params.proximity`` as used).
        n_categories: K.
        image_keys: ``(n_img,)`` (or ``(n_img, 2)``) the image keys, ascending; dense image index i is key i.
        gt_image: ``(n_gt,)`` dense image index of each GT row. gt_label: ``(n_gt,)`` codes (-1 not evaluated).
        gt_ignore_r: ``(A, n_gt)`` bool, GT ignored in range a (flag or range value out of range).
        pred_image: ``(n_pred,)`` dense image index of each prediction row. pred_label, pred_score: as evaluated.
        acc_order: ``(n_acc,)`` prediction rows in accumulation order (category, -score, image, tie-break) after
            the ``max_dets`` cut; cat_ptr: ``(K + 1,)`` category segments of it.
        rows: positions (into acc_order) with candidate pairs; state: ``(len(rows), A, T)`` uint8 outcomes
            (``STATE_FP`` / ``STATE_TP`` / ``STATE_IGNORED``); row_of: ``(n_acc,)`` row of each position in state
            or -1; unmatched: ``(n_acc, A)`` outcome of a position without a match (FP or ignored).
        dt_match: ``(T, n_pred)`` int32 GT row each prediction row matched in range ``range_index`` or -1;
            gt_match: ``(T, n_gt)`` the prediction row each GT matched or -1 (both ``(T, 0)`` unless requested).
        range_index: the range whose matches are recorded ("all").
    """

    params: APParams
    n_categories: int
    image_keys: np.ndarray
    gt_image: np.ndarray
    gt_label: np.ndarray
    gt_ignore_r: np.ndarray
    pred_image: np.ndarray
    pred_label: np.ndarray
    pred_score: np.ndarray
    acc_order: np.ndarray
    cat_ptr: np.ndarray
    rows: np.ndarray
    state: np.ndarray
    row_of: np.ndarray
    unmatched: np.ndarray
    dt_match: np.ndarray
    gt_match: np.ndarray
    range_index: int

    @property
    def n_pred(self) -> int:
        return len(self.pred_label)

    @property
    def n_images(self) -> int:
        return len(self.image_keys)

    def npig(self) -> np.ndarray:
        """``(K, A)`` int64 non-ignored evaluated GT per category and range."""
        K, A = self.n_categories, self.gt_ignore_r.shape[0]
        gvalid = self.gt_label >= 0
        out = np.zeros((K, A), np.int64)
        for a in range(A):
            out[:, a] = np.bincount(self.gt_label[gvalid & ~self.gt_ignore_r[a]], minlength=K)[:K]
        return out


def _image_keys(gt_image: np.ndarray, pred_image: np.ndarray, gi: np.ndarray, pi: np.ndarray,
                n_img: int) -> np.ndarray:
    """The key of each dense image index (keys ascending)."""
    gt_image, pred_image = np.asarray(gt_image), np.asarray(pred_image)
    trail = gt_image.shape[1:] if gt_image.ndim == 2 else pred_image.shape[1:]
    keys = np.zeros((n_img, *trail), dtype=np.result_type(gt_image, pred_image))
    keys[gi] = gt_image.reshape(len(gi), *trail)
    keys[pi] = pred_image.reshape(len(pi), *trail)
    keys.flags.writeable = False
    return keys


def _fixed_matching(params: APParams, K: int, c: _Checked, record: bool, gt_image=None,
                    pred_image=None) -> FixedMatching:
    # 1. order
    acc_order, cat_ptr, acc_value = _order(c, K, params.max_dets)
    # 2. match (ranges inclusive: out if value < lo or value > hi)
    indptr, cand_gt, cand_iou, cand_prox, near = _candidates(c, acc_order, params)
    lo = np.array([r[0] for r in params.ranges.values()])
    hi = np.array([r[1] for r in params.ranges.values()])
    gt_ign_r = c.gt_ignore[None, :] | (c.gt_value[None, :] < lo[:, None]) | (c.gt_value[None, :] > hi[:, None])
    unmatched = _unmatched_outcome(c, acc_order, acc_value, near, lo, hi, K)
    names = params.range_names
    rec_a = names.index("all") if "all" in names else 0
    rows = np.flatnonzero(np.diff(indptr) > 0)
    state, dt_match, gt_match = coco_greedy_match(
        rows, indptr, cand_gt, cand_iou, cand_prox, c.det_prox[acc_order], gt_ign_r, params.iou_thresholds, unmatched,
        rec_a if record else -1, cat_ptr[:K + 1], record_rows=acc_order, n_pred=len(c.pred_label))
    row_of = np.full(len(acc_order), -1, np.int64)
    row_of[rows] = np.arange(len(rows))
    keys = (_image_keys(gt_image, pred_image, c.gi, c.pi, c.n_img) if gt_image is not None
            else np.zeros(0, np.int64))
    return FixedMatching(params=params, n_categories=K, image_keys=keys, gt_image=c.gi, gt_label=c.gt_label,
                         gt_ignore_r=gt_ign_r, pred_image=c.pi, pred_label=c.pred_label, pred_score=c.pred_score,
                         acc_order=acc_order, cat_ptr=cat_ptr[:K + 1], rows=rows, state=state, row_of=row_of,
                         unmatched=unmatched, dt_match=dt_match, gt_match=gt_match, range_index=rec_a)


def fixed_matching(inputs: APInputs, *, n_categories: int, params: APParams | None = None) -> FixedMatching:
    """The matching stages of :func:`evaluate_ap` on an :class:`APInputs` bundle, kept for re-accumulation.

    ``inputs.proximity`` (when set) overrides ``params.proximity``, as in :func:`evaluate_inputs`."""
    params = params or APParams()
    if inputs.proximity is not None:
        params = params.with_(proximity=bool(inputs.proximity))
    K = int(n_categories)
    a = inputs.arrays()
    c = _check(*(a[k] for k in ("gt_image", "gt_label", "gt_ignore", "gt_range_value", "pred_image", "pred_label",
                                "pred_score", "pred_range_value", "pair_gt", "pair_pred", "pair_iou")),
               K, params, inputs.pair_iou2d, inputs.pred_order, None)
    return _fixed_matching(params, K, c, False, a["gt_image"], a["pred_image"])


def _matches(params, name, fm: FixedMatching) -> Matches:
    """Per-detection / per-GT match records of ``fm.range_index`` (rows of the outputs are BoxSet rows)."""
    a = fm.range_index
    dt_ignore, dt_eval = ignore_records(fm.acc_order, fm.rows, fm.state, fm.unmatched, a, fm.n_pred)
    gt_ignore, gt_valid = fm.gt_ignore_r[a].copy(), fm.gt_label >= 0
    for arr in (fm.dt_match, fm.gt_match, dt_ignore, dt_eval, gt_ignore, gt_valid):
        arr.flags.writeable = False
    return Matches(params.iou_thresholds, name, fm.dt_match, dt_ignore, dt_eval, fm.gt_match, gt_ignore, gt_valid)


def evaluate_view(gt, pred, pairs, view, params: APParams | None = None, *, gt_label=None, gt_ignore=None,
                  proximity: bool | None = None, pred_order=None, return_matches: bool = False) -> APResult:
    """AP of one label view of a run: the warm re-scoring path (no geometry is computed).

    Args:
        gt: GT ``BoxSet`` (rows as in ``pairs``).
        pred: prediction ``BoxSet`` (rows as in ``pairs`` and ``view``).
        pairs: the cached :class:`~ov3d_core.eval.pairs.Pairs` of (gt, pred).
        view: :class:`~ov3d_core.eval.labels.LabelView` (labels, scores, keep).
        params: :class:`APParams` (default Omni3D 3D).
        gt_label: GT codes (default: ``gt.category`` coded in ``view.vocabulary``).
        gt_ignore: GT ignore flags (default ``gt.ignore``).
        proximity: overrides ``params.proximity`` (e.g. ``Dataset.proximity``).
        pred_order: tie-break key among equal scores (default: row order).
        return_matches: also return match records.
    """
    params = params or APParams()
    inp = APInputs.from_view(gt, pred, pairs, view, params, gt_label=gt_label, gt_ignore=gt_ignore,
                             proximity=proximity, pred_order=pred_order)
    prox = params.proximity if proximity is None else bool(proximity)
    return evaluate_ap(**inp.arrays(), n_categories=view.n_categories, params=params.with_(proximity=prox),
                       pair_iou2d=inp.pair_iou2d, pred_order=pred_order, return_matches=return_matches,
                       vocabulary=view.vocabulary)


def evaluate_ap_pooled(parts: Sequence[APInputs], *, n_categories: int, params: APParams | None = None,
                       return_matches: bool = False, vocabulary=None) -> APResult:
    """Evaluate several datasets as one (Omni3D ``summarize_all``): GT and detections of one category from all parts
    compete in a single score ranking.

    Each part's images are its own (image ids may repeat across parts); parts are ordered as given (ties in score
    across parts go to the earlier part, as Omni3D's concatenation does). Each part keeps its own proximity switch
    (``APInputs.proximity``, default ``params.proximity``). Category codes must share one vocabulary.
    ``APResult.part_offsets`` gives each part's GT and prediction row range; ``Matches.slice`` makes them local.
    """
    params = params or APParams()
    if not parts:
        raise ValueError("evaluate_ap_pooled: expected at least one part")
    cols: dict[str, list] = {k: [] for k in ("gt_image", "gt_label", "gt_ignore", "gt_range_value", "pred_image",
                                             "pred_label", "pred_score", "pred_range_value", "pair_gt", "pair_pred",
                                             "pair_iou")}
    iou2d, order, prox, offsets = [], [], [], []
    g0 = p0 = img0 = 0
    need_2d = any((params.proximity if p.proximity is None else p.proximity) for p in parts)
    for i, p in enumerate(parts):
        ng, npr = len(p.gt_image), len(p.pred_image)
        gi, pi, n_img = dense_image_keys(np.asarray(p.gt_image), np.asarray(p.pred_image))
        cols["gt_image"].append(gi + img0)
        cols["pred_image"].append(pi + img0)
        for k in ("gt_label", "gt_ignore", "gt_range_value", "pred_label", "pred_score", "pred_range_value",
                  "pair_iou"):
            cols[k].append(np.asarray(getattr(p, k)))
        cols["pair_gt"].append(np.asarray(p.pair_gt, np.int64) + g0)
        cols["pair_pred"].append(np.asarray(p.pair_pred, np.int64) + p0)
        r = np.arange(npr) if p.pred_order is None else np.argsort(np.argsort(np.asarray(p.pred_order),
                                                                              kind="stable"), kind="stable")
        order.append(r + p0)
        on = params.proximity if p.proximity is None else bool(p.proximity)
        prox.append(np.full(npr, on))
        if p.pair_iou2d is None:
            if on:
                raise ValueError(f"evaluate_ap_pooled: part {i} has proximity on but no `pair_iou2d`")
            iou2d.append(np.zeros(len(p.pair_gt)))
        else:
            iou2d.append(np.asarray(p.pair_iou2d, np.float64))
        offsets.append(((g0, g0 + ng), (p0, p0 + npr)))
        g0, p0, img0 = g0 + ng, p0 + npr, img0 + n_img
    arrays = {k: np.concatenate(v) if v else np.zeros(0) for k, v in cols.items()}
    res = evaluate_ap(**arrays, n_categories=n_categories, params=params,
                      pair_iou2d=np.concatenate(iou2d) if need_2d else None, pred_order=np.concatenate(order),
                      return_matches=return_matches, pred_proximity=np.concatenate(prox), vocabulary=vocabulary)
    return replace(res, part_offsets=tuple(offsets))


# ---------------------------------------------------------------------------------------------------- bundles
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


def single_threshold(params: APParams, thr: float) -> APParams:
    """``params`` restricted to one IoU threshold (one summary key, the first range)."""
    return params.with_(iou_thresholds=np.array([thr]), summary_spec=(("AP", None, params.range_names[0]),))


def matches_at(inputs: APInputs, thr: float, n_categories: int, params: APParams):
    """Match records of one IoU threshold (``Matches`` of a single-threshold evaluation)."""
    res = evaluate_inputs(inputs, n_categories=n_categories, params=single_threshold(params, thr),
                          return_matches=True)
    return res.matches


