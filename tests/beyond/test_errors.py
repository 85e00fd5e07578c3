"""3D TIDE bins, fix-one-bin ΔmAP and the monocular oracles."""

import numpy as np
import pytest

from ov3d_core.diagnostics.oracles import monocular_oracles, monocular_oracles_view
from ov3d_core.diagnostics.tide import tide_3d
from ov3d_core.eval.ap import map3d
from ov3d_core.eval.labels import label_view_from_names
from ov3d_core.eval.pairs import compute_pairs
from tests.beyond.conftest import inputs_from_pairs, make_boxset

VOCAB = ("chair", "sofa", "toilet")


def _planted():
    # GT rows: 0 chair img0 | 1 chair img1 | 2 chair img2 | 3 chair img5 (missed) | 4 sofa img7 | 5 toilet img8
    #          6 chair img9 | 7 chair img10 (ignored)
    gt_image = [0, 1, 2, 5, 7, 8, 9, 10]
    gt_label = [0, 0, 0, 0, 1, 2, 0, 0]
    gt_ignore = [False] * 7 + [True]
    # preds: 0 A chair TP | 1 B chair dupe | 2 C sofa cls | 3 D chair loc | 4 E toilet both | 5 F chair bkg
    #        6 sofa TP | 7 toilet TP | 8 G chair TP (low score) | 9 H chair on the ignored GT
    pred_image = [0, 0, 1, 2, 0, 4, 7, 8, 9, 10]
    pred_label = [0, 0, 1, 0, 2, 0, 1, 2, 0, 0]
    pred_score = [0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1, 0.85]
    pairs = [(0, 0, 0.8), (0, 1, 0.6), (1, 2, 0.7), (2, 3, 0.17), (0, 4, 0.17), (4, 6, 0.9), (5, 7, 0.9),
             (6, 8, 0.9), (7, 9, 0.9)]
    return inputs_from_pairs(gt_image, gt_label, pred_image, pred_label, pred_score, pairs, gt_ignore=gt_ignore)


def test_each_bin_planted_once_and_assigned():
    res = tide_3d(_planted(), n_categories=3, vocabulary=VOCAB)
    assert list(res.pred_bin) == ["tp", "dupe", "cls", "loc", "both", "bkg", "tp", "tp", "tp", "ignored"]
    assert list(res.gt_status) == ["tp", "usable", "usable", "missed", "tp", "tp", "tp", "ignored"]
    t = res.table.set_index("bin")
    for b in ("cls", "loc", "both", "dupe", "bkg", "missed"):
        assert t.loc[b, "count"] == 1, b
        assert t.loc[b, "delta_ap"] > 0, b
    assert t.loc["cls_within", "count"] == 1 and t.loc["cls_within", "delta_ap"] > 0
    assert t.loc["cls_across", "count"] == 0 and t.loc["cls_across", "delta_ap"] == 0
    # the pointed-to GT of each error
    assert res.pred_gt[1] == 0 and res.pred_gt[2] == 1 and res.pred_gt[3] == 2 and res.pred_gt[4] == 0
    assert res.pred_gt[5] == -1
    d = res.dets.set_index("pred")
    assert d.loc[2, "fix"] == "relabel" and d.loc[3, "fix"] == "tp" and d.loc[1, "fix"] == "suppress"
    assert d.loc[3, "iou"] == pytest.approx(0.17)
    assert "do not sum" in res.note


def test_fix_values_by_hand():
    inp = _planted()
    res = tide_3d(inp, n_categories=3, vocabulary=VOCAB)
    # loc fix == setting D's pair IoU to 1 by hand
    iou = inp.pair_iou.copy()
    iou[3] = 1.0
    from dataclasses import replace
    manual = map3d(replace(inp, pair_iou=iou), n_categories=3)
    assert res.table.set_index("bin").loc["loc", "ap_fixed"] == pytest.approx(manual)
    # missed fix == ignoring GT 3
    ign = inp.gt_ignore.copy()
    ign[3] = True
    manual = map3d(replace(inp, gt_ignore=ign), n_categories=3)
    assert res.table.set_index("bin").loc["missed", "ap_fixed"] == pytest.approx(manual)


