"""The 3D view's points (``ov3d_core.io.pointcloud``): the voxel size follows the budget, voxel centroids and
colours are right, image colours land on the points that project to them, and a depth map is back-projected at
full resolution (with K scaled when its resolution differs from the image's)."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from ov3d_core.io.pointcloud import (colors_from_image, count_voxels, scene_points, voxel_downsample,
                                     voxel_size_for_budget)

K = np.array([[500.0, 0, 320], [0, 500.0, 240], [0, 0, 1]])


def _surface(n=200_000, seed=0):
    rng = np.random.default_rng(seed)
    x, z = rng.uniform(-3, 3, n), rng.uniform(1, 9, n)
    return np.c_[x, 1.5 + 0.01 * rng.normal(size=n), z]  # a floor: a 2-D surface, as a depth map sees


@pytest.mark.parametrize("budget", [2_000, 20_000, 60_000, 150_000])
def test_voxel_size_fits_the_budget_and_uses_it(budget):
    pts = _surface()
    v = voxel_size_for_budget(pts, budget)
    n = count_voxels(pts, v)
    assert n <= budget and n > 0.75 * budget
    assert v > 0
    assert count_voxels(pts, v / 1.1) > budget  # a clearly smaller voxel would not fit
    down, _ = voxel_downsample(pts, None, budget)
    assert len(down) == n


def test_more_budget_more_points_smaller_voxels():
    pts = _surface()
    sizes = [voxel_size_for_budget(pts, b) for b in (5_000, 20_000, 80_000)]
    counts = [len(voxel_downsample(pts, None, b)[0]) for b in (5_000, 20_000, 80_000)]
    assert sizes[0] > sizes[1] > sizes[2] and counts[0] < counts[1] < counts[2]
    assert voxel_size_for_budget(pts, len(pts)) == 0.0  # it fits: nothing is merged


def test_voxel_centroids_and_mean_colours_hand_computed():
    pts = np.array([[0.1, 0.1, 0.1], [0.3, 0.1, 0.1], [2.1, 0.1, 0.1], [2.9, 0.9, 0.9]])
    cols = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0, 1.0], [1.0, 1.0, 1.0]])
    p, c = voxel_downsample(pts, cols, budget=3, voxel=1.0)  # cells from the minimum: x in [0.1, 1.1), [2.1, 3.1)
    order = np.argsort(p[:, 0])
    np.testing.assert_allclose(p[order], [[0.2, 0.1, 0.1], [2.5, 0.5, 0.5]])
    np.testing.assert_allclose(c[order], [[0.5, 0.5, 0], [0.5, 0.5, 1.0]])


def test_colors_from_image_sample_the_projected_pixel():
    img = np.zeros((480, 640, 3), np.uint8)
    img[240, 320] = [255, 0, 0]
    img[100, 70] = [0, 255, 0]
    pts = np.array([[0.0, 0.0, 5.0], [(70 - 320) / 500 * 2, (100 - 240) / 500 * 2, 2.0], [0, 0, -1.0], [50, 0, 1.0]])
    cols, inside = colors_from_image(pts, K, img)
    assert inside.tolist() == [True, True, False, False]
    np.testing.assert_allclose(cols[0], [1, 0, 0])
    np.testing.assert_allclose(cols[1], [0, 1, 0])
    np.testing.assert_allclose(cols[2:], 0.6)  # behind the camera / outside: grey


def _write_depth(path, depth_m):
    Image.fromarray(np.asarray(np.rint(depth_m * 1000), np.uint16)).save(path)


def test_scene_points_back_project_the_depth_map_at_full_resolution(tmp_path):
    h, w = 48, 64
    depth = np.full((h, w), 4.0)
    depth[:4] = 0.0  # no depth: skipped
    _write_depth(tmp_path / "d.png", depth)
    rgb = np.zeros((h, w, 3), np.uint8)
    rgb[..., 2] = 200
    Image.fromarray(rgb).save(tmp_path / "i.png")
    Ks = np.array([[50.0, 0, 32], [0, 50.0, 24], [0, 0, 1]])
    sp = scene_points(Ks, depth=tmp_path / "d.png", image=tmp_path / "i.png", image_size=(w, h), budget=10_000)
    assert sp.n_full == (h - 4) * w and len(sp.points) == sp.n_full and sp.voxel == 0.0
    assert sp.source == "depth map d.png" and sp.points.dtype == np.float32
    np.testing.assert_allclose(sp.points[:, 2], 4.0, atol=1e-3)
    np.testing.assert_allclose(sp.colors, np.tile([0, 0, 200 / 255], (sp.n_full, 1)), atol=1e-6)
    small = scene_points(Ks, depth=tmp_path / "d.png", image=tmp_path / "i.png", image_size=(w, h), budget=500)
    assert len(small.points) <= 500 and small.voxel > 0 and small.n_full == sp.n_full
    # the same depth map for an image of twice the resolution: K is scaled to the depth map, the rays are the same
    big_K = np.array([[100.0, 0, 64], [0, 100.0, 48], [0, 0, 1]])
    same = scene_points(big_K, depth=tmp_path / "d.png", image_size=(2 * w, 2 * h), budget=10_000)
    np.testing.assert_allclose(same.points, sp.points, atol=1e-5)


def test_scene_points_without_files_is_none():
    assert scene_points(K) is None


def test_voxel_counts_agree_on_int32_and_int64_keyed_grids():
    """A grid of fewer than 2^31 cells is keyed in int32, a finer one in int64 (or by unique rows): every path
    counts the distinct floor cells, as ``np.unique`` does on the integer cell indices."""
    from ov3d_core.io.pointcloud import _voxel_keys

    rng = np.random.default_rng(3)
    near = rng.uniform(0, 10, (20_000, 3))
    far = np.r_[near, [[1e4, 1e4, 1e4]]]  # one far point: a huge grid
    seen = set()
    for pts, voxel in ((near, 2.0), (near, 0.05), (far, 0.5), (far, 1e-7)):  # int32, int32, int64, unique rows
        cells = np.floor((pts - pts.min(axis=0)) / voxel).astype(np.int64)
        assert count_voxels(pts, voxel) == len(np.unique(cells, axis=0)), voxel
        seen.add(_voxel_keys(pts, voxel).dtype.name)
    assert seen == {"int32", "int64"}


def test_depth_to_points_with_a_skewed_k_matches_the_solved_rays():
    from ov3d_core.io.pointcloud import depth_to_points

    rng = np.random.default_rng(4)
    depth = rng.uniform(0.5, 30.0, size=(40, 50))
    Ks = np.array([[612.3, 1.7, 251.2], [0, 598.1, 199.4], [0, 0, 1.0]])
    pts = depth_to_points(depth, Ks)
    v, u = np.nonzero(depth > 0)
    rays = np.linalg.solve(Ks, np.stack([u, v, np.ones_like(u)]).astype(np.float64)).T
    np.testing.assert_allclose(pts, rays * (depth[v, u] / rays[:, 2])[:, None], rtol=1e-13, atol=1e-13)
