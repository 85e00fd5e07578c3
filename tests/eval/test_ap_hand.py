"""Hand-computed AP cases (Omni3D 3D parameters unless stated: IoU 0.05:0.05:0.50, 101 recall points).

Notation in the comments: tp/fp are cumulative counts in score order, rc = tp / npig, pr = tp / (tp + fp + eps),
then the envelope from the right, then precision sampled at searchsorted(rc, r, "left") for r in 0, 0.01, ..., 1
(0 beyond the last recall). AP = mean over the 10 thresholds x 101 recall points, in percent.
"""

from __future__ import annotations

import numpy as np
import pytest

from ov3d_core.eval.ap import APParams, evaluate_ap

THR = APParams().iou_thresholds  # 0.05, 0.10, ..., 0.50 (linspace values)


def ev(gt, dt, pairs, K=1, params=None, **kw):
    """gt: [(image, label, ignore, depth)], dt: [(image, label, score, depth)], pairs: {(gt_row, dt_row): iou}."""
    g = np.array(gt, dtype=object).reshape(-1, 4)
    d = np.array(dt, dtype=object).reshape(-1, 4)
    pg = np.array([k[0] for k in pairs], np.int64)
    pd_ = np.array([k[1] for k in pairs], np.int64)
    iou = np.array(list(pairs.values()), np.float64)
    return evaluate_ap(g[:, 0].astype(np.int64), g[:, 1].astype(np.int64), g[:, 2].astype(bool),
                       g[:, 3].astype(float), d[:, 0].astype(np.int64), d[:, 1].astype(np.int64),
                       d[:, 2].astype(float), d[:, 3].astype(float), pg, pd_, iou, n_categories=K,
                       params=params or APParams(), **kw)


def test_single_perfect_detection_is_100():
    # one GT, one det with IoU 0.9: tp=[1], fp=[0] -> rc=[1], pr=[1/(1+eps)] -> every sample ~1 -> AP 100
    r = ev([(1, 0, False, 5.0)], [(1, 0, 0.9, 5.0)], {(0, 0): 0.9})
    assert r.per_category_ap()[0] == pytest.approx(100.0, abs=1e-9)
    assert r.summary()["AP3D"] == pytest.approx(100.0, abs=1e-9)
    assert r.summary()["AP3D-N"] == pytest.approx(100.0, abs=1e-9)
    assert np.isnan(r.summary()["AP3D-M"]) and np.isnan(r.summary()["AP3D-F"])  # no GT there
    assert r.recall[:, 0, 0].tolist() == [1.0] * 10


def test_tp_plus_higher_scored_fp_is_50():
    # FP (0.9) then TP (0.5): tp=[0,1], fp=[1,1] -> rc=[0,1], pr=[0, 1/2] -> envelope [1/2, 1/2]
    # r=0 -> index 0 -> 1/2; r>0 -> index 1 -> 1/2. AP = 50 at every threshold.
    r = ev([(1, 0, False, 5.0)], [(1, 0, 0.5, 5.0), (1, 0, 0.9, 5.0)], {(0, 0): 0.8})
    assert r.per_category_ap()[0] == pytest.approx(50.0, abs=1e-12)
    np.testing.assert_allclose(r.precision[:, :, 0, 0], 0.5, atol=1e-15)


def test_tp_plus_lower_scored_fp_is_100():
    # TP (0.9) then FP (0.5): rc=[1,1], pr=[1, 1/2] -> envelope [1, 1/2]; every r -> index 0 -> AP 100
    r = ev([(1, 0, False, 5.0)], [(1, 0, 0.9, 5.0), (1, 0, 0.5, 5.0)], {(0, 0): 0.8})
    assert r.per_category_ap()[0] == pytest.approx(100.0, abs=1e-9)


def test_score_ties_are_broken_by_input_order():
    # two dets with equal score; the TP listed first -> like TP then FP -> AP 100;
    # the FP listed first -> like FP then TP -> AP 50.
    gt = [(1, 0, False, 5.0)]
    first_tp = ev(gt, [(1, 0, 0.7, 5.0), (1, 0, 0.7, 5.0)], {(0, 0): 0.8})
    first_fp = ev(gt, [(1, 0, 0.7, 5.0), (1, 0, 0.7, 5.0)], {(0, 1): 0.8})
    assert first_tp.per_category_ap()[0] == pytest.approx(100.0, abs=1e-9)
    assert first_fp.per_category_ap()[0] == pytest.approx(50.0, abs=1e-12)
    # an explicit tie-break key overrides row order: rank the FP (row 0) after the TP (row 1)
    reordered = ev(gt, [(1, 0, 0.7, 5.0), (1, 0, 0.7, 5.0)], {(0, 1): 0.8}, pred_order=np.array([5, 2]))
    assert reordered.per_category_ap()[0] == pytest.approx(100.0, abs=1e-9)


