"""Point clouds for the 3D scene view: read files (open3d), back-project depth maps at full resolution, colour
points from the image, and downsample to a point budget with a voxel grid whose edge the budget decides.

open3d is imported only to read point-cloud files (inside :func:`load_point_cloud`), so importing this module stays
cheap and a depth-map view never pays for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ov3d_core.errors import InputError
from ov3d_core.geometry.boxes import project_points
from ov3d_core.io._validate import check_file, check_finite_array
from ov3d_core.open3d_import import open3d

#: Extensions open3d's ``read_point_cloud`` understands.
POINT_CLOUD_EXTS = (".ply", ".pcd", ".xyz", ".xyzn", ".xyzrgb", ".pts")


def load_point_cloud(path) -> tuple[np.ndarray, np.ndarray | None]:
    """Read a point cloud file: ``(N, 3)`` float64 points and ``(N, 3)`` float64 colours in [0, 1] (or None).

    Raises ``InputError`` for a missing file, an unsupported extension, or a file with no readable points."""
    p = check_file(path)
    if p.suffix.lower() not in POINT_CLOUD_EXTS:
        raise InputError(str(p), None, None, f"a point cloud file ({', '.join(POINT_CLOUD_EXTS)})", got=p.suffix)
    o3d = open3d()

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
    Kinv = np.linalg.inv(Km)
    # K^-1 [u, v, 1] column by column (one pass per output axis instead of an (N, 3) solve)
    rays = np.empty((len(z), 3))
    for k in range(3):
        np.multiply(u, Kinv[k, 0], out=rays[:, k])
        rays[:, k] += v * Kinv[k, 1]
        rays[:, k] += Kinv[k, 2]
    rays *= (z / rays[:, 2])[:, None]
    pts = rays
    if colors is None:
        return pts
    c = np.asarray(colors)
    if c.shape[:2] != d.shape or c.ndim != 3 or c.shape[2] < 3:
        raise InputError(None, None, "colors", f"an image of shape {d.shape + (3,)}", got=c.shape)
    col = c[v, u, :3].astype(np.float64)
    if c.dtype.kind in "ui":
        col = col / 255.0
    return pts, col


def _voxel_keys(pts: np.ndarray, voxel: float, *, shifted: bool = False) -> np.ndarray:
    """One integer key per point naming its cell of a grid of edge ``voxel`` anchored at the cloud's minimum
    (``shifted``: ``pts`` already has its minimum subtracted). int32 keys when the grid has fewer than 2^31 cells
    (they sort about twice as fast), else int64."""
    idx = np.floor((pts if shifted else pts - pts.min(axis=0)) / voxel).astype(np.int64)
    dims = idx.max(axis=0) + 1 if len(idx) else np.ones(3, np.int64)
    cells = float(dims[0]) * float(dims[1]) * float(dims[2])
    if cells < 2.0 ** 31:
        idx = idx.astype(np.int32)
        return (idx[:, 0] * np.int32(dims[1]) + idx[:, 1]) * np.int32(dims[2]) + idx[:, 2]
    if cells < 2.0 ** 62:
        return (idx[:, 0] * dims[1] + idx[:, 1]) * dims[2] + idx[:, 2]
    return np.unique(idx, axis=0, return_inverse=True)[1].reshape(-1).astype(np.int64)  # a grid too fine to key


def _count_keys(keys: np.ndarray) -> int:
    s = np.sort(keys)  # sort-based: np.unique is slower on integer keys
    return int(len(s) and 1 + np.count_nonzero(s[1:] != s[:-1]))


def count_voxels(points, voxel: float) -> int:
    """Number of occupied cells of a grid of edge ``voxel`` (metres) anchored at the cloud's minimum."""
    return _count_keys(_voxel_keys(np.asarray(points, np.float64), float(voxel)))


