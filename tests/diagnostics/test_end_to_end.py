"""The diagnostics on real geometry (``compute_pairs``), checked against dense brute force per image."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment

from ov3d_core.eval.ap import APParams, evaluate_view
from ov3d_core.diagnostics.confusion import confusion_matrix
from ov3d_core.eval.labels import gt_codes, label_view_from_names
from ov3d_core.eval.pairs import compute_pairs
from ov3d_core.diagnostics.protocol_comparison import compare_protocols_boxes
from ov3d_core.eval.protocols import target_aware_view
from tests.diagnostics.scenes import random_scene

VOCAB = ("car", "van", "truck", "chair", "table")


@pytest.fixture(scope="module")
def scene():
    gt, pred = random_scene(seed=4)
    pairs = compute_pairs(gt, pred)
    view = label_view_from_names(pred.category, pred.score, VOCAB)
    return gt, pred, pairs, view


def _dense_iou(pairs, n_gt, n_pred):
    m = np.zeros((n_gt, n_pred))
    m[pairs.gt, pairs.pred] = pairs.iou3d
    return m


def test_protocol_comparison_matches_direct_evaluation(scene):
    gt, pred, pairs, view = scene
    cmp = compare_protocols_boxes(gt, pred, pairs, view)
    gl = gt_codes(gt.category, VOCAB)
    oracle = target_aware_view(view, pred.image_id, gt.image_id, gl, gt.ignore)
    direct = evaluate_view(gt, pred, pairs, oracle, APParams.omni3d_3d()).per_category_ap("all")
    np.testing.assert_allclose(cmp.ap_target_aware, direct, equal_nan=True)
    base = evaluate_view(gt, pred, pairs, view, APParams.omni3d_3d()).per_category_ap("all")
    np.testing.assert_allclose(cmp.ap_dataset_level, base, equal_nan=True)
    # removed list = evaluated before and not after; max other-class IoU by dense brute force
    removed = cmp.removed
    assert sorted(removed["pred_row"]) == sorted(np.flatnonzero(view.evaluated & ~oracle.evaluated))
    assert len(removed) > 0
    dense = _dense_iou(pairs, len(gt), len(pred))
    for row in removed.itertuples():
        other = (gl >= 0) & (gl != view.label[row.pred_row]) & (gt.image_id == pred.image_id[row.pred_row])
        best = dense[other, row.pred_row].max(initial=0.0)
        assert row.max_iou_other == pytest.approx(best)
        assert row.cross_class == (best >= 0.15)


def test_confusion_matches_dense_hungarian_per_image(scene):
    gt, pred, pairs, view = scene
    gl = gt_codes(gt.category, VOCAB)
    cm = confusion_matrix(pairs, view, gl, gt.ignore, gt.image_id, iou_threshold=0.3)
    dense = _dense_iou(pairs, len(gt), len(pred))
    total, n = 0.0, 0
    for img in np.unique(gt.image_id):
        g = np.flatnonzero((gt.image_id == img) & (gl >= 0) & ~gt.ignore)
        p = np.flatnonzero((pred.image_id == img) & view.evaluated)
        w = dense[np.ix_(g, p)]
        w = np.where(w >= 0.3, w, 0.0)
        r, c = linear_sum_assignment(w, maximize=True)
        ok = w[r, c] > 0
        total += w[r, c][ok].sum()
        n += int(ok.sum())
    assert cm.n_matched == n and n > 0
    assert cm.match_iou.sum() == pytest.approx(total)
    assert cm.counts.sum() + cm.missed.sum() == int(((gl >= 0) & ~gt.ignore).sum())
