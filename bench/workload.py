"""An Omni3D-scale synthetic evaluation workload, built in memory as BoxSets (no files).

Default: 5,000 images, about 10 GT and 100 predictions per image (50k GT, 500k predictions), 38 categories (the SUN
RGB-D vocabulary, Zipf-like frequencies), depths 1.5-60 m so every depth range is populated, 15 % ignored GT.
Predictions are noisy copies of GT (centre noise growing with depth, size and yaw noise; 75 % keep the GT label),
near-duplicates of those copies, and background boxes filling each image up to its budget; scores are uniform random.

    from bench.workload import build_workload
    w = build_workload(n_images=5000, seed=0)
    w.gt, w.pred, w.vocabulary
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ov3d_core.geometry.boxes import corners_from_pose, projected_box2d, rotation_y  # noqa: E402
from ov3d_core.model import BoxSet  # noqa: E402
from ov3d_core.taxonomy import SUBSET_PRESETS  # noqa: E402

K = np.array([[730.0, 0.0, 320.0], [0.0, 730.0, 240.0], [0.0, 0.0, 1.0]])
W, H = 640, 480


@dataclass(frozen=True, eq=False)
class Workload:
    gt: BoxSet
    pred: BoxSet
    vocabulary: tuple[str, ...]
    n_images: int

    def describe(self) -> str:
        return (f"{self.n_images} images, {len(self.gt)} GT ({int(self.gt.ignore.sum())} ignored), "
                f"{len(self.pred)} predictions, {len(self.vocabulary)} categories")


def _boxes(image_id, category, center, dims, yaw, score, ignore) -> BoxSet:
    R = rotation_y(yaw)
    corners = corners_from_pose(center, dims, R)
    _, box2d = projected_box2d(corners, K, W, H)
    n = len(image_id)
    return BoxSet(image_id=image_id.astype(np.int64), category=category, center=center, dims=dims, R=R,
                  corners=corners, box2d=box2d, depth=center[:, 2].copy(), score=score, ignore=ignore,
                  record=np.arange(n, dtype=np.int64))


def build_workload(n_images: int = 5000, gt_per_image: float = 10.0, pred_per_image: int = 100,
                   n_categories: int = 38, copies_per_gt: float = 4.0, duplicate_rate: float = 0.15,
                   label_noise: float = 0.25, ignore_rate: float = 0.15, seed: int = 0) -> Workload:
    """Build the workload (vectorised; about a second for the default size)."""
    rng = np.random.default_rng(seed)
    vocab = SUBSET_PRESETS["SUNRGBD"][:n_categories]
    if len(vocab) < n_categories:
        vocab = vocab + tuple(f"class_{i}" for i in range(len(vocab), n_categories))
    freq = 1.0 / np.arange(1, n_categories + 1) ** 0.8
    freq /= freq.sum()
    names = np.asarray(vocab, dtype=object)

    # ground truth
    n_gt_img = rng.poisson(gt_per_image, n_images)
    g_img = np.repeat(np.arange(n_images), n_gt_img) + 1000
    n_gt = len(g_img)
    z = rng.uniform(1.5, 60.0, n_gt)
    g_ctr = np.c_[rng.uniform(-0.45, 0.45, n_gt) * z, rng.uniform(-0.1, 0.3, n_gt) * z, z]
    g_dim = np.exp(rng.normal(np.log([0.8, 1.0, 1.2]), 0.5, (n_gt, 3)))
    g_yaw = rng.uniform(-np.pi, np.pi, n_gt)
    g_cat = rng.choice(n_categories, n_gt, p=freq)
    gt = _boxes(g_img, names[g_cat], g_ctr, g_dim, g_yaw, np.ones(n_gt), rng.random(n_gt) < ignore_rate)

    # noisy copies of GT (labels mostly right)
    n_cp = rng.poisson(copies_per_gt, n_gt)
    src = np.repeat(np.arange(n_gt), n_cp)
    m = len(src)
    depth = g_ctr[src, 2:3]
    c_ctr = g_ctr[src] + rng.normal(0, 1, (m, 3)) * (0.03 + 0.01 * depth) * [1.0, 0.5, 1.0]
    c_dim = g_dim[src] * np.exp(rng.normal(0, 0.15, (m, 3)))
    c_yaw = g_yaw[src] + rng.normal(0, 0.25, m)
    c_cat = np.where(rng.random(m) < label_noise, rng.choice(n_categories, m, p=freq), g_cat[src])
    c_img = g_img[src]
    # near-duplicates of some copies
    dup = rng.random(m) < duplicate_rate
    d_ctr = c_ctr[dup] + rng.normal(0, 0.02, (int(dup.sum()), 3))
    p_img = [c_img, c_img[dup]]
    p_ctr = [c_ctr, d_ctr]
    p_dim = [c_dim, c_dim[dup]]
    p_yaw = [c_yaw, c_yaw[dup]]
    p_cat = [c_cat, c_cat[dup]]
    # background boxes up to the per-image budget
    used = np.bincount(np.concatenate(p_img) - 1000, minlength=n_images)
    n_bg = np.maximum(pred_per_image - used, 0)
    b_img = np.repeat(np.arange(n_images), n_bg) + 1000
    nb = len(b_img)
    bz = rng.uniform(1.5, 60.0, nb)
    p_img.append(b_img)
    p_ctr.append(np.c_[rng.uniform(-0.45, 0.45, nb) * bz, rng.uniform(-0.1, 0.3, nb) * bz, bz])
    p_dim.append(np.exp(rng.normal(np.log([0.8, 1.0, 1.2]), 0.5, (nb, 3))))
    p_yaw.append(rng.uniform(-np.pi, np.pi, nb))
    p_cat.append(rng.choice(n_categories, nb, p=freq))
    img = np.concatenate(p_img)
    order = np.argsort(img, kind="stable")  # predictions grouped by image, as a detector writes them
    n_pred = len(img)
    pred = _boxes(img[order], names[np.concatenate(p_cat)[order]], np.concatenate(p_ctr)[order],
                  np.concatenate(p_dim)[order], np.concatenate(p_yaw)[order], rng.random(n_pred),
                  np.zeros(n_pred, bool))
    return Workload(gt=gt, pred=pred, vocabulary=tuple(vocab), n_images=n_images)


if __name__ == "__main__":
    import time

    t = time.perf_counter()
    w = build_workload()
    print(w.describe(), f"built in {time.perf_counter() - t:.2f} s")
