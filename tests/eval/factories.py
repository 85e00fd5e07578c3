"""Small BoxSet factories for evaluator tests (no loaders involved).

    gt = make_boxes(image_id=[1, 1], category=["car", "chair"], center=[(0, 0, 8), (1, 0, 12)])
    pred = make_boxes(image_id=[1], category=["car"], center=[(0, 0, 8.1)], score=[0.9])

Corners come from (centre, dims, yaw) with the project's convention; 2D boxes by projecting with ``K`` unless given.
"""

from __future__ import annotations

import numpy as np

from ov3d_core.geometry.boxes import corners_from_pose, projected_box2d, rotation_y
from ov3d_core.model import BoxSet

K = np.array([[700.0, 0.0, 640.0], [0.0, 700.0, 360.0], [0.0, 0.0, 1.0]])
W, H = 1280, 720


def make_boxes(image_id, category, center, dims=None, yaw=None, score=None, ignore=None, box2d=None,
               depth=None) -> BoxSet:
    """A BoxSet from per-box lists; dims default 1.6 x 1.5 x 4 m ([w, h, l]), yaw 0, score 1, ignore False."""
    image_id = np.asarray(image_id, np.int64).reshape(-1)
    n = len(image_id)
    center = np.asarray(center, np.float64).reshape(n, 3)
    dims = np.tile([1.6, 1.5, 4.0], (n, 1)) if dims is None else np.asarray(dims, np.float64).reshape(n, 3)
    yaw = np.zeros(n) if yaw is None else np.asarray(yaw, np.float64).reshape(n)
    R = rotation_y(yaw)
    corners = corners_from_pose(center, dims, R)
    if box2d is None:
        _, box2d = projected_box2d(corners, K, W, H)
    return BoxSet(image_id=image_id, category=np.asarray(category, dtype=object).reshape(n), center=center,
                  dims=dims, R=R, corners=corners, box2d=np.asarray(box2d, np.float64).reshape(n, 4),
                  depth=center[:, 2].copy() if depth is None else np.asarray(depth, np.float64).reshape(n),
                  score=np.ones(n) if score is None else np.asarray(score, np.float64).reshape(n),
                  ignore=np.zeros(n, bool) if ignore is None else np.asarray(ignore, bool).reshape(n),
                  record=np.arange(n, dtype=np.int64))


def random_scene(rng: np.random.Generator, n_images: int = 8, categories=("car", "chair", "table", "lamp"),
                 gt_per_image: tuple[int, int] = (0, 7), copies: tuple[int, int] = (0, 4), background: int = 4,
                 ignore_rate: float = 0.2) -> tuple[BoxSet, BoxSet]:
    """GT boxes at depths 2..60 m and predictions that are noisy copies (label sometimes wrong), plus background boxes;
    scores are coarse so that ties occur."""
    cats = np.asarray(categories, dtype=object)
    g_img, g_cat, g_ctr, g_dim, g_yaw = [], [], [], [], []
    for img in range(n_images):
        n = rng.integers(*gt_per_image, endpoint=True)
        g_img += [img + 100] * n
        g_cat += list(rng.choice(cats, n))
        z = rng.uniform(2, 60, n)
        g_ctr += list(np.c_[rng.uniform(-0.4, 0.4, n) * z, rng.uniform(-0.1, 0.2, n) * z, z])
        g_dim += list(rng.uniform(0.5, 4.0, (n, 3)))
        g_yaw += list(rng.uniform(-np.pi, np.pi, n))
    g_ctr = np.reshape(g_ctr, (-1, 3))
    gt = make_boxes(g_img, g_cat, g_ctr, np.reshape(g_dim, (-1, 3)), g_yaw,
                    ignore=rng.random(len(g_img)) < ignore_rate)
    p_img, p_cat, p_ctr, p_dim, p_yaw = [], [], [], [], []
    for i in range(len(gt)):
        m = rng.integers(*copies, endpoint=True)
        p_img += [gt.image_id[i]] * m
        wrong = rng.random(m) < 0.25
        p_cat += list(np.where(wrong, rng.choice(cats, m), gt.category[i]))
        p_ctr += list(gt.center[i] + rng.normal(0, 0.15, (m, 3)) * gt.dims[i].max())
        p_dim += list(gt.dims[i] * rng.uniform(0.7, 1.3, (m, 3)))
        p_yaw += list(rng.normal(np.arctan2(-gt.R[i, 2, 0], gt.R[i, 0, 0]), 0.3, m))
    for img in range(n_images):
        z = rng.uniform(2, 60, background)
        p_img += [img + 100] * background
        p_cat += list(rng.choice(cats, background))
        p_ctr += list(np.c_[rng.uniform(-0.4, 0.4, background) * z, np.zeros(background), z])
        p_dim += list(rng.uniform(0.5, 4.0, (background, 3)))
        p_yaw += list(rng.uniform(-np.pi, np.pi, background))
    n = len(p_img)
    pred = make_boxes(p_img, p_cat, np.reshape(p_ctr, (n, 3)), np.reshape(p_dim, (n, 3)), p_yaw,
                      score=rng.integers(1, 8, n) / 8.0)
    return gt, pred
