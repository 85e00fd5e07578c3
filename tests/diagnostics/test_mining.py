"""Failure mining and the object view on a hand-built scene with real geometry (2 m cubes: a shift of 0.5 m along
one axis gives 3D IoU 1.5 / 2.5 = 0.6, so every status below is known by hand)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ov3d_core.analysis import Analysis
from ov3d_core.diagnostics.mining import (cross_class_false_positives, depth_errors, missed_by_all, object_view,
                                          oracle_gain, rank_images, run_disagreement)
from ov3d_core.eval.ap import evaluate_view
from ov3d_core.eval.protocols import target_aware_view
from ov3d_core.model import Dataset, Run
from tests.diagnostics.scenes import make_boxes

VOCAB = ("car", "chair", "table")
CUBE = (2.0, 2.0, 2.0)

# GT: image 1: g0 car, g1 chair; image 2: g2 table, g3 chair (ignored); image 3: g4 car (found by nobody)
GT = [(1, "car", (0, 0, 10)), (1, "chair", (4, 0, 12)), (2, "table", (0, 0, 20)), (2, "chair", (-4, 0, 15)),
      (3, "car", (0, 0, 40))]
# run A: p0 car on g0 (TP), p1 car on g1 (cross-class FP), p2 table on g2 moved 0.5 m deeper (TP, IoU 0.6)
RUN_A = [(1, "car", (0, 0, 10), 0.9), (1, "car", (4, 0, 12), 0.8), (2, "table", (0, 0, 20.5), 0.7)]
# run B: p0 chair on g0 (cross-class FP), p1 chair on g1 (TP), p2 car on g2 (cross-class FP, removed by the
# oracle: image 2 has no car), p3 car on g0 moved 0.5 m sideways (TP, IoU 0.6)
RUN_B = [(1, "chair", (0, 0, 10), 0.9), (1, "chair", (4, 0, 12), 0.8), (2, "car", (0, 0, 20), 0.95),
         (1, "car", (0.5, 0, 10), 0.5)]


def _boxes(rows, score=False):
    n = len(rows)
    return make_boxes([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows], [CUBE] * n, [0.0] * n,
                      score=[r[3] for r in rows] if score else None,
                      ignore=[i == 3 for i in range(n)] if not score else None)


@pytest.fixture(scope="module")
def bench():
    gt = _boxes(GT)
    images = pd.DataFrame({"image_id": [1, 2, 3, 4], "width": 1280, "height": 720,
                           "file_path": ["1.png", "2.png", "3.png", "4.png"], "dataset_id": 0})
    ds = Dataset(name="hand", images=images, K=np.tile(np.eye(3), (4, 1, 1)), vocabulary=VOCAB, gt=gt)
    runs = [Run(name=name, dataset="hand", pred=_boxes(rows, score=True)) for name, rows in (("A", RUN_A), ("B", RUN_B))]
    A = Analysis.from_objects(ds, runs)
    entries = {r.name: (r, A.score(A.view(run=r.name))) for r in runs}
    return ds, entries


def test_cross_class_false_positives(bench):
    ds, e = bench
    a = cross_class_false_positives(ds, *e["A"])
    assert a.boxes[["pred_row", "image_id", "class", "other_gt_row", "other_class"]].values.tolist() == [
        [1, 1, "car", 1, "chair"]]
    assert a.boxes["iou_other"].iloc[0] == pytest.approx(1.0)
    b = cross_class_false_positives(ds, *e["B"])
    assert b.boxes["pred_row"].tolist() == [2, 0]  # highest score first
    assert b.images[["rank", "image_id", "n_cross_class_fp", "n_boxes"]].values.tolist() == [[1, 1, 1, 1],
                                                                                             [2, 2, 1, 1]]
    # an overlap rule above 1 keeps nothing; at the strictest match IoU p1 is still the only one
    assert cross_class_false_positives(ds, *e["A"], overlap=1.01).boxes.empty
    assert cross_class_false_positives(ds, *e["A"], iou=0.5).boxes["pred_row"].tolist() == [1]


def test_oracle_gain_matches_a_direct_evaluation(bench):
    ds, e = bench
    run, sc = e["B"]
    r = oracle_gain(ds, run, sc)
    assert r.boxes["pred_row"].tolist() == [2] and bool(r.boxes["cross_class"].iloc[0])
    assert r.images[["image_id", "n_removed_fp", "n_cross_class"]].values.tolist() == [[2, 1, 1]]
    keep = np.ones(len(sc.view), bool)
    keep[2] = False
    direct = evaluate_view(ds.gt, run.pred, sc.pairs, sc.view.filtered(keep), sc.ap.params, gt_label=sc.gt_label)
    gain = direct.summary()["AP3D"] - sc.summary["AP3D"]
    assert r.images["ap_gain"].iloc[0] == pytest.approx(gain) and gain > 5  # car AP doubles: 1/3 of AP3D
    # the oracle removes exactly what target_aware_view drops among the FPs
    oracle = target_aware_view(sc.view, run.pred.image_id, ds.gt.image_id, sc.gt_label, ds.gt.ignore)
    assert set(np.flatnonzero(sc.view.evaluated & ~oracle.evaluated)) == {2}
    # run A loses nothing to the oracle
    assert oracle_gain(ds, *e["A"]).images.empty


def test_run_disagreement(bench):
    ds, e = bench
    r = run_disagreement(ds, e)
    assert r.boxes[["gt_row", "gt_class", "disagreement", "n_localised", "n_correct", "A", "B"]].values.tolist() == [
        [0, "car", 1, 2, 1, "car", "chair"], [1, "chair", 1, 2, 1, "car", "chair"],
        [2, "table", 1, 2, 1, "table", "car"]]
    assert r.images[["image_id", "disagreement"]].values.tolist() == [[1, 2], [2, 1]]
    # one run alone never disagrees
    assert run_disagreement(ds, {"A": e["A"]}).boxes.empty


def test_depth_errors(bench):
    ds, e = bench
    r = depth_errors(ds, *e["A"])
    assert r.boxes["pred_row"].tolist() == [2, 0]
    assert r.boxes["depth_error"].tolist() == pytest.approx([0.5, 0.0])
    assert r.boxes["relative_error"].iloc[0] == pytest.approx(0.5 / 20)
    assert r.boxes["iou3d"].tolist() == pytest.approx([0.6, 1.0])
    assert r.images[["image_id", "depth_error"]].values.tolist() == [[2, 0.5], [1, 0.0]]


def test_missed_by_all(bench):
    ds, e = bench
    r = missed_by_all(ds, e)
    # g4 is missed by both; g3 is ignored; g1 is matched by B, g0 and g2 by A
    assert r.boxes[["gt_row", "image_id", "gt_class", "n_localised"]].values.tolist() == [[4, 3, "car", 0]]
    # run A alone also misses g1 (its car on the chair is not a match) but localises it
    ra = missed_by_all(ds, {"A": e["A"]})
    assert ra.boxes[["gt_row", "n_localised", "best_iou"]].values.tolist() == [[1, 1, pytest.approx(1.0)],
                                                                             [4, 0, 0.0]]


def test_object_view_of_a_mislabelled_chair(bench):
    ds, e = bench
    v = object_view(ds, e, 1)
    t = v.to_frame().set_index("run")
    assert (v.gt_class, v.image_id, v.ignored) == ("chair", 1, False)
    assert t.loc["A", ["pred_row", "pred_class", "status", "gt_matched"]].tolist() == [1, "car", "mislabelled",
                                                                                       False]
    assert t.loc["B", ["pred_row", "pred_class", "status", "gt_matched", "matched_pred_row"]].tolist() == [
        1, "chair", "TP", True, 1]
    assert t["iou3d"].tolist() == pytest.approx([1.0, 1.0])
    assert v.summary == {"n_runs": 2, "n_localised": 2, "n_named": 1, "n_matched": 1}
    assert v.sentence() == "2 of 2 runs localise this chair, 1 name it"
    # nobody overlaps the far car: empty prediction columns
    far = object_view(ds, e, 4).to_frame()
    assert far["pred_row"].isna().all() and not far["localised"].any() and far["status"].isna().all()
    assert object_view(ds, e, 4).sentence() == "0 of 2 runs localise this car, none names it"
    with pytest.raises(ValueError, match="gt_row"):
        object_view(ds, e, 5)


def test_rank_images_orders_by_value_then_count_then_id():
    boxes = pd.DataFrame({"image_id": [5, 5, 3, 9, 9], "v": [1.0, 2.0, 7.0, 3.0, 4.0]})
    assert rank_images(boxes, "v", "count")["image_id"].tolist() == [5, 9, 3]
    assert rank_images(boxes, "v", "max")["image_id"].tolist() == [3, 9, 5]
    assert rank_images(boxes, "v", "sum")[["image_id", "v"]].values.tolist() == [[9, 7.0], [3, 7.0], [5, 3.0]]
    assert rank_images(boxes.iloc[:0], "v").empty