def voxel_size_for_budget(points, budget: int, *, rel_tol: float = 0.04, max_iter: int = 30) -> float:
    """The voxel edge at which the cloud keeps at most ``budget`` points: 0 when it already fits, else (to
    ``rel_tol``) the smallest edge whose grid occupies no more than ``budget`` cells.

    The occupied-cell count falls roughly as a power of the edge (``edge^-3`` for a volume, ``edge^-2`` for the
    surfaces a depth map sees), so the search interpolates in log-log space inside a bracket that always holds a
    fitting edge (a few counts, each one sort of the point keys). The count is not strictly monotone (the grid is
    anchored at the minimum), so the edge returned is always one that was checked to fit."""
    pts = np.asarray(points, np.float64)
    if len(pts) <= budget:
        return 0.0
    extent = float(np.max(pts.max(axis=0) - pts.min(axis=0)))
    if extent <= 0:
        return 1.0  # every point at one place: any edge leaves one cell
    shifted = pts - pts.min(axis=0)  # once, not per count

    def count(edge: float) -> int:
        return _count_keys(_voxel_keys(shifted, edge, shifted=True))

    target = np.log(budget)
    lo = extent / max(budget, 1) ** (1 / 3)  # a volume-filling cloud needs at least this edge
    n_lo = count(lo)
    if n_lo <= budget:  # very unevenly spread points: shrink until the bracket holds a non-fitting edge
        hi, n_hi = lo, n_lo
        while n_lo <= budget and lo > extent * 1e-9:
            hi, n_hi = lo, n_lo
            lo /= 4.0
            n_lo = count(lo)
        if n_lo <= budget:
            return lo
    else:
        hi = lo
        n_hi = n_lo
        while n_hi > budget:
            lo, n_lo = hi, n_hi
            hi *= 4.0
            n_hi = count(hi)
    for _ in range(max_iter):
        if hi / lo <= 1.0 + rel_tol:
            break
        # log-log interpolation between the bracket ends, kept away from them so the bracket always shrinks
        la, lb = np.log(lo), np.log(hi)
        fa, fb = np.log(n_lo) - target, np.log(max(n_hi, 1)) - target
        t = fa / (fa - fb) if fa != fb else 0.5
        mid = float(np.exp(la + float(np.clip(t, 0.1, 0.9)) * (lb - la)))
        n_mid = count(mid)
        if n_mid <= budget:
            hi, n_hi = mid, n_mid
        else:
            lo, n_lo = mid, n_mid
    return hi


def voxel_downsample(points, colors=None, budget: int = 200_000, *, voxel: float | None = None
                     ) -> tuple[np.ndarray, np.ndarray | None]:
    """At most ``budget`` points: the cloud unchanged when it fits, else the centroid (and mean colour) of every
    occupied cell of a voxel grid whose edge the budget decides (:func:`voxel_size_for_budget`; or ``voxel`` when
    given). Pure numpy, deterministic: cells come out in grid order."""
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
    edge = voxel_size_for_budget(pts, int(budget)) if voxel is None else float(voxel)
    if edge <= 0:
        return pts, cols
    keys = _voxel_keys(pts, edge)
    order = np.argsort(keys, kind="stable")
    first = np.ones(len(keys), bool)
    first[1:] = keys[order][1:] != keys[order][:-1]
    inv = np.empty(len(keys), np.int64)
    inv[order] = np.cumsum(first) - 1
    counts = np.bincount(inv)

    def mean(a: np.ndarray) -> np.ndarray:
        return np.stack([np.bincount(inv, weights=a[:, k], minlength=len(counts)) for k in range(3)], axis=1) \
            / counts[:, None]

    return mean(pts), None if cols is None else mean(cols)


