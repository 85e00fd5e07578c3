"""Precision-recall curves and operating points (``ov3d_core.eval.curves``) on a hand-computed case (the demo-based
checks against the engine are in ``tests/app/test_curves_demo.py``)."""

from __future__ import annotations

import numpy as np
import pytest

from ov3d_core.eval.ap import APParams, evaluate_ap
from ov3d_core.eval.curves import ALL_CLASSES, interpolated_pr, operating_points, pr_points


def _one_image_case():
    """One image, one class, 3 GT; 4 detections (score order 0.9 TP, 0.8 FP, 0.7 TP, 0.6 FP) at IoU 0.5."""
    gt_image = np.zeros(3, np.int64)
    pred_image = np.zeros(4, np.int64)
    score = np.array([0.9, 0.8, 0.7, 0.6])
    # pairs: det0-gt0 0.9, det2-gt1 0.8, det1-gt0 0.6 (gt0 already taken), det3 none
    pg, pp, iou = np.array([0, 1, 0]), np.array([0, 2, 1]), np.array([0.9, 0.8, 0.6])
    params = APParams(iou_thresholds=np.array([0.5]), summary_spec=(("AP", None, "all"),))
    res = evaluate_ap(gt_image, np.zeros(3, np.int64), np.zeros(3, bool), np.ones(3), pred_image,
                      np.zeros(4, np.int64), score, np.ones(4), pg, pp, iou, n_categories=1, params=params,
                      return_matches=True, vocabulary=("chair",))
    return res, score, pred_image


def test_raw_curve_of_a_hand_computed_case():
    res, score, image = _one_image_case()
    pts = pr_points(res.matches, np.zeros(4, np.int64), score, image, res.n_gt[:, 0], 0.5, ("chair",))
    assert pts["pred"].tolist() == [0, 1, 2, 3] and pts["rank"].tolist() == [1, 2, 3, 4]
    assert pts["tp"].tolist() == [True, False, True, False]
    np.testing.assert_allclose(pts["recall"], [1 / 3, 1 / 3, 2 / 3, 2 / 3])
    np.testing.assert_allclose(pts["precision"], [1.0, 0.5, 2 / 3, 0.5])
    ops = operating_points(pts, 0.75, res.n_gt[:, 0], ("chair",)).set_index("category")
    assert ops.loc["chair", ["n_det", "tp", "fp"]].tolist() == [2, 1, 1]
    assert ops.loc["chair", "recall"] == pytest.approx(1 / 3) and ops.loc["chair", "precision"] == pytest.approx(0.5)
    none = operating_points(pts, 0.95, res.n_gt[:, 0], ("chair",)).set_index("category")
    assert none.loc["chair", "n_det"] == 0 and np.isnan(none.loc["chair", "precision"])
    curve = interpolated_pr(res, 0.5, ("chair",))
    chair = curve[curve["category"] == "chair"]
    # envelope: 1 up to recall 1/3, 2/3 up to recall 2/3, 0 beyond
    r, p = chair["recall"].to_numpy(), chair["precision"].to_numpy()
    assert np.allclose(p[r <= 1 / 3], 1.0) and np.allclose(p[(r > 1 / 3 + 1e-9) & (r <= 2 / 3)], 2 / 3)
    assert np.allclose(p[r > 2 / 3 + 1e-9], 0.0)
    assert set(curve["category"]) == {"chair", ALL_CLASSES}
