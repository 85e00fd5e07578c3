"""Pose errors and ranks of ``ov3d_core.diagnostics.box_errors`` on hand-computed boxes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ov3d_core.diagnostics.box_errors import NOT_IN_VOCABULARY, _ranks, gt_details, pose_errors, pred_details
from ov3d_core.eval.labels import LabelView
from ov3d_core.eval.pairs import Pairs
from ov3d_core.geometry.boxes import rotation_y
from ov3d_core.model import BoxSet


def test_pose_errors_hand_computed():
    R = rotation_y(np.radians([30.0, -170.0, 90.0]))
    Rg = rotation_y(np.radians([-170.0, 30.0, 90.0]))
    out = pose_errors([[3.0, 4.0, 10.0], [0, 0, 5.0], [1, 1, 1]], [[1, 1, 1], [2, 1, 1], [1, 2, 3]], R,
                      [[0.0, 0.0, 10.0], [0, 0, 7.5], [1, 1, 1]], [[1, 1, 1], [1, 1, 1], [1, 2, 3]], Rg)
    np.testing.assert_allclose(out["center_dist"], [5.0, 2.5, 0.0])
    np.testing.assert_allclose(out["depth_err"], [0.0, -2.5, 0.0])  # predicted minus GT depth
    np.testing.assert_allclose(out["size_err"], [0.0, 0.5, 0.0])  # (1,1,1) inside (2,1,1): IoU 1/2
    np.testing.assert_allclose(out["yaw_err"], [160.0, 160.0, 0.0])  # the short way round


def test_ranks_follow_the_engine_order():
    group = np.array([0, 0, 1, 0, 0])
    score = np.array([0.5, 0.9, 0.7, 0.5, 0.1])
    image = np.array([2, 1, 1, 1, 1])
    mask = np.array([True, True, True, True, False])
    # class 0: 0.9 (row 1), then the 0.5 tie broken by image (row 3 on image 1 before row 0 on image 2)
    assert _ranks(group, score, image, mask).tolist() == [3, 1, 1, 2, -1]


def _boxes(centers, dims, cats, yaw=None, **kw):
    n = len(centers)
    return BoxSet.from_pose(np.zeros(n, np.int64), np.array(cats, object), centers, dims,
                            rotation_y(np.zeros(n) if yaw is None else yaw), **kw)


def test_pred_details_reference_gt_and_errors():
    gt = _boxes([[0, 0, 5.0], [3, 0, 8.0]], [[1, 1, 1], [1, 1, 1]], ["chair", "table"])
    pred = _boxes([[0.1, 0, 5.0], [3, 0, 8.2], [10, 0, 20.0]], [[1, 1, 1]] * 3, ["chair", "sofa", "chair"],
                  score=[0.9, 0.8, 0.3])
    pairs = Pairs(gt=np.array([0, 1]), pred=np.array([0, 1]), iou3d=np.array([0.8, 0.7]),
                  iou2d=np.array([0.95, 0.85]), dist=np.array([0.1, 0.2]), n_gt=2, n_pred=3)
    view = LabelView(np.array([0, 2, 0]), np.array([0.9, 0.8, 0.3]), np.ones(3, bool), ("chair", "table", "sofa"))
    status = pd.DataFrame({"pred": [0, 1, 2], "status": ["TP", "mislabelled", "FP"], "matched_gt": [0, -1, -1],
                           "best_iou": [0.8, 0.7, 0.0], "best_gt": [0, 1, -1]})
    d = pred_details(gt, pred, pairs, view, status)
    assert d["ref"].tolist()[:2] == ["matched", "best overlap"] and pd.isna(d["ref"].iloc[2])
    assert d["ref_gt"].tolist()[:2] == [0, 1] and d["ref_gt"].isna().tolist() == [False, False, True]
    assert d["gt_category"].tolist()[:2] == ["chair", "table"] and pd.isna(d["gt_category"].iloc[2])
    np.testing.assert_allclose(d["iou3d"][:2], [0.8, 0.7])
    np.testing.assert_allclose(d["iou2d"][:2], [0.95, 0.85])
    np.testing.assert_allclose(d["center_dist"][:2], [0.1, 0.2])
    np.testing.assert_allclose(d["depth_err"][:2], [0.0, 0.2], atol=1e-12)
    assert d[["iou3d", "center_dist", "yaw_err"]].iloc[2].isna().all()  # no GT to compare with
    assert d["category"].tolist() == ["chair", "sofa", "chair"]
    assert d["score_rank"].tolist() == [1, 1, 2] and d["image_rank"].tolist() == [1, 2, 3]


def test_gt_details_ignore_reasons_and_attributes():
    gt = _boxes([[0, 0, 5.0], [3, 0, 8.0], [0, 1, 4.0]], [[1, 2, 3]] * 3, ["chair", "chair", "lamp"],
                ignore=[False, True, False], box2d=[[0, 10, 5, 50]] * 3)
    gt = gt.with_(data={"ignore_reason": np.array(["", "truncation", ""], object),
                        "truncation": np.array([0.1, 0.5, -1.0]), "visibility": np.array([1.0, 0.2, 0.9])})
    status = pd.DataFrame({"gt": [0, 1, 2], "status": ["TP", "ignored", "not evaluated"],
                           "matched_pred": [0, -1, -1]})
    pairs = Pairs(gt=np.array([0]), pred=np.array([0]), iou3d=np.array([0.6]), iou2d=np.array([0.9]),
                  dist=np.array([0.1]), n_gt=3, n_pred=1)
    d = gt_details(gt, status, np.array([0.7]), pairs)
    assert pd.isna(d["ignore_reason"].iloc[0]) and d["ignore_reason"].tolist()[1:] == ["truncation", NOT_IN_VOCABULARY]
    assert np.isnan(d["truncation"][2]) and d["truncation"][0] == pytest.approx(0.1)  # -1: not annotated
    np.testing.assert_allclose(d["volume"], [6.0] * 3)
    np.testing.assert_allclose(d["height2d"], [40.0] * 3)
    assert d["matched_pred"].tolist()[0] == 0 and d["matched_score"][0] == pytest.approx(0.7)
    assert d["iou3d"][0] == pytest.approx(0.6) and np.isnan(d["iou3d"][1])



def test_one_images_rows_equal_the_whole_runs_rows_of_that_image(tmp_path):
    """``Analysis.pred_details(view, image_id)`` (what the inspector asks for) gives exactly the rows of the whole-run
    table for that image: same values, and ranks still over the whole run."""
    from ov3d_core.analysis import Analysis
    from tests.app.minibench import build

    a = Analysis.from_yaml(build(tmp_path / "mini"))
    checked = 0
    for run in a.benchmark.config.runs.values():
        for iou in (0.25, 0.5):
            v = a.view(run.dataset, run.name, iou=iou)
            whole = a.pred_details(v)
            for image_id in sorted(set(whole["image_id"])):
                part = a.pred_details(v, image_id=image_id)
                want = whole[whole["image_id"] == image_id].reset_index(drop=True)
                pd.testing.assert_frame_equal(part.reset_index(drop=True), want, check_exact=True)
                checked += len(part)
    assert checked > 20