def colors_from_image(points, K, image) -> tuple[np.ndarray, np.ndarray]:
    """The colour of every camera-frame point ``(N, 3)`` sampled from the image it projects into (nearest pixel):
    ``(colours (N, 3) in [0, 1], inside (N,) bool)``; points behind the camera or outside the image get grey."""
    pts = np.asarray(points, np.float64)
    img = np.asarray(image)
    if img.ndim != 3 or img.shape[2] < 3:
        raise InputError(None, None, "image", "an (H, W, 3) image", got=img.shape)

    uv, front = project_points(pts, K)
    h, w = img.shape[:2]
    with np.errstate(invalid="ignore"):
        u, v = np.rint(uv[:, 0]), np.rint(uv[:, 1])
        inside = front & (u >= 0) & (u <= w - 1) & (v >= 0) & (v <= h - 1)
    out = np.full((len(pts), 3), 0.6)
    px = img[v[inside].astype(np.int64), u[inside].astype(np.int64), :3].astype(np.float64)
    out[inside] = px / 255.0 if img.dtype.kind in "ui" else px
    return out, inside


@dataclass(frozen=True)
class ScenePoints:
    """The points of one image's 3D view.

    Attributes:
        points: ``(N, 3)`` float32 camera-frame points (metres) after the budget.
        colors: ``(N, 3)`` float32 RGB in [0, 1], or None (then the view colours by depth).
        source: "depth map <file>" or "point cloud <file>".
        n_full: points before downsampling (every valid depth pixel at full resolution, or every file point).
        voxel: voxel edge in metres the budget chose (0: not downsampled).
    """

    points: np.ndarray
    colors: np.ndarray | None
    source: str
    n_full: int
    voxel: float


def _read_rgb(path, size: tuple[int, int] | None = None) -> np.ndarray | None:
    """An image file as ``(H, W, 3)`` uint8 (resized to ``size`` = (W, H) when given); None when unreadable."""
    from PIL import Image

    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
            if size is not None and im.size != size:
                im = im.resize(size, Image.BILINEAR)
            return np.asarray(im)
    except (OSError, ValueError):
        return None


def scene_points(K, *, depth=None, points=None, image=None, image_size: tuple[int, int] | None = None,
                 budget: int = 60_000) -> ScenePoints | None:
    """The coloured point cloud of one image for the 3D view: its depth map back-projected at full resolution when
    there is one (a denser, image-aligned cloud), else its point-cloud file; coloured by the file's colours, else by
    the image; voxel-downsampled to ``budget`` (:func:`voxel_downsample`). None when neither file is given.

    Args:
        K: ``(3, 3)`` intrinsics of the image.
        depth, points, image: paths of the depth map, the point cloud and the image (any may be None).
        image_size: ``(width, height)`` of the image ``K`` belongs to; a depth map of another resolution is
            back-projected with ``K`` scaled to it.
    """
    Km = check_finite_array(K, None, "K", (3, 3))
    if depth is not None:
        d = load_depth(depth)
        Kd = Km
        if image_size is not None and (d.shape[1], d.shape[0]) != tuple(image_size):
            sx, sy = d.shape[1] / image_size[0], d.shape[0] / image_size[1]
            Kd = np.diag([sx, sy, 1.0]) @ Km
        rgb = _read_rgb(image, (d.shape[1], d.shape[0])) if image is not None else None
        out = depth_to_points(d, Kd, colors=rgb)
        pts, cols = out if isinstance(out, tuple) else (out, None)
        src = f"depth map {Path(depth).name}"
    elif points is not None:
        pts, cols = load_point_cloud(points)
        if cols is None and image is not None:
            rgb = _read_rgb(image, tuple(image_size) if image_size is not None else None)
            if rgb is not None:
                cols, _ = colors_from_image(pts, Km, rgb)
        src = f"point cloud {Path(points).name}"
    else:
        return None
    n_full = len(pts)
    edge = voxel_size_for_budget(pts, int(budget))
    pts, cols = voxel_downsample(pts, cols, int(budget), voxel=edge)
    return ScenePoints(points=pts.astype(np.float32), colors=None if cols is None else cols.astype(np.float32),
                       source=src, n_full=int(n_full), voxel=float(edge))


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
