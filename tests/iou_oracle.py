"""Test-only, independent 3D IoU: scipy half-space intersection + convex hull volume (slow, one pair at a time).

Shares nothing with ov3d_core.geometry.iou3d except the face list: face planes come from an SVD fit, the interior
point from a linear program (Chebyshev centre), the volume from qhull.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog
from scipy.spatial import ConvexHull, HalfspaceIntersection

from ov3d_core.geometry.boxes import BOX_FACES


def halfspaces(corners: np.ndarray) -> np.ndarray:
    """``(6, 4)`` rows [n, -o] with n the outward unit normal, so that inside means n . x - o <= 0 (scipy's form)."""
    centre = corners.mean(axis=0)
    rows = []
    for face in BOX_FACES:
        pts = corners[face]
        q = pts.mean(axis=0)
        n = np.linalg.svd(pts - q)[2][-1]  # direction of least spread = plane normal
        if n @ (q - centre) < 0:
            n = -n
        rows.append(np.r_[n, -(n @ q)])
    return np.array(rows)


def intersection_volume(a: np.ndarray, b: np.ndarray) -> float:
    ref = 0.5 * (a.mean(axis=0) + b.mean(axis=0))  # work near the boxes for precision
    hs = np.vstack([halfspaces(a - ref), halfspaces(b - ref)])
    # Chebyshev centre: maximise r subject to n . x + r <= o
    res = linprog(c=[0, 0, 0, -1], A_ub=np.c_[hs[:, :3], np.ones(len(hs))], b_ub=-hs[:, 3],
                  bounds=[(None, None)] * 3 + [(0, None)], method="highs")
    scale = max(np.ptp(a, axis=0).max(), np.ptp(b, axis=0).max())
    if res.status != 0 or res.x[3] <= 1e-9 * scale:
        return 0.0
    hsi = HalfspaceIntersection(hs, res.x[:3])
    return float(ConvexHull(hsi.intersections).volume)


def iou(a: np.ndarray, b: np.ndarray) -> float:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    inter = intersection_volume(a, b)
    va = ConvexHull(a - a.mean(axis=0)).volume
    vb = ConvexHull(b - b.mean(axis=0)).volume
    return inter / (va + vb - inter)
