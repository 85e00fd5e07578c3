"""2D crops of predicted 3D boxes: project the cuboid, clip it to the image, cut the crop for the image encoder.

Projection clips the cuboid against the near plane (z = ``NEAR_CLIP``) before projecting: corners behind the
camera are replaced by the points where the box edges cross the near plane, so a box that reaches behind the camera
(a car alongside the ego vehicle) still gets the crop of its visible part, not one blown up by a division by a
tiny depth. Boxes entirely behind the near plane, off the image or with non-finite corners get no crop and a flag.

Crop boxes are XYXY in pixel-edge coordinates: clipped to ``[0, width] x [0, height]``, ready for ``PIL.Image.crop``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from ov3d_core.errors import InputError
from ov3d_core.geometry.boxes import BOX_EDGES, NEAR_CLIP

#: Flag bits returned by :func:`crop_boxes` (0 = a valid crop).
FLAG_BEHIND = 1   # every corner at z <= NEAR_CLIP
FLAG_OUTSIDE = 2  # the projection misses the image
FLAG_INVALID = 4  # non-finite corners, intrinsics or image size


def crop_boxes(corners: np.ndarray, K: np.ndarray, width, height, *, pad: float = 0.0,
               min_size: float = 8) -> tuple[np.ndarray, np.ndarray]:
    """Crop boxes of cuboids ``corners (N, 8, 3)`` (camera frame, metres).

    Args:
        K: intrinsics, one ``(3, 3)`` for all boxes or ``(N, 3, 3)``.
        width, height: image size in pixels, scalars or ``(N,)``.
        pad: fraction of the box's width (height) added on each side before clipping (context for the encoder).
        min_size: boxes smaller than this (pixels, per side) are enlarged to it around their centre, then clipped.

    Returns:
        ``boxes (N, 4)`` float64 XYXY clipped to the image, -1 rows where there is no crop, and ``flags (N,)`` uint8:
        0 for a valid crop, else an OR of ``FLAG_BEHIND``, ``FLAG_OUTSIDE``, ``FLAG_INVALID``.
    """
    corners = np.asarray(corners, dtype=np.float64).reshape(-1, 8, 3)
    n = len(corners)
    K = np.asarray(K, dtype=np.float64)
    Ks = np.broadcast_to(K, (n, 3, 3)) if K.shape == (3, 3) else K.reshape(n, 3, 3)
    W = np.broadcast_to(np.asarray(width, dtype=np.float64), (n,))
    H = np.broadcast_to(np.asarray(height, dtype=np.float64), (n,))
    flags = np.zeros(n, np.uint8)
    boxes = np.full((n, 4), -1.0)
    if n == 0:
        return boxes, flags

    finite = (np.isfinite(corners).all(axis=(1, 2)) & np.isfinite(Ks).all(axis=(1, 2)) & np.isfinite(W)
              & np.isfinite(H) & (W > 0) & (H > 0))
    flags[~finite] |= FLAG_INVALID
    c = np.where(finite[:, None, None], corners, 1.0)
    z = c[..., 2]
    front = z > NEAR_CLIP
    behind = finite & ~front.any(axis=1)
    flags[behind] |= FLAG_BEHIND

    # Visible points: corners in front of the near plane, plus edge crossings with it.
    a, b = c[:, BOX_EDGES[:, 0]], c[:, BOX_EDGES[:, 1]]  # (N, 12, 3)
    za, zb = a[..., 2] - NEAR_CLIP, b[..., 2] - NEAR_CLIP
    crosses = (za * zb) < 0
    t = np.where(crosses, za / np.where(crosses, za - zb, 1.0), 0.0)
    cross_pts = a + t[..., None] * (b - a)
    cross_pts[..., 2] = NEAR_CLIP
    pts = np.concatenate([c, cross_pts], axis=1)  # (N, 20, 3)
    use = np.concatenate([front, crosses], axis=1)
    uvw = np.einsum("nij,nkj->nki", Ks, pts)
    zz = np.where(use, uvw[..., 2], 1.0)
    uv = uvw[..., :2] / zz[..., None]
    lo = np.where(use[..., None], uv, np.inf).min(axis=1)
    hi = np.where(use[..., None], uv, -np.inf).max(axis=1)
    box = np.concatenate([lo, hi], axis=1)  # (N, 4) unclipped

    ok = finite & ~behind
    with np.errstate(invalid="ignore"):
        inside = (box[:, 2] > 0) & (box[:, 3] > 0) & (box[:, 0] < W) & (box[:, 1] < H)
    flags[ok & ~inside] |= FLAG_OUTSIDE
    ok &= inside
    if not ok.any():
        return boxes, flags

    bx, w_, h_ = box[ok], W[ok], H[ok]
    if pad:
        bw, bh = bx[:, 2] - bx[:, 0], bx[:, 3] - bx[:, 1]
        bx = bx + np.stack([-pad * bw, -pad * bh, pad * bw, pad * bh], axis=1)
    bx[:, [0, 2]] = np.clip(bx[:, [0, 2]], 0.0, w_[:, None])
    bx[:, [1, 3]] = np.clip(bx[:, [1, 3]], 0.0, h_[:, None])
    if min_size and min_size > 0:
        for lo_i, hi_i, lim in ((0, 2, w_), (1, 3, h_)):
            size = bx[:, hi_i] - bx[:, lo_i]
            small = size < min_size
            if small.any():
                mid = 0.5 * (bx[small, lo_i] + bx[small, hi_i])
                bx[small, lo_i] = np.clip(mid - 0.5 * min_size, 0.0, lim[small])
                bx[small, hi_i] = np.clip(mid + 0.5 * min_size, 0.0, lim[small])
    empty = (bx[:, 2] <= bx[:, 0]) | (bx[:, 3] <= bx[:, 1])
    idx = np.flatnonzero(ok)
    flags[idx[empty]] |= FLAG_OUTSIDE
    boxes[idx[~empty]] = bx[~empty]
    return boxes, flags


def run_crop_boxes(dataset, run, *, pad: float = 0.0, min_size: float = 8) -> tuple[np.ndarray, np.ndarray]:
    """:func:`crop_boxes` for every prediction of a ``Run`` on its ``Dataset`` (per-image intrinsics and sizes).
    Predictions whose image is not in the dataset get ``FLAG_INVALID``."""
    pred = run.pred
    rows = dataset.image_index(pred.image_id)
    known = rows >= 0
    r = np.where(known, rows, 0)
    if len(dataset.images):
        K = dataset.K[r]
        W = dataset.images["width"].to_numpy(dtype=np.float64)[r]
        H = dataset.images["height"].to_numpy(dtype=np.float64)[r]
    else:
        K, W, H = np.zeros((len(pred), 3, 3)), np.zeros(len(pred)), np.zeros(len(pred))
    W = np.where(known, W, np.nan)
    boxes, flags = crop_boxes(pred.corners, K, W, H, pad=pad, min_size=min_size)
    return boxes, flags


def image_paths_for(dataset, image_ids: np.ndarray) -> list[str | None]:
    """Absolute-or-relative image path per image id (``dataset.root`` joined when set); None where unknown."""
    rows = dataset.image_index(np.asarray(image_ids))
    paths = dataset.images["file_path"].to_numpy() if len(dataset.images) else np.zeros(0, object)
    root = getattr(dataset, "root", None)
    out: list[str | None] = []
    for r in rows:
        if r < 0:
            out.append(None)
            continue
        p = Path(str(paths[r]))
        out.append(str(p if p.is_absolute() or root is None else Path(root) / p))
    return out


def load_crops(image_paths: Sequence[str | Path | None], boxes: np.ndarray, size: int | tuple[int, int] | None = None,
               *, valid: np.ndarray | None = None) -> list:
    """Cut the crops ``boxes (N, 4)`` (XYXY, pixel edges) out of ``image_paths[i]``; returns N PIL RGB images.

    Each image file is opened once for all of its boxes. Rows that are not valid (``valid`` False, a missing path,
    or an empty / -1 box) give ``None``. ``size`` (an int for a square or ``(w, h)``) resizes every crop (bilinear);
    the default keeps the native crop size and leaves resizing to the encoder's processor.
    """
    from PIL import Image

    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    n = len(boxes)
    if len(image_paths) != n:
        raise ValueError(f"load_crops: {len(image_paths)} image paths for {n} boxes")
    ok = np.isfinite(boxes).all(axis=1) & (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
    if valid is not None:
        ok &= np.asarray(valid, bool)
    if isinstance(size, int):
        size = (size, size)
    out: list = [None] * n
    groups: dict[str, list[int]] = {}
    for i in np.flatnonzero(ok):
        p = image_paths[i]
        if p is not None:
            groups.setdefault(str(p), []).append(int(i))
    for path, idx in groups.items():
        try:
            with Image.open(path) as im:
                im = im.convert("RGB")
        except (OSError, ValueError) as exc:
            raise InputError(path, None, "file_path", "a readable image", str(exc)) from None
        for i in idx:
            x1, y1, x2, y2 = boxes[i]
            # Integer pixel bounds that cover the box (at least one pixel).
            l, t = int(np.floor(x1)), int(np.floor(y1))
            r, b = max(int(np.ceil(x2)), l + 1), max(int(np.ceil(y2)), t + 1)
            crop = im.crop((l, t, r, b))
            if size is not None:
                crop = crop.resize(tuple(size), Image.BILINEAR)
            out[i] = crop
    return out
