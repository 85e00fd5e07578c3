"""The Omni3D box convention. This module is the only place that knows the corner order.

Camera frame: +x right, +y down, +z forward. ``dims = [w, h, l]`` in metres. ``R`` maps object to camera
coordinates (egocentric, det +1). Local object axes: x along the length l, y along the height h, z along the
width w. Corners (reference/omni3d_protocol.md §1.6)::

    v0 = (-l/2, -h/2, -w/2)   v1 = (+l/2, -h/2, -w/2)   v2 = (+l/2, +h/2, -w/2)   v3 = (-l/2, +h/2, -w/2)
    v4..v7 = v0..v3 with z = +w/2

so edge v0->v1 has length l, v0->v3 height h, v0->v4 width w; this equals PyTorch3D's unit-box order.
"""

from __future__ import annotations

import numpy as np

# Signs of (x, y, z) of the eight corners in units of (l/2, h/2, w/2).
_CORNER_SIGNS = np.array(
    [[-1, -1, -1], [1, -1, -1], [1, 1, -1], [-1, 1, -1],
     [-1, -1, 1], [1, -1, 1], [1, 1, 1], [-1, 1, 1]], dtype=np.float64)

#: The 6 quad faces, as corner indices (pytorch3d ``_box_planes`` order).
BOX_FACES = np.array([[0, 1, 2, 3], [3, 2, 6, 7], [0, 1, 5, 4], [0, 3, 7, 4], [1, 2, 6, 5], [4, 5, 6, 7]])

#: The 12 edges, as corner index pairs (for drawing).
BOX_EDGES = np.array([[0, 1], [1, 2], [2, 3], [3, 0], [4, 5], [5, 6], [6, 7], [7, 4],
                      [0, 4], [1, 5], [2, 6], [3, 7]])

#: Depth (m) below which a projected point counts as behind the camera (Omni3D math_util).
NEAR_CLIP = 0.20


def corners_from_pose(center: np.ndarray, dims: np.ndarray, R: np.ndarray) -> np.ndarray:
    """Corners ``(N, 8, 3)`` float64 in the camera frame from centres ``(N, 3)``, dims ``(N, 3)`` as [w, h, l]
    and rotations ``(N, 3, 3)`` (object -> camera)."""
    center = np.asarray(center, dtype=np.float64).reshape(-1, 3)
    dims = np.asarray(dims, dtype=np.float64).reshape(-1, 3)
    R = np.asarray(R, dtype=np.float64).reshape(-1, 3, 3)
    half = 0.5 * dims[:, [2, 1, 0]]  # (l, h, w) along local (x, y, z)
    local = _CORNER_SIGNS[None, :, :] * half[:, None, :]  # (N, 8, 3)
    return np.einsum("nij,nkj->nki", R, local) + center[:, None, :]


def rotation_y(ry: np.ndarray) -> np.ndarray:
    """Rotations ``(N, 3, 3)`` about the camera y axis: [[c,0,s],[0,1,0],[-s,0,c]] (the KITTI R_y)."""
    ry = np.asarray(ry, dtype=np.float64).reshape(-1)
    c, s = np.cos(ry), np.sin(ry)
    out = np.zeros((len(ry), 3, 3))
    out[:, 0, 0] = c
    out[:, 0, 2] = s
    out[:, 1, 1] = 1.0
    out[:, 2, 0] = -s
    out[:, 2, 2] = c
    return out


def yaw_of(R: np.ndarray) -> np.ndarray:
    """Yaw about the camera y axis of rotations ``(N, 3, 3)``: the angle of the local x (length) axis in the x-z plane,
    with the KITTI sign (ry = 0 faces +x, ry = +pi/2 faces the camera)."""
    R = np.asarray(R, dtype=np.float64).reshape(-1, 3, 3)
    return np.arctan2(-R[:, 2, 0], R[:, 0, 0])


def project_points(points: np.ndarray, K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project camera-frame points ``(..., 3)`` with intrinsics ``K (3, 3)``.

    Returns pixel coordinates ``(..., 2)`` and a mask of points in front of the camera (z > NEAR_CLIP)."""
    points = np.asarray(points, dtype=np.float64)
    z = points[..., 2]
    front = z > NEAR_CLIP
    zs = np.where(front, z, 1.0)
    uvw = points @ np.asarray(K, dtype=np.float64).T
    return uvw[..., :2] / zs[..., None], front


def projected_box2d(corners: np.ndarray, K: np.ndarray, width: float | None = None,
                    height: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """2D bounds of projected cuboids ``(N, 8, 3)``: ``bbox2D_proj`` XYXY ``(N, 4)`` and, when the image size is given,
    ``bbox2D_trunc`` (clipped to [0, W-1] x [0, H-1]); boxes with no corner in front of the camera or entirely off the
    image get -1 rows. Corners behind the camera are skipped, as Omni3D's projection does."""
    corners = np.asarray(corners, dtype=np.float64).reshape(-1, 8, 3)
    uv, front = project_points(corners, K)
    big = np.where(front[..., None], uv, np.nan)
    with np.errstate(invalid="ignore"):
        lo = np.nanmin(np.where(front[..., None], big, np.inf), axis=1)
        hi = np.nanmax(np.where(front[..., None], big, -np.inf), axis=1)
    proj = np.concatenate([lo, hi], axis=1)
    none_front = ~front.any(axis=1)
    proj[none_front] = -1.0
    if width is None or height is None:
        return proj, proj.copy()
    trunc = proj.copy()
    trunc[:, [0, 2]] = np.clip(trunc[:, [0, 2]], 0.0, width - 1.0)
    trunc[:, [1, 3]] = np.clip(trunc[:, [1, 3]], 0.0, height - 1.0)
    off = none_front | (proj[:, 2] < 0) | (proj[:, 3] < 0) | (proj[:, 0] > width - 1) | (proj[:, 1] > height - 1)
    off |= (trunc[:, 2] <= trunc[:, 0]) | (trunc[:, 3] <= trunc[:, 1])
    trunc[off] = -1.0
    return proj, trunc
