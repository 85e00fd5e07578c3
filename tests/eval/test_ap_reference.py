"""The vectorised AP engine against the literal Omni3D re-implementation (tests/eval/reference_omni3d.py) on random
scenes: ignore flags, depths across the ranges (and exactly on the bounds), proximity on/off, score ties, IoUs exactly
equal to thresholds, out-of-vocabulary labels, per-(image, category) truncation, pooled datasets."""

from __future__ import annotations

import numpy as np
import pytest

from ov3d_core.eval.ap import APInputs, APParams, evaluate_ap, evaluate_ap_pooled
from tests.eval.reference_omni3d import ReferenceOmni3DEval, accumulate, reference_ap, reference_matches


def random_case(rng, *, n_images=10, K=3, max_gt=6, max_dt=14, pair_rate=0.6, image_offset=0):
    thr = APParams().iou_thresholds
    gts, dts = [], []
    for img in rng.permutation(n_images):  # rows not grouped by image in ascending order
        img = int(img) * 7 + image_offset
        for _ in range(rng.integers(0, max_gt + 1)):
            depth = rng.choice([rng.uniform(0, 60), 10.0, 35.0, 0.0])
            gts.append({"row": len(gts), "image_id": img, "category_id": int(rng.integers(-1, K)),
                        "ignore": bool(rng.random() < 0.25), "range_value": float(depth)})
        for _ in range(rng.integers(0, max_dt + 1)):
            depth = rng.choice([rng.uniform(0, 60), 10.0, 35.0])
            dts.append({"row": len(dts), "image_id": img, "category_id": int(rng.integers(-1, K)),
                        "score": float(rng.integers(1, 6) / 5.0), "range_value": float(depth)})
    iou, iou2d = {}, {}
    for g in gts:
        for d in dts:
            if g["image_id"] == d["image_id"] and rng.random() < pair_rate:
                kind = rng.random()
                v = rng.choice(thr) if kind < 0.3 else (rng.uniform(0, 0.7) if kind < 0.9 else 0.0)
                iou[g["row"], d["row"]] = float(v)
                iou2d[g["row"], d["row"]] = float(rng.choice([0.3, rng.uniform(0, 1), 0.0]))
    return gts, dts, iou, iou2d


def to_arrays(gts, dts, iou, iou2d):
    keys = sorted(iou)
    return dict(
        gt_image=np.array([g["image_id"] for g in gts], np.int64),
        gt_label=np.array([g["category_id"] for g in gts], np.int64),
        gt_ignore=np.array([g["ignore"] for g in gts], bool),
        gt_range_value=np.array([g["range_value"] for g in gts], float),
        pred_image=np.array([d["image_id"] for d in dts], np.int64),
        pred_label=np.array([d["category_id"] for d in dts], np.int64),
        pred_score=np.array([d["score"] for d in dts], float),
        pred_range_value=np.array([d["range_value"] for d in dts], float),
        pair_gt=np.array([k[0] for k in keys], np.int64), pair_pred=np.array([k[1] for k in keys], np.int64),
        pair_iou=np.array([iou[k] for k in keys], float)), np.array([iou2d[k] for k in keys], float)


def nan_to_minus1(a):
    return np.where(np.isnan(a), -1.0, a)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("prox", [False, True])
def test_matches_reference(seed, prox):
    rng = np.random.default_rng(seed)
    max_det = [100, 3, 5][seed % 3]  # small max_dets exercise the per-(image, category) truncation
    params = APParams(proximity=prox, max_dets=max_det)
    K = 3
    gts, dts, iou, iou2d = random_case(rng, K=K)
    p_ref, r_ref, evals = reference_ap(gts, dts, iou, iou2d, n_categories=K, params=params)
    arrays, pair_iou2d = to_arrays(gts, dts, iou, iou2d)
    res = evaluate_ap(**arrays, n_categories=K, params=params, pair_iou2d=pair_iou2d, return_matches=True)
    np.testing.assert_array_equal(nan_to_minus1(res.precision), p_ref)
    np.testing.assert_array_equal(nan_to_minus1(res.recall), r_ref)
    dt_match, dt_ig, seen = reference_matches(evals, len(dts), len(params.iou_thresholds), range_index=0)
    m = res.matches
    np.testing.assert_array_equal(m.dt_evaluated, seen)
    np.testing.assert_array_equal(m.dt_match[:, seen], dt_match[:, seen])
    np.testing.assert_array_equal(m.dt_ignore[:, seen], dt_ig[:, seen])
    # the summary is the mean of the non-(-1) entries of the reference slice
    s = p_ref[:, :, :, 0]
    ref_ap = np.mean(s[s > -1]) * 100 if (s > -1).any() else np.nan
    np.testing.assert_equal(res.summary()["AP3D"], ref_ap)


@pytest.mark.parametrize("seed", range(4))
def test_pooled_matches_reference_concatenation(seed):
    # two datasets sharing image ids, the first with proximity on (like SUNRGBD), the second off
    rng = np.random.default_rng(100 + seed)
    K = 3
    params = APParams()
    parts, evals_list = [], []
    for prox in (True, False):
        gts, dts, iou, iou2d = random_case(rng, K=K, n_images=6)
        ev = ReferenceOmni3DEval(gts, dts, iou, iou2d, n_categories=K, iou_thresholds=params.iou_thresholds,
                                 recall_thresholds=params.recall_thresholds, ranges=list(params.ranges.values()),
                                 prox=prox)
        evals_list.append(ev.evaluate())
        arrays, pair_iou2d = to_arrays(gts, dts, iou, iou2d)
        parts.append(APInputs(**arrays, pair_iou2d=pair_iou2d, proximity=prox))
    p_ref, r_ref = accumulate(evals_list, n_categories=K, n_ranges=4, iou_thresholds=params.iou_thresholds,
                              recall_thresholds=params.recall_thresholds)
    res = evaluate_ap_pooled(parts, n_categories=K, params=params, return_matches=True)
    np.testing.assert_array_equal(nan_to_minus1(res.precision), p_ref)
    np.testing.assert_array_equal(nan_to_minus1(res.recall), r_ref)
    # per-part match records, made local
    (g0, g1), (q0, q1) = res.part_offsets[1]
    local = res.matches.slice(slice(g0, g1), slice(q0, q1))
    alone = evaluate_ap(**{k: getattr(parts[1], k) for k in parts[1].arrays()}, n_categories=K, params=params,
                        return_matches=True)
    np.testing.assert_array_equal(local.dt_match, alone.matches.dt_match)  # matching is per dataset


def test_pooled_single_part_equals_plain():
    rng = np.random.default_rng(7)
    gts, dts, iou, iou2d = random_case(rng)
    arrays, pair_iou2d = to_arrays(gts, dts, iou, iou2d)
    a = evaluate_ap(**arrays, n_categories=3)
    b = evaluate_ap_pooled([APInputs(**arrays)], n_categories=3)
    np.testing.assert_array_equal(a.precision, b.precision)


def test_composite_image_keys():
    rng = np.random.default_rng(3)
    gts, dts, iou, iou2d = random_case(rng)
    arrays, _ = to_arrays(gts, dts, iou, iou2d)
    a = evaluate_ap(**arrays, n_categories=3)
    comp = dict(arrays, gt_image=np.c_[np.zeros(len(gts), int), arrays["gt_image"]],
                pred_image=np.c_[np.zeros(len(dts), int), arrays["pred_image"]])
    b = evaluate_ap(**comp, n_categories=3)
    np.testing.assert_array_equal(a.precision, b.precision)
