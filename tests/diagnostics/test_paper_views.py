"""Analysis compositions behind the papers' tables (issue 23, items 5, 6, 8): AP against the IoU threshold, class-
agnostic NMS, greedy vs Hungarian recall and Pro-Bench's formulation sensitivity, on hand-built scenes whose numbers
are worked out in the comments."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from ov3d_core.analysis import Analysis, View
from ov3d_core.taxonomy import OMNI3D_NAME_TO_ID
from tests.io.factories import (make_annotation, make_categories, make_gt_json, make_image, make_pred_from_annotation,
                                make_pred_json)


def _shifted(ann, dx, score, **kw):
    """A prediction of ``ann``'s unit cube moved ``dx`` m along x (3D IoU (1 - dx) / (1 + dx) with it)."""
    p = make_pred_from_annotation(ann, score, **kw)
    p["center_cam"] = (np.asarray(ann["center_cam"]) + [dx, 0.0, 0.0]).tolist()
    p["bbox3D"] = (np.asarray(ann["bbox3D_cam"]) + [dx, 0.0, 0.0]).tolist()
    return p


def _write(tmp_path, runs, gt_kw):
    make_gt_json(tmp_path, **gt_kw)
    p = tmp_path / "bench.yaml"
    p.write_text(yaml.safe_dump({"datasets": [{"name": "D", "gt": "gt.json"}], "runs": runs}, sort_keys=False))
    return Analysis.from_yaml(p)


def test_ap_against_iou_threshold_by_hand(tmp_path):
    """One chair, one prediction 0.3 m off: 3D IoU 0.7 / 1.3 = 0.538. A TP at every threshold up to 0.538, else a FP:
    mAP@.5 = 100, mAP@.75 = 0, mAP@.5:.95 = 10 (one of ten thresholds), 90 % of mAP@.5 lost."""
    ann = make_annotation(1, 1, center=(0.0, 0.0, 5.0))
    make_pred_json(tmp_path, [_shifted(ann, 0.3, 0.9)], name="p.json")
    a = _write(tmp_path, [{"name": "r", "dataset": "D", "predictions": "p.json"}],
               {"images": [make_image(1)], "annotations": [ann]})
    c = a.ap_vs_iou(View("D", "r"))
    s = c.summary()
    assert s["mAP@.5"] == pytest.approx(100.0) and s["mAP@.75"] == pytest.approx(0.0)
    assert s["mAP@.5:.95"] == pytest.approx(10.0) and s["retained"] == pytest.approx(0.1)
    t = np.asarray(c.thresholds)
    np.testing.assert_allclose(np.asarray(c.map), np.where(t <= 0.7 / 1.3, 100.0, 0.0))
    assert s["mAP@.05:.5"] == pytest.approx(a.summary(View("D", "r"))["AP3D"])  # Omni3D's AP3D, the same thresholds
    table = a.iou_summary([View("D", "r")])
    assert list(table["iou"]) == ["3d", "2d"] and table.loc[0, "mAP@.75"] == pytest.approx(0.0)


