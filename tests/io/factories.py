"""Small, consistent Omni3D-format fixtures built in code (reusable by other test modules).

    img = make_image(1)
    ann = make_annotation(10, image_id=1, category="chair", center=(0.5, 0.2, 6.0))
    gt = make_gt_json(tmp_path, images=[img], annotations=[ann])
    pred = make_pred_from_annotation(ann, score=0.9)
    preds = make_pred_json(tmp_path, [pred])

Every annotation is self-consistent: ``bbox3D_cam`` from (centre, dims, R) with the project's corner convention and
``bbox2D_proj`` / ``bbox2D_trunc`` by projecting with the image's K. Pass ``field=DROP`` to leave a field out.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ov3d_core.geometry.boxes import corners_from_pose, projected_box2d, rotation_y
from ov3d_core.taxonomy import OMNI3D_NAME_TO_ID

DROP = object()  # sentinel: leave the field out of the record

DEFAULT_K = ((500.0, 0.0, 320.0), (0.0, 500.0, 240.0), (0.0, 0.0, 1.0))
DEFAULT_W, DEFAULT_H = 640, 480


def _apply(rec: dict, overrides: dict) -> dict:
    for k, v in overrides.items():
        if v is DROP:
            rec.pop(k, None)
        else:
            rec[k] = v
    for k in [k for k, v in rec.items() if v is DROP]:  # named parameters given as DROP
        del rec[k]
    return rec


def make_image(image_id: int = 1, *, width: int = DEFAULT_W, height: int = DEFAULT_H, K=DEFAULT_K,
               file_path: str | None = None, dataset_id: int = 0, **overrides) -> dict:
    rec = {"id": image_id, "dataset_id": dataset_id, "width": width, "height": height,
           "file_path": file_path if file_path is not None else f"images/{image_id:06d}.jpg",
           "K": np.asarray(K, np.float64).tolist() if not isinstance(K, str) and K is not DROP else K,
           "src_90_rotate": 0, "src_flagged": False}
    return _apply(rec, overrides)


def make_annotation(ann_id: int, image_id: int = 1, *, category: str = "chair", category_id: int | None = None,
                    center=(0.0, 0.0, 5.0), dims=(1.0, 1.0, 1.0), yaw: float = 0.0, R=None, K=DEFAULT_K,
                    width: int = DEFAULT_W, height: int = DEFAULT_H, **overrides) -> dict:
    """A full Omni3D annotation (every §1.5 field); ``overrides`` replace fields (``DROP`` removes one)."""
    R = rotation_y([yaw])[0] if R is None else np.asarray(R, np.float64)
    center = np.asarray(center, np.float64)
    dims = np.asarray(dims, np.float64)
    corners = corners_from_pose(center[None], dims[None], R[None])
    proj, trunc = projected_box2d(corners, np.asarray(K, np.float64), width, height)
    cid = OMNI3D_NAME_TO_ID.get(category, 999) if category_id is None else category_id
    rec = {
        "id": ann_id, "image_id": image_id, "dataset_id": 0, "category_id": cid, "category_name": category,
        "valid3D": True, "bbox2D_tight": [-1.0, -1.0, -1.0, -1.0], "bbox2D_proj": proj[0].tolist(),
        "bbox2D_trunc": trunc[0].tolist(), "bbox3D_cam": corners[0].tolist(), "center_cam": center.tolist(),
        "dimensions": dims.tolist(), "R_cam": R.tolist(), "behind_camera": bool((corners[0, :, 2] <= 0).any()),
        "visibility": 1.0, "truncation": 0.0, "segmentation_pts": -1, "lidar_pts": -1, "depth_error": -1,
    }
    return _apply(rec, overrides)


def make_categories(names) -> list[dict]:
    return [{"id": OMNI3D_NAME_TO_ID[n], "name": n, "supercategory": "nan"} for n in names]


def make_gt_json(tmp_path, images=None, annotations=None, *, categories=None, info=None, name: str = "gt.json",
                 raw: dict | None = None) -> Path:
    """Write an Omni3D GT file and return its path. ``categories`` default: the names used by the annotations
    (Omni3D ids); ``info`` default ``{"name": "Test", "id": 0}``; ``raw`` replaces the whole document."""
    images = [make_image(1)] if images is None else images
    annotations = [] if annotations is None else annotations
    if categories is None:
        names = []
        for a in annotations:
            n = a.get("category_name")
            if n in OMNI3D_NAME_TO_ID and n not in names:
                names.append(n)
        categories = make_categories(names)
    doc = raw if raw is not None else {
        "info": {"id": 0, "source": "Test", "name": "Test", "split": "test", "version": "0.1", "url": ""}
        if info is None else info,
        "images": images, "categories": categories, "annotations": annotations}
    path = Path(tmp_path) / name
    path.write_text(json.dumps(doc))
    return path


def make_pred(image_id: int = 1, *, category_id: int | None = 18, center=(0.0, 0.0, 5.0), dims=(1.0, 1.0, 1.0),
              yaw: float = 0.0, score: float = 0.9, K=DEFAULT_K, **overrides) -> dict:
    """A Cube R-CNN JSON prediction record with every field (bbox XYWH from the projected box)."""
    R = rotation_y([yaw])[0]
    center = np.asarray(center, np.float64)
    corners = corners_from_pose(center[None], np.asarray(dims, np.float64)[None], R[None])
    proj, _ = projected_box2d(corners, np.asarray(K, np.float64))
    x1, y1, x2, y2 = proj[0].tolist()
    uvw = np.asarray(K, np.float64) @ center
    rec = {"image_id": image_id, "category_id": category_id, "bbox": [x1, y1, x2 - x1, y2 - y1], "score": score,
           "depth": float(center[2]), "bbox3D": corners[0].tolist(), "center_cam": center.tolist(),
           "center_2D": (uvw[:2] / uvw[2]).tolist(), "dimensions": list(map(float, dims)), "pose": R.tolist()}
    if category_id is None:
        rec.pop("category_id")
    return _apply(rec, overrides)


def make_pred_from_annotation(ann: dict, score: float = 0.9, **overrides) -> dict:
    """A perfect prediction of a GT annotation made by ``make_annotation``."""
    x1, y1, x2, y2 = ann["bbox2D_proj"]
    rec = {"image_id": ann["image_id"], "category_id": ann["category_id"], "bbox": [x1, y1, x2 - x1, y2 - y1],
           "score": score, "depth": ann["center_cam"][2], "bbox3D": ann["bbox3D_cam"],
           "center_cam": ann["center_cam"], "dimensions": ann["dimensions"], "pose": ann["R_cam"]}
    return _apply(rec, overrides)


def make_pred_json(tmp_path, preds, *, name: str = "preds.json") -> Path:
    path = Path(tmp_path) / name
    path.write_text(json.dumps(preds))
    return path


def file_digest(path) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
