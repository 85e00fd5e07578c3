"""Target-aware oracle vs dataset-level protocol on a planted scene.

Vocabulary car, van, truck, sofa (codes 0..3). GT rows::

    0 img1 car        1 img1 truck      2 img2 car       3 img2 van
    4 img3 car (ignored)                5 img4 dontcare (out of vocabulary, code -1)

Predictions (row: image, class, score, what it is)::

    0 img1 car   .90 on GT0 (0.80)          TP
    1 img1 truck .95 on GT1 (0.70)          TP
    2 img2 truck .97 on GT2 car (0.75)      planted cross-class FP: truck absent in img2, sits on a car
    3 img2 car   .85 on GT2 (0.80)          TP
    4 img2 van   .60 on GT3 (0.70)          TP
    5 img2 sofa  .50 near GT3 van (0.05)    absent-class FP, not on any GT (IoU below 0.15)
    6 img1 car   .40 no overlap             FP of a present class: the oracle keeps it
    7 img3 car   .30 on GT4 ignored car (0.50)   kept while ignored GT count as present
    8 img4 van   .55 on GT5 dontcare (0.90) absent-class FP, overlap with a non-vocabulary GT does not count
    9 img1 out-of-vocabulary (-1)           never evaluated
   10 img1 van   .99 keep=False             never evaluated
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from ov3d_core.diagnostics.protocol_comparison import compare_protocols, removed_predictions
from ov3d_core.eval.protocols import CROSS_CLASS_IOU, images_with_gt_mask, present_class_mask, target_aware_view
from tests.diagnostics.scenes import make_pairs, make_view

VOCAB = ("car", "van", "truck", "sofa")
GT_IMAGE = np.array([1, 1, 2, 2, 3, 4])
GT_LABEL = np.array([0, 2, 0, 1, 0, -1])
GT_IGNORE = np.array([False, False, False, False, True, False])
PRED_IMAGE = np.array([1, 1, 2, 2, 2, 2, 1, 3, 4, 1, 1])
PRED_LABEL = np.array([0, 2, 2, 0, 1, 3, 0, 0, 1, -1, 1])
PRED_SCORE = np.array([.90, .95, .97, .85, .60, .50, .40, .30, .55, .80, .99])
PRED_KEEP = np.array([True] * 10 + [False])
PAIRS = [(0, 0, .80), (1, 1, .70), (1, 0, .05), (2, 2, .75), (2, 3, .80), (3, 4, .70), (3, 5, .05), (4, 7, .50),
         (5, 8, .90), (0, 9, .90)]


@pytest.fixture()
def scene():
    pairs = make_pairs(PAIRS, n_gt=len(GT_IMAGE), n_pred=len(PRED_IMAGE))
    view = make_view(PRED_LABEL, PRED_SCORE, VOCAB, PRED_KEEP)
    return pairs, view


def test_present_class_mask_small():
    mask = present_class_mask(PRED_IMAGE, PRED_LABEL, GT_IMAGE, GT_LABEL, GT_IGNORE)
    assert mask.tolist() == [True, True, False, True, True, False, True, True, False, False, False]
    mask_no_ign = present_class_mask(PRED_IMAGE, PRED_LABEL, GT_IMAGE, GT_LABEL, GT_IGNORE,
                                     count_ignored_as_present=False)
    assert mask_no_ign.tolist() == [True, True, False, True, True, False, True, False, False, False, False]


def test_oracle_removes_exactly_the_absent_class_predictions(scene):
    _, view = scene
    oracle = target_aware_view(view, PRED_IMAGE, GT_IMAGE, GT_LABEL, GT_IGNORE)
    assert oracle.evaluated.tolist() == [True, True, False, True, True, False, True, True, False, False, False]
    # labels and scores untouched, the input view untouched
    np.testing.assert_array_equal(oracle.label, view.label)
    np.testing.assert_array_equal(oracle.score, view.score)
    assert view.keep.sum() == 10
    strict = target_aware_view(view, PRED_IMAGE, GT_IMAGE, GT_LABEL, GT_IGNORE, count_ignored_as_present=False)
    assert np.flatnonzero(oracle.evaluated & ~strict.evaluated).tolist() == [7]
    # the image flag removes nothing more: an image without vocabulary GT has no present class
    both = target_aware_view(view, PRED_IMAGE, GT_IMAGE, GT_LABEL, GT_IGNORE, only_images_with_gt=True)
    np.testing.assert_array_equal(both.keep, oracle.keep)


def test_images_with_gt_mask():
    # img4 holds only a non-vocabulary GT; ignored GT (img3) still make the image count
    assert images_with_gt_mask(PRED_IMAGE, GT_IMAGE, GT_LABEL).tolist() == [True] * 8 + [False, True, True]


def test_composite_image_keys_match_flat_ids():
    gi = np.stack([np.zeros_like(GT_IMAGE), GT_IMAGE], axis=1)
    pi = np.stack([np.zeros_like(PRED_IMAGE), PRED_IMAGE], axis=1)
    np.testing.assert_array_equal(present_class_mask(pi, PRED_LABEL, gi, GT_LABEL, GT_IGNORE),
                                  present_class_mask(PRED_IMAGE, PRED_LABEL, GT_IMAGE, GT_LABEL, GT_IGNORE))
    # the same image id in another dataset is another image
    pi2 = pi.copy()
    pi2[:, 0] = 1
    assert not present_class_mask(pi2, PRED_LABEL, gi, GT_LABEL, GT_IGNORE).any()


def test_removed_list_flags_the_cross_class_false_positive(scene):
    pairs, view = scene
    oracle = target_aware_view(view, PRED_IMAGE, GT_IMAGE, GT_LABEL, GT_IGNORE)
    removed = removed_predictions(view, oracle, pairs, PRED_IMAGE, GT_LABEL, GT_IGNORE)
    assert removed["pred_row"].tolist() == [2, 8, 5]  # by score
    assert removed["image_id"].tolist() == [2, 4, 2]
    assert removed["class"].tolist() == ["truck", "van", "sofa"]
    assert removed["cross_class"].tolist() == [True, False, False]
    np.testing.assert_allclose(removed["max_iou_other"], [.75, 0.0, .05])
    assert removed["other_gt_row"].iloc[0] == 2 and pd.isna(removed["other_gt_row"].iloc[1])
    assert removed["other_gt_row"].iloc[2] == 3
    other = removed["other_class"]
    assert other.iloc[0] == "car" and pd.isna(other.iloc[1]) and other.iloc[2] == "van"
    assert CROSS_CLASS_IOU == 0.15
    # a lower threshold catches the sofa, a higher one drops the truck
    low = removed_predictions(view, oracle, pairs, PRED_IMAGE, GT_LABEL, GT_IGNORE, overlap_threshold=0.05)
    assert low["cross_class"].tolist() == [True, False, True]
    high = removed_predictions(view, oracle, pairs, PRED_IMAGE, GT_LABEL, GT_IGNORE, overlap_threshold=0.8)
    assert not high["cross_class"].any()


def test_removed_same_class_overlap_is_not_cross_class(scene):
    pairs, view = scene
    strict = target_aware_view(view, PRED_IMAGE, GT_IMAGE, GT_LABEL, GT_IGNORE, count_ignored_as_present=False)
    removed = removed_predictions(view, strict, pairs, PRED_IMAGE, GT_LABEL, GT_IGNORE).set_index("pred_row")
    assert sorted(removed.index) == [2, 5, 7, 8]
    # prediction 7 (car) sits on an ignored car: same class, so no cross-class overlap
    assert removed.loc[7, "max_iou_other"] == 0.0 and not removed.loc[7, "cross_class"]


def test_compare_protocols_ap(scene):
    pairs, view = scene
    depth = 5.0
    cmp = compare_protocols(pairs, view, gt_image=GT_IMAGE, gt_label=GT_LABEL, gt_ignore=GT_IGNORE,
                            gt_range_value=np.full(len(GT_IMAGE), depth), pred_image=PRED_IMAGE,
                            pred_range_value=np.full(len(PRED_IMAGE), depth))
    table = cmp.to_frame().set_index("class")
    # truck: the FP at .97 outranks the TP at .95 -> precision 1/2 at full recall; the oracle removes the FP
    assert table.loc["truck", "ap_dataset_level"] == pytest.approx(50.0)
    assert table.loc["truck", "ap_target_aware"] == pytest.approx(100.0)
    assert table.loc["truck", "ap_target_aware"] >= table.loc["truck", "ap_dataset_level"]
    assert table.loc["truck", "delta_abs"] == pytest.approx(50.0)
    assert table.loc["truck", "delta_rel"] == pytest.approx(1.0)
    for cls in ("car", "van"):
        assert table.loc[cls, "ap_dataset_level"] == pytest.approx(100.0)
        assert table.loc[cls, "ap_target_aware"] == pytest.approx(100.0)
    assert np.isnan(table.loc["sofa", "ap_dataset_level"]) and np.isnan(table.loc["sofa", "delta_rel"])
    assert table["n_gt"].tolist() == [2, 1, 1, 0]
    assert table["n_removed"].tolist() == [0, 1, 1, 1]
    assert table["n_removed_cross_class"].tolist() == [0, 0, 1, 0]
    assert cmp.map_dataset_level == pytest.approx(250 / 3)
    assert cmp.map_target_aware == pytest.approx(100.0)
    assert cmp.ratio == pytest.approx(1.2)
    s = cmp.summary()
    assert s["n_removed"] == 3 and s["n_removed_cross_class"] == 1
    assert cmp.to_dict()["per_class"][2]["class"] == "truck"


def test_compare_protocols_only_images_with_gt(scene):
    pairs, view = scene
    kw = dict(gt_image=GT_IMAGE, gt_label=GT_LABEL, gt_ignore=GT_IGNORE,
              gt_range_value=np.full(len(GT_IMAGE), 5.0), pred_image=PRED_IMAGE,
              pred_range_value=np.full(len(PRED_IMAGE), 5.0))
    cmp = compare_protocols(pairs, view, only_images_with_gt=True, **kw)
    # img4's van is dropped from both protocols, so it is not in the oracle's removed list
    assert cmp.removed["pred_row"].tolist() == [2, 5]
    assert cmp.settings["only_images_with_gt"] is True