def test_score_ties_across_images_follow_image_order():
    # image 1 holds the FP, image 2 the TP, equal scores: images ascending -> FP first -> AP 50,
    # whatever the row order of the predictions.
    gt = [(2, 0, False, 5.0)]
    a = ev(gt, [(1, 0, 0.7, 5.0), (2, 0, 0.7, 5.0)], {(0, 1): 0.8})
    b = ev(gt, [(2, 0, 0.7, 5.0), (1, 0, 0.7, 5.0)], {(0, 0): 0.8})
    assert a.per_category_ap()[0] == pytest.approx(50.0, abs=1e-12)
    assert b.per_category_ap()[0] == pytest.approx(50.0, abs=1e-12)


def test_ignored_gt_absorbs_and_non_ignored_is_preferred():
    # GT0 non-ignored, GT1 ignored. det0 (0.9): IoU 0.32 with GT0, 0.9 with GT1. det1 (0.8): IoU 0.6 with GT1.
    # t <= 0.30 (6 thresholds): det0 takes GT0 (non-ignored first, although GT1 has higher IoU) -> TP;
    #   det1 takes GT1 -> ignored. tp=[1,1], fp=[0,0] -> precision ~1 -> AP_t = 100.
    # t >= 0.35 (4 thresholds): det0 fails GT0, takes GT1 -> ignored; det1: GT1 already matched -> FP.
    #   tp=[0,0], fp=[0,1] -> rc=[0,0], pr=[0,0] -> sample 0 at r=0, 0 beyond -> AP_t = 0.
    # AP = 6/10 * 100 = 60.
    r = ev([(1, 0, False, 5.0), (1, 0, True, 5.0)], [(1, 0, 0.9, 5.0), (1, 0, 0.8, 5.0)],
           {(0, 0): 0.32, (1, 0): 0.9, (1, 1): 0.6}, return_matches=True)
    assert r.per_category_ap()[0] == pytest.approx(60.0, abs=1e-9)
    assert r.n_gt[0, 0] == 1
    m = r.matches
    assert m.dt_match[:6, 0].tolist() == [0] * 6 and m.dt_match[6:, 0].tolist() == [1] * 4
    assert m.dt_status(0.25).tolist() == ["TP", "ignored"]
    assert m.dt_status(0.5).tolist() == ["ignored", "FP"]


def test_depth_ranges_inclusive_and_out_of_range_dets_ignored():
    # GT at exactly 10 m: in near [0, 10] and in medium [10, 35]. det0 (0.5) at 10 m matches it.
    # det1 (0.9) at 50 m matches nothing.
    #   all:    FP then TP -> AP 50.
    #   near:   det1 out of range and unmatched -> ignored -> only the TP -> AP 100. medium: same -> 100.
    #   far:    no GT -> NaN.
    r = ev([(1, 0, False, 10.0)], [(1, 0, 0.5, 10.0), (1, 0, 0.9, 50.0)], {(0, 0): 0.7})
    s = r.summary()
    assert s["AP3D"] == pytest.approx(50.0, abs=1e-12)
    assert s["AP3D-N"] == pytest.approx(100.0, abs=1e-9)
    assert s["AP3D-M"] == pytest.approx(100.0, abs=1e-9)
    assert np.isnan(s["AP3D-F"])
    assert r.n_gt[0].tolist() == [1, 1, 1, 0]


def test_gt_out_of_range_is_ignored_for_that_range():
    # GT at 40 m: for "near" it is ignored (npig 0 -> NaN); the det matched to it is not a FP anywhere.
    r = ev([(1, 0, False, 40.0), (1, 0, False, 5.0)], [(1, 0, 0.9, 40.0)], {(0, 0): 0.7})
    # near: GT1 (5 m) is the only non-ignored GT; the det matches GT0 (ignored in near) -> ignored -> AP 0, recall 0
    assert r.per_category_ap("near")[0] == pytest.approx(0.0)
    assert r.recall[:, 0, r.range_index("near")].tolist() == [0.0] * 10
    # far: GT0 counts, det TP -> 100
    assert r.per_category_ap("far")[0] == pytest.approx(100.0, abs=1e-9)


