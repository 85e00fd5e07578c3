"""The Omni3D box convention (ov3d_core.geometry.boxes): corners, faces, yaw, projection."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from ov3d_core.geometry.boxes import (
    BOX_EDGES,
    BOX_FACES,
    corners_from_pose,
    projected_box2d,
    rotation_y,
    yaw_of,
)


@pytest.fixture
def poses():
    rng = np.random.default_rng(0)
    n = 25
    centre = rng.normal(0, 10, (n, 3))
    dims = rng.uniform(0.1, 5, (n, 3))  # [w, h, l]
    R = Rotation.random(n, random_state=0).as_matrix()
    return centre, dims, R


def test_corner_edges_follow_omni3d_order(poses):
    centre, dims, R = poses
    c = corners_from_pose(centre, dims, R)
    assert c.shape == (len(centre), 8, 3) and c.dtype == np.float64
    w, h, l = dims.T
    np.testing.assert_allclose(np.linalg.norm(c[:, 1] - c[:, 0], axis=1), l, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(c[:, 3] - c[:, 0], axis=1), h, rtol=1e-12)
    np.testing.assert_allclose(np.linalg.norm(c[:, 4] - c[:, 0], axis=1), w, rtol=1e-12)
    # and along the object axes: local x = length, y = height, z = width
    np.testing.assert_allclose(c[:, 1] - c[:, 0], l[:, None] * R[:, :, 0], atol=1e-12)
    np.testing.assert_allclose(c[:, 3] - c[:, 0], h[:, None] * R[:, :, 1], atol=1e-12)
    np.testing.assert_allclose(c[:, 4] - c[:, 0], w[:, None] * R[:, :, 2], atol=1e-12)
    np.testing.assert_allclose(c.mean(axis=1), centre, atol=1e-12)


def test_unit_box_matches_pytorch3d_order():
    c = corners_from_pose([[0.5, 0.5, 0.5]], [[1, 1, 1]], np.eye(3)[None])[0]
    unit = [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]]
    np.testing.assert_allclose(c, unit, atol=1e-15)


def test_faces_and_edges_describe_the_cuboid(poses):
    centre, dims, R = poses
    c = corners_from_pose(centre, dims, R)
    assert sorted(np.bincount(BOX_FACES.ravel()).tolist()) == [3] * 8
    assert sorted(np.bincount(BOX_EDGES.ravel()).tolist()) == [3] * 8
    for face in BOX_FACES:
        q = c[:, face] - c[:, face].mean(axis=1, keepdims=True)
        assert (np.linalg.svd(q, compute_uv=False)[:, 2] < 1e-9).all()  # planar
        # consecutive corners are box edges: a cycle around the quad
        pairs = {tuple(sorted(e)) for e in BOX_EDGES.tolist()}
        assert all(tuple(sorted((face[k], face[(k + 1) % 4]))) in pairs for k in range(4))
    # face [0, 1, 2, 3] lies at local z = -w/2
    local_z = np.einsum("nkj,nj->nk", c[:, [0, 1, 2, 3]] - centre[:, None], R[:, :, 2])
    np.testing.assert_allclose(local_z, -dims[:, :1] / 2 * np.ones((1, 4)), atol=1e-12)


def test_rotation_y_and_yaw_round_trip():
    ry = np.linspace(-np.pi + 1e-9, np.pi, 37)
    R = rotation_y(ry)
    np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=1e-14)
    np.testing.assert_allclose(np.einsum("nij,nkj->nik", R, R), np.broadcast_to(np.eye(3), R.shape), atol=1e-14)
    np.testing.assert_allclose(yaw_of(R), ry, atol=1e-12)
    # KITTI sign: ry = +pi/2 points the length axis at the camera (-z)
    np.testing.assert_allclose(rotation_y([np.pi / 2])[0][:, 0], [0, 0, -1], atol=1e-15)


def test_projected_box2d_hand_case():
    K = np.array([[100.0, 0, 50], [0, 100.0, 40], [0, 0, 1]])
    boxes = corners_from_pose([[0, 0, 10], [0, 0, -5], [10, 0, 10], [0, 0, 0.5]], [[1, 1, 1]] * 4,
                              np.repeat(np.eye(3)[None], 4, axis=0))
    proj, trunc = projected_box2d(boxes, K, width=50, height=40)
    d = 100 * 0.5 / 9.5
    np.testing.assert_allclose(proj[0], [50 - d, 40 - d, 50 + d, 40 + d], atol=1e-12)
    np.testing.assert_allclose(trunc[0], [50 - d, 40 - d, 49, 39], atol=1e-12)
    np.testing.assert_array_equal(proj[1], [-1, -1, -1, -1])  # behind the camera
    np.testing.assert_array_equal(trunc[1], [-1, -1, -1, -1])
    assert proj[2, 0] > 49 and (trunc[2] == -1).all()  # entirely right of the image
    # half behind the near plane: only the corners at z = 1 count
    np.testing.assert_allclose(proj[3], [0, -10, 100, 90], atol=1e-12)
    only_proj, same = projected_box2d(boxes, K)
    np.testing.assert_array_equal(only_proj, proj)
    np.testing.assert_array_equal(same, proj)
