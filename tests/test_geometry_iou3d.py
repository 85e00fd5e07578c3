"""Exact 3D IoU, Omni3D validity rule, volumes and the broad phase."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from ov3d_core.geometry.boxes import corners_from_pose, rotation_y
from ov3d_core.geometry.iou3d import (
    bounding_spheres,
    box_iou_3d,
    box_volume,
    candidate_pairs,
    paired_iou_3d,
    valid_boxes,
)
from ov3d_core.geometry.validity import coplanar_residuals, triangle_areas
from tests import iou_oracle

I3 = np.eye(3)[None]


def box(center=(0, 0, 0), dims=(1, 1, 1), R=None):
    """One box (1, 8, 3); dims are [w, h, l]."""
    return corners_from_pose(np.asarray(center, float)[None], np.asarray(dims, float)[None],
                             I3 if R is None else np.asarray(R, float).reshape(1, 3, 3))


def iou1(a, b, **kw) -> float:
    out = box_iou_3d(a, b, **kw)
    assert out.shape == (1, 1)
    return float(out[0, 0])


def shifted_iou(dims, t_local) -> float:
    """IoU of a box with its own copy translated by t_local (in the box frame): the overlap is a box."""
    w, h, l = dims
    inter = np.prod(np.clip(np.array([l, h, w]) - np.abs(t_local), 0, None))
    vol = w * h * l
    return inter / (2 * vol - inter)


# ---------------------------------------------------------------------------------------------------------------------
# against the independent oracle


def _random_pairs(n, seed, *, yaw_only=False, same_floor=False):
    rng = np.random.default_rng(seed)
    if yaw_only:
        R1 = rotation_y(rng.uniform(-np.pi, np.pi, n))
        R2 = rotation_y(rng.uniform(-np.pi, np.pi, n))
    else:
        R1 = Rotation.random(n, random_state=seed).as_matrix()
        R2 = Rotation.random(n, random_state=seed + 1000).as_matrix()
    d1 = np.exp(rng.uniform(np.log(0.1), np.log(5.0), (n, 1)) + rng.normal(0, 0.3, (n, 3)))  # 0.05 .. 10 m
    d2 = d1 * np.exp(rng.normal(0, 0.3, (n, 3)))
    c1 = rng.normal(0, 3, (n, 3))
    spread = np.exp(rng.uniform(np.log(0.02), np.log(0.8), (n, 1))) * d1.mean(axis=1, keepdims=True)
    c2 = c1 + rng.normal(0, 1, (n, 3)) * spread
    if same_floor:  # equal bottoms and tops: coplanar horizontal faces in every pair
        d2[:, 1] = d1[:, 1]
        c2[:, 1] = c1[:, 1]
    return corners_from_pose(c1, d1, R1), corners_from_pose(c2, d2, R2)


@pytest.mark.parametrize("kind", ["full_rotation", "yaw_only", "yaw_same_floor"])
def test_random_pairs_match_oracle(kind):
    a, b = _random_pairs(120, seed={"full_rotation": 1, "yaw_only": 2, "yaw_same_floor": 3}[kind],
                         yaw_only=kind != "full_rotation", same_floor=kind == "yaw_same_floor")
    idx = np.arange(len(a))
    mine = paired_iou_3d(a, b, idx, idx)
    ref = np.array([iou_oracle.iou(a[k], b[k]) for k in idx])
    assert (ref > 0.05).mean() > 0.5 and (ref == 0).any(), "the test must exercise overlapping and disjoint pairs"
    np.testing.assert_allclose(mine, ref, rtol=0, atol=1e-9)


def test_dense_equals_paired_and_is_symmetric():
    a, b = _random_pairs(15, seed=7)
    a[1:4] = a[0] + [0.2, 0.1, 0.0]  # several boxes around the same place
    b = np.concatenate([b, a[:5]])
    dense = box_iou_3d(a, b)
    assert dense.shape == (15, 20)
    ia, ib = np.meshgrid(np.arange(15), np.arange(20), indexing="ij")
    np.testing.assert_array_equal(paired_iou_3d(a, b, ia.ravel(), ib.ravel()), dense.ravel())
    np.testing.assert_allclose(box_iou_3d(b, a), dense.T, rtol=0, atol=1e-12)
    assert (dense > 0).sum() > 15
    np.testing.assert_allclose(np.diag(dense[:5, 15:]), 1.0, atol=1e-12)


def test_oracle_sanity():
    a = box()
    assert iou_oracle.iou(a[0], a[0]) == pytest.approx(1.0, abs=1e-9)
    assert iou_oracle.iou(a[0], box((0.5, 0, 0))[0]) == pytest.approx(1 / 3, abs=1e-9)
    assert iou_oracle.iou(a[0], box((1.0, 0, 0))[0]) == 0.0


# ---------------------------------------------------------------------------------------------------------------------
# hand-computed cases


def test_identical_boxes():
    R = Rotation.from_euler("xyz", [0.3, -1.1, 2.0]).as_matrix()
    a = box((1, 2, 3), (0.7, 1.3, 2.9), R)
    assert iou1(a, a) == 1.0
    assert iou1(box(), box()) == 1.0


def test_nested_boxes_volume_ratio():
    R = Rotation.from_euler("zyx", [0.4, 0.2, -0.7]).as_matrix()
    outer = box((1, -2, 8), (2, 3, 4), R)
    inner = box((1.1, -2, 8.2), (1, 1, 1), R)
    assert iou1(outer, inner) == pytest.approx(1 / 24, abs=1e-12)
    # differently rotated inner box, small enough to fit anywhere (radius 0.26 < inradius 1)
    inner2 = box((1, -2, 8), (0.3, 0.3, 0.3), Rotation.from_euler("x", 0.9).as_matrix())
    assert iou1(outer, inner2) == pytest.approx(0.027 / 24, abs=1e-12)
    assert iou1(inner2, outer) == pytest.approx(0.027 / 24, abs=1e-12)


def test_touching_and_separated_boxes():
    assert iou1(box(), box((1, 0, 0))) == 0.0
    assert iou1(box(), box((0, 1, 0))) == 0.0
    assert iou1(box(), box((1, 1, 1))) == 0.0  # shared corner only
    assert iou1(box(), box((1.0001, 0.3, 0))) == 0.0
    assert iou1(box(), box((5, 0, 0))) == 0.0
    # rotated box touching its copy translated by its length along its own x axis
    R = Rotation.from_euler("xyz", [0.5, 0.3, -0.2]).as_matrix()
    dims = (0.8, 1.5, 2.5)
    t = R @ np.array([2.5, 0.3, 0.1])
    assert iou1(box((3, 1, 9), dims, R), box(np.array([3, 1, 9]) + t, dims, R)) == 0.0
    # a box standing on top of another (opposite coplanar faces, partial overlap of the faces)
    assert iou1(box((0, 0, 0), (1, 1, 1)), box((0.3, -1.0, 0.2), (1, 1, 1), rotation_y([0.6]))) == 0.0


def test_coplanar_shared_faces():
    # two unit cubes shifted by 0.5 along x share 4 face planes: intersection 1/2, union 3/2
    assert iou1(box(), box((0.5, 0, 0))) == pytest.approx(1 / 3, abs=1e-15)
    # same, rotated, shifted along two local axes
    R = Rotation.from_euler("xyz", [1.0, -0.4, 0.25]).as_matrix()
    dims = (1.0, 2.0, 3.0)  # w, h, l
    t_local = np.array([0.5, 0.25, 0.0])
    got = iou1(box((2, 1, 7), dims, R), box(np.array([2, 1, 7]) + R @ t_local, dims, R))
    assert got == pytest.approx(shifted_iou(dims, t_local), abs=1e-12)
    # yaw-only boxes on a common floor with different yaws: coplanar top and bottom faces
    a = box((0, 1, 10), (1.6, 1.5, 4.0), rotation_y([0.3]))
    b = box((0.4, 1, 10.5), (1.7, 1.5, 3.6), rotation_y([0.9]))
    assert iou1(a, b) == pytest.approx(iou_oracle.iou(a[0], b[0]), abs=1e-12)


def test_thin_boxes():
    dims = (1e-3, 1.0, 1.0)  # 1 mm along the local z axis
    R = Rotation.from_euler("xyz", [0.2, 0.7, -0.3]).as_matrix()
    c = np.array([0.5, 1.0, 6.0])
    a = box(c, dims, R)
    assert iou1(a, a) == 1.0
    t_local = np.array([0.0, 0.0, 0.5e-3])
    assert iou1(a, box(c + R @ t_local, dims, R)) == pytest.approx(1 / 3, abs=1e-10)
    t_local = np.array([0.3, -0.2, 0.25e-3])
    assert iou1(a, box(c + R @ t_local, dims, R)) == pytest.approx(shifted_iou(dims, t_local), abs=1e-10)
    b = box(c + R @ [0.1, 0.05, 2e-4], (2e-3, 0.8, 1.2), Rotation.from_euler("xyz", [0.21, 0.69, -0.3]).as_matrix())
    assert iou1(a, b) == pytest.approx(iou_oracle.iou(a[0], b[0]), abs=1e-9)
    assert iou1(a, b) > 0


def test_large_coordinates():
    c = np.array([1e4, -3e3, 1e4])
    dims = (1.2, 0.9, 2.3)
    R = Rotation.from_euler("xyz", [0.1, 0.8, -0.4]).as_matrix()
    a = box(c, dims, R)
    assert iou1(a, a) == pytest.approx(1.0, abs=1e-9)
    for t_local in ([0.3, 0.0, 0.0], [0.4, -0.2, 0.1], [1e-3, 1e-3, 1e-3]):
        t_local = np.array(t_local)
        got = iou1(a, box(c + R @ t_local, dims, R))
        assert got == pytest.approx(shifted_iou(dims, t_local), abs=1e-9)
    # a yaw-only copy: agrees with the oracle as well
    b = box(c + [0.2, 0.1, -0.3], (1.0, 1.0, 2.0), rotation_y([0.5]))
    assert iou1(a, b) == pytest.approx(iou_oracle.iou(a[0], b[0]), abs=1e-9)


def _aligned_family(n, seed):
    """Pairs sharing a rotation, with dims and offsets on a 1/8 m grid: many exactly coplanar and touching faces, some
    pairs 1e4 m from the origin. Their IoU has a closed form (a product of interval overlaps in the box frame)."""
    rng = np.random.default_rng(seed)
    R = Rotation.random(n, random_state=seed).as_matrix()
    R[: n // 3] = np.eye(3)
    d1 = rng.integers(1, 8, (n, 3)) * 0.25
    d2 = rng.integers(1, 8, (n, 3)) * 0.25
    t_local = rng.integers(-5, 6, (n, 3)) * 0.125  # along local (x, y, z) = (l, h, w)
    base = rng.normal(0, 1, (n, 3)) * np.where(rng.random((n, 1)) < 0.3, 1e4, 10)
    a = corners_from_pose(base, d1, R)
    b_centre = base + np.einsum("nij,nj->ni", R, t_local)
    ha, hb = d1[:, ::-1] / 2, d2[:, ::-1] / 2
    inter = np.prod(np.clip(np.minimum(ha, t_local + hb) - np.maximum(-ha, t_local - hb), 0, None), axis=1)
    want = inter / (d1.prod(1) + d2.prod(1) - inter)
    return a, b_centre, d2, R, want


def test_aligned_boxes_closed_form():
    a, b_centre, d2, R, want = _aligned_family(3000, seed=21)
    idx = np.arange(len(a))
    got = paired_iou_3d(a, corners_from_pose(b_centre, d2, R), idx, idx)
    assert (want == 0).mean() > 0.1 and (want > 0.2).mean() > 0.05
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)


@pytest.mark.parametrize("eps", [1e-11, 1e-9, 1e-7])
def test_continuity_under_tiny_rotations(eps):
    """Tilting one box of each aligned pair by ~eps rad changes IoU by O(eps): nearly coplanar (and nearly touching)
    faces must not turn rounding noise into volume."""
    a, b_centre, d2, R, want = _aligned_family(3000, seed=22)
    tilt = Rotation.from_rotvec(np.random.default_rng(1).normal(size=(len(a), 3)) * eps).as_matrix()
    b = corners_from_pose(b_centre, d2, np.einsum("nij,njk->nik", R, tilt))
    idx = np.arange(len(a))
    err = np.abs(paired_iou_3d(a, b, idx, idx) - want)
    assert err.max() < 10 * eps + 1e-11  # the true change is ~1.7 eps here


def test_relabelled_box_is_the_same_box():
    """Rotating the object frame by 90 degrees about y and swapping w and l gives the same cuboid with other labels."""
    c = np.array([1.0, 0.5, 12.0])
    R = rotation_y([0.35])[0]
    a = box(c, (1.0, 2.0, 3.0), R)
    b = box(c, (3.0, 2.0, 1.0), R @ rotation_y([np.pi / 2])[0])
    assert not np.allclose(a, b)
    np.testing.assert_allclose(np.sort(a[0], axis=0), np.sort(b[0], axis=0), atol=1e-12)
    assert iou1(a, b) == pytest.approx(1.0, abs=1e-12)
    assert iou1(b, a) == pytest.approx(1.0, abs=1e-12)


def test_slightly_non_planar_valid_boxes():
    """Valid predictions may be non-planar up to 1e-4 m (e.g. corners rounded to float32): IoU stays consistent."""
    rng = np.random.default_rng(8)
    n = 30
    c = rng.normal([0, 1, 20], [5, 0.5, 10], (n, 3))
    dims = rng.uniform(0.3, 4, (n, 3))
    R = Rotation.random(n, random_state=8).as_matrix()
    gt = corners_from_pose(c, dims, R)
    f32 = gt.astype(np.float32).astype(np.float64)
    noisy = gt + rng.uniform(-2e-5, 2e-5, gt.shape)
    assert np.abs(coplanar_residuals(noisy)).max() > 1e-6 and valid_boxes(noisy).all()
    idx = np.arange(n)
    for pred in (f32, noisy):
        np.testing.assert_array_equal(paired_iou_3d(pred, pred, idx, idx), 1.0)
        np.testing.assert_allclose(paired_iou_3d(gt, pred, idx, idx), 1.0, atol=1e-3)
        shifted = pred + R[:, None, :, 0] * 0.25 * dims[:, None, 2:3]  # a quarter length along the box's x axis
        want = paired_iou_3d(gt, gt + R[:, None, :, 0] * 0.25 * dims[:, None, 2:3], idx, idx)
        np.testing.assert_allclose(paired_iou_3d(pred, shifted, idx, idx), want, atol=1e-3)
        np.testing.assert_allclose(want, 0.75 / 1.25, atol=1e-12)


def _bad_boxes():
    gt = box((0, 0, 5), (1, 1, 1))
    same = np.repeat(np.array([[0.0, 0.0, 5.0]]), 8, axis=0)[None]
    flat = box((0, 0, 5), (0, 1, 1))  # collapsed width
    nonplanar = gt.copy()
    nonplanar[0, 6] += [0.05, 0.03, 0.02]  # one corner pulled off its three faces
    nan = gt.copy()
    nan[0, 2, 1] = np.nan
    inf = gt.copy()
    inf[0, 4, 0] = np.inf
    return gt, {"all_equal": same, "flat": flat, "nonplanar": nonplanar, "nan": nan, "inf": inf}


def test_invalid_predictions_get_zero_and_never_nan():
    gt, bad = _bad_boxes()
    preds = np.concatenate([gt] + list(bad.values()))
    valid = valid_boxes(preds)
    assert valid.tolist() == [True] + [False] * len(bad)
    iou = box_iou_3d(gt, preds)
    assert iou[0, 0] == 1.0
    assert (iou[0, 1:] == 0).all()
    raw = box_iou_3d(gt, preds, check_valid=False)
    assert np.isfinite(raw).all() and (raw >= 0).all() and (raw <= 1).all()
    # zero-volume and non-finite boxes overlap nothing even unchecked; the non-planar one does
    assert (raw[0, [1, 2, 4, 5]] == 0).all()
    assert raw[0, 3] > 0.9
    # validity is checked on the predictions (b) only, as Omni3D does
    as_gt = box_iou_3d(preds, gt)
    assert np.isfinite(as_gt).all()
    assert as_gt[3, 0] > 0.9 and (as_gt[[1, 2, 4, 5], 0] == 0).all()
    p = paired_iou_3d(gt, preds, np.zeros(6, int), np.arange(6))
    np.testing.assert_array_equal(p, iou[0])


def test_garbage_corners_stay_finite_and_clamped():
    rng = np.random.default_rng(5)
    a = rng.normal(0, 1, (20, 8, 3))
    b = rng.normal(0, 1, (25, 8, 3))
    for check in (True, False):
        out = box_iou_3d(a, b, check_valid=check)
        assert np.isfinite(out).all() and (out >= 0).all() and (out <= 1).all()
    assert (box_iou_3d(a, b) == 0).all()  # none of them is a valid box


def test_empty_inputs():
    assert box_iou_3d(np.zeros((0, 8, 3)), box()).shape == (0, 1)
    assert box_iou_3d(box(), np.zeros((0, 8, 3))).shape == (1, 0)
    assert box_iou_3d(np.zeros((0, 8, 3)), np.zeros((0, 8, 3))).shape == (0, 0)
    assert paired_iou_3d(box(), box(), [], []).shape == (0,)
    assert valid_boxes(np.zeros((0, 8, 3))).shape == (0,)
    assert box_volume(np.zeros((0, 8, 3))).shape == (0,)
    ia, ib = candidate_pairs([], [1], np.zeros((0, 8, 3)), box())
    assert ia.shape == ib.shape == (0,)


def test_bad_arguments():
    with pytest.raises(IndexError):
        paired_iou_3d(box(), box(), [0], [1])
    with pytest.raises(ValueError):
        paired_iou_3d(box(), box(), [0, 0], [0])
    with pytest.raises(ValueError):
        box_iou_3d(np.zeros((2, 4, 3)), box())


# ---------------------------------------------------------------------------------------------------------------------
# validity rule and volumes


def test_valid_boxes_rule():
    rng = np.random.default_rng(3)
    n = 50
    good = corners_from_pose(rng.normal(0, 20, (n, 3)), rng.uniform(0.01, 5, (n, 3)),
                             Rotation.random(n, random_state=3).as_matrix())
    assert valid_boxes(good).all()
    assert np.abs(coplanar_residuals(good)).max() < 1e-12
    # non-planar: one corner moved off its faces by more / less than the 1e-4 threshold
    off = good[:1].copy()
    normal = np.cross(off[0, 1] - off[0, 0], off[0, 3] - off[0, 0])
    normal /= np.linalg.norm(normal)
    for shift, ok in ((3e-4, False), (3e-5, True)):
        moved = off.copy()
        moved[0, 3] += shift * normal  # v3 leaves the plane of face [0, 1, 2, 3]
        assert valid_boxes(moved)[0] == ok
    # zero-area faces: a box with a 1e-9 m dimension (triangle areas ~5e-10 < 1e-8), and with a 1e-7 m one (valid)
    assert not valid_boxes(box(dims=(1e-9, 1, 1)))[0]
    assert triangle_areas(box(dims=(1e-9, 1, 1))).min() < 1e-8
    assert valid_boxes(box(dims=(1e-7, 1, 1)))[0]
    assert not valid_boxes(box(dims=(1, 0, 1)))[0]


def test_omni3d_sum_quirk():
    """Omni3D's code sums the six residuals before the threshold: opposite residuals can cancel."""
    a = box((0, 0, 4), (1, 1, 1))
    base = coplanar_residuals(a)[0].sum()
    k = 6  # move one corner in a direction that keeps the summed residual unchanged to first order
    J = np.zeros((6, 3))
    for axis in range(3):
        moved = a.copy()
        moved[0, k, axis] += 1e-6
        J[:, axis] = (coplanar_residuals(moved)[0] - coplanar_residuals(a)[0]) / 1e-6
    g = J.sum(axis=0)
    d = np.cross(g, J[np.argmax(np.abs(J).sum(axis=1))])  # orthogonal to g, moves some face
    d *= 1e-3 / np.linalg.norm(d)
    moved = a.copy()
    moved[0, k] += d
    res = coplanar_residuals(moved)[0]
    assert np.abs(res).max() > 1e-4 and abs(res.sum() - base) < 1e-5
    assert not valid_boxes(moved)[0]
    assert valid_boxes(moved, rule="omni3d")[0]
    with pytest.raises(ValueError):
        valid_boxes(moved, rule="nope")


