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

Without a render (``--annotations-only``) visibility is estimated with a coarse z-buffer (4-pixel cells) over the
objects' projected 2D boxes, nearest centre first, and the mask- and sensor-based fields are -1 (unknown).

``truncation`` follows Omni3D: 1 - area(projected box inside the image) / area(projected box) (1 when no corner is
in front of the camera). Objects whose projected box misses the image entirely are not annotated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ov3d_core.demo.jsonfast import ANN_TEMPLATE, jstr
from ov3d_core.demo.scenes import Scene, rotate
from ov3d_core.geometry.boxes import corners_from_pose, project_points

__all__ = ["GTObject", "annotate", "projected_box2d_fast"]

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


def projected_box2d_fast(corners: np.ndarray, K: np.ndarray, width: float, height: float
                         ) -> tuple[np.ndarray, np.ndarray]:
    """``ov3d_core.geometry.boxes.projected_box2d(corners, K, width, height)`` with fewer numpy calls (it runs a dozen
    times per image): the same projection (``project_points``) and the same exact operations (``nanmin`` is
    ``fmin.reduce``, both clips one ``clip`` ufunc call), so the values agree bit for bit."""
    corners = np.asarray(corners, dtype=np.float64).reshape(-1, 8, 3)
    uv, front = project_points(corners, K)
    f3 = front[..., None]
    proj = np.concatenate([np.fmin.reduce(np.where(f3, uv, np.inf), axis=1),
                           np.fmax.reduce(np.where(f3, uv, -np.inf), axis=1)], axis=1)
    none_front = ~front.any(axis=1)
    if none_front.any():
        proj[none_front] = -1.0
    hi = np.array([width - 1.0, height - 1.0, width - 1.0, height - 1.0])
    trunc = np.clip(proj, 0.0, hi)
    off = none_front | (proj[:, 2:] < 0).any(axis=1) | (proj[:, :2] > hi[:2]).any(axis=1) | \
        (trunc[:, 2:] <= trunc[:, :2]).any(axis=1)
    if off.any():
        trunc[off] = -1.0
    return proj, trunc


