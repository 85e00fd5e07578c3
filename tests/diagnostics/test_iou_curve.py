"""AP against the IoU threshold: a hand-computed 3D case, pycocotools COCOeval with the same thresholds (2D), and the
from-view path against the engine's own Omni3D AP3D / AP2D."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

from ov3d_core.diagnostics.iou_curve import (CURVE_THRESHOLDS, ap_vs_iou, ap_vs_iou_from_view, curve_params,
                                             iou_summary_table)
from ov3d_core.eval.ap import APInputs, APParams, evaluate_view
from ov3d_core.eval.labels import label_view_from_names
from ov3d_core.eval.pairs import compute_pairs
from tests.beyond.conftest import inputs_from_pairs, make_boxset
from tests.eval.test_ap_pycocotools import CAT_IDS, pairs_from, random_coco


def test_thresholds_are_the_protocols_own_values():
    assert len(CURVE_THRESHOLDS) == 19
    np.testing.assert_allclose(CURVE_THRESHOLDS, np.arange(1, 20) * 0.05, rtol=0, atol=1e-12)
    # bit-for-bit Omni3D's 3D list and COCO's list
    assert set(np.linspace(0.05, 0.5, 10)) <= set(CURVE_THRESHOLDS)
    assert set(np.linspace(0.5, 0.95, 10)) <= set(CURVE_THRESHOLDS)


def test_hand_computed_3d_curve():
    # one category, two GT; A (0.9) overlaps GT0 at 3D IoU 0.62, B (0.8) overlaps GT1 at 0.33; a second category has
    # no GT (absent, not counted)
    inp = inputs_from_pairs([0, 0], [0, 0], [0, 0], [0, 0], [0.9, 0.8], [(0, 0, 0.62), (1, 1, 0.33)])
    c = ap_vs_iou(inp, n_categories=2)
    # t <= 0.33: both TP, precision 1 at every recall point -> 100
    # 0.33 < t <= 0.62: A TP, B FP; recall 0.5 at precision 1: 51 of 101 recall points -> 5100/101
    # t > 0.62: nothing matches -> 0
    half = 5100 / 101
    expected = np.where(CURVE_THRESHOLDS <= 0.33, 100.0, np.where(CURVE_THRESHOLDS <= 0.62, half, 0.0))
    np.testing.assert_allclose(c.map, expected, rtol=0, atol=1e-10)
    assert c.map_50 == pytest.approx(half) and c.map_75 == 0.0
    assert c.map_50_95 == pytest.approx(3 * half / 10)  # 0.5, 0.55, 0.6 of ten thresholds
    assert c.retained == pytest.approx(0.3)
    assert c.map_05_50 == pytest.approx((6 * 100 + 4 * half) / 10)  # Omni3D AP3D: 0.05..0.3 and 0.35..0.5
    assert np.isnan(c.per_category[:, 1]).all() and list(c.n_gt) == [2, 0]
    s = c.summary()
    assert s["mAP@.5"] == pytest.approx(half) and s["retained"] == pytest.approx(0.3)
    f = c.to_frame()
    assert list(f.columns) == ["iou", "iou_thr", "mAP"] and len(f) == 19
    assert len(c.per_category_frame()) == 2 * 19
    t = iou_summary_table({"run": c})
    assert t.loc[0, "mAP@.75"] == 0.0 and t.loc[0, "iou"] == "3d"


def test_retained_is_nan_without_ap50():
    inp = inputs_from_pairs([0], [0], [0], [0], [0.9], [(0, 0, 0.2)])
    c = ap_vs_iou(inp, n_categories=1)
    assert c.map_50 == 0.0 and np.isnan(c.retained)
    assert c.at(0.2) == pytest.approx(100.0)
    with pytest.raises(ValueError, match="threshold"):
        c.at(0.33)


def _cocoeval(gt_json, dets, thresholds=None):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        coco = COCO()
        coco.dataset = gt_json
        coco.createIndex()
        E = COCOeval(coco, coco.loadRes(dets), "bbox")
        if thresholds is not None:
            E.params.iouThrs = np.asarray(thresholds, np.float64)
        E.evaluate()
        E.accumulate()
        if thresholds is None:
            E.summarize()
    return E


def _coco_inputs(gt_json, dets):
    anns = gt_json["annotations"]
    code = {c: k for k, c in enumerate(CAT_IDS)}
    pg, pd_, piou = pairs_from(gt_json, dets, use_ours=True)
    return APInputs(gt_image=np.array([a["image_id"] for a in anns]),
                    gt_label=np.array([code[a["category_id"]] for a in anns]), gt_ignore=np.zeros(len(anns), bool),
                    gt_range_value=np.array([a["area"] for a in anns]),
                    pred_image=np.array([d["image_id"] for d in dets]),
                    pred_label=np.array([code[d["category_id"]] for d in dets]),
                    pred_score=np.array([d["score"] for d in dets]),
                    pred_range_value=np.array([d["bbox"][2] * d["bbox"][3] for d in dets]), pair_gt=pg,
                    pair_pred=pd_, pair_iou=piou)


@pytest.mark.parametrize("seed", range(3))
def test_2d_curve_equals_pycocotools_with_the_same_thresholds(seed):
    gt_json, dets = random_coco(np.random.default_rng(seed))
    c = ap_vs_iou(_coco_inputs(gt_json, dets), n_categories=len(CAT_IDS), iou="2d")
    E = _cocoeval(gt_json, dets, CURVE_THRESHOLDS)
    p = E.eval["precision"][:, :, :, 0, 2]  # all areas, maxDets 100: (T, R, K)
    coco_map = np.array([p[t][p[t] > -1].mean() * 100 for t in range(len(CURVE_THRESHOLDS))])
    np.testing.assert_allclose(c.map, coco_map, rtol=0, atol=1e-10)
    np.testing.assert_allclose(np.where(np.isnan(c.precision), -1, c.precision), p, rtol=0, atol=1e-12)
    # COCO's own headline numbers under its default thresholds
    E0 = _cocoeval(gt_json, dets)
    assert c.map_50_95 == pytest.approx(E0.stats[0] * 100, abs=1e-10)
    assert c.map_50 == pytest.approx(E0.stats[1] * 100, abs=1e-10)
    assert c.map_75 == pytest.approx(E0.stats[2] * 100, abs=1e-10)
    assert c.retained == pytest.approx(E0.stats[0] / E0.stats[1], abs=1e-12)


def _scene():
    # unit cubes; predictions shifted along x by d have 3D IoU (1 - d) / (1 + d) with their GT
    gt = make_boxset([0, 0, 1], ["chair", "chair", "table"], [[0, 0, 8.0], [3, 0, 8.0], [0, 0, 6.0]],
                     [[1, 1, 1.0]] * 3)
    pred = make_boxset([0, 0, 1, 1], ["chair", "chair", "table", "chair"],
                       [[0.1, 0, 8.0], [3.4, 0, 8.0], [0.05, 0, 6.0], [2, 0, 6.0]], [[1, 1, 1.0]] * 4,
                       score=[0.9, 0.8, 0.7, 0.95])
    return gt, pred


def test_from_view_agrees_with_omni3d_ap3d_and_ap2d():
    gt, pred = _scene()
    pairs = compute_pairs(gt, pred)
    lv = label_view_from_names(pred.category, pred.score, ("chair", "table"))
    c3 = ap_vs_iou_from_view(gt, pred, pairs, lv, iou="3d")
    c2 = ap_vs_iou_from_view(gt, pred, pairs, lv, iou="2d")
    assert c3.vocabulary == ("chair", "table")
    ap3 = evaluate_view(gt, pred, pairs, lv, APParams.omni3d_3d()).summary()
    ap2 = evaluate_view(gt, pred, pairs, lv, APParams.omni3d_2d()).summary()
    assert c3.map_05_50 == pytest.approx(ap3["AP3D"], abs=1e-10)
    assert c3.at(0.5) == pytest.approx(ap3["AP3D@50"], abs=1e-10)
    assert c2.map_50_95 == pytest.approx(ap2["AP2D"], abs=1e-10)
    assert c2.at(0.75) == pytest.approx(ap2["AP2D@75"], abs=1e-10)
    # by hand in 3D: chair preds at IoU 0.9/1.1 and 0.6/1.4, table at 0.95/1.05; the 0.95-score chair box is FP
    iou_a, iou_b, iou_t = 0.9 / 1.1, 0.6 / 1.4, 0.95 / 1.05
    t = CURVE_THRESHOLDS
    # chair: FP(0.95) then A(0.9) then B(0.8): both TP -> precision 1/2 at r 0.5 and 2/3 at r 1 (envelope 2/3);
    # only A -> 1/2 up to r 0.5
    chair = np.where(t <= iou_b, 2 / 3 * 100, np.where(t <= iou_a, 51 * 0.5 / 101 * 100, 0.0))
    table = np.where(t <= iou_t, 100.0, 0.0)
    np.testing.assert_allclose(c3.per_category[:, 0], chair, rtol=0, atol=1e-9)
    np.testing.assert_allclose(c3.per_category[:, 1], table, rtol=0, atol=1e-9)
    np.testing.assert_allclose(c3.map, (chair + table) / 2, rtol=0, atol=1e-9)


def test_curve_params_and_bad_input():
    p = curve_params("2d")
    assert p.iou == "2d" and p.range_variable == "area" and len(p.iou_thresholds) == 19
    assert curve_params("3d").range_variable == "depth"
    with pytest.raises(ValueError, match="iou"):
        curve_params("4d")
    inp = inputs_from_pairs([0], [0], [0], [0], [0.9], [(0, 0, 0.2)])
    with pytest.raises(ValueError, match="ascending"):
        ap_vs_iou(inp, n_categories=1, thresholds=[0.5, 0.3])
