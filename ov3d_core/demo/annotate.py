"""Omni3D ground-truth annotations of a demo scene (reference/omni3d_protocol.md §1.5).

Every field is filled: boxes come from the object pose through ``ov3d_core.geometry.boxes`` (``corners_from_pose``,
``projected_box2d``), so ``bbox3D_cam`` is consistent with (``center_cam``, ``dimensions``, ``R_cam``) by
construction. With a render:

- ``bbox2D_tight``: bounds of the visible instance mask (pixel centres; -1 when nothing is visible);
- ``visibility``: visible pixels / pixels of the object rendered alone (inside its projected box);
- ``segmentation_pts`` (indoor): visible instance pixels; ``lidar_pts`` (outdoor): LiDAR points inside the box
  (ground returns at the very bottom of the box excluded);
- ``depth_error`` (indoor): mean |depth map - depth of the GT cuboid| over the visible pixels (the L1 between the
  depth map and the rendered cuboid, as Omni3D describes it); -1 outdoors.

Without a render (``--annotations-only``) visibility is estimated with a coarse z-buffer over the boxes' projected
silhouettes (convex hulls, nearest centre first), and the mask- and sensor-based fields are -1 (unknown).

``truncation`` follows Omni3D: 1 - area(projected box inside the image) / area(projected box) (1 when no corner is
in front of the camera). Objects whose projected box misses the image entirely are not annotated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ov3d_core.demo.scenes import Scene, rotate
from ov3d_core.geometry.boxes import corners_from_pose, projected_box2d

#: Decimal places written to JSON (metres, pixels, rotations).
ROUND = 6


@dataclass(eq=False)
class GTObject:
    """One annotated object with everything the detectors and crop captions need (not written as is)."""

    ann_id: int
    obj_index: int  # index into scene.objects
    category: str
    center: np.ndarray
    dims: np.ndarray
    R: np.ndarray
    corners: np.ndarray
    proj: np.ndarray  # bbox2D_proj XYXY
    trunc: np.ndarray  # bbox2D_trunc XYXY
    tight: np.ndarray  # bbox2D_tight XYXY or -1
    visibility: float
    truncation: float
    behind: bool
    visible_px: int
    caption: str
    noun: str


def _r(x, nd=ROUND):
    return np.round(np.asarray(x, np.float64), nd).tolist()


def _hull(pts: np.ndarray) -> np.ndarray:
    """Convex hull (counter-clockwise) of a few 2D points (monotone chain)."""
    pts = np.unique(np.round(pts, 6), axis=0)
    if len(pts) < 3:
        return pts
    pts = pts[np.lexsort((pts[:, 1], pts[:, 0]))]

    def cross(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    lower, upper = [], []
    for p in pts:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], p) <= 0:
            lower.pop()
        lower.append(p)
    for p in pts[::-1]:
        while len(upper) >= 2 and cross(upper[-2], upper[-1], p) <= 0:
            upper.pop()
        upper.append(p)
    return np.array(lower[:-1] + upper[:-1])


def _zbuffer_visibility(items, K, width, height, stride=4) -> np.ndarray:
    """Visibility of boxes from their projected silhouettes: items = [(corners (8, 3), centre depth)]."""
    gx = np.arange(stride / 2, width, stride)
    gy = np.arange(stride / 2, height, stride)
    occupied = np.zeros((len(gy), len(gx)), bool)
    vis = np.full(len(items), -1.0)
    order = np.argsort([d for _, d in items], kind="stable")
    for i in order:
        corners = items[i][0]
        front = corners[:, 2] > 0.2
        if not front.any():
            vis[i] = 0.0
            continue
        uv = corners[front] @ K.T
        uv = uv[:, :2] / uv[:, 2:3]
        hull = _hull(uv)
        if len(hull) < 3:
            vis[i] = 0.0
            continue
        x0, x1 = np.searchsorted(gx, hull[:, 0].min()), np.searchsorted(gx, hull[:, 0].max(), "right")
        y0, y1 = np.searchsorted(gy, hull[:, 1].min()), np.searchsorted(gy, hull[:, 1].max(), "right")
        if x1 <= x0 or y1 <= y0:
            vis[i] = 1.0  # smaller than one grid cell: assume visible
            continue
        X, Y = np.meshgrid(gx[x0:x1], gy[y0:y1])
        inside = np.ones(X.shape, bool)
        for k in range(len(hull)):
            a, b = hull[k], hull[(k + 1) % len(hull)]
            inside &= (b[0] - a[0]) * (Y - a[1]) - (b[1] - a[1]) * (X - a[0]) >= 0
        n_in = int(inside.sum())
        if n_in == 0:
            vis[i] = 1.0
            continue
        sub = occupied[y0:y1, x0:x1]
        vis[i] = float((inside & ~sub).sum()) / n_in
        sub |= inside
    return vis


def _box_depth(center, dims, R, dirs) -> np.ndarray:
    """Camera z where rays from the origin along ``dirs`` (n, 3) with z = 1 enter the box (NaN if missed)."""
    half = 0.5 * np.array([dims[2], dims[1], dims[0]])
    o = -R.T @ center
    d = dirs @ R  # R^T d per row
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (-half - o) / d
        t2 = (half - o) / d
    tn = np.nanmax(np.minimum(t1, t2), axis=1)
    tf = np.nanmin(np.maximum(t1, t2), axis=1)
    return np.where((tn <= tf) & (tf > 0), np.maximum(tn, 0), np.nan)


def annotate(scene: Scene, render=None) -> tuple[list[dict], list[GTObject]]:
    """Omni3D annotation records (dicts, JSON-ready, in object order) and the matching ``GTObject`` list."""
    spec = scene.spec
    K, W, H = scene.K, spec.width, spec.height
    cand = []
    for i in scene.annotated():
        o = scene.objects[i]
        c, R = scene.object_pose(o)
        c, dims, R = np.round(c, ROUND), np.round(o.shape.dims, ROUND), np.round(R, ROUND)
        corners = corners_from_pose(c, dims, R)[0]
        proj, trunc = projected_box2d(corners[None], K, W, H)
        if trunc[0, 0] < 0:
            continue
        cand.append((i, o, c, dims, R, corners, proj[0], trunc[0]))
    if render is None:
        zvis = _zbuffer_visibility([(x[5], x[2][2]) for x in cand], K, W, H)
    records, objs = [], []
    if render is not None:  # pixel lists per object, from one sort of the instance map
        flat = render.instance.ravel()
        pix = np.flatnonzero(flat >= 0)
        lab = flat[pix]
        order = np.argsort(lab, kind="stable")
        pix, lab = pix[order], lab[order]
        ids = np.arange(len(scene.objects))
        starts, ends = np.searchsorted(lab, ids, "left"), np.searchsorted(lab, ids, "right")
    for k, (i, o, c, dims, R, corners, proj, trunc) in enumerate(cand):
        ann_id = spec.ann_id_base + scene.index * 100 + k + 1
        behind = bool((corners[:, 2] <= 0).any())
        area_p = max(proj[2] - proj[0], 0) * max(proj[3] - proj[1], 0)
        area_t = max(trunc[2] - trunc[0], 0) * max(trunc[3] - trunc[1], 0)
        truncation = 1.0 - area_t / area_p if area_p > 0 else 1.0
        truncation = float(np.clip(truncation, 0.0, 1.0))
        tight = np.full(4, -1.0)
        seg_pts = lidar_pts = -1
        depth_error = -1.0
        visible_px = -1
        if render is not None:
            visibility = float(render.visibility[i])
            p_i = pix[starts[i]:ends[i]]
            ys, xs = p_i // W, p_i % W
            visible_px = int(len(xs))
            if visible_px:
                tight = np.array([xs.min(), ys.min(), xs.max(), ys.max()], float)
            if spec.environment == "indoor":
                seg_pts = visible_px
                if visible_px:
                    step = max(1, visible_px // 400)
                    yy, xx = ys[::step], xs[::step]
                    dirs = np.stack([(xx - K[0, 2]) / K[0, 0], (yy - K[1, 2]) / K[1, 1], np.ones(len(xx))], -1)
                    zb = _box_depth(c, dims, R, dirs)
                    err = np.abs(render.depth[yy, xx] - zb)
                    depth_error = float(np.nanmean(err)) if np.isfinite(err).any() else -1.0
            else:
                pts = render.points
                if len(pts):
                    local = rotate(pts.astype(np.float64) - c, R.T)  # R^T (p - c)
                    half = 0.5 * np.array([dims[2], dims[1], dims[0]])
                    inside = (np.abs(local[:, 0]) <= half[0]) & (np.abs(local[:, 2]) <= half[2]) & \
                        (np.abs(local[:, 1]) <= half[1]) & (local[:, 1] < half[1] - 0.03)
                    lidar_pts = int(inside.sum())
                else:
                    lidar_pts = 0
        else:
            visibility = float(zvis[k])
        rec = {
            "id": int(ann_id), "image_id": int(scene.image_id), "dataset_id": int(spec.dataset_id),
            "category_id": int(spec.category_id(o.category)), "category_name": o.category,
            "valid3D": True, "behind_camera": behind,
            "bbox2D_tight": _r(tight, 2), "bbox2D_proj": _r(proj, 4), "bbox2D_trunc": _r(trunc, 4),
            "bbox3D_cam": _r(corners), "center_cam": _r(c), "dimensions": _r(dims), "R_cam": _r(R),
            "visibility": round(visibility, 4), "truncation": round(truncation, 4),
            "segmentation_pts": int(seg_pts), "lidar_pts": int(lidar_pts),
            "depth_error": round(depth_error, 4) if depth_error >= 0 else -1,
        }
        records.append(rec)
        objs.append(GTObject(ann_id=ann_id, obj_index=i, category=o.category, center=c, dims=dims, R=R,
                             corners=corners, proj=proj, trunc=trunc, tight=tight, visibility=visibility,
                             truncation=truncation, behind=behind, visible_px=visible_px,
                             caption=o.shape.caption, noun=o.shape.noun))
    return records, objs