def test_box_volume():
    rng = np.random.default_rng(4)
    n = 40
    dims = rng.uniform(0.01, 5, (n, 3))
    centres = rng.normal(0, 1, (n, 3)) + [1e4, 0, 1e4]
    corners = corners_from_pose(centres, dims, Rotation.random(n, random_state=4).as_matrix())
    np.testing.assert_allclose(box_volume(corners), dims.prod(axis=1), rtol=1e-9)
    _, bad = _bad_boxes()
    v = box_volume(np.concatenate(list(bad.values())))
    assert np.isfinite(v).all() and v[0] == 0 and v[1] == 0 and v[3] == 0 and v[4] == 0


# ---------------------------------------------------------------------------------------------------------------------
# broad phase


def _scene(seed, n_images=6, n_a=8, n_b=30):
    rng = np.random.default_rng(seed)
    img_a = rng.integers(0, n_images, n_a * n_images) * 7 + 100  # arbitrary, unsorted ids
    img_b = rng.integers(0, n_images + 1, n_b * n_images) * 7 + 100  # one image without GT
    def boxes(n):
        c = rng.uniform([-3, -1, 4], [3, 1, 12], (n, 3))
        return corners_from_pose(c, rng.uniform(0.3, 3, (n, 3)), Rotation.random(n, random_state=rng).as_matrix())
    return img_a, img_b, boxes(len(img_a)), boxes(len(img_b))


