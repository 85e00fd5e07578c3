"""Benchmark of the 3D IoU kernels and the broad phase (run by hand: ``python bench/bench_iou.py [--images 5000]``).

Importable by other benchmarks: ``random_rotations``, ``random_gt``, ``random_predictions`` and ``random_scenes`` build
realistic camera-frame boxes (objects 1.5-60 m in front of the camera, yaw-only rotations mostly, some full 3D
rotations, predictions that are noisy copies of ground truth plus false positives).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import numba
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ov3d_core.geometry.boxes import corners_from_pose, rotation_y  # noqa: E402
from ov3d_core.geometry.iou3d import box_iou_3d, candidate_pairs, paired_iou_3d  # noqa: E402


def random_rotations(n: int, rng: np.random.Generator, full_fraction: float = 0.1) -> np.ndarray:
    """``(n, 3, 3)`` rotations: yaw about the camera y axis, and for ``full_fraction`` of them a uniform SO(3) rotation
    (QR of a Gaussian matrix, sign-fixed to det +1)."""
    R = rotation_y(rng.uniform(-np.pi, np.pi, n))
    full = rng.random(n) < full_fraction
    k = int(full.sum())
    if k:
        q, r = np.linalg.qr(rng.normal(size=(k, 3, 3)))
        q = q * np.sign(np.diagonal(r, axis1=1, axis2=2))[:, None, :]
        q[np.linalg.det(q) < 0, :, 0] *= -1
        R[full] = q
    return R


def random_gt(n: int, rng: np.random.Generator, full_fraction: float = 0.1):
    """Centres ``(n, 3)``, dims ``(n, 3)`` [w, h, l] and rotations of ground-truth-like objects in the frustum."""
    z = rng.uniform(1.5, 60.0, n)
    x = rng.uniform(-0.6, 0.6, n) * z
    y = rng.uniform(-1.0, 1.8, n)
    dims = np.exp(rng.normal(np.log([0.8, 1.0, 1.2]), 0.6, (n, 3)))  # 0.2 m .. 5 m
    return np.c_[x, y, z], dims, random_rotations(n, rng, full_fraction)


def random_predictions(center, dims, R, n_pred: int, rng: np.random.Generator, hit_fraction: float = 0.5,
                       full_fraction: float = 0.1):
    """``n_pred`` predictions for one image's GT: ``hit_fraction`` of them noisy copies of random GT boxes (centre noise
    growing with depth, dims and yaw noise), the rest false positives spread over the same frustum."""
    hits = rng.random(n_pred) < hit_fraction if len(center) else np.zeros(n_pred, bool)
    c, d, r = random_gt(n_pred, rng, full_fraction)
    k = int(hits.sum())
    if k:
        src = rng.integers(0, len(center), k)
        depth = np.abs(center[src, 2])[:, None]
        c[hits] = center[src] + rng.normal(0, 1, (k, 3)) * (0.05 + 0.03 * depth) * [1, 0.5, 1]
        d[hits] = dims[src] * np.exp(rng.normal(0, 0.15, (k, 3)))
        r[hits] = np.einsum("nij,njk->nik", R[src], rotation_y(rng.normal(0, 0.2, k)))
    return c, d, r


def random_scenes(n_images: int, n_gt: int = 10, n_pred: int = 100, seed: int = 0, full_fraction: float = 0.1):
    """Returns ``image_gt (G,)``, ``corners_gt (G, 8, 3)``, ``image_pred (P,)``, ``corners_pred (P, 8, 3)``."""
    rng = np.random.default_rng(seed)
    c, d, R = random_gt(n_images * n_gt, rng, full_fraction)
    image_gt = np.repeat(np.arange(n_images), n_gt)
    parts = []
    for img in range(n_images):
        s = slice(img * n_gt, (img + 1) * n_gt)
        parts.append(random_predictions(c[s], d[s], R[s], n_pred, rng, full_fraction=full_fraction))
    pc = np.concatenate([p[0] for p in parts])
    pd = np.concatenate([p[1] for p in parts])
    pR = np.concatenate([p[2] for p in parts])
    image_pred = np.repeat(np.arange(n_images), n_pred)
    return image_gt, corners_from_pose(c, d, R), image_pred, corners_from_pose(pc, pd, pR)


def _time(fn, repeat: int = 3):
    """Best wall time of ``repeat`` runs (and that run's CPU time, a steadier number on a shared machine)."""
    best, best_cpu = np.inf, np.inf
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        wall, cpu = time.perf_counter() - t, time.process_time() - c
        if wall < best:
            best, best_cpu = wall, cpu
    return best, best_cpu, out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--gt", type=int, default=10)
    ap.add_argument("--pred", type=int, default=100)
    ap.add_argument("--pairs", type=int, default=1_000_000, help="pairs for the paired_iou_3d timing")
    args = ap.parse_args(argv)
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cpus, "
          f"python {platform.python_version()}, numba {numba.__version__}")

    t = time.perf_counter()
    ia0, a, ib0, b = random_scenes(2, 3, 5)
    box_iou_3d(a, b)
    paired_iou_3d(a, b, [0], [0])
    candidate_pairs(ia0, ib0, a, b)
    print(f"first call (numba compile or cache load): {time.perf_counter() - t:.2f} s")

    img_a, ca, img_b, cb = random_scenes(args.images, args.gt, args.pred, seed=1)
    print(f"{args.images} images, {len(ca)} GT, {len(cb)} predictions")
    rate = "{:,.0f} pairs/s wall, {:,.0f} pairs/s CPU".format

    dt, cpu, (ia, ib) = _time(lambda: candidate_pairs(img_a, img_b, ca, cb))
    n_same = args.images * args.gt * args.pred
    print(f"candidate_pairs: {len(ia):,} of {n_same:,} same-image pairs in {dt:.3f} s ({cpu:.3f} s CPU)")
    dt, cpu, iou = _time(lambda: paired_iou_3d(ca, cb, ia, ib))
    print(f"paired_iou_3d on those candidates (box preparation of all {len(ca) + len(cb):,} boxes included): "
          f"{dt:.3f} s, {rate(len(ia) / dt, len(ia) / cpu)}; {(iou > 0).mean():.1%} have IoU > 0")

    # ~1M candidate pairs: the realistic candidate list, repeated
    pa, pb = np.resize(ia, args.pairs), np.resize(ib, args.pairs)
    dt, cpu, _ = _time(lambda: paired_iou_3d(ca, cb, pa, pb), repeat=2)
    print(f"paired_iou_3d on {len(pa):,} candidate pairs: {dt:.3f} s, {rate(len(pa) / dt, len(pa) / cpu)}")
    overl = iou > 0
    if overl.any():
        oa, ob = np.resize(ia[overl], args.pairs), np.resize(ib[overl], args.pairs)
        dt, cpu, _ = _time(lambda: paired_iou_3d(ca, cb, oa, ob), repeat=2)
        print(f"paired_iou_3d on {len(oa):,} overlapping pairs only: {dt:.3f} s, {rate(len(oa) / dt, len(oa) / cpu)}")

    n = min(args.gt * 10, len(ca))
    dt, cpu, _ = _time(lambda: box_iou_3d(ca[:n], cb[: n * 10]))
    print(f"box_iou_3d dense {n} x {n * 10} (10 images, mostly far apart): {dt:.3f} s, "
          f"{rate(n * n * 10 / dt, n * n * 10 / cpu)}")

    t, c = time.perf_counter(), time.process_time()
    ia, ib = candidate_pairs(img_a, img_b, ca, cb)
    paired_iou_3d(ca, cb, ia, ib)
    print(f"broad phase + exact IoU of {len(ia):,} pairs, {args.images} images: {time.perf_counter() - t:.2f} s "
          f"({time.process_time() - c:.2f} s CPU)")
    print("pytorch3d: not compared (not installable here: no wheel in the available package index; it needs a source "
          "build against torch)")


if __name__ == "__main__":
    main()
