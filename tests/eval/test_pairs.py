"""Sparse pairs (against dense per-image IoU) and the on-disk PairCache (hit, invalidation, corruption)."""

from __future__ import annotations

import io
import pickle
import shutil
from pathlib import Path

import numpy as np
import pytest

from ov3d_core.eval import pairs as pairs_mod
from ov3d_core.io import npzstore
from ov3d_core.eval.pairs import PairCache, Pairs, compute_pairs, geometry_key
from ov3d_core.geometry.iou2d import box_iou_2d
from ov3d_core.geometry.iou3d import box_iou_3d
from tests.bitflips import flipped_copies
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


def _rewrite(path, **changes):
    """Rewrite a pair cache file with some columns or metadata replaced, its digests recomputed (a consistent file
    that lies), through the store's own writer."""
    arrays, meta = npzstore.read(path)
    arrays = {k: np.array(v) for k, v in arrays.items()}
    for k, v in changes.items():
        if k in arrays:
            arrays[k] = np.asarray(v)
        else:
            meta[k] = v
    npzstore.write(path, arrays, meta)


@pytest.mark.parametrize("damage", ["garbage", "truncate", "empty_with_meta", "unsorted", "half_pairs",
                                    "half_pairs_consistent", "other_key", "pickle", "object_array"])
def test_corrupt_cache_file_is_recomputed(tmp_path, scene, counting, damage):
    gt, pred = scene
    good = PairCache(tmp_path).get_or_compute(gt, pred)
    path = PairCache(tmp_path).path_for(gt, pred)
    half = len(good) // 2
    marker = tmp_path / "pwned"
    if damage == "garbage":
        path.write_bytes(b"not a zip file at all")
    elif damage == "truncate":
        path.write_bytes(path.read_bytes()[:200])
    elif damage == "empty_with_meta":  # the right key and sizes, an empty table, digests redone
        _rewrite(path, **{f: getattr(Pairs.empty(), f) for f in ("gt", "pred", "iou3d", "iou2d", "dist")})
    elif damage == "unsorted":
        _rewrite(path, gt=good.gt[::-1], pred=good.pred[::-1])
    elif damage == "half_pairs":  # the right metadata, half the rows, digests not redone (a damaged copy)
        import zipfile
        raw = {}
        with zipfile.ZipFile(path) as z:
            for name in z.namelist():
                raw[name] = z.read(name)
        with zipfile.ZipFile(path, "w") as z:
            for name, data in raw.items():
                if name != "__meta__.npy":
                    arr = np.load(io.BytesIO(data))[:half]
                    buf = io.BytesIO()
                    np.save(buf, arr)
                    data = buf.getvalue()
                z.writestr(name, data)
    elif damage == "half_pairs_consistent":  # half the rows, digests redone, but the recorded count kept
        _rewrite(path, **{f: getattr(good, f)[:half] for f in ("gt", "pred", "iou3d", "iou2d", "dist")})
    elif damage == "other_key":  # a valid file of other boxes copied to this name
        other = pred.with_(corners=pred.corners + 0.01)
        PairCache(tmp_path / "o").get_or_compute(gt, other)
        shutil.copy(PairCache(tmp_path / "o").path_for(gt, other), path)
    elif damage == "pickle":
        class Boom:
            def __reduce__(self):
                return (open, (str(marker), "w"))
        path.write_bytes(pickle.dumps(Boom()))
    else:  # an npz whose member is an object array (needs pickle)
        np.savez(path, gt=np.array([Path("x")], dtype=object))
    again = PairCache(tmp_path).get_or_compute(gt, pred)
    assert len(counting) == (3 if damage == "other_key" else 2)
    assert not marker.exists()
    for f in ("gt", "pred", "iou3d", "iou2d", "dist"):
        np.testing.assert_array_equal(getattr(again, f), getattr(good, f))
    # and the file was repaired
    PairCache(tmp_path).get_or_compute(gt, pred)
    assert len(counting) == (3 if damage == "other_key" else 2)


def test_cache_file_is_memory_mapped_and_read_only(tmp_path, scene, scene_pairs):
    gt, pred = scene
    PairCache(tmp_path).get_or_compute(gt, pred)
    mapped = PairCache(tmp_path).get_or_compute(gt, pred)
    read = PairCache(tmp_path, mmap=False).get_or_compute(gt, pred)
    for f in ("gt", "pred", "iou3d", "iou2d", "dist"):
        col = getattr(mapped, f)
        base = col
        while base is not None and not isinstance(base, np.memmap):  # a view of a view of the mapped file
            base = base.base
        assert isinstance(base, np.memmap), f

        assert not col.flags.writeable
        np.testing.assert_array_equal(col, getattr(scene_pairs, f))
        np.testing.assert_array_equal(getattr(read, f), getattr(scene_pairs, f))