def test_candidate_pairs_superset_of_overlaps():
    for seed in range(3):
        img_a, img_b, a, b = _scene(seed)
        ia, ib = candidate_pairs(img_a, img_b, a, b)
        assert (img_a[ia] == img_b[ib]).all()
        order = np.lexsort((ib, ia))
        np.testing.assert_array_equal(order, np.arange(len(ia)))
        assert len(set(zip(ia.tolist(), ib.tolist()))) == len(ia)
        iou = box_iou_3d(a, b, check_valid=False)
        same = img_a[:, None] == img_b[None, :]
        want = set(zip(*np.nonzero(same & (iou > 0))))
        got = set(zip(ia.tolist(), ib.tolist()))
        assert want and want <= got
        # brute force of the rule itself: same image and spheres overlapping (or touching)
        ca, ra = bounding_spheres(a)
        cb, rb = bounding_spheres(b)
        dist = np.linalg.norm(ca[:, None] - cb[None], axis=2)
        rule = same & (dist <= ra[:, None] + rb[None, :])
        assert set(zip(*np.nonzero(rule))) == got
        assert len(got) < same.sum()  # it does prune
        # every pair closer than the GT half-diagonal is present
        half_diag = np.linalg.norm(a[:, 6] - a[:, 0], axis=1) / 2
        assert set(zip(*np.nonzero(same & (dist <= half_diag[:, None])))) <= got


