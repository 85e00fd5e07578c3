"""Hand-built pair arrays for the diagnostics tests (no geometry: IoUs are planted)."""

from __future__ import annotations

import numpy as np

from ov3d_core.eval.labels import LabelView
from ov3d_core.eval.pairs import Pairs


def make_pairs(triples, n_gt: int, n_pred: int, iou2d=None) -> Pairs:
    """Pairs from ``[(gt_row, pred_row, iou3d), ...]``, sorted by (gt, pred) and checked.

    ``iou2d`` defaults to the 3D IoU; ``dist`` is 0.
    """
    triples = sorted(triples, key=lambda t: (t[0], t[1]))
    gt = np.array([t[0] for t in triples], np.int64)
    pred = np.array([t[1] for t in triples], np.int64)
    iou = np.array([t[2] for t in triples], np.float64)
    p = Pairs(gt, pred, iou, iou if iou2d is None else np.asarray(iou2d, np.float64), np.zeros(len(gt)), n_gt,
              n_pred)
    p.check()
    return p


def make_view(labels, scores, vocabulary, keep=None) -> LabelView:
    labels = np.asarray(labels, np.int64)
    keep = np.ones(len(labels), bool) if keep is None else np.asarray(keep, bool)
    return LabelView(labels, np.asarray(scores, np.float64), keep, tuple(vocabulary))


_K = np.array([[700.0, 0.0, 640.0], [0.0, 700.0, 360.0], [0.0, 0.0, 1.0]])


def make_boxes(image_id, category, center, dims, yaw, score=None, ignore=None):
    """A BoxSet with real geometry (corners from pose, 2D boxes by projection)."""
    from ov3d_core.geometry.boxes import corners_from_pose, projected_box2d, rotation_y
    from ov3d_core.model import BoxSet

    image_id = np.asarray(image_id, np.int64)
    n = len(image_id)
    center = np.asarray(center, np.float64).reshape(n, 3)
    dims = np.asarray(dims, np.float64).reshape(n, 3)
    R = rotation_y(np.asarray(yaw, np.float64).reshape(n))
    corners = corners_from_pose(center, dims, R)
    _, box2d = projected_box2d(corners, _K, 1280, 720)
    return BoxSet(image_id=image_id, category=np.asarray(category, dtype=object), center=center, dims=dims, R=R,
                  corners=corners, box2d=np.asarray(box2d, np.float64).reshape(n, 4), depth=center[:, 2].copy(),
                  score=np.ones(n) if score is None else np.asarray(score, np.float64),
                  ignore=np.zeros(n, bool) if ignore is None else np.asarray(ignore, bool),
                  record=np.arange(n, dtype=np.int64))


def random_scene(seed: int, n_images: int = 12, vocabulary=("car", "van", "truck", "chair", "table")):
    """GT boxes and noisy prediction copies (a quarter mislabelled) plus background boxes."""
    rng = np.random.default_rng(seed)
    cats = np.asarray(vocabulary, dtype=object)
    g = {"img": [], "cat": [], "ctr": [], "dim": [], "yaw": []}
    for img in range(n_images):
        n = int(rng.integers(0, 6))
        z = rng.uniform(3, 40, n)
        g["img"] += [img] * n
        g["cat"] += list(rng.choice(cats, n))
        g["ctr"] += list(np.c_[rng.uniform(-0.3, 0.3, n) * z, rng.uniform(-0.05, 0.1, n) * z, z])
        g["dim"] += list(rng.uniform(0.8, 4.0, (n, 3)))
        g["yaw"] += list(rng.uniform(-np.pi, np.pi, n))
    ng = len(g["img"])
    gt = make_boxes(g["img"], g["cat"], np.reshape(g["ctr"], (ng, 3)), np.reshape(g["dim"], (ng, 3)), g["yaw"],
                    ignore=rng.random(ng) < 0.15)
    p = {"img": [], "cat": [], "ctr": [], "dim": [], "yaw": []}
    for i in range(ng):
        m = int(rng.integers(0, 4))
        p["img"] += [gt.image_id[i]] * m
        p["cat"] += list(np.where(rng.random(m) < 0.25, rng.choice(cats, m), gt.category[i]))
        p["ctr"] += list(gt.center[i] + rng.normal(0, 0.1, (m, 3)) * gt.dims[i].max())
        p["dim"] += list(gt.dims[i] * rng.uniform(0.8, 1.2, (m, 3)))
        p["yaw"] += list(np.full(m, g["yaw"][i]) + rng.normal(0, 0.2, m))
    for img in range(n_images):
        z = rng.uniform(3, 40, 2)
        p["img"] += [img] * 2
        p["cat"] += list(rng.choice(cats, 2))
        p["ctr"] += list(np.c_[rng.uniform(-0.3, 0.3, 2) * z, np.zeros(2), z])
        p["dim"] += list(rng.uniform(0.8, 4.0, (2, 3)))
        p["yaw"] += list(rng.uniform(-np.pi, np.pi, 2))
    n = len(p["img"])
    pred = make_boxes(p["img"], p["cat"], np.reshape(p["ctr"], (n, 3)), np.reshape(p["dim"], (n, 3)), p["yaw"],
                      score=rng.integers(1, 10, n) / 10.0)
    return gt, pred
