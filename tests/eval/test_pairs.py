"""Sparse pairs (against dense per-image IoU) and the on-disk PairCache (hit, invalidation, corruption)."""

from __future__ import annotations

import numpy as np
import pytest

from ov3d_core.eval import pairs as pairs_mod
from ov3d_core.eval.pairs import PairCache, Pairs, compute_pairs, geometry_key
from ov3d_core.geometry.iou2d import box_iou_2d
from ov3d_core.geometry.iou3d import box_iou_3d
from tests.eval.factories import make_boxes, random_scene


@pytest.fixture(scope="module")
def scene():
    return random_scene(np.random.default_rng(0), n_images=6)


@pytest.fixture(scope="module")
def scene_pairs(scene):
    return compute_pairs(*scene)


def test_pairs_cover_every_overlap_and_match_dense_iou(scene, scene_pairs):
    gt, pred = scene
    p = scene_pairs
    p.check()  # sorted by (gt, pred), indices and values in range
    assert p.n_gt == len(gt) and p.n_pred == len(pred)
    listed = set(zip(p.gt.tolist(), p.pred.tolist()))
    for img in np.unique(gt.image_id):
        gi = np.flatnonzero(gt.image_id == img)
        pi = np.flatnonzero(pred.image_id == img)
        d3 = box_iou_3d(gt.corners[gi], pred.corners[pi])
        d2 = box_iou_2d(gt.box2d[gi], pred.box2d[pi])
        for a, b in zip(*np.nonzero((d3 > 0) | (d2 > 0))):
            assert (gi[a], pi[b]) in listed  # IoU of an unlisted pair is 0
        sel = np.isin(p.gt, gi)
        ga = np.searchsorted(gi, p.gt[sel])
        pb = np.searchsorted(pi, p.pred[sel])
        np.testing.assert_allclose(p.iou3d[sel], d3[ga, pb], atol=1e-12)
        np.testing.assert_allclose(p.iou2d[sel], d2[ga, pb], atol=1e-12)
    assert np.all(gt.image_id[p.gt] == pred.image_id[p.pred])
    np.testing.assert_allclose(p.dist, np.linalg.norm(gt.center[p.gt] - pred.center[p.pred], axis=1))
    assert (gt.category[p.gt] != pred.category[p.pred]).any()  # cross-category pairs are kept


def test_chunking_does_not_change_pairs(scene, scene_pairs):
    calls = []
    small = compute_pairs(*scene, chunk_products=50, progress=lambda done, total: calls.append((done, total)))
    for f in ("gt", "pred", "iou3d", "iou2d", "dist"):
        np.testing.assert_array_equal(getattr(small, f), getattr(scene_pairs, f))
    assert len(calls) > 2 and calls[-1][0] == calls[-1][1]


def test_invalid_predicted_box_has_zero_iou():
    gt = make_boxes([1], ["car"], [(0, 0, 10)])
    good = make_boxes([1], ["car"], [(0, 0, 10)])
    bad_corners = good.corners.copy()
    bad_corners[0, 0] += [0.0, 0.3, 0.0]  # a non-planar face: fails Omni3D's coplanarity check
    p = compute_pairs(gt, BoxSetWith(good, corners=bad_corners))
    assert len(p) == 1 and p.iou3d[0] == 0.0 and p.iou2d[0] > 0.99
    assert compute_pairs(gt, good).iou3d[0] == pytest.approx(1.0)


def BoxSetWith(b, **changes):
    return b.with_(**changes)


@pytest.fixture
def counting(monkeypatch):
    calls = []
    real = pairs_mod.compute_pairs

    def fake(gt, pred, **kw):
        calls.append(1)
        return real(gt, pred, **kw)

    monkeypatch.setattr(pairs_mod, "compute_pairs", fake)
    return calls


def test_cache_hit_then_invalidation(tmp_path, scene, counting):
    gt, pred = scene
    cache = PairCache(tmp_path)
    a = cache.get_or_compute(gt, pred, ("SUNRGBD_test", "cubercnn"))
    assert len(counting) == 1 and cache.misses == 1
    files = list(tmp_path.glob("*.npz"))
    assert [f.name for f in files] == [f"{geometry_key(gt, pred)}.npz"]
    assert not list(tmp_path.glob(".tmp-*"))
    # a new cache object (no memory) reads the file: no recompute
    b = PairCache(tmp_path).get_or_compute(gt, pred)
    assert len(counting) == 1
    np.testing.assert_array_equal(a.iou3d, b.iou3d)
    np.testing.assert_array_equal(a.gt, b.gt)
    # the same object answers from memory
    cache.get_or_compute(gt, pred)
    assert len(counting) == 1 and cache.hits == 1
    # scores and labels are not geometry: no recompute
    PairCache(tmp_path).get_or_compute(gt, pred.with_(score=pred.score * 0.5, category=pred.category[::-1].copy()))
    assert len(counting) == 1
    # changed corners -> new key -> recompute
    moved = pred.corners.copy()
    moved[0] += 0.05
    PairCache(tmp_path).get_or_compute(gt, pred.with_(corners=moved))
    assert len(counting) == 2
    assert len(list(tmp_path.glob("*.npz"))) == 2


@pytest.mark.parametrize("damage", ["garbage", "truncate", "wrong_meta", "unsorted"])
def test_corrupt_cache_file_is_recomputed(tmp_path, scene, counting, damage):
    gt, pred = scene
    good = PairCache(tmp_path).get_or_compute(gt, pred)
    path = PairCache(tmp_path).path_for(gt, pred)
    if damage == "garbage":
        path.write_bytes(b"not a zip file at all")
    elif damage == "truncate":
        path.write_bytes(path.read_bytes()[:200])
    elif damage == "wrong_meta":
        PairCache(tmp_path)._store(path, Pairs.empty(3, 4), ())
    else:
        rev = Pairs(good.gt[::-1], good.pred[::-1], good.iou3d, good.iou2d, good.dist, good.n_gt, good.n_pred)
        PairCache(tmp_path)._store(path, rev, ())
    again = PairCache(tmp_path).get_or_compute(gt, pred)
    assert len(counting) == 2
    np.testing.assert_array_equal(again.pred, good.pred)
    # and the file was repaired
    PairCache(tmp_path).get_or_compute(gt, pred)
    assert len(counting) == 2


def test_empty_sides():
    gt = make_boxes([1], ["car"], [(0, 0, 10)])
    p = compute_pairs(gt, gt[np.zeros(1, bool)])
    assert len(p) == 0 and p.n_gt == 1 and p.n_pred == 0