def _zbuffer_visibility(boxes: np.ndarray, depth: np.ndarray, width: int, height: int, stride: int = 4) -> np.ndarray:
    """Visibility of objects from a coarse z-buffer over their projected boxes (``boxes`` XYXY clipped to the image,
    nearest centre first): the fraction of an object's grid cells not covered by a nearer object."""
    gw, gh = (width + stride - 1) // stride, (height + stride - 1) // stride
    occupied = np.zeros((gh, gw), bool)
    vis = np.ones(len(boxes))
    for i in np.argsort(depth, kind="stable"):
        x0, y0, x1, y1 = boxes[i]
        c0, r0 = int(x0 // stride), int(y0 // stride)
        c1, r1 = int(x1 // stride) + 1, int(y1 // stride) + 1
        sub = occupied[r0:r1, c0:c1]
        if sub.size:
            vis[i] = 1.0 - np.count_nonzero(sub) / sub.size  # == sub.mean(): an exact count over the size
            sub[...] = True
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


def _annotation_texts(scene: Scene, C, D, Rm, corners, proj, trunc, tight, visibility, truncation, depth_error,
                      behind, seg_pts, lidar_pts, ann_ids, cats) -> list[str] | None:
    """The JSON texts of the annotation records (the dict records of :func:`annotate` through ``json.dumps``): one
    ``%`` formatting per record of the same rounded values (None if any is not finite: the dicts and json then)."""
    n = len(ann_ids)
    M = np.concatenate([Rm.reshape(n, 9), proj.round(4), tight.round(2), trunc.round(4),
                        corners.round(ROUND).reshape(n, 24), C, D, truncation.round(4)[:, None],
                        visibility.round(4)[:, None], depth_error.round(4)[:, None]], axis=1)
    if not np.isfinite(M).all():
        return None
    spec = scene.spec
    image_id, dataset_id = int(scene.image_id), int(spec.dataset_id)
    names = {c: (int(spec.category_id(c)), jstr(c)) for c in set(cats)}
    out = []
    for k, m in enumerate(M.tolist()):
        cid, name = names[cats[k]]
        derr = repr(m[53]) if depth_error[k] >= 0 else "-1"
        out.append(ANN_TEMPLATE % (*m[:45], "true" if behind[k] else "false", cid, name, *m[45:48], dataset_id, derr,
                                   *m[48:51], int(ann_ids[k]), image_id, int(lidar_pts[k]), int(seg_pts[k]), m[51],
                                   m[52]))
    return out


def annotate(scene: Scene, render=None, json_records: bool = False) -> tuple[list, list[GTObject]]:
    """Omni3D annotation records (dicts, JSON-ready, in object order) and the matching ``GTObject`` list.
    ``json_records``: the records as their JSON texts instead (``json.dumps(record, sort_keys=True,
    separators=(",", ":"), ensure_ascii=False)``, written without the dicts)."""
    spec = scene.spec
    K, W, H = scene.K, spec.width, spec.height
    idx = scene.annotated()
    if not idx:
        return [], []
    c_all, R_all = scene.poses(idx)
    C = c_all.round(ROUND)
    D = np.array([scene.objects[i].shape.dims for i in idx]).round(ROUND)
    Rm = R_all.round(ROUND)
    corners = corners_from_pose(C, D, Rm)
    proj, trunc = projected_box2d_fast(corners, K, W, H)
    keep = np.flatnonzero(trunc[:, 0] >= 0)  # objects whose projected box misses the image are not annotated
    idx = [idx[k] for k in keep]
    C, D, Rm, corners, proj, trunc = C[keep], D[keep], Rm[keep], corners[keep], proj[keep], trunc[keep]
    n = len(idx)
    behind = (corners[:, :, 2] <= 0).any(axis=1)
    # np.clip(x, 0, None) is np.maximum(x, 0), np.clip(x, 0.0, 1.0) the clip ufunc (as numpy dispatches them)
    area_p = np.maximum(proj[:, 2] - proj[:, 0], 0) * np.maximum(proj[:, 3] - proj[:, 1], 0)
    area_t = np.maximum(trunc[:, 2] - trunc[:, 0], 0) * np.maximum(trunc[:, 3] - trunc[:, 1], 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        truncation = np.where(area_p > 0, np.clip(1.0 - area_t / area_p, 0.0, 1.0), 1.0)
    tight = np.full((n, 4), -1.0)
    seg_pts = np.full(n, -1, np.int64)
    lidar_pts = np.full(n, -1, np.int64)
    depth_error = np.full(n, -1.0)
    visible_px = np.full(n, -1, np.int64)
    if render is None:
        visibility = _zbuffer_visibility(trunc, C[:, 2], W, H)
    else:
        visibility = np.array([float(render.visibility[i]) for i in idx])
        flat = render.instance.ravel()  # pixel lists per object, from one sort of the instance map
        pix = np.flatnonzero(flat >= 0)
        lab = flat[pix]
        order = np.argsort(lab, kind="stable")
        pix, lab = pix[order], lab[order]
        ids = np.asarray(idx)
        starts, ends = np.searchsorted(lab, ids, "left"), np.searchsorted(lab, ids, "right")
        visible_px = (ends - starts).astype(np.int64)
        pts = render.points
        for k, i in enumerate(idx):
            p_i = pix[starts[k]:ends[k]]
            ys, xs = p_i // W, p_i % W
            if len(xs):
                tight[k] = (xs.min(), ys.min(), xs.max(), ys.max())
            if spec.environment == "indoor":
                seg_pts[k] = len(xs)
                if len(xs):
                    step = max(1, len(xs) // 400)
                    yy, xx = ys[::step], xs[::step]
                    dirs = np.stack([(xx - K[0, 2]) / K[0, 0], (yy - K[1, 2]) / K[1, 1], np.ones(len(xx))], -1)
                    zb = _box_depth(C[k], D[k], Rm[k], dirs)
                    err = np.abs(render.depth[yy, xx] - zb)
                    depth_error[k] = float(np.nanmean(err)) if np.isfinite(err).any() else -1.0
            elif len(pts):
                local = rotate(pts.astype(np.float64) - C[k], Rm[k].T)  # R^T (p - c)
                half = 0.5 * D[k][[2, 1, 0]]
                inside = (np.abs(local[:, 0]) <= half[0]) & (np.abs(local[:, 2]) <= half[2]) & \
                    (np.abs(local[:, 1]) <= half[1]) & (local[:, 1] < half[1] - 0.03)  # no ground returns
                lidar_pts[k] = int(inside.sum())
            else:
                lidar_pts[k] = 0
    ann_ids = [spec.ann_id_base + scene.index * 100 + k + 1 for k in range(n)]
    cats = [scene.objects[i].category for i in idx]
    texts = _annotation_texts(scene, C, D, Rm, corners, proj, trunc, tight, visibility, truncation, depth_error,
                              behind, seg_pts, lidar_pts, ann_ids, cats) if json_records else None
    if texts is None:
        L = {"tight": tight.round(2).tolist(), "proj": proj.round(4).tolist(),
             "trunc": trunc.round(4).tolist(), "corners": corners.round(ROUND).tolist(), "C": C.tolist(),
             "D": D.tolist(), "R": Rm.tolist(), "vis": visibility.round(4).tolist(),
             "trn": truncation.round(4).tolist(), "derr": depth_error.round(4).tolist()}
    records, objs = [], []
    for k, i in enumerate(idx):
        o = scene.objects[i]
        if texts is not None:
            records.append(texts[k])
        else:
            records.append({
                "id": int(ann_ids[k]), "image_id": int(scene.image_id), "dataset_id": int(spec.dataset_id),
                "category_id": int(spec.category_id(cats[k])), "category_name": cats[k],
                "valid3D": True, "behind_camera": bool(behind[k]),
                "bbox2D_tight": L["tight"][k], "bbox2D_proj": L["proj"][k], "bbox2D_trunc": L["trunc"][k],
                "bbox3D_cam": L["corners"][k], "center_cam": L["C"][k], "dimensions": L["D"][k], "R_cam": L["R"][k],
                "visibility": L["vis"][k], "truncation": L["trn"][k],
                "segmentation_pts": int(seg_pts[k]), "lidar_pts": int(lidar_pts[k]),
                "depth_error": L["derr"][k] if depth_error[k] >= 0 else -1,
            })
        objs.append(GTObject(ann_id=ann_ids[k], obj_index=i, category=cats[k], center=C[k], dims=D[k], R=Rm[k],
                             corners=corners[k], proj=proj[k], trunc=trunc[k], tight=tight[k],
                             visibility=float(visibility[k]), truncation=float(truncation[k]),
                             behind=bool(behind[k]), visible_px=int(visible_px[k]), caption=o.shape.caption,
                             noun=o.shape.noun))
    return records, objs
