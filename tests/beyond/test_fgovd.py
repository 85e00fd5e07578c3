"""Class-agnostic NMS, label ranks, median rank and the vocabulary-size curve."""

import numpy as np
import pytest

from ov3d_core.eval.ap import map3d
from ov3d_core.diagnostics.fgovd import (
    associate_true_class,
    class_agnostic_nms,
    gt_label_ranks,
    hardest_negatives,
    label_ranks,
    median_rank,
    restricted_argmax,
    vocabulary_size_curve,
)
from ov3d_core.diagnostics.semantic import cosine_similarity_matrix
from tests.beyond.conftest import inputs_from_pairs, make_boxset


def _nms_scene():
    # 0: wrong class, high score; 1: correct class, same place, lower score; 2: elsewhere; 3: same place, other image
    centers = [[0, 0, 10.0], [0.05, 0, 10.0], [5, 0, 10.0], [0, 0, 10.0]]
    return make_boxset([0, 0, 0, 1], ["sofa", "chair", "chair", "chair"], centers, [[1, 1, 1.0]] * 4,
                       score=[0.9, 0.8, 0.7, 0.6])


@pytest.mark.parametrize("mode", ["3d", "2d"])
def test_wrong_class_higher_score_suppresses_correct(mode):
    p = _nms_scene()
    keep = class_agnostic_nms(p.image_id, p.score, corners=p.corners, box2d=p.box2d, mode=mode)
    assert list(keep) == [True, False, True, True]
    # swapping the scores flips who survives
    keep = class_agnostic_nms(p.image_id, [0.8, 0.9, 0.7, 0.6], corners=p.corners, box2d=p.box2d, mode=mode)
    assert list(keep) == [False, True, True, True]
    # a box that does not take part is reported False and suppresses nothing
    keep = class_agnostic_nms(p.image_id, p.score, corners=p.corners, box2d=p.box2d, mode=mode,
                              keep=[False, True, True, True])
    assert list(keep) == [False, True, True, True]


def test_nms_suppressed_box_does_not_suppress_and_ap_effect():
    # chain: A overlaps B, B overlaps C, A does not overlap C -> keep A and C
    p = make_boxset([0, 0, 0], ["chair"] * 3, [[0, 0, 10.0], [0.3, 0, 10.0], [0.6, 0, 10.0]], [[1, 1, 1.0]] * 3,
                    score=[0.9, 0.8, 0.7])
    keep = class_agnostic_nms(p.image_id, p.score, corners=p.corners, iou_threshold=0.4)
    assert list(keep) == [True, False, True]
    # AP: one chair GT, wrong-class sofa (0.9) on it and a correct chair (0.8) -> NMS removes the TP
    inp = inputs_from_pairs([0], [0], [0, 0], [1, 0], [0.9, 0.8], [(0, 0, 0.9), (0, 1, 0.9)])
    assert map3d(inp, n_categories=2) == pytest.approx(100.0)
    lab = np.where([True, False], inp.pred_label, -1)
    from dataclasses import replace
    assert map3d(replace(inp, pred_label=lab), n_categories=2) == pytest.approx(0.0)


def test_label_ranks_with_ties_and_invalid_rows():
    s = np.array([[0.1, 0.5, 0.5, 0.2], [0.9, 0.1, 0.1, 0.1], [np.nan] * 4, [0.3, 0.3, 0.3, 0.3]])
    assert list(label_ranks(s, [1, 0, 0, 2])) == [2, 1, 4, 4]
    assert list(label_ranks(s[:1], [3])) == [3]
    with pytest.raises(ValueError):
        label_ranks(s, [0, 0, 0, 4])


def test_median_rank_conventions():
    m = median_rank([4, 1, 3, 2])
    assert m["median_fgovd"] == 4 and m["median"] == 2.5 and m["mean"] == 2.5
    m = median_rank([1, 2, 3, 7, 9])
    assert m["median_fgovd"] == 7 and m["median"] == 3
    assert median_rank([5])["median_fgovd"] == 5
    assert np.isnan(median_rank([])["median"])


def test_gt_label_ranks_uses_best_overlapping_prediction():
    # GT0 (class 1): two overlapping preds, the higher-scoring one (row 1) is used; GT1 unmatched -> V
    inp = inputs_from_pairs([0, 0], [1, 2], [0, 0, 0], [0, 0, 0], [0.3, 0.9, 0.5],
                            [(0, 0, 0.9), (0, 1, 0.6), (0, 2, 0.4), (1, 2, 0.3)])
    S = np.array([[0.1, 0.9, 0.0], [0.5, 0.4, 0.45], [0, 0, 1.0]])
    df = gt_label_ranks(inp, S)
    assert list(df["pred"].astype("float").fillna(-1)) == [1, -1]
    assert list(df["rank"]) == [3, 3]


def test_vocabulary_size_curve_hard_negatives():
    # class 0 (chair) is close to 1 (sofa) and far from 2 (toilet)
    emb = np.array([[1.0, 0.1, 0], [0.9, 0.3, 0], [0, 0, 1.0]])
    sim = cosine_similarity_matrix(emb)
    neg = hardest_negatives(sim)
    assert list(neg[0]) == [1, 2] and list(neg[2])[0] in (0, 1)
    inp = inputs_from_pairs([0], [0], [0], [1], [0.9], [(0, 0, 0.9)])
    S = np.array([[0.5, 0.6, 0.1]])
    assert list(associate_true_class(inp)) == [0]
    lab, sc = restricted_argmax(S, [0], neg, 0)
    assert lab[0] == 0 and sc[0] == 0.5
    curve = vocabulary_size_curve(inp, S, sim, n_categories=3, ks=[0, 1, 2])
    assert list(curve["AP3D"].round(6)) == [100.0, 0.0, 0.0]
    assert list(curve["median_rank"]) == [1.0, 2.0, 2.0]
    assert list(curve["accuracy"]) == [1.0, 0.0, 0.0]
    # toilet as the only negative would not confuse it: with a similarity that ranks toilet first, k=1 stays right
    sim2 = sim.copy()
    sim2[0, 2], sim2[0, 1] = 0.99, 0.0
    curve = vocabulary_size_curve(inp, S, sim2, n_categories=3, ks=[1])
    assert curve["AP3D"].iloc[0] == pytest.approx(100.0)
