"""Thumbnails for the sample grid: an image scaled down with its boxes' projected edges drawn in (PIL), as JPEG bytes.

Boxes are drawn from the same ``BoxLayer`` groups as the interactive overlay (colour, width; dotted and dashed lines
are drawn solid at this size), with the matching boxes of a filter on top and thicker.
"""

from __future__ import annotations

import io
from typing import Sequence

import numpy as np

from ov3d_core.viz.image_overlay import BoxLayer, project_segments

__all__ = ["thumbnail_with_boxes"]


def thumbnail_with_boxes(image, K: np.ndarray, layers: Sequence[BoxLayer], *, width: int, height: int,
                         size: int = 360, quality: int = 80) -> bytes:
    """A JPEG of ``image`` (a path, an ``(H, W, 3)`` array, or None for a grey canvas of ``width`` x ``height``) no
    larger than ``size`` px on its longer side, with the 12 edges of every box of ``layers`` (in order, later on top)."""
    from PIL import Image, ImageDraw

    if image is None:
        im = Image.new("RGB", (int(width), int(height)), (40, 40, 40))
    elif isinstance(image, np.ndarray):
        im = Image.fromarray(np.asarray(image, np.uint8)).convert("RGB")
    else:
        im = Image.open(image).convert("RGB")
    scale = min(1.0, size / max(im.size))
    sx, sy = scale * im.size[0] / max(width, 1), scale * im.size[1] / max(height, 1)  # K is in original pixels
    im = im.resize((max(1, round(im.size[0] * scale)), max(1, round(im.size[1] * scale))), Image.BILINEAR)
    draw = ImageDraw.Draw(im)
    for layer in layers:
        if not len(layer):
            continue
        uv, vis = project_segments(layer.corners, K)
        seg = uv[vis]  # (M, 2, 2)
        w = max(1, round(layer.width * 0.8))
        for (u0, v0), (u1, v1) in seg:
            if np.isfinite([u0, v0, u1, v1]).all():
                draw.line([(u0 * sx, v0 * sy), (u1 * sx, v1 * sy)], fill=layer.color, width=w)
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=quality)
    return buf.getvalue()