def test_max_dets_cuts_the_101st_detection():
    # 100 FPs scored 0.99..0.50 and a TP scored 0.01 in the same (image, category): the TP is the 101st -> dropped
    # -> tp stays 0 -> AP 0, recall 0.
    n_fp = 100
    dets = [(1, 0, 0.99 - i * 0.0049, 5.0) for i in range(n_fp)] + [(1, 0, 0.01, 5.0)]
    r = ev([(1, 0, False, 5.0)], dets, {(0, n_fp): 0.9})
    assert r.per_category_ap()[0] == pytest.approx(0.0)
    assert r.recall[:, 0, 0].tolist() == [0.0] * 10
    assert r.n_pred[0] == 100
    # with 99 FPs the TP is the 100th: tp=[0]*99+[1], fp=[1..99, 99] -> last pr = 1/100, envelope -> 0.01 everywhere
    r = ev([(1, 0, False, 5.0)], dets[1:], {(0, n_fp - 1): 0.9})
    assert r.per_category_ap()[0] == pytest.approx(1.0, abs=1e-12)
    # other categories' detections do not use up the budget: 100 dets of category 1 + the TP of category 0
    dets = [(1, 1, 0.99, 5.0)] * 100 + [(1, 0, 0.01, 5.0)]
    r = ev([(1, 0, False, 5.0)], dets, {(0, 100): 0.9}, K=2)
    assert r.per_category_ap()[0] == pytest.approx(100.0, abs=1e-9)


def test_category_without_non_ignored_gt_is_nan_and_excluded():
    # category 1 has only an ignored GT and a det: npig = 0 -> precision NaN, per-category AP NaN; its det is never
    # counted. Category 0: one TP -> 100. Summary AP = mean over non-NaN = 100.
    r = ev([(1, 0, False, 5.0), (1, 1, True, 5.0)], [(1, 0, 0.9, 5.0), (1, 1, 0.95, 5.0)],
           {(0, 0): 0.9}, K=2)
    ap = r.per_category_ap()
    assert ap[0] == pytest.approx(100.0, abs=1e-9) and np.isnan(ap[1])
    assert np.isnan(r.precision[:, :, 1, :]).all() and np.isnan(r.recall[:, 1, :]).all()
    assert r.summary()["AP3D"] == pytest.approx(100.0, abs=1e-9)
    assert np.isnan(r.mean_ap([0, 1]))  # Omni3D: NaN unless every category of the subset has GT
    assert r.nanmean_ap([0, 1]) == pytest.approx(100.0, abs=1e-9)
    assert r.mean_ap([0]) == pytest.approx(100.0, abs=1e-9)
    df = r.to_frame(["car", "chair"])
    assert df["AP3D"].isna().tolist() == [False, True]


def test_iou_equal_to_threshold_matches():
    # IoU = THR[4] (the linspace value "0.25") exactly: thresholds 0.05..0.25 (5) match -> AP_t 100;
    # 0.30..0.50 (5): the det is a FP -> AP_t 0. AP = 50, AP@25 = 100, AP@50 = 0.
    r = ev([(1, 0, False, 5.0)], [(1, 0, 0.9, 5.0)], {(0, 0): THR[4]})
    s = r.summary()
    assert s["AP3D"] == pytest.approx(50.0, abs=1e-9)
    assert s["AP3D@25"] == pytest.approx(100.0, abs=1e-9)
    assert s["AP3D@50"] == 0.0
    # just below: no match at 0.25
    r = ev([(1, 0, False, 5.0)], [(1, 0, 0.9, 5.0)], {(0, 0): np.nextafter(THR[4], 0)})
    assert r.summary()["AP3D@25"] == 0.0


def test_category_with_gt_but_no_dets_is_zero():
    # category 1 has a GT and no det: nd = 0 -> precision 0 everywhere, recall 0 -> AP 0 (not NaN)
    r = ev([(1, 0, False, 5.0), (1, 1, False, 5.0)], [(1, 0, 0.9, 5.0)], {(0, 0): 0.9}, K=2)
    ap = r.per_category_ap()
    assert ap[1] == 0.0
    assert r.recall[:, 1, 0].tolist() == [0.0] * 10
    assert r.summary()["AP3D"] == pytest.approx(50.0, abs=1e-9)


