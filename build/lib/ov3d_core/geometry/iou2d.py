"""2D IoU of XYXY boxes, continuous (no +1), as pycocotools ``maskUtils.iou`` with iscrowd = 0.

Boxes with zero or negative width or height (including the all -1 rows that mark a missing projected box) and boxes
with non-finite coordinates have IoU 0 with everything; the result is never NaN.
"""

from __future__ import annotations

import numpy as np

__all__ = ["box_iou_2d", "paired_iou_2d", "box_area_2d"]


def _boxes(x, name: str) -> np.ndarray:
    b = np.asarray(x, dtype=np.float64)
    if b.size == 0:
        return np.zeros((0, 4))
    if b.ndim != 2 or b.shape[1] != 4:
        raise ValueError(f"{name}: expected boxes of shape (N, 4) XYXY, got {b.shape}")
    return b


def box_area_2d(boxes) -> np.ndarray:
    """``(N,)`` areas of XYXY boxes; 0 for empty, inverted or non-finite boxes."""
    b = _boxes(boxes, "boxes")
    with np.errstate(invalid="ignore"):
        area = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
        good = (b[:, 2] > b[:, 0]) & (b[:, 3] > b[:, 1]) & np.isfinite(area)
    return np.where(good, area, 0.0)


def _iou(a: np.ndarray, b: np.ndarray, area_a: np.ndarray, area_b: np.ndarray) -> np.ndarray:
    """IoU of rows a[k], b[k] (broadcastable arrays of coordinates); areas already zeroed for bad boxes."""
    with np.errstate(invalid="ignore", over="ignore"):
        w = np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0])
        h = np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1])
        inter = np.where((w > 0) & (h > 0), w * h, 0.0)
        inter = np.minimum(inter, np.minimum(area_a, area_b))  # bad boxes (area 0) -> 0
        union = area_a + area_b - inter
        iou = np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)
    return np.clip(np.nan_to_num(iou, nan=0.0, posinf=0.0, neginf=0.0), 0.0, 1.0)


def box_iou_2d(a, b) -> np.ndarray:
    """``(N, M)`` IoU of XYXY boxes ``a (N, 4)`` and ``b (M, 4)``."""
    a = _boxes(a, "a")
    b = _boxes(b, "b")
    if len(a) == 0 or len(b) == 0:
        return np.zeros((len(a), len(b)))
    return _iou(a[:, None, :], b[None, :, :], box_area_2d(a)[:, None], box_area_2d(b)[None, :])


def paired_iou_2d(a, b, ia, ib) -> np.ndarray:
    """``(P,)`` IoU of the pairs ``(a[ia[p]], b[ib[p]])``."""
    a = _boxes(a, "a")
    b = _boxes(b, "b")
    ia = np.asarray(ia, dtype=np.int64).reshape(-1)
    ib = np.asarray(ib, dtype=np.int64).reshape(-1)
    if ia.shape != ib.shape:
        raise ValueError(f"ia and ib must have the same length, got {ia.shape} and {ib.shape}")
    if len(ia) == 0:
        return np.zeros(0)
    return _iou(a[ia], b[ib], box_area_2d(a)[ia], box_area_2d(b)[ib])