def test_bit_flips_never_give_other_pairs(tmp_path, scene, scene_pairs):
    gt, pred = scene
    cache = PairCache(tmp_path)
    cache.get_or_compute(gt, pred)
    path = cache.path_for(gt, pred)
    refused = tried = 0
    for pos, flipped in flipped_copies(path.read_bytes(), 150, seed=1):
        tried += 1
        path.write_bytes(flipped)
        c = PairCache(tmp_path)
        got = c.get_or_compute(gt, pred)
        refused += c.misses
        for f in ("gt", "pred", "iou3d", "iou2d", "dist"):
            assert np.array_equal(getattr(got, f), getattr(scene_pairs, f)), (pos, f)
    assert refused >= 0.8 * tried  # almost every flip is caught (the rest hit bytes zip/npy ignore)


def test_empty_sides():
    gt = make_boxes([1], ["car"], [(0, 0, 10)])
    p = compute_pairs(gt, gt[np.zeros(1, bool)])
    assert len(p) == 0 and p.n_gt == 1 and p.n_pred == 0


def _pile(n_gt, n_pred, seed=0):
    """One image whose boxes are piled on each other (nearly every GT x prediction pair overlaps)."""
    rng = np.random.default_rng(seed)
    centres = lambda n: [tuple(c) for c in rng.uniform(-0.3, 0.3, (n, 3)) + [0, 0, 8]]  # noqa: E731
    gt = make_boxes([7] * n_gt, ["car"] * n_gt, centres(n_gt))
    pred = make_boxes([7] * n_pred, ["car"] * n_pred, centres(n_pred))
    return gt, pred


def test_a_dense_image_is_split_into_bounded_blocks_with_moving_progress():
    gt, pred = _pile(37, 53)
    whole = compute_pairs(gt, pred)
    assert len(whole) == 37 * 53  # every pair overlaps
    calls = []
    split = compute_pairs(gt, pred, chunk_products=200, chunk_boxes=30, chunk_pairs=64,
                          progress=lambda done, total: calls.append((done, total)))
    for f in ("gt", "pred", "iou3d", "iou2d", "dist"):
        np.testing.assert_array_equal(getattr(split, f), getattr(whole, f))
    done = [d for d, _ in calls]
    assert len(calls) >= 10 and all(t == 1 for _, t in calls)
    assert done == sorted(done) and 0 < done[0] < 1 and done[-1] == 1  # the bar moves inside the one image


@pytest.mark.parametrize("budget, max_boxes", [(1, 2), (7, 1000), (50, 9), (10_000, 40), (10_000, 10_000)])
def test_work_units_cover_every_row_once_and_respect_the_budget(budget, max_boxes):
    g_cnt = np.array([0, 3, 40, 1, 0, 12, 2])
    p_cnt = np.array([5, 0, 90, 2, 1, 300, 2])
    cover = np.zeros((g_cnt.sum(), p_cnt.sum()), int)
    g_ptr = np.r_[0, np.cumsum(g_cnt)]
    p_ptr = np.r_[0, np.cumsum(p_cnt)]
    last = 0
    for g0, g1, p0, p1, done in pairs_mod._tasks(g_cnt, p_cnt, budget, max_boxes):
        assert done >= last
        last = done
        products = 0
        n_boxes = 0
        for i in range(len(g_cnt)):  # rows of the same image only
            gs, ge = max(g0, g_ptr[i]), min(g1, g_ptr[i + 1])
            ps, pe = max(p0, p_ptr[i]), min(p1, p_ptr[i + 1])
            if gs < ge and ps < pe:
                cover[gs:ge, ps:pe] += 1
                products += (ge - gs) * (pe - ps)
                n_boxes += (ge - gs) + (pe - ps)
        assert products <= budget  # whatever one image holds
        assert n_boxes <= max_boxes
    assert last == len(g_cnt)
    same_image = np.zeros_like(cover)
    for i in range(len(g_cnt)):
        same_image[g_ptr[i]:g_ptr[i + 1], p_ptr[i]:p_ptr[i + 1]] = 1
    np.testing.assert_array_equal(cover, same_image)  # every same-image (gt, pred) product exactly once


def test_rows_not_sorted_by_image_give_the_same_pairs(scene, scene_pairs):
    gt, pred = scene
    perm = np.random.default_rng(5).permutation(len(gt))  # GT rows in no image order
    shuffled = compute_pairs(gt[perm], pred, chunk_products=60)
    shuffled.check()  # sorted by (gt, pred) although the work units came out of order
    back = perm[shuffled.gt]
    got = sorted(zip(back.tolist(), shuffled.pred.tolist(), shuffled.iou3d.tolist()))
    want = sorted(zip(scene_pairs.gt.tolist(), scene_pairs.pred.tolist(), scene_pairs.iou3d.tolist()))
    assert got == want
