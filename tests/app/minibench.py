"""A tiny benchmark written in code (Omni3D GT JSON, Cube R-CNN JSON predictions, images, point clouds, a YAML
config): the app's "benchmark config" source, independent of the demo generator.

Two datasets (indoor, outdoor), a few images each, two runs per dataset whose errors are known by construction:
a TP, a mislabelled-but-localised box (a class that is absent from the image, so the target-aware oracle removes it),
a background false positive, a duplicate, and a missed GT.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from ov3d_core.geometry.boxes import corners_from_pose, projected_box2d, rotation_y
from ov3d_core.taxonomy import OMNI3D_NAME_TO_ID

K = np.array([[500.0, 0.0, 320.0], [0.0, 500.0, 240.0], [0.0, 0.0, 1.0]])
W, H = 640, 480

DATASETS = {
    "MiniIndoor": ("indoor", ["chair", "table", "sofa", "bed"]),
    "MiniOutdoor": ("outdoor", ["car", "van", "truck", "pedestrian"]),
}


def _ann(aid, image_id, cat, center, dims, yaw):
    R = rotation_y([yaw])[0]
    corners = corners_from_pose(np.array([center]), np.array([dims]), R[None])
    proj, trunc = projected_box2d(corners, K, W, H)
    return {"id": aid, "image_id": image_id, "dataset_id": 0, "category_id": OMNI3D_NAME_TO_ID[cat],
            "category_name": cat, "valid3D": True, "bbox2D_tight": [-1.0] * 4, "bbox2D_proj": proj[0].tolist(),
            "bbox2D_trunc": trunc[0].tolist(), "bbox3D_cam": corners[0].tolist(), "center_cam": list(center),
            "dimensions": list(dims), "R_cam": R.tolist(), "behind_camera": False, "visibility": 1.0,
            "truncation": 0.0, "segmentation_pts": -1, "lidar_pts": -1, "depth_error": -1}


def _pred(image_id, cat, center, dims, yaw, score):
    R = rotation_y([yaw])[0]
    corners = corners_from_pose(np.array([center]), np.array([dims]), R[None])
    proj, _ = projected_box2d(corners, K)
    x1, y1, x2, y2 = proj[0].tolist()
    return {"image_id": image_id, "category_id": OMNI3D_NAME_TO_ID[cat], "category_name": cat,
            "bbox": [x1, y1, x2 - x1, y2 - y1], "score": score, "depth": center[2], "bbox3D": corners[0].tolist(),
            "center_cam": list(center), "dimensions": list(dims), "pose": R.tolist()}


def _image(path: Path, rng) -> None:
    from PIL import Image

    y = np.linspace(0, 1, H)[:, None, None]
    base = np.array([90, 120, 160]) * (1 - y) + np.array([70, 70, 60]) * y
    img = np.clip(base + rng.normal(0, 6, (H, W, 3)), 0, 255).astype(np.uint8)
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(img).save(path, quality=85)


def _points(path: Path, anns, rng) -> None:
    """A floor plane plus points on every GT box surface, as an ASCII PLY."""
    floor = np.stack([rng.uniform(-4, 4, 3000), np.full(3000, 1.5), rng.uniform(2, 14, 3000)], axis=1)
    parts = [floor]
    for a in anns:
        c = np.array(a["bbox3D_cam"])
        w = rng.dirichlet(np.ones(8), 300)
        parts.append(w @ c)
    pts = np.concatenate(parts)
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = ["ply", "format ascii 1.0", f"element vertex {len(pts)}", "property float x", "property float y",
             "property float z", "end_header"] + [f"{x:.4f} {y:.4f} {z:.4f}" for x, y, z in pts]
    path.write_text("\n".join(lines) + "\n")


def build(root: Path, n_images: int = 4, seed: int = 0) -> Path:
    """Write the mini benchmark under ``root`` and return its ``benchmark.yaml``."""
    root = Path(root)
    rng = np.random.default_rng(seed)
    cfg = {"name": "mini", "cache_dir": ".ov3d_cache", "datasets": [], "runs": []}
    aid = 1
    for d, (name, (env, vocab)) in enumerate(DATASETS.items()):
        big = env == "outdoor"
        images, anns, preds = [], [], {"good": [], "sloppy": []}
        for i in range(n_images):
            image_id = 100 * (d + 1) + i
            images.append({"id": image_id, "dataset_id": 0, "width": W, "height": H,
                           "file_path": f"{name}/images/{image_id}.jpg", "K": K.tolist()})
            _image(root / name / "images" / f"{image_id}.jpg", rng)
            img_anns = []
            for k, cat in enumerate(vocab[:3] if i % 2 == 0 else vocab[:2]):
                dims = [1.8, 1.5, 4.2] if big else [0.6, 0.9, 0.7]
                center = [-2.0 + 2.0 * k + rng.uniform(-0.2, 0.2), 0.6, 8.0 + 2.0 * k if big else 4.0 + k]
                a = _ann(aid, image_id, cat, center, dims, float(rng.uniform(-1, 1)))
                aid += 1
                anns.append(a)
                img_anns.append(a)
            _points(root / name / "points" / f"{image_id}.ply", img_anns, rng)
            a0, a1 = img_anns[0], img_anns[1]
            # good: a near-perfect TP, a mislabelled box on a1, a low FP
            preds["good"].append(_pred(image_id, a0["category_name"], a0["center_cam"], a0["dimensions"], 0.0, 0.95)
                                 | {"pose": a0["R_cam"], "bbox3D": a0["bbox3D_cam"]})
            wrong = vocab[2] if i % 2 else vocab[3]  # odd images have no vocab[2] GT: the oracle removes it
            preds["good"].append(_pred(image_id, wrong, a1["center_cam"], a1["dimensions"], 0.0, 0.8)
                                 | {"pose": a1["R_cam"], "bbox3D": a1["bbox3D_cam"]})
            preds["good"].append(_pred(image_id, vocab[0], [3.0, 0.6, 15.0], [1.0, 1.0, 1.0], 0.0, 0.3))
            if len(img_anns) > 2:  # a correct but less confident box of vocab[2]
                a2 = img_anns[2]
                preds["good"].append(_pred(image_id, vocab[2], a2["center_cam"], a2["dimensions"], 0.0, 0.5)
                                     | {"pose": a2["R_cam"], "bbox3D": a2["bbox3D_cam"]})
            # sloppy: shifted boxes (lower IoU), a duplicate, misses the rest
            shifted = list(np.array(a0["center_cam"]) + [0.15, 0.0, 0.3])
            preds["sloppy"].append(_pred(image_id, a0["category_name"], shifted, a0["dimensions"], 0.2, 0.7))
            preds["sloppy"].append(_pred(image_id, a0["category_name"], a0["center_cam"], a0["dimensions"], 0.0, 0.4))
        gt_doc = {"info": {"id": d, "source": name, "name": name, "split": "test", "version": "0.1", "url": ""},
                  "images": images, "annotations": anns,
                  "categories": [{"id": OMNI3D_NAME_TO_ID[c], "name": c, "supercategory": ""} for c in vocab]}
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "gt.json").write_text(json.dumps(gt_doc))
        cfg["datasets"].append({"name": name, "gt": f"{name}/gt.json", "images": ".", "environment": env,
                                "categories": vocab, "points": f"{name}/points/{{image_id}}.ply"})
        for run, recs in preds.items():
            (root / name / run).mkdir(parents=True, exist_ok=True)
            (root / name / run / "preds.json").write_text(json.dumps(recs))
            cfg["runs"].append({"name": run, "dataset": name, "predictions": f"{name}/{run}/preds.json",
                                "format": "cubercnn-json", "trained_on": ["MiniIndoor"] if run == "good" else []})
    import yaml

    path = root / "benchmark.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path