def test_cross_category_pairs_and_unevaluated_labels_never_match():
    # det labelled 1 overlaps the category-0 GT (IoU 0.9): no match (FP for category 1, FN for 0).
    # a GT with label -1 (out of vocabulary) absorbs nothing: the category-0 det on it is a FP.
    r = ev([(1, 0, False, 5.0), (1, -1, False, 5.0), (1, 1, False, 5.0)],
           [(1, 1, 0.9, 5.0), (1, 0, 0.8, 5.0), (1, -1, 0.99, 5.0)],
           {(0, 0): 0.9, (1, 1): 0.9, (0, 2): 0.95}, K=2, return_matches=True)
    assert r.per_category_ap().tolist() == [0.0, 0.0]
    assert r.n_gt[:, 0].tolist() == [1, 1]
    assert r.matches.dt_status(0.5).tolist() == ["FP", "FP", "not evaluated"]


def test_proximity_ignores_far_dets_only_where_the_image_has_gt():
    # proximity on. Image 1 has a GT of category 0; det0 (0.9) is far from it in 2D (IoU2D 0.1) -> ignored;
    # det1 (0.5) matches it (3D 0.8, 2D 0.6) -> TP. Image 2 has no GT of category 0: det2 (0.7) stays a FP.
    # Order: det0 (ignored), det2 FP, det1 TP -> tp=[0,0,1], fp=[0,1,1] -> pr=[0,0,1/2] -> envelope 1/2 -> AP 50.
    p = APParams(proximity=True)
    gt = [(1, 0, False, 5.0)]
    dt = [(1, 0, 0.9, 5.0), (1, 0, 0.5, 5.0), (2, 0, 0.7, 5.0)]
    pairs = {(0, 0): 0.4, (0, 1): 0.8}
    iou2d = np.array([0.1, 0.6])
    r = ev(gt, dt, pairs, params=p, pair_iou2d=iou2d, return_matches=True)
    assert r.per_category_ap()[0] == pytest.approx(50.0, abs=1e-12)
    assert r.matches.dt_status(0.05).tolist() == ["ignored", "TP", "FP"]
    # without proximity det0 would match the GT first (3D IoU 0.4) -> TP first -> AP 100 at t <= 0.40
    r = ev(gt, dt, pairs, params=APParams(), pair_iou2d=iou2d)
    assert r.precision[0, 0, 0, 0] == pytest.approx(1.0)


def test_validation_errors():
    with pytest.raises(ValueError, match="pair_pred"):
        evaluate_ap([1], [0], [False], [1.0], [1], [0], [0.5], [1.0], [0], [0, 0], [0.5], n_categories=1)
    with pytest.raises(ValueError, match="same image"):
        evaluate_ap([1], [0], [False], [1.0], [2], [0], [0.5], [1.0], [0], [0], [0.5], n_categories=1)
    with pytest.raises(ValueError, match="codes"):
        evaluate_ap([1], [3], [False], [1.0], [1], [0], [0.5], [1.0], [0], [0], [0.5], n_categories=1)
    with pytest.raises(ValueError, match="proximity"):
        evaluate_ap([1], [0], [False], [1.0], [1], [0], [0.5], [1.0], [0], [0], [0.5], n_categories=1,
                    params=APParams(proximity=True))
    with pytest.raises(ValueError, match="iou_thresholds"):
        APParams(iou_thresholds=[0.0, 0.5])


def test_empty_inputs():
    e = np.zeros(0)
    r = evaluate_ap(e.astype(int), e.astype(int), e.astype(bool), e, e.astype(int), e.astype(int), e, e,
                    e.astype(int), e.astype(int), e, n_categories=3, return_matches=True)
    assert np.isnan(r.precision).all() and np.isnan(r.summary()["AP3D"])
    # GT only: AP 0
    r = evaluate_ap([1], [0], [False], [1.0], e.astype(int), e.astype(int), e, e, e.astype(int), e.astype(int), e,
                    n_categories=1)
    assert r.summary()["AP3D"] == 0.0


def test_params_identity_and_presets():
    assert APParams() == APParams.omni3d_3d()
    assert hash(APParams()) == hash(APParams.omni3d_3d())
    assert APParams() != APParams(proximity=True)
    p = APParams.coco_2d()
    assert p.iou_thresholds[0] == 0.5 and p.range_names == ("all", "small", "medium", "large")
    assert APParams.from_dict(p.to_dict()) == p
