"""2D IoU against pycocotools (maskUtils.iou on XYWH, iscrowd = 0) and hand cases."""

from __future__ import annotations

import numpy as np
import pytest
from pycocotools import mask as mask_utils

from ov3d_core.geometry.iou2d import box_area_2d, box_iou_2d, paired_iou_2d


def xywh(b):
    b = np.asarray(b, dtype=np.float64)
    return np.c_[b[:, :2], b[:, 2:] - b[:, :2]]


def random_boxes(rng, n, scale=200.0):
    xy = rng.uniform(0, scale, (n, 2))
    wh = rng.uniform(0.5, scale / 2, (n, 2))
    return np.c_[xy, xy + wh]


def test_matches_pycocotools():
    rng = np.random.default_rng(0)
    a = random_boxes(rng, 60)
    b = np.concatenate([random_boxes(rng, 70), a[:5], a[5:10] + 0.5])  # exact duplicates and near duplicates
    ref = mask_utils.iou(xywh(a), xywh(b), np.zeros(len(b), dtype=np.uint8))
    mine = box_iou_2d(a, b)
    assert mine.shape == (60, 80)
    assert (ref > 0).mean() > 0.15 and (ref == 0).any()
    np.testing.assert_allclose(mine, ref, rtol=0, atol=1e-12)
    ia, ib = np.nonzero(np.ones_like(mine, dtype=bool))
    np.testing.assert_array_equal(paired_iou_2d(a, b, ia, ib), mine.ravel())


def test_hand_cases():
    a = np.array([[0, 0, 10, 10]], float)
    cases = {
        (0, 0, 10, 10): 1.0,
        (5, 0, 15, 10): 50 / 150,  # half overlap
        (2, 2, 6, 6): 16 / 100,  # contained
        (10, 0, 20, 10): 0.0,  # touching edge
        (10, 10, 20, 20): 0.0,  # touching corner
        (20, 20, 30, 30): 0.0,  # separated
        (-5, -5, 5, 5): 25 / 175,
    }
    b = np.array(list(cases), float)
    np.testing.assert_allclose(box_iou_2d(a, b)[0], list(cases.values()), rtol=0, atol=1e-15)
    np.testing.assert_allclose(box_iou_2d(b, a)[:, 0], list(cases.values()), rtol=0, atol=1e-15)


def test_missing_degenerate_and_non_finite_boxes_give_zero():
    a = np.array([[0, 0, 10, 10], [-1, -1, -1, -1], [3, 3, 3, 8], [np.nan, 0, 5, 5], [0, 0, np.inf, 5]], float)
    iou = box_iou_2d(a, a)
    assert np.isfinite(iou).all()
    assert iou[0, 0] == 1.0
    iou[0, 0] = 0.0
    assert (iou == 0).all()
    np.testing.assert_array_equal(box_area_2d(a), [100, 0, 0, 0, 0])
    p = paired_iou_2d(a, a, [1, 2, 0], [1, 2, 1])
    np.testing.assert_array_equal(p, [0.0, 0.0, 0.0])


def test_shapes_and_arguments():
    assert box_iou_2d(np.zeros((0, 4)), np.zeros((3, 4))).shape == (0, 3)
    assert box_iou_2d(np.zeros((2, 4)), np.zeros((0, 4))).shape == (2, 0)
    assert paired_iou_2d(np.zeros((2, 4)), np.zeros((2, 4)), [], []).shape == (0,)
    with pytest.raises(ValueError):
        box_iou_2d(np.zeros((2, 5)), np.zeros((2, 4)))
    with pytest.raises(ValueError):
        paired_iou_2d(np.zeros((2, 4)), np.zeros((2, 4)), [0, 1], [0])
