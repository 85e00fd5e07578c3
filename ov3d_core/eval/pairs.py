"""Sparse GT x prediction geometry, computed once per (dataset, run) and cached on disk.

A pair joins a GT box and a predicted box of the same image whose bounding spheres or 2D boxes overlap, whatever
their categories (class-agnostic recall, confusion matrices and remapping need cross-class pairs). Each pair carries
the exact 3D IoU (invalid predicted boxes: 0, as Omni3D), the 2D IoU and the centre distance. The IoU of any pair that
is not stored is 0 by definition. Every re-labelling, filter or protocol change re-uses these arrays.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["Pairs", "compute_pairs", "PairCache", "GEOMETRY_VERSION", "geometry_key"]

log = logging.getLogger(__name__)

#: Bump when the pair geometry changes (broad phase, IoU kernel, validity rule): old cache files stop matching.
GEOMETRY_VERSION = "pairs-v1 (iou3d exact float64, Omni3D validity on predictions, iou2d continuous)"

_FIELDS = ("gt", "pred", "iou3d", "iou2d", "dist")


@dataclass(frozen=True, eq=False)
class Pairs:
    """Candidate pairs of one (GT, prediction) BoxSet couple, sorted by (gt, pred).

    Attributes:
        gt: ``(P,)`` int64 row index into the GT BoxSet.
        pred: ``(P,)`` int64 row index into the prediction BoxSet.
        iou3d: ``(P,)`` float64 exact 3D IoU in [0, 1] (0 for invalid predicted boxes).
        iou2d: ``(P,)`` float64 2D IoU of the ``box2d`` columns.
        dist: ``(P,)`` float64 centre distance in metres.
        n_gt, n_pred: sizes of the two BoxSets.
    """

    gt: np.ndarray
    pred: np.ndarray
    iou3d: np.ndarray
    iou2d: np.ndarray
    dist: np.ndarray
    n_gt: int
    n_pred: int

    def __post_init__(self):
        n = len(self.gt)
        for name, dtype in (("gt", np.int64), ("pred", np.int64), ("iou3d", np.float64), ("iou2d", np.float64),
                            ("dist", np.float64)):
            a = np.ascontiguousarray(getattr(self, name), dtype=dtype)
            if a.shape != (n,):
                raise ValueError(f"Pairs.{name}: expected shape ({n},), got {a.shape}")
            a.flags.writeable = False
            object.__setattr__(self, name, a)
        object.__setattr__(self, "n_gt", int(self.n_gt))
        object.__setattr__(self, "n_pred", int(self.n_pred))

    def __len__(self) -> int:
        return len(self.gt)

    @property
    def nbytes(self) -> int:
        return sum(getattr(self, f).nbytes for f in _FIELDS)

    def iou(self, kind: str = "3d") -> np.ndarray:
        """The pair IoU of one kind: "3d" or "2d"."""
        if kind not in ("3d", "2d"):
            raise ValueError(f"kind: expected '3d' or '2d', got {kind!r}")
        return self.iou3d if kind == "3d" else self.iou2d

    def check(self) -> None:
        """Raise ValueError unless indices are in range, strictly sorted by (gt, pred), IoUs in [0, 1] and distances
        not negative (NaN allowed: a box with non-finite corners)."""
        if len(self):
            if self.gt.min() < 0 or self.gt.max() >= self.n_gt or self.pred.min() < 0 or self.pred.max() >= self.n_pred:
                raise ValueError("Pairs: indices out of range")
            key = self.gt * max(self.n_pred, 1) + self.pred
            if np.any(np.diff(key) <= 0):
                raise ValueError("Pairs: expected rows strictly sorted by (gt, pred)")
            for name in ("iou3d", "iou2d"):
                v = getattr(self, name)
                if not np.all((v >= 0) & (v <= 1)):
                    raise ValueError(f"Pairs.{name}: expected values in [0, 1]")
            if np.any(self.dist < 0):
                raise ValueError("Pairs.dist: expected non-negative distances")

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({f: getattr(self, f) for f in _FIELDS})

    @classmethod
    def empty(cls, n_gt: int = 0, n_pred: int = 0) -> "Pairs":
        z = np.zeros(0)
        return cls(np.zeros(0, np.int64), np.zeros(0, np.int64), z, z, z, n_gt, n_pred)


# ---------------------------------------------------------------------------------------------------------- compute
def _image_codes(gt_image: np.ndarray, pred_image: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    keys = np.concatenate([np.asarray(gt_image).reshape(-1), np.asarray(pred_image).reshape(-1)])
    if len(keys) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), 0
    uniq, inv = np.unique(keys, return_inverse=True)
    inv = inv.astype(np.int64)
    return inv[:len(gt_image)], inv[len(gt_image):], len(uniq)


def compute_pairs(gt, pred, *, progress=None, chunk_products: int = 4_000_000) -> Pairs:
    """Candidate pairs of two BoxSets with their 3D IoU, 2D IoU and centre distance.

    Images are processed in chunks of about ``chunk_products`` GT x prediction candidates (so memory stays bounded),
    each chunk through ``ov3d_core.geometry``'s broad phase (``candidate_pairs``: bounding spheres or 2D boxes overlap)
    and exact kernels (``paired_iou_3d`` with Omni3D's validity rule on predictions, ``paired_iou_2d``).

    Args:
        gt: GT ``BoxSet`` (side a: never validity-checked).
        pred: prediction ``BoxSet`` (side b).
        progress: optional ``callable(done_images, total_images)``, called after each chunk.
        chunk_products: work budget per chunk.
    """
    from ov3d_core.geometry.iou2d import paired_iou_2d
    from ov3d_core.geometry.iou3d import candidate_pairs, paired_iou_3d

    n_gt, n_pred = len(gt), len(pred)
    if n_gt == 0 or n_pred == 0:
        if progress is not None:
            progress(0, 0)
        return Pairs.empty(n_gt, n_pred)
    gi, pi, n_img = _image_codes(gt.image_id, pred.image_id)
    g_order = np.argsort(gi, kind="stable")
    p_order = np.argsort(pi, kind="stable")
    g_cnt = np.bincount(gi, minlength=n_img)
    p_cnt = np.bincount(pi, minlength=n_img)
    g_ptr = np.concatenate([[0], np.cumsum(g_cnt)])
    p_ptr = np.concatenate([[0], np.cumsum(p_cnt)])
    work = np.cumsum(g_cnt * p_cnt + g_cnt + p_cnt)
    # chunk ends: image indices where the cumulated work crosses multiples of the budget
    ends = np.unique(np.concatenate([np.searchsorted(work, np.arange(chunk_products, work[-1], chunk_products),
                                                     side="right"), [n_img]]))
    ends = ends[ends > 0]
    parts = []
    start = 0
    for end in ends:
        grows = g_order[g_ptr[start]:g_ptr[end]]
        prows = p_order[p_ptr[start]:p_ptr[end]]
        if len(grows) and len(prows):
            gc, pc = gt.corners[grows], pred.corners[prows]
            gb, pb = gt.box2d[grows], pred.box2d[prows]
            ia, ib = candidate_pairs(gi[grows], pi[prows], gc, pc, gb, pb)
            if len(ia):
                iou3 = paired_iou_3d(gc, pc, ia, ib, check_valid=True)
                iou2 = paired_iou_2d(gb, pb, ia, ib)
                dist = np.linalg.norm(gt.center[grows[ia]] - pred.center[prows[ib]], axis=1)
                parts.append((grows[ia], prows[ib], iou3, iou2, dist))
        start = end
        if progress is not None:
            progress(int(end), int(n_img))
    if not parts:
        return Pairs.empty(n_gt, n_pred)
    cols = [np.concatenate([p[i] for p in parts]) for i in range(5)]
    order = np.argsort(cols[0] * n_pred + cols[1], kind="stable")
    return Pairs(*(c[order] for c in cols), n_gt=n_gt, n_pred=n_pred)


# ---------------------------------------------------------------------------------------------------------- cache
def _update(h, a) -> None:
    a = np.asarray(a)
    if a.dtype == object:
        h.update(repr(a.tolist()).encode())
        return
    a = np.ascontiguousarray(a)
    h.update(f"{a.dtype.str}{a.shape}".encode())
    if a.size:
        h.update(memoryview(a).cast("B"))


def geometry_key(gt, pred) -> str:
    """sha1 of what defines the pair geometry: image ids, corners, 2D boxes and centres of both sides, plus
    GEOMETRY_VERSION. Any change of these gives a new key (and a new cache file)."""
    h = hashlib.sha1(GEOMETRY_VERSION.encode())
    for side, boxes in (("gt", gt), ("pred", pred)):
        h.update(side.encode())
        for name in ("image_id", "corners", "box2d", "center"):
            h.update(name.encode())
            _update(h, getattr(boxes, name))
    return h.hexdigest()


class PairCache:
    """Pairs on disk under ``root`` as ``<geometry_key>.npz`` (compressed), plus a small in-memory memo.

    Files are written atomically (temporary file + ``os.replace``), never modified in place, and a file that cannot be
    read or fails the checks is recomputed and replaced: the cache never raises because of its own files.

    Attributes:
        hits, misses: counters of disk/memory hits and recomputations (for tests and benchmarks).
    """

    def __init__(self, root, *, memory_items: int = 4):
        self.root = Path(root)
        self.memory_items = int(memory_items)
        self._memo: OrderedDict[str, Pairs] = OrderedDict()
        self._lock = threading.RLock()
        self.hits = 0
        self.misses = 0

    def path_for(self, gt, pred) -> Path:
        return self.root / f"{geometry_key(gt, pred)}.npz"

    def get_or_compute(self, gt, pred, key_parts=(), *, progress=None) -> Pairs:
        """The pairs of (gt, pred): from memory, else from disk, else computed and stored.

        ``key_parts`` (e.g. ``(dataset, run)``) are recorded in the file for humans; the file name is the geometry
        hash only, so renaming a run does not recompute and changed boxes always do.
        """
        key = geometry_key(gt, pred)
        with self._lock:
            if key in self._memo:
                self._memo.move_to_end(key)
                self.hits += 1
                return self._memo[key]
        path = self.root / f"{key}.npz"
        pairs = self._load(path, len(gt), len(pred))
        if pairs is not None:
            with self._lock:
                self.hits += 1
        else:
            pairs = compute_pairs(gt, pred, progress=progress)
            with self._lock:
                self.misses += 1
            self._store(path, pairs, key_parts)
        with self._lock:
            self._memo[key] = pairs
            while len(self._memo) > self.memory_items:
                self._memo.popitem(last=False)
        return pairs

    def clear_memory(self) -> None:
        with self._lock:
            self._memo.clear()

    def _load(self, path: Path, n_gt: int, n_pred: int) -> Pairs | None:
        if not path.exists():
            return None
        try:
            with np.load(path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                if meta.get("version") != GEOMETRY_VERSION or meta.get("n_gt") != n_gt or meta.get("n_pred") != n_pred:
                    raise ValueError(f"metadata mismatch: {meta}")
                pairs = Pairs(*(z[f] for f in _FIELDS), n_gt=n_gt, n_pred=n_pred)
            pairs.check()
            return pairs
        except Exception as exc:  # noqa: BLE001 - any unreadable file is recomputed, never raised
            log.warning("pair cache file %s is unreadable (%s: %s); recomputing", path, type(exc).__name__, exc)
            return None

    def _store(self, path: Path, pairs: Pairs, key_parts) -> None:
        meta = {"version": GEOMETRY_VERSION, "n_gt": pairs.n_gt, "n_pred": pairs.n_pred,
                "key_parts": [str(k) for k in (key_parts or ())]}
        tmp = None
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.root, prefix=".tmp-", suffix=".npz")
            with os.fdopen(fd, "wb") as fh:
                np.savez_compressed(fh, meta=np.array(json.dumps(meta)), **{f: getattr(pairs, f) for f in _FIELDS})
            os.replace(tmp, path)
            tmp = None
        except OSError as exc:
            log.warning("could not write pair cache file %s (%s); continuing without it", path, exc)
        finally:
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)