def test_bounding_spheres_are_bit_identical_to_the_numpy_expression():
    """The compiled kernel replaced ``c.mean(axis=1)`` and ``sqrt(((c - centre) ** 2).sum(axis=2)).max(axis=1)``:
    same bits on boxes of every scale, far from the origin, and NaN exactly where numpy gives NaN."""
    rng = np.random.default_rng(7)
    n = 20_000
    c = rng.normal(size=(n, 8, 3)) * rng.uniform(1e-3, 1e4, (n, 1, 1)) + rng.normal(size=(n, 1, 3)) * 1e4
    c[5, 3, 1] = np.nan
    c[9, 7, 2] = np.inf
    c[11] = -np.inf
    c[13, 0, 0] = np.inf
    c[13, 1, 0] = -np.inf
    centre, radius = bounding_spheres(c)
    with np.errstate(invalid="ignore"):
        want_centre = c.mean(axis=1)
        want_radius = np.sqrt(((c - want_centre[:, None, :]) ** 2).sum(axis=2)).max(axis=1)
    np.testing.assert_array_equal(centre, want_centre)  # NaN == NaN here
    np.testing.assert_array_equal(radius, want_radius)
    assert np.isnan(radius[[5, 9, 11, 13]]).all() and np.isfinite(radius[:5]).all()
    empty_c, empty_r = bounding_spheres(np.zeros((0, 8, 3)))
    assert empty_c.shape == (0, 3) and empty_r.shape == (0,)


