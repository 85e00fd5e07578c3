"""The columnar data model: one row per box, numpy arrays, shared by GT and predictions.

Loaders in ``ov3d_core.io`` build these; everything downstream (geometry cache, evaluation, diagnostics, app) reads
them and never mutates them: filters return new objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

import numpy as np
import pandas as pd

from ov3d_core.geometry.boxes import corners_from_pose
from ov3d_core.taxonomy import uses_proximity

_ARRAY_SHAPES = {  # field -> trailing shape
    "image_id": (), "category": (), "score": (), "depth": (), "ignore": (), "record": (),
    "center": (3,), "dims": (3,), "R": (3, 3), "corners": (8, 3), "box2d": (4,),
}


@dataclass(frozen=True, eq=False)
class BoxSet:
    """N 3D boxes in the Omni3D camera convention (see ``ov3d_core.geometry.boxes``).

    Attributes:
        image_id: ``(N,)`` int64 image ids.
        category: ``(N,)`` object array of category names (the name, not a contiguous id).
        center: ``(N, 3)`` float64 box centres, metres, camera frame.
        dims: ``(N, 3)`` float64 [w, h, l], metres.
        R: ``(N, 3, 3)`` float64 object->camera rotations.
        corners: ``(N, 8, 3)`` float64 corners in the Omni3D order, as given in the file (or rebuilt if absent).
        box2d: ``(N, 4)`` float64 XYXY pixels. GT: the evaluation box of the Omni3D filter (trunc > proj > tight);
            predictions: the file's ``bbox`` converted from XYWH.
        depth: ``(N,)`` float64 depth used for near/medium/far (GT: centre z; predictions: the file's ``depth``).
        score: ``(N,)`` float64 confidence (GT: 1).
        ignore: ``(N,)`` bool; GT ignored by the Omni3D rules (predictions: False).
        record: ``(N,)`` int64 annotation id (GT) or 0-based record index in the source file (predictions).
        data: extra per-box columns, each ``(N, ...)`` (truncation, visibility, in_vocab, ...).
    """

    image_id: np.ndarray
    category: np.ndarray
    center: np.ndarray
    dims: np.ndarray
    R: np.ndarray
    corners: np.ndarray
    box2d: np.ndarray
    depth: np.ndarray
    score: np.ndarray
    ignore: np.ndarray
    record: np.ndarray
    data: dict = field(default_factory=dict)

    def __post_init__(self):
        n = len(self.image_id)
        for name, trail in _ARRAY_SHAPES.items():
            arr = getattr(self, name)
            if arr.shape != (n, *trail):
                raise ValueError(f"BoxSet.{name}: expected shape {(n, *trail)}, got {arr.shape}")
        for key, arr in self.data.items():
            if len(arr) != n:
                raise ValueError(f"BoxSet.data[{key!r}]: expected length {n}, got {len(arr)}")

    def __len__(self) -> int:
        return len(self.image_id)

    @property
    def nbytes(self) -> int:
        """Bytes of the per-box arrays, ``data`` included (object columns count their pointers only)."""
        return int(sum(getattr(self, name).nbytes for name in _ARRAY_SHAPES)
                   + sum(np.asarray(a).nbytes for a in self.data.values()))

    def __getitem__(self, idx) -> "BoxSet":
        """Rows by boolean mask, index array or slice; returns a new BoxSet."""
        if isinstance(idx, (int, np.integer)):
            idx = [idx]
        kw = {f.name: getattr(self, f.name)[idx] for f in fields(self) if f.name != "data"}
        return BoxSet(**kw, data={k: v[idx] for k, v in self.data.items()})

    def with_(self, **changes) -> "BoxSet":
        """A copy with some columns replaced (``data`` keys may be given as ``data={...}``)."""
        return replace(self, **changes)

    @property
    def box2d_area(self) -> np.ndarray:
        w = np.clip(self.box2d[:, 2] - self.box2d[:, 0], 0, None)
        h = np.clip(self.box2d[:, 3] - self.box2d[:, 1], 0, None)
        return w * h

    @classmethod
    def empty(cls, data_keys: tuple[str, ...] = ()) -> "BoxSet":
        return cls(image_id=np.zeros(0, np.int64), category=np.zeros(0, object), center=np.zeros((0, 3)),
                   dims=np.zeros((0, 3)), R=np.zeros((0, 3, 3)), corners=np.zeros((0, 8, 3)),
                   box2d=np.zeros((0, 4)), depth=np.zeros(0), score=np.zeros(0), ignore=np.zeros(0, bool),
                   record=np.zeros(0, np.int64), data={k: np.zeros(0) for k in data_keys})

    @classmethod
    def concat(cls, parts: list["BoxSet"]) -> "BoxSet":
        parts = [p for p in parts if p is not None]
        if not parts:
            return cls.empty()
        keys = set(parts[0].data)
        for p in parts[1:]:
            keys &= set(p.data)
        kw = {f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(cls) if f.name != "data"}
        return cls(**kw, data={k: np.concatenate([p.data[k] for p in parts]) for k in sorted(keys)})

    @classmethod
    def from_pose(cls, image_id, category, center, dims, R, *, score=None, box2d=None, ignore=None,
                  record=None) -> "BoxSet":
        """Boxes from arrays in the Omni3D camera convention (centre ``(N, 3)`` m, dims ``(N, 3)`` [w, h, l] m,
        R ``(N, 3, 3)`` object->camera); corners are built from the pose, depth is the centre's z. ``score`` defaults
        to 1, ``box2d`` (XYXY px; used by proximity evaluation and 2D IoU) to zeros, ``record`` to the row index."""
        center = np.asarray(center, np.float64).reshape(-1, 3)
        n = len(center)

        def col(v, default, dtype):
            return np.full(n, default, dtype) if v is None else np.asarray(v, dtype).reshape(n)

        dims = np.asarray(dims, np.float64).reshape(n, 3)
        R = np.asarray(R, np.float64).reshape(n, 3, 3)
        return cls(image_id=np.asarray(image_id, np.int64).reshape(n),
                   category=np.asarray(category, dtype=object).reshape(n), center=center, dims=dims, R=R,
                   corners=corners_from_pose(center, dims, R),
                   box2d=np.zeros((n, 4)) if box2d is None else np.asarray(box2d, np.float64).reshape(n, 4),
                   depth=center[:, 2].copy(), score=col(score, 1.0, np.float64), ignore=col(ignore, False, bool),
                   record=np.arange(n, dtype=np.int64) if record is None else col(record, 0, np.int64))

    def to_frame(self) -> pd.DataFrame:
        """One row per box with scalar columns (centre, dims and box2d split into named columns)."""
        df = pd.DataFrame({
            "image_id": self.image_id, "category": self.category, "score": self.score, "depth": self.depth,
            "ignore": self.ignore, "record": self.record,
            "x": self.center[:, 0], "y": self.center[:, 1], "z": self.center[:, 2],
            "w": self.dims[:, 0], "h": self.dims[:, 1], "l": self.dims[:, 2],
            "x1": self.box2d[:, 0], "y1": self.box2d[:, 1], "x2": self.box2d[:, 2], "y2": self.box2d[:, 3],
        })
        for k, v in self.data.items():
            if v.ndim == 1:
                df[k] = v
        return df


@dataclass(frozen=True, eq=False)
class Dataset:
    """One evaluated dataset: its images, its ground truth and its vocabulary.

    Attributes:
        name: dataset name (the GT file's ``info.name`` or its stem).
        images: one row per image: ``image_id`` (int64), ``width``, ``height``, ``file_path``, ``dataset_id``.
        K: ``(n_images, 3, 3)`` float64 intrinsics aligned with ``images`` rows.
        vocabulary: the evaluated category names (order is the display order).
        gt: ground-truth boxes after the Omni3D keep/drop filter; ignored ones flagged, not removed.
        sources: the files it was read from.
        environment: "indoor", "outdoor" or None (used to restrict domain-transfer pairs).
        proximity: use proximity evaluation (Omni3D: on for SUNRGBD and Objectron).
        root: folder that image ``file_path`` values are relative to (None: unknown).
        category_ids: the GT file's full category id -> name table (resolves prediction ids).
    """

    name: str
    images: pd.DataFrame
    K: np.ndarray
    vocabulary: tuple[str, ...]
    gt: BoxSet
    sources: tuple[str, ...] = ()
    environment: str | None = None
    proximity: bool = False
    root: str | None = None
    category_ids: dict = field(default_factory=dict)

    @classmethod
    def from_boxes(cls, name: str, gt: BoxSet, *, vocabulary=None, K=None, width: int = 0, height: int = 0,
                   environment: str | None = None, proximity: bool | None = None) -> "Dataset":
        """A dataset from GT boxes in memory: images are the GT's image ids, ``vocabulary`` defaults to the GT
        categories (sorted), ``K`` (one ``(3, 3)`` or ``(n_images, 3, 3)``) to the identity, ``proximity`` to
        Omni3D's rule for the name (on for SUNRGBD and Objectron)."""
        ids = np.unique(np.asarray(gt.image_id, np.int64))
        Ks = np.broadcast_to(np.eye(3) if K is None else np.asarray(K, np.float64), (len(ids), 3, 3)).copy()
        images = pd.DataFrame({"image_id": ids, "width": int(width), "height": int(height), "file_path": "",
                               "dataset_id": 0})
        vocab = tuple(sorted({str(c) for c in gt.category})) if vocabulary is None else tuple(vocabulary)
        return cls(name=name, images=images, K=Ks, vocabulary=vocab, gt=gt, environment=environment,
                   proximity=uses_proximity(name) if proximity is None else bool(proximity))

    def image_index(self, image_ids: np.ndarray) -> np.ndarray:
        """Row positions in ``images`` of the given image ids (-1 where unknown)."""
        ids = self.images["image_id"].to_numpy()
        order = np.argsort(ids, kind="stable")
        pos = np.searchsorted(ids[order], image_ids)
        pos = np.clip(pos, 0, max(len(ids) - 1, 0))
        found = (len(ids) > 0) & (ids[order][pos] == image_ids) if len(ids) else np.zeros(len(image_ids), bool)
        return np.where(found, order[pos] if len(ids) else -1, -1)


@dataclass(frozen=True, eq=False)
class Run:
    """Predictions of one method on one dataset.

    ``pred.data["in_vocab"]`` (bool) marks predictions whose category is in the dataset vocabulary; the others are kept
    for display but excluded from AP, as Omni3D does.
    """

    name: str
    dataset: str
    pred: BoxSet
    sources: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict)
