"""AP by object size (COCO area bins): by hand in 3D and 2D, pycocotools' APs/APm/APl, and bins from 2D box areas."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from ov3d_core.diagnostics.sizes import ap_by_size, ap_by_size_from_view, size_params
from ov3d_core.eval.labels import label_view_from_names
from ov3d_core.eval.pairs import compute_pairs
from tests.beyond.conftest import inputs_from_pairs, make_boxset
from tests.diagnostics.test_iou_curve import _coco_inputs, _cocoeval
from tests.eval.test_ap_pycocotools import CAT_IDS, random_coco


def _hand(iou: float):
    # GT0 small (100 px²) is missed; GT1 large (20,000 px²) is found by P1 (0.9); P0 (0.95, 50 px²) is a stray FP
    inp = inputs_from_pairs([0, 0], [0, 0], [0, 0], [0, 0], [0.95, 0.9], [(1, 1, iou)])
    return replace(inp, gt_range_value=np.array([100.0, 20000.0]), pred_range_value=np.array([50.0, 19000.0]))


def test_size_bins_change_ap3d_by_hand():
    s = ap_by_size(_hand(0.8), n_categories=1, iou="3d", vocabulary=["chair"])
    t = s.table.set_index("size")
    # all: FP then TP -> precision 1/2 up to recall 1/2: 51 of 101 points at 0.5, at all ten 3D thresholds
    assert t.loc["all", "AP"] == pytest.approx(51 * 0.5 / 101 * 100)
    # small: only GT0 counts; P0 is a FP (its area is small); P1 matched an ignored (large) GT -> ignored: AP 0
    assert t.loc["small", "AP"] == 0.0
    # large: only GT1; P0 is unmatched and not large -> ignored; P1 TP: AP 100
    assert t.loc["large", "AP"] == pytest.approx(100.0)
    assert np.isnan(t.loc["medium", "AP"])  # no GT of that size
    assert list(t["n_gt"]) == [2, 1, 0, 1]
    assert t.loc["medium", "area_lo"] == 32.0 ** 2 and t.loc["medium", "area_hi"] == 96.0 ** 2
    assert s.summary() == pytest.approx({"AP3D": 51 * 0.5 / 101 * 100, "AP3D-small": 0.0,
                                         "AP3D-medium": np.nan, "AP3D-large": 100.0}, nan_ok=True)
    pc = s.per_category.set_index("category")
    assert pc.loc["chair", "AP-large"] == pytest.approx(100.0) and pc.loc["chair", "n_gt-small"] == 1


def test_size_bins_in_2d_use_coco_thresholds():
    # IoU 0.83 matches at 0.5 ... 0.8 (7 of COCO's 10 thresholds)
    s = ap_by_size(_hand(0.83), n_categories=1, iou="2d")
    t = s.table.set_index("size")
    assert t.loc["large", "AP"] == pytest.approx(70.0)
    assert t.loc["all", "AP"] == pytest.approx(7 * 51 * 0.5 / 101 * 100 / 10)
    assert t.loc["small", "AP"] == 0.0
    assert set(s.summary()) == {"AP2D", "AP2D-small", "AP2D-medium", "AP2D-large"}


def test_boundary_area_counts_in_both_bins():
    inp = replace(_hand(0.8), gt_range_value=np.array([100.0, 32.0 ** 2]))
    t = ap_by_size(inp, n_categories=1).table.set_index("size")
    assert t.loc["small", "n_gt"] == 2 and t.loc["medium", "n_gt"] == 1


@pytest.mark.parametrize("seed", range(3))
def test_2d_bins_equal_pycocotools(seed):
    gt_json, dets = random_coco(np.random.default_rng(seed))
    s = ap_by_size(_coco_inputs(gt_json, dets), n_categories=len(CAT_IDS), iou="2d").summary()
    E = _cocoeval(gt_json, dets)
    for key, i in (("AP2D", 0), ("AP2D-small", 3), ("AP2D-medium", 4), ("AP2D-large", 5)):
        if E.stats[i] == -1:
            assert np.isnan(s[key])
        else:
            assert s[key] == pytest.approx(E.stats[i] * 100, abs=1e-10)


def test_from_view_bins_by_projected_area():
    # unit cubes at 3 m (large), 8 m (medium) and 30 m (small) in front of a 500 px focal camera
    gt = make_boxset([0, 0, 0], ["chair"] * 3, [[0, 0, 3.0], [2, 0, 8.0], [-2, 0, 30.0]], [[1, 1, 1.0]] * 3)
    pred = make_boxset([0, 0], ["chair"] * 2, [[0.05, 0, 3.0], [2.05, 0, 8.0]], [[1, 1, 1.0]] * 2,
                       score=[0.9, 0.8])
    area = gt.box2d_area
    assert area[0] > 96 ** 2 and 32 ** 2 < area[1] < 96 ** 2 and area[2] < 32 ** 2
    lv = label_view_from_names(pred.category, pred.score, ("chair",))
    pairs = compute_pairs(gt, pred)
    t = ap_by_size_from_view(gt, pred, pairs, lv, iou="3d").table.set_index("size")
    assert list(t["n_gt"]) == [3, 1, 1, 1]
    assert t.loc["large", "AP"] == pytest.approx(100.0) and t.loc["medium", "AP"] == pytest.approx(100.0)
    assert t.loc["small", "AP"] == 0.0  # the far cube is missed
    assert size_params("3d").iou_thresholds.tolist() == np.linspace(0.05, 0.5, 10).tolist()
    with pytest.raises(ValueError, match="iou"):
        size_params("x")
