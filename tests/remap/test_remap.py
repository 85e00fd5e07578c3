import numpy as np
import pytest

from ov3d_core.eval.labels import LabelView
from ov3d_core.remap.remap import remap, remap_embeddings, similarities, to_label_view


def unit(*rows):
    a = np.asarray(rows, dtype=np.float32)
    return a / np.linalg.norm(a, axis=1, keepdims=True)


TEXT = unit([1, 0, 0], [0, 1, 0], [0, 0, 1])  # classes: 0 car, 1 truck, 2 sofa
CROPS = unit([0.9, 0.1, 0], [0.2, 1.0, 0.1], [0.1, 0.1, 0.05], [0, 0, 1], [1, 1, 0])
DET = np.array([0.9, 0.8, 0.7, 0.6, 0.5])


def test_similarities_are_cosines():
    sim = similarities(CROPS, TEXT)
    assert sim.shape == (5, 3) and sim.dtype == np.float32
    np.testing.assert_allclose(sim, CROPS @ TEXT.T, rtol=1e-6)
    with pytest.raises(ValueError):
        similarities(CROPS, TEXT[:, :2])


def test_top1_threshold_discard_margin_and_ties():
    r = remap(similarities(CROPS, TEXT), DET, theta=0.8)
    assert r.label.dtype == np.int64 and r.label.tolist() == [0, 1, 0, 2, 0]  # tie (row 4) -> lowest index
    sim = CROPS @ TEXT.T
    np.testing.assert_allclose(r.top1, sim.max(axis=1), rtol=1e-6)
    np.testing.assert_allclose(r.margin, np.sort(sim, axis=1)[:, -1] - np.sort(sim, axis=1)[:, -2], atol=1e-6)
    assert r.margin[4] == pytest.approx(0.0, abs=1e-6)
    # row 2 points at car but weakly (cos ~0.67), row 4 is a car/truck tie at 0.707: discarded at theta 0.8
    assert r.keep.tolist() == [True, True, False, True, False]
    assert not r.calibrated and r.score_mode == "detector"
    np.testing.assert_array_equal(r.score, DET)
    assert r.full.shape == (5, 3)
    assert r.rank_of(np.array([0, 0, 2, 2, -1])).tolist() == [1, 2, 3, 1, 0]


def test_score_modes_and_calibrated_probability():
    sim = similarities(CROPS, TEXT)
    top = sim.max(axis=1).astype(np.float64)
    np.testing.assert_allclose(remap(sim, DET, theta=0, score_mode="similarity").score, top, rtol=1e-6)
    np.testing.assert_allclose(remap(sim, DET, theta=0, score_mode="product").score, DET * top, rtol=1e-6)
    neg = remap(-sim, DET, theta=-1, score_mode="product")
    assert (neg.score >= 0).all()  # a negative cosine counts as 0
    prob = lambda c: 1 / (1 + np.exp(-(10 * np.asarray(c, np.float64) - 5)))  # noqa: E731
    r = remap(sim, DET, theta=0.5, encoder_probability_fn=prob, score_mode="product")
    assert r.calibrated
    np.testing.assert_allclose(r.top1, prob(top), rtol=1e-5)
    np.testing.assert_allclose(r.full, prob(sim), rtol=1e-5)
    assert r.keep.tolist() == (prob(top) >= 0.5).tolist()
    np.testing.assert_allclose(r.score, DET * prob(top), rtol=1e-5)
    # an uncalibrated encoder's probability() returns None -> cosines
    assert not remap(sim, DET, theta=0.5, encoder_probability_fn=lambda c: None).calibrated
    with pytest.raises(ValueError):
        remap(sim, DET, theta=0.5, score_mode="max")


def test_invalid_crops_and_edge_shapes():
    sim = similarities(CROPS, TEXT)
    valid = np.array([True, False, True, True, True])
    r = remap(sim, DET, theta=0.0, valid=valid, score_mode="product")
    assert r.label[1] == -1 and not r.keep[1] and np.isnan(r.top1[1]) and r.score[1] == 0
    assert np.isnan(r.full[1]).all()
    one = remap(sim[:, :1], DET, theta=0.5)
    assert (one.label == 0).all() and np.isnan(one.margin).all()
    none = remap(np.zeros((3, 0), np.float32), DET[:3], theta=0.5)
    assert (none.label == -1).all() and not none.keep.any()
    empty = remap(np.zeros((0, 3), np.float32), np.zeros(0), theta=0.5)
    assert len(empty) == 0


def test_remap_embeddings_uses_calibration_only_when_the_encoder_has_it():
    class Enc:
        has_calibrated_bias = True

        @staticmethod
        def probability(c):
            return np.full(np.shape(c), 0.75)

    r = remap_embeddings(CROPS, TEXT, DET, theta=0.7, encoder=Enc())
    assert r.calibrated and r.keep.all()
    Enc.has_calibrated_bias = False
    assert not remap_embeddings(CROPS, TEXT, DET, theta=0.7, encoder=Enc()).calibrated


def test_label_view_over_the_vocabulary():
    r = remap(similarities(CROPS, TEXT), DET, theta=0.8, valid=np.array([1, 1, 1, 1, 0], bool))
    view = to_label_view(r, ("car", "truck", "sofa"))
    assert isinstance(view, LabelView)
    assert view.label.tolist() == [0, 1, 0, 2, -1] and view.keep.tolist() == [True, True, False, True, False]
    np.testing.assert_array_equal(view.score, DET)
    # class list in another order than the vocabulary, with a class the vocabulary lacks
    view2 = to_label_view(r, ("sofa", "car", "bus"), class_names=("car", "truck", "sofa"))
    assert view2.label.tolist() == [1, -1, 1, 0, -1]
    assert view2.keep.tolist() == [True, False, False, True, False]
