"""End to end over real geometry: BoxSets -> cached pairs -> label views -> AP / recall, against the literal reference
fed with dense per-image IoUs (so the sparse pairs must not lose anything), and label-view re-scoring."""

from __future__ import annotations

import numpy as np
import pytest

from ov3d_core.eval.ap import APParams, evaluate_view
from ov3d_core.eval.labels import LabelView, gt_codes, label_view_from_names
from ov3d_core.eval.pairs import compute_pairs
from ov3d_core.eval.recall import recall_for_view
from ov3d_core.geometry.iou2d import box_iou_2d
from ov3d_core.geometry.iou3d import box_iou_3d
from tests.eval.factories import random_scene
from tests.eval.reference_omni3d import reference_ap

VOCAB = ("car", "chair", "table")  # "lamp" boxes exist but are out of vocabulary


@pytest.fixture(scope="module")
def scene():
    gt, pred = random_scene(np.random.default_rng(11), n_images=8)
    return gt, pred, compute_pairs(gt, pred)


def dense_tables(gt, pred):
    iou3, iou2 = {}, {}
    for img in np.unique(gt.image_id):
        gi = np.flatnonzero(gt.image_id == img)
        pi = np.flatnonzero(pred.image_id == img)
        d3 = box_iou_3d(gt.corners[gi], pred.corners[pi])
        d2 = box_iou_2d(gt.box2d[gi], pred.box2d[pi])
        for a in range(len(gi)):
            for b in range(len(pi)):
                iou3[gi[a], pi[b]] = d3[a, b]
                iou2[gi[a], pi[b]] = d2[a, b]
    return iou3, iou2


@pytest.mark.parametrize("prox", [False, True])
def test_view_matches_reference_on_dense_iou(scene, prox):
    gt, pred, pairs = scene
    view = label_view_from_names(pred.category, pred.score, VOCAB)
    params = APParams(proximity=prox)
    res = evaluate_view(gt, pred, pairs, view, params)
    g_codes = gt_codes(gt.category, VOCAB)
    gts = [{"row": i, "image_id": int(gt.image_id[i]), "category_id": int(g_codes[i]), "ignore": bool(gt.ignore[i]),
            "range_value": float(gt.depth[i])} for i in range(len(gt))]
    dts = [{"row": i, "image_id": int(pred.image_id[i]), "category_id": int(view.label[i]),
            "score": float(pred.score[i]), "range_value": float(pred.depth[i])} for i in range(len(pred))]
    iou3, iou2 = dense_tables(gt, pred)
    p_ref, r_ref, _ = reference_ap(gts, dts, iou3, iou2, n_categories=len(VOCAB), params=params)
    np.testing.assert_array_equal(np.where(np.isnan(res.precision), -1, res.precision), p_ref)
    np.testing.assert_array_equal(np.where(np.isnan(res.recall), -1, res.recall), r_ref)
    assert res.vocabulary == VOCAB
    assert 0 < res.summary()["AP3D"] < 100  # a non-trivial scene


def test_relabel_is_a_new_view_and_rescoring_matches_fresh(scene):
    gt, pred, pairs = scene
    view = label_view_from_names(pred.category, pred.score, VOCAB)
    rng = np.random.default_rng(0)
    new_label = view.label.copy()
    flip = rng.random(len(new_label)) < 0.3
    new_label[flip] = rng.integers(-1, len(VOCAB), flip.sum())
    v2 = view.relabel(new_label)
    assert view.label is not v2.label and not np.array_equal(view.label, v2.label)
    a = evaluate_view(gt, pred, pairs, v2)
    # the same thing written as names
    names = np.asarray(VOCAB + ("out-of-vocab",), dtype=object)[np.where(new_label >= 0, new_label, len(VOCAB))]
    b = evaluate_view(gt, pred, pairs, label_view_from_names(names, pred.score, VOCAB))
    np.testing.assert_array_equal(a.precision, b.precision)
    # a filter (keep) equals dropping the rows' labels
    keep = pred.score > 0.4
    c = evaluate_view(gt, pred, pairs, view.filtered(keep))
    d = evaluate_view(gt, pred, pairs, view.relabel(np.where(keep, view.label, -1)))
    np.testing.assert_array_equal(c.precision, d.precision)


def test_recall_for_view(scene):
    gt, pred, pairs = scene
    view = label_view_from_names(pred.category, pred.score, VOCAB)
    r = recall_for_view(gt, pairs, view)
    assert r.n_gt == int((~gt.ignore).sum())
    ok = r.matched_pred >= 0
    assert np.all(~gt.ignore[ok])
    assert np.all(gt.image_id[ok] == pred.image_id[r.matched_pred[ok]])
    # class-agnostic recall at 0.15 is at least the best per-category recall would allow
    h = recall_for_view(gt, pairs, view, method="hungarian")
    assert 0 < r.recall <= 1 and 0 < h.recall <= 1


def test_label_view_validation_and_codes():
    v = label_view_from_names(np.array(["car", "lamp", "chair"], dtype=object), [0.5, 0.4, 0.3], VOCAB,
                              keep=[True, True, False])
    assert v.label.tolist() == [0, -1, 1]
    assert v.codes.tolist() == [0, -1, -1]
    assert v.evaluated.tolist() == [True, False, False]
    with pytest.raises(ValueError):
        LabelView(np.array([3]), np.array([0.5]), np.array([True]), VOCAB)  # code out of range
    with pytest.raises(ValueError):
        LabelView(np.array([0]), np.array([np.nan]), np.array([True]), VOCAB)
    with pytest.raises(ValueError):
        label_view_from_names(["car"], [0.5], ("car", "car"))
    assert gt_codes(np.array(["table", "x"], dtype=object), VOCAB).tolist() == [2, -1]
    with pytest.raises(ValueError):
        v.label[0] = 2  # read-only


def test_matches_for_tp_fp_colouring(scene):
    gt, pred, pairs = scene
    view = label_view_from_names(pred.category, pred.score, VOCAB)
    res = evaluate_view(gt, pred, pairs, view, return_matches=True)
    m = res.matches
    tp = m.dt_tp(0.25)
    assert tp.any() and m.dt_fp(0.25).any()
    # a TP's GT has its category and image, and the GT points back at it
    t = int(np.flatnonzero(np.isclose(res.params.iou_thresholds, 0.25))[0])
    g = m.dt_match[t, tp]
    assert np.all(gt.category[g] == pred.category[tp])
    assert np.all(m.gt_match[t, g] == np.flatnonzero(tp))
    # the number of TPs at t equals final recall x npig summed over categories
    n_tp = int(tp.sum())
    recall_tp = np.nansum(res.recall[t, :, 0] * res.n_gt[:, 0])
    assert n_tp == pytest.approx(recall_tp)
