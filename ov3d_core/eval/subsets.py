"""Image subsets of a scored view: the dataset, the run and the pair geometry restricted to a set of images.

A subset (the benchmark YAML's ``image_subsets``: the paper's 500-image prompt probe, its 200-image runtime subset)
is scored as if the dataset held only those images: GT and predictions of the other images take no part, so AP,
recall and every diagnostic are those of the smaller benchmark. The pair geometry is not recomputed: the cached
pairs are filtered and re-indexed (pairs only join boxes of one image, so a kept GT row keeps all its pairs).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ov3d_core.eval.pairs import Pairs
from ov3d_core.model import Dataset, Run

__all__ = ["subset_rows", "subset_dataset", "subset_run", "subset_pairs"]


def subset_rows(image_id: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Ascending row positions of the boxes whose image is in ``ids``."""
    return np.flatnonzero(np.isin(np.asarray(image_id, np.int64), np.asarray(ids, np.int64)))


def subset_dataset(ds: Dataset, ids: np.ndarray) -> Dataset:
    """The dataset restricted to the images ``ids`` (images, intrinsics and GT rows in their original order)."""
    keep = np.isin(ds.images["image_id"].to_numpy(np.int64), np.asarray(ids, np.int64))
    return replace(ds, images=ds.images[keep].reset_index(drop=True), K=ds.K[keep],
                   gt=ds.gt[subset_rows(ds.gt.image_id, ids)])


def subset_run(run: Run, ids: np.ndarray) -> Run:
    """The run's predictions on the images ``ids`` (in their original order)."""
    return replace(run, pred=run.pred[subset_rows(run.pred.image_id, ids)])


def subset_pairs(pairs: Pairs, gt_rows: np.ndarray, pred_rows: np.ndarray) -> Pairs:
    """The pairs between the kept GT rows and kept prediction rows, re-indexed to positions in those row lists
    (ascending row lists keep the (gt, pred) order)."""
    g = np.full(pairs.n_gt, -1, np.int64)
    g[gt_rows] = np.arange(len(gt_rows))
    p = np.full(pairs.n_pred, -1, np.int64)
    p[pred_rows] = np.arange(len(pred_rows))
    gi, pi = g[pairs.gt], p[pairs.pred]
    keep = (gi >= 0) & (pi >= 0)
    return Pairs(gi[keep], pi[keep], pairs.iou3d[keep], pairs.iou2d[keep], pairs.dist[keep],
                 len(gt_rows), len(pred_rows))
