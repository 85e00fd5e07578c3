"""Writers: predictions back to the flat Cube R-CNN JSON (``omni_instances_results.json``)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np

from ov3d_core.errors import InputError
from ov3d_core.io._validate import as_path
from ov3d_core.model import Run
from ov3d_core.taxonomy import OMNI3D_NAME_TO_ID


def write_cubercnn_json(run: Run, path, *, category_ids: dict[str, int] | None = None) -> Path:
    """Write ``run.pred`` as a flat Cube R-CNN JSON list, one record per box, in row order.

    Each record has ``image_id``, ``category_id`` (Omni3D global id by default; ``category_ids`` maps other names or
    overrides), ``category_name``, ``bbox`` (XYWH), ``score``, ``depth``, ``bbox3D``, ``center_cam``,
    ``dimensions``, ``pose`` and ``center_2D`` when the run has it. The file is written atomically; a path that is
    one of ``run.sources`` is refused (input files are never written).

    Raises:
        InputError: a category with no id, or ``path`` is one of the run's input files.
    """
    out = as_path(path)
    for src in run.sources:
        try:
            if Path(src).resolve() == out.resolve():
                raise InputError(str(out), None, None, "an output path that is not one of the run's input files")
        except OSError:
            pass
    pred = run.pred
    table = {**OMNI3D_NAME_TO_ID, **(category_ids or {})}
    names = pred.category.tolist()
    ids = []
    for i, nm in enumerate(names):
        cid = table.get(nm)
        if cid is None:
            raise InputError(str(out), f"pred[{i}] (record {int(pred.record[i])})", "category",
                             "a name of the Omni3D table or a key of `category_ids`", got=nm)
        ids.append(int(cid))
    xywh = pred.box2d.copy()
    xywh[:, 2:] -= xywh[:, :2]
    cols = {
        "image_id": pred.image_id.tolist(), "category_id": ids, "category_name": names,
        "bbox": xywh.tolist(), "score": pred.score.tolist(), "depth": pred.depth.tolist(),
        "bbox3D": pred.corners.tolist(), "center_cam": pred.center.tolist(), "dimensions": pred.dims.tolist(),
        "pose": pred.R.tolist(),
    }
    c2d = pred.data.get("center_2D")
    if c2d is not None:
        c2d = np.asarray(c2d, np.float64)
        ok = np.isfinite(c2d).all(axis=1)
        c2d_list = c2d.tolist()
    keys = list(cols)
    records = []
    for i in range(len(pred)):
        rec = {k: cols[k][i] for k in keys}
        if c2d is not None and ok[i]:
            rec["center_2D"] = c2d_list[i]
        records.append(rec)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=out.name + ".", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w") as f:
            try:
                json.dump(records, f, allow_nan=False)
            except ValueError:
                raise InputError(str(out), None, None, "finite numbers in the run (NaN/inf cannot be written as "
                                 "JSON)") from None
        os.replace(tmp, out)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return out