def test_class_agnostic_nms_and_hungarian_recall_by_hand(tmp_path):
    """Image 1: GT chairs A (x=0) and B (x=0.583); p1 (0.9) sits 0.25 m right of A (IoU 0.6 with A, 0.5 with B), p2
    (0.8) 0.29 m left of A (IoU 0.55 with A, 0.07 with B). Greedy in score order gives A to p1 and leaves p2 nothing
    above 0.15: recall 1/2; Hungarian (maximum total IoU) pairs p1-B and p2-A: recall 2/2. Class-agnostic NMS at 0.5
    keeps p1 and suppresses p2 (their IoU (1 - 0.54) / (1 + 0.54) = 0.30 is below 0.5: kept) -- so add p3, a
    table on p1's box at 0.7 (IoU 1 with p1): suppressed whatever its class."""
    a_ann = make_annotation(1, 1, center=(0.0, 0.0, 5.0))
    b_ann = make_annotation(2, 1, center=(0.25 + 1 / 3, 0.0, 5.0))
    p1, p2 = _shifted(a_ann, 0.25, 0.9), _shifted(a_ann, -(1 - 0.55) / 1.55, 0.8)
    p3 = _shifted(a_ann, 0.25, 0.7, category_id=OMNI3D_NAME_TO_ID["table"])
    make_pred_json(tmp_path, [p1, p2, p3], name="p.json")
    a = _write(tmp_path, [{"name": "r", "dataset": "D", "predictions": "p.json"}],
               {"images": [make_image(1)], "annotations": [a_ann, b_ann],
                "categories": make_categories(["chair", "table"])})  # the table is evaluated (a FP), then suppressed
    v, v12 = View("D", "r"), View("D", "r", min_score=0.75)  # v12: p1 and p2 only
    rm = a.recall_methods(v12).set_index("method")
    assert rm.loc["greedy", "recall"] == pytest.approx(0.5) and rm.loc["hungarian", "recall"] == pytest.approx(1.0)
    assert rm.loc["hungarian", "mean_iou"] == pytest.approx((0.5 + 0.55) / 2, abs=1e-9)
    assert rm.loc["greedy", "recall"] == pytest.approx(a.summary(v12)["recall3D@15"])  # the paper's is greedy
    keep = a.nms_keep(v)
    assert a.label_view(v).evaluated.tolist() == [True, True, True]
    assert keep.tolist() == [True, True, False]
    nms = a.nms_summary(v)
    assert nms["n_suppressed"] == 1
    # the table has no GT (its FP does not enter AP3D, a mean over classes with GT), so AP3D is unchanged; the
    # class-agnostic recall loses the table's box on B: greedy 2/2 with it (p1-A, p3-B), 1/2 without
    assert nms["AP3D"] == pytest.approx(a.summary(v)["AP3D"])
    assert a.summary(v)["recall3D@15"] == pytest.approx(1.0) and nms["recall3D@15"] == pytest.approx(0.5)


def test_formulation_sensitivity_of_a_prompt_conditioned_run(tmp_path):
    """Pro-Bench formulations as per-template files: the categorical prompt finds both chairs (AP3D 100), the
    negative type one of two (51 of 101 recall points: 50.5); every other formulation has no file and is not scored.
    Largest ΔmAP = 49.5 for the run and for the chair class; the negative type's row has original − categorical
    = −49.5 and no wrapped formulation."""
    anns = [make_annotation(i, i, center=(0.0, 0.0, 4.0 + i)) for i in (1, 2)]
    make_pred_json(tmp_path, [make_pred_from_annotation(x, 0.9) for x in anns], name="cat.json")
    make_pred_json(tmp_path, [make_pred_from_annotation(anns[0], 0.9)], name="neg.json")
    a = _write(tmp_path, [{"name": "ov", "dataset": "D",
                           "per_template": {"PB-categorical": "cat.json", "PB-negative": "neg.json"}}],
               {"images": [make_image(1), make_image(2)], "annotations": anns})
    v = View("D", "ov")
    sup = a.template_support(v, ["PB-categorical", "PB-negative", "PB-state"]).set_index("template")
    assert sup["supported"].tolist() == [True, True, False] and sup.loc["PB-state", "reason"] == "no per_template file"
    fs = a.formulation_sensitivity(v)
    assert fs.formulations == ("PB-categorical", "PB-negative")
    assert fs.max_delta == pytest.approx(100 - 100 * 51 / 101)
    assert fs.best_formulation == "PB-categorical" and fs.worst_formulation == "PB-negative"
    assert fs.spread.to_frame().set_index("class").loc["chair", "spread"] == pytest.approx(100 - 100 * 51 / 101)
    types = a.prompt_types(v).set_index("type")
    assert types.loc["negative", "delta_original_minus_categorical"] == pytest.approx(-(100 - 100 * 51 / 101))
    assert np.isnan(types.loc["negative", "wrapped"]) and np.isnan(types.loc["state", "max_delta"])
