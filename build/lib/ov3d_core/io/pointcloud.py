"""Point clouds for the 3D scene view: read files (open3d), back-project depth maps, downsample to a budget.

open3d is imported inside the functions that need it, so importing this module stays cheap.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ov3d_core.errors import InputError
from ov3d_core.io._validate import check_file, check_finite_array

#: Extensions open3d's ``read_point_cloud`` understands.
POINT_CLOUD_EXTS = (".ply", ".pcd", ".xyz", ".xyzn", ".xyzrgb", ".pts")


def load_point_cloud(path) -> tuple[np.ndarray, np.ndarray | None]:
    """Read a point cloud file: ``(N, 3)`` float64 points and ``(N, 3)`` float64 colours in [0, 1] (or None).

    Raises ``InputError`` for a missing file, an unsupported extension, or a file with no readable points."""
    p = check_file(path)
    if p.suffix.lower() not in POINT_CLOUD_EXTS:
        raise InputError(str(p), None, None, f"a point cloud file ({', '.join(POINT_CLOUD_EXTS)})", got=p.suffix)
    import open3d as o3d

    try:
        pc = o3d.io.read_point_cloud(str(p))
    except Exception as e:  # noqa: BLE001 - open3d raises RuntimeError and others for corrupt files
        raise InputError(str(p), None, None, f"a readable point cloud ({type(e).__name__}: {str(e)[:120]})") from None
    pts = np.asarray(pc.points, dtype=np.float64)
    if pts.ndim != 2 or len(pts) == 0:
        raise InputError(str(p), None, None, "a point cloud with at least one point (none could be read)")
    if not np.isfinite(pts).all():
        bad = int(np.flatnonzero(~np.isfinite(pts).all(axis=1))[0])
        raise InputError(str(p), f"point {bad}", "xyz", "finite coordinates")
    cols = np.asarray(pc.colors, dtype=np.float64) if pc.has_colors() else None
    if cols is not None and cols.shape != pts.shape:
        cols = None
    return pts.copy(), None if cols is None else cols.copy()


def depth_to_points(depth, K, *, colors=None) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Back-project a depth map ``(H, W)`` in metres with intrinsics ``K (3, 3)`` to camera-frame points ``(N, 3)``.

    Pixel (row v, column u) is taken at (u, v), the convention of ``geometry.boxes.project_points``. Pixels with a
    non-finite or non-positive depth are skipped. With ``colors`` (an ``(H, W, 3)`` image) returns ``(points,
    colours)`` with colours scaled to [0, 1] (uint8 / 255)."""
    d = np.asarray(depth)
    if d.ndim != 2 or d.dtype.kind not in "iuf":
        raise InputError(None, None, "depth", "an (H, W) array of depths in metres", got=getattr(d, "shape", None))
    Km = check_finite_array(K, None, "K", (3, 3))
    if Km[0, 0] == 0 or Km[1, 1] == 0:
        raise InputError(None, None, "K", "intrinsics with non-zero focal lengths", got=Km.tolist())
    d = d.astype(np.float64)
    with np.errstate(invalid="ignore"):
        valid = np.isfinite(d) & (d > 0)
    v, u = np.nonzero(valid)
    z = d[v, u]
    uv1 = np.stack([u.astype(np.float64), v.astype(np.float64), np.ones_like(z)], axis=1)
    rays = np.linalg.solve(Km, uv1.T).T  # K^-1 [u, v, 1]
    pts = rays * (z / rays[:, 2])[:, None]
    if colors is None:
        return pts
    c = np.asarray(colors)
    if c.shape[:2] != d.shape or c.ndim != 3 or c.shape[2] < 3:
        raise InputError(None, None, "colors", f"an image of shape {d.shape + (3,)}", got=c.shape)
    col = c[v, u, :3].astype(np.float64)
    if c.dtype.kind in "ui":
        col = col / 255.0
    return pts, col


def voxel_downsample(points, colors=None, budget: int = 200_000) -> tuple[np.ndarray, np.ndarray | None]:
    """At most ``budget`` points: unchanged if already under it, else open3d ``voxel_down_sample`` with a voxel
    size grown (x1.25 per step, starting from extent / budget^(1/3)) until the result fits."""
    pts = check_finite_array(points, None, "points")
    if pts.ndim != 2 or pts.shape[1] != 3:
        raise InputError(None, None, "points", "an (N, 3) array", got=pts.shape)
    if isinstance(budget, bool) or not isinstance(budget, (int, np.integer)) or budget <= 0:
        raise InputError(None, None, "budget", "a positive integer", got=budget)
    cols = None
    if colors is not None:
        cols = check_finite_array(colors, None, "colors")
        if cols.shape != pts.shape:
            raise InputError(None, None, "colors", f"an array of shape {pts.shape}", got=cols.shape)
    if len(pts) <= budget:
        return pts, cols
    import open3d as o3d

    pc = o3d.geometry.PointCloud()
    pc.points = o3d.utility.Vector3dVector(pts)
    if cols is not None:
        pc.colors = o3d.utility.Vector3dVector(cols)
    extent = float(np.max(pts.max(axis=0) - pts.min(axis=0)))
    voxel = max(extent / max(budget, 1) ** (1 / 3), 1e-9)
    for _ in range(200):
        down = pc.voxel_down_sample(voxel)
        if len(down.points) <= budget:
            out_c = np.asarray(down.colors, np.float64).copy() if cols is not None else None
            return np.asarray(down.points, np.float64).copy(), out_c
        voxel *= 1.25
    # Unreachable in practice (a voxel larger than the extent leaves one point); keep a deterministic fallback.
    idx = np.linspace(0, len(pts) - 1, budget).astype(np.int64)
    return pts[idx], None if cols is None else cols[idx]


def load_depth(path) -> np.ndarray:
    """A depth map in metres ``(H, W)`` float64: ``.npz`` (key ``depth`` or the first array), ``.npy``, or a 16-bit
    ``.png``/``.tif`` in millimetres (the demo's format; integer images are divided by 1000)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(str(p), None, None, "an existing depth map file", "no such file")
    suffix = p.suffix.lower()
    try:
        if suffix == ".npz":
            with np.load(p) as z:
                key = "depth" if "depth" in z.files else z.files[0]
                arr = np.asarray(z[key], np.float64)
        elif suffix == ".npy":
            arr = np.asarray(np.load(p), np.float64)
        elif suffix in (".png", ".tif", ".tiff"):
            from PIL import Image

            raw = np.asarray(Image.open(p))
            arr = raw.astype(np.float64) / (1000.0 if raw.dtype.kind in "ui" else 1.0)
        else:
            raise InputError(str(p), None, None, "a depth map (.npz, .npy, or 16-bit .png in millimetres)", suffix)
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - any reader failure is bad input
        raise InputError(str(p), None, None, f"a readable depth map ({type(exc).__name__}: {exc})") from None
    if arr.ndim != 2:
        raise InputError(str(p), None, "depth", "a 2-D array (H, W)", arr.shape)
    return arr