def test_candidate_pairs_with_2d_boxes():
    img_a, img_b, a, b = _scene(11)
    rng = np.random.default_rng(0)
    xy = rng.uniform(0, 500, (len(a) + len(b), 2))
    wh = rng.uniform(5, 150, (len(a) + len(b), 2))
    b2 = np.c_[xy, xy + wh]
    b2[3] = -1  # missing box
    box_a, box_b = b2[: len(a)], b2[len(a):]
    ia, ib = candidate_pairs(img_a, img_b, a, b, box_a, box_b)
    ia3, ib3 = candidate_pairs(img_a, img_b, a, b)
    same = img_a[:, None] == img_b[None, :]
    ow = np.minimum(box_a[:, None, 2], box_b[None, :, 2]) - np.maximum(box_a[:, None, 0], box_b[None, :, 0])
    oh = np.minimum(box_a[:, None, 3], box_b[None, :, 3]) - np.maximum(box_a[:, None, 1], box_b[None, :, 1])
    want = set(zip(*np.nonzero(same & (ow > 0) & (oh > 0)))) | set(zip(ia3.tolist(), ib3.tolist()))
    assert set(zip(ia.tolist(), ib.tolist())) == want
    assert len(ia) > len(ia3)
    assert (img_a[ia] == img_b[ib]).all()
    with pytest.raises(ValueError):
        candidate_pairs(img_a, img_b, a, b, box_a, None)
    # image ids of any sortable type
    ia_s, ib_s = candidate_pairs(img_a.astype(str), img_b.astype(str), a, b)
    np.testing.assert_array_equal(ia_s, ia3)
    np.testing.assert_array_equal(ib_s, ib3)
