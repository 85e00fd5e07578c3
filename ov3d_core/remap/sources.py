"""What to encode for each prediction of a run: the demo's crop captions (proxy encoder) or pixel crops of the
projected predicted boxes, with the hash of those inputs that keys the embedding cache."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ov3d_core.errors import InputError
from ov3d_core.remap.cache import hash_inputs
from ov3d_core.remap.crops import image_paths_for, load_crops, run_crop_boxes

__all__ = ["CropSource", "crop_source", "read_crops_json", "uses_captions"]


def uses_captions(encoder) -> bool:
    """True for encoders that read crop captions instead of pixels (the demo proxy)."""
    return type(encoder).__name__ == "ProxyEncoder" or bool(getattr(encoder, "uses_captions", False))


@dataclass
class CropSource:
    """What to encode for each prediction of a run, in prediction row order."""

    records: np.ndarray            # (n,) int64 prediction record ids
    valid: np.ndarray              # (n,) bool rows with a crop
    inputs_hash: str
    load: Callable[[np.ndarray], list]  # row indices -> encoder inputs
    kind: str                      # "captions" or "pixels"
    boxes: np.ndarray | None = None  # (n, 4) crop boxes (pixels only)
    flags: np.ndarray | None = None  # (n,) crop flags (pixels only)
    paths: list | None = None      # (n,) image path per row, None where unknown (pixels only)
    captions: np.ndarray | None = None  # (n,) object: caption per row, None where missing (captions only)
    size: int | None = None        # crop resize passed to ``load_crops`` (pixels only)


def read_crops_json(path) -> dict[int, dict]:
    """The demo's crops file (a list of ``{record, image_id, crop_box, overlaps, caption}``) keyed by record."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(str(p), None, None, "a readable JSON list of crop descriptors", str(exc)) from None
    if not isinstance(doc, list):
        raise InputError(str(p), None, None, "a JSON list of crop descriptors", type(doc).__name__)
    out: dict[int, dict] = {}
    for i, rec in enumerate(doc):
        if not isinstance(rec, dict) or not isinstance(rec.get("record"), int):
            raise InputError(str(p), f"[{i}]", "record", "an integer prediction record id",
                             rec.get("record") if isinstance(rec, dict) else rec)
        out[int(rec["record"])] = rec
    return out


def crop_source(dataset, run, encoder, *, crops_json=None, pad: float = 0.0, min_size: float = 8,
                size: int | None = None) -> CropSource:
    """Crop inputs of ``run`` for ``encoder``: captions from the demo crops file for the proxy, else pixel crops of
    the projected predicted boxes (``pad``, ``min_size`` as in ``crop_boxes``)."""
    records = np.asarray(run.pred.record, dtype=np.int64)
    if uses_captions(encoder):
        if crops_json is None:
            raise InputError(None, f"run {run.name}", "crops",
                             "a crops file with captions (the proxy encoder only works on the synthetic demo)")
        table = read_crops_json(crops_json)
        captions = np.array([table.get(int(r), {}).get("caption") for r in records], dtype=object)
        valid = np.array([isinstance(c, str) and bool(c) for c in captions], bool)
        h = hash_inputs("captions", records, [c if isinstance(c, str) else "" for c in captions])
        return CropSource(records, valid, h, lambda rows: [str(captions[i]) for i in rows], "captions",
                          captions=captions)
    boxes, flags = run_crop_boxes(dataset, run, pad=pad, min_size=min_size)
    paths = image_paths_for(dataset, run.pred.image_id)
    valid = (flags == 0) & np.array([p is not None for p in paths], bool)
    h = hash_inputs("pixels", records, np.round(boxes, 2), [p or "" for p in paths], float(pad), float(min_size),
                    size)

    def load(rows: np.ndarray) -> list:
        return load_crops([paths[i] for i in rows], boxes[rows], size=size)

    return CropSource(records, valid, h, load, "pixels", boxes, flags, paths=paths, size=size)
