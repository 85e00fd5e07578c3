"""Calibrated remap acceptance on a synthetic set where the margin separates TP from FP."""

import numpy as np
import pytest

from ov3d_core.diagnostics.calibration import calibrated_acceptance, remap_features, split_images
from tests.beyond.conftest import inputs_from_pairs


def _synthetic(n_img=60, seed=0):
    """Per image: one chair GT, one TP box (IoU 0.8, margin high) and one background FP that outscores it
    (margin low); top-1 similarity is high for both, so a fixed θ on top-1 keeps both."""
    rng = np.random.default_rng(seed)
    gt_image = np.arange(n_img)
    pred_image = np.repeat(np.arange(n_img), 2)
    is_tp = np.tile([True, False], n_img)
    pairs = [(i, 2 * i, 0.8) for i in range(n_img)]
    det_score = np.where(is_tp, rng.uniform(0.3, 0.6, 2 * n_img), rng.uniform(0.6, 0.9, 2 * n_img))
    inp = inputs_from_pairs(gt_image, np.zeros(n_img), pred_image, np.zeros(2 * n_img), det_score, pairs)
    top1 = rng.uniform(0.7, 0.9, 2 * n_img)
    margin = np.where(is_tp, rng.uniform(0.2, 0.5, 2 * n_img), rng.uniform(0.0, 0.1, 2 * n_img))
    feats = remap_features(top1, margin, det_score, rng.uniform(0.5, 2.0, 2 * n_img))
    return inp, feats, top1 >= 0.5, is_tp


def test_calibration_beats_fixed_theta_when_a_feature_separates():
    inp, feats, fixed, is_tp = _synthetic()
    res = calibrated_acceptance(inp, feats, fixed, n_categories=1, seed=3)
    assert res.ap("calibrated_p") > res.ap("fixed_theta") + 10
    assert res.ap("calibrated_p_x_score") > res.ap("fixed_theta") + 10
    assert res.ap("no_filter") == pytest.approx(res.ap("fixed_theta"))
    coef = res.coefficients.set_index("feature")["coef"]
    assert coef["margin"] > 0 and abs(coef["margin"]) == coef.drop("intercept").abs().max()
    # split by image: no image on both sides, labels as planted
    assert not set(res.train_images) & set(res.test_images)
    assert np.array_equal(res.is_tp == 1, is_tp)
    assert res.n_train_tp == res.n_train // 2
    # probabilities separate the held-out detections
    test = np.isin(np.repeat(np.arange(60), 2), res.test_images)
    assert np.all(res.proba[test & is_tp] > 0.5) and np.all(res.proba[test & ~is_tp] < 0.5)


def test_split_is_seeded_and_validates():
    a = split_images(np.arange(10), 0.3, seed=1)
    b = split_images(np.arange(10), 0.3, seed=1)
    assert all(np.array_equal(x, y) for x, y in zip(a, b)) and len(a[1]) == 3
    with pytest.raises(ValueError):
        split_images([1], 0.3)


def test_needs_both_classes():
    inp, feats, fixed, _ = _synthetic(n_img=10)
    from dataclasses import replace
    only_fp = replace(inp, pair_iou=np.zeros(len(inp.pair_iou)))
    with pytest.raises(ValueError, match="both are needed"):
        calibrated_acceptance(only_fp, feats, fixed, n_categories=1)


def test_from_remap_wrapper_on_boxes():
    from ov3d_core.diagnostics.calibration import calibrated_acceptance_from_remap
    from ov3d_core.eval.pairs import compute_pairs
    from types import SimpleNamespace
    from tests.beyond.conftest import make_boxset

    rng = np.random.default_rng(1)
    n = 30
    gt = make_boxset(np.arange(n), ["chair"] * n, [[0, 0, 10.0]] * n, [[1, 1, 1.0]] * n)
    img = np.repeat(np.arange(n), 2)
    centers = np.tile([[0, 0, 10.0], [3, 0, 10.0]], (n, 1))
    tp = np.tile([True, False], n)
    pred = make_boxset(img, ["x"] * 2 * n, centers, [[1, 1, 1.0]] * 2 * n,
                       score=np.where(tp, 0.4, 0.8) + rng.uniform(0, 0.1, 2 * n))
    margin = np.where(tp, 0.4, 0.02) + rng.uniform(0, 0.05, 2 * n)
    # duck-typed RemapResult: the wrapper reads label, keep, score, top1 and margin only
    remap = SimpleNamespace(label=np.zeros(2 * n, np.int64), keep=np.ones(2 * n, bool), score=pred.score.copy(),
                            top1=0.8 + margin / 2, margin=margin)
    res = calibrated_acceptance_from_remap(gt, pred, compute_pairs(gt, pred), remap, ("chair", "sofa"), seed=0)
    assert res.ap("calibrated_p") > res.ap("fixed_theta")
    assert set(res.table["rule"]) == {"fixed_theta", "calibrated_p", "calibrated_p_x_score", "no_filter"}
