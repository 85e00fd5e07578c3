"""Reading a Rerun recording back with the rerun SDK itself (``rerun.chunk.RrdReader``): entity path -> its rows."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np


def read_rrd(path: str | Path) -> dict[str, list[dict]]:
    """Every row of every entity of the file's recording, as ``{component or timeline: python value}``; the path
    without its leading ``/``; rows sorted by their ``image`` step (static rows, without one, first)."""
    from rerun.chunk import RrdReader

    out: dict[str, list[dict]] = defaultdict(list)
    for chunk in RrdReader(str(path)).stream():
        cols = chunk.to_record_batch().to_pydict()
        cols.pop("rerun.controls.RowId", None)
        for i in range(chunk.num_rows):
            out[chunk.entity_path.lstrip("/")].append({k: v[i] for k, v in cols.items()})
    for rows in out.values():
        rows.sort(key=lambda r: -1 if r.get("image") is None else r["image"])
    return dict(out)


def by_step(rows: list[dict]) -> dict[int, dict]:
    """The rows of one entity by ``image`` step (one row per step is what the export logs)."""
    steps = [r["image"] for r in rows]
    assert len(steps) == len(set(steps)), f"several rows at one step: {steps}"
    return {r["image"]: r for r in rows}


def packed(hex_color: str) -> int:
    """A CSS colour as Rerun stores it: 0xRRGGBBAA (opaque)."""
    h = hex_color.lstrip("#")
    return (int(h, 16) << 8) | 0xFF


def corners(center, half, quat) -> np.ndarray:
    """Corners ``(N, 8, 3)`` of Rerun boxes (centres, half sizes along the local axes, xyzw quaternions) in the corner
    order of ``ov3d_core.geometry.boxes`` (signs of the local x, y, z)."""
    from scipy.spatial.transform import Rotation

    signs = np.array([[-1, -1, -1], [1, -1, -1], [1, 1, -1], [-1, 1, -1],
                      [-1, -1, 1], [1, -1, 1], [1, 1, 1], [-1, 1, 1]], np.float64)
    center, half, quat = (np.asarray(a, np.float64) for a in (center, half, quat))
    if not len(center):
        return np.zeros((0, 8, 3))
    R = Rotation.from_quat(quat).as_matrix()
    local = signs[None] * half[:, None, :]
    return np.einsum("nij,nkj->nki", R, local) + center[:, None, :]