def test_absent_bins_have_zero_delta_and_across_split():
    # only a loc error (plus TPs) -> every other bin is empty with delta 0
    inp = inputs_from_pairs([0, 1], [0, 0], [0, 1], [0, 0], [0.9, 0.5], [(0, 0, 0.9), (1, 1, 0.2)])
    res = tide_3d(inp, n_categories=1, vocabulary=("chair",))
    t = res.table.set_index("bin")
    assert t.loc["loc", "count"] == 1 and t.loc["loc", "delta_ap"] > 0
    for b in ("cls", "both", "dupe", "bkg", "missed", "cls_within", "cls_across"):
        assert t.loc[b, "count"] == 0 and t.loc[b, "delta_ap"] == 0, b
    # a wrong-class box across super-categories (chair is seating, lamp an appliance -> across)
    inp = inputs_from_pairs([0, 1], [0, 1], [0, 1, 0], [0, 1, 1], [0.5, 0.5, 0.9],
                            [(0, 0, 0.9), (1, 1, 0.9), (0, 2, 0.8)])
    res = tide_3d(inp, n_categories=2, vocabulary=("chair", "lamp"))
    t = res.table.set_index("bin")
    assert t.loc["cls_across", "count"] == 1 and t.loc["cls_across", "delta_ap"] > 0
    assert t.loc["cls_within", "count"] == 0


def test_best_claimant_wins_others_suppressed():
    # two loc claimants on one free GT: only the higher-scoring one is made a TP
    inp = inputs_from_pairs([0], [0], [0, 0], [0, 0], [0.9, 0.8], [(0, 0, 0.2), (0, 1, 0.15)])
    res = tide_3d(inp, n_categories=1, vocabulary=("chair",))
    d = res.dets.set_index("pred")
    assert d.loc[0, "fix"] == "tp" and d.loc[1, "fix"] == "suppress"


def _depth_error_scene(scale=1.06):
    gt = make_boxset([0], ["chair"], [[0.5, 0.2, 10.0]], [[1.0, 1.0, 1.0]], yaw=[0.3])
    c = np.array([[0.5, 0.2, 10.0]]) * scale  # moved along the camera ray
    pred = make_boxset([0], ["chair"], c, [[1.0, 1.0, 1.0]], yaw=[0.3], score=[0.9])
    return gt, pred


def test_depth_oracle_restores_iou_and_size_oracle_does_nothing():
    gt, pred = _depth_error_scene()
    pairs = compute_pairs(gt, pred)
    assert 0.1 < pairs.iou3d[0] < 0.5
    view = label_view_from_names(pred.category, pred.score, ("chair",))
    res = monocular_oracles_view(gt, pred, pairs, view)
    t = res.table.set_index("factor")
    assert res.associated_gt[0] == 0
    assert res.iou_after["depth"][0] == pytest.approx(1.0, abs=1e-9)
    assert t.loc["depth", "gain"] > 0
    assert t.loc["depth", "AP3D"] == pytest.approx(100.0)
    assert t.loc["size", "gain"] == pytest.approx(0.0, abs=1e-9)
    assert t.loc["rotation", "gain"] == pytest.approx(0.0, abs=1e-9)
    assert res.iou_after["size"][0] == pytest.approx(pairs.iou3d[0], abs=1e-9)


def test_rotation_oracle_on_a_yaw_error_and_association_rules():
    gt = make_boxset([0, 0], ["chair", "chair"], [[0, 0, 10.0], [5, 0, 10.0]], [[1, 1, 2.0]] * 2, yaw=[0.0, 0.0])
    pred = make_boxset([0, 0], ["chair", "chair"], [[0, 0, 10.0], [5, 0, 10.0]], [[1, 1, 2.0]] * 2,
                       yaw=[1.0, 0.0], score=[0.9, 0.8])
    pairs = compute_pairs(gt, pred)
    view = label_view_from_names(pred.category, pred.score, ("chair",))
    for how in ("greedy", "best3d", "best2d"):
        res = monocular_oracles_view(gt, pred, pairs, view, association=how)
        t = res.table.set_index("factor")
        assert list(res.associated_gt) == [0, 1], how
        assert res.iou_after["rotation"][0] == pytest.approx(1.0, abs=1e-9)
        assert t.loc["rotation", "gain"] > 0 and t.loc["depth", "gain"] == pytest.approx(0.0, abs=1e-9)
    # the array entry point gives the same numbers
    from ov3d_core.eval.ap import APInputs
    inp = APInputs.from_view(gt, pred, pairs, view)
    res2 = monocular_oracles(inp, n_categories=1, gt_center=gt.center, gt_dims=gt.dims, gt_R=gt.R,
                             pred_center=pred.center, pred_dims=pred.dims, pred_R=pred.R, factors=("rotation",))
    assert res2.table["AP3D"].iloc[0] == pytest.approx(t.loc["rotation", "AP3D"])
