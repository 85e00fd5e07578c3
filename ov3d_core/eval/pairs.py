"""Sparse GT x prediction geometry, computed once per (dataset, run) and cached on disk.

A pair joins a GT box and a predicted box of the same image whose bounding spheres or 2D boxes overlap, whatever
their categories (class-agnostic recall, confusion matrices and remapping need cross-class pairs). Each pair carries
the exact 3D IoU (invalid predicted boxes: 0, as Omni3D), the 2D IoU and the centre distance. The IoU of any pair that
is not stored is 0 by definition. Every re-labelling, filter or protocol change re-uses these arrays.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import xxhash

from ov3d_core.digest import update_digest
from ov3d_core.eval.grouping import dense_image_keys
from ov3d_core.eval.threads import kernel_threads
from ov3d_core.geometry.iou2d import paired_iou_2d
from ov3d_core.geometry.iou3d import candidate_pairs, paired_iou_3d
from ov3d_core.io import npzstore
from ov3d_core.memo import Memo

__all__ = ["Pairs", "compute_pairs", "PairCache", "GEOMETRY_VERSION", "geometry_key"]

log = logging.getLogger(__name__)

_GEOMETRY_SOURCES = ("geometry/boxes.py", "geometry/iou2d.py", "geometry/iou3d.py", "geometry/validity.py",
                     "eval/pairs.py")


def _source_digest() -> str:
    root = Path(__file__).resolve().parents[1]
    h = xxhash.xxh3_128()
    for rel in _GEOMETRY_SOURCES:
        h.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    return h.hexdigest()


#: What the pair geometry was computed with: a digest of the source of the broad phase, the IoU kernels, the validity
#: rule and this module, so any change to that code makes old cache files miss by itself.
GEOMETRY_VERSION = f"pairs-v2 iou3d exact float64, Omni3D validity on predictions, iou2d continuous; {_source_digest()}"

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
def _tasks(g_cnt: np.ndarray, p_cnt: np.ndarray, budget: int, max_boxes: int):
    """Work units of at most ``budget`` same-image GT x prediction candidates and ``max_boxes`` boxes:
    ``(g0, g1, p0, p1, done)`` slices of the image-sorted GT and prediction rows, and the images finished (a fraction
    inside a split image).

    Consecutive images are grouped while both bounds hold; an image beyond either is split into blocks of its GT rows
    and, when needed, of its predictions, so no unit exceeds them whatever one image holds. (The box bound matters as
    much as the candidate bound: each unit's kernels allocate a few hundred bytes per box.)"""
    g_ptr = np.concatenate([[0], np.cumsum(g_cnt)])
    p_ptr = np.concatenate([[0], np.cumsum(p_cnt)])
    work = g_cnt * p_cnt + g_cnt + p_cnt
    boxes = g_cnt + p_cnt
    n_img = len(g_cnt)
    img = 0
    while img < n_img:
        g, p = int(g_cnt[img]), int(p_cnt[img])
        if (work[img] > budget or boxes[img] > max_boxes) and g and p:
            bp = max(1, min(p, budget, max_boxes // 2))
            bg = max(1, min(budget // bp, max_boxes - bp, g))
            n_blocks = -(-g // bg) * -(-p // bp)
            k = 0
            for gs in range(0, g, bg):
                for ps in range(0, p, bp):
                    k += 1
                    yield (g_ptr[img] + gs, g_ptr[img] + min(g, gs + bg), p_ptr[img] + ps, p_ptr[img] + min(p, ps + bp),
                           round(img + k / n_blocks, 4))
            img += 1
            continue
        end, acc, nb = img, 0, 0
        while end < n_img and (end == img or (acc + work[end] <= budget and nb + boxes[end] <= max_boxes)):
            acc += work[end]
            nb += boxes[end]
            end += 1
        yield g_ptr[img], g_ptr[end], p_ptr[img], p_ptr[end], end
        img = end


def compute_pairs(gt, pred, *, progress=None, chunk_products: int = 1_000_000, chunk_boxes: int = 65_536,
                  chunk_pairs: int = 1_000_000) -> Pairs:
    """Candidate pairs of two BoxSets with their 3D IoU, 2D IoU and centre distance.

    Work is cut into units of at most ``chunk_products`` GT x prediction candidates and ``chunk_boxes`` boxes (whole
    images grouped, or blocks of one dense image; ``_tasks``), each through ``ov3d_core.geometry``'s broad phase
    (``candidate_pairs``: bounding spheres or 2D boxes overlap), and its pairs through the exact kernels
    (``paired_iou_3d`` with Omni3D's validity rule on predictions, ``paired_iou_2d``) ``chunk_pairs`` at a time, so
    the working memory is bounded whatever one image holds; only the result grows with the number of pairs (40 bytes
    each).

    Args:
        gt: GT ``BoxSet`` (side a: never validity-checked).
        pred: prediction ``BoxSet`` (side b).
        progress: optional ``callable(done_images, total_images)`` called after each unit; ``done_images`` is a float
            that moves inside an image split into blocks.
        chunk_products, chunk_boxes, chunk_pairs: work budgets per unit.
    """
    n_gt, n_pred = len(gt), len(pred)
    if n_gt == 0 or n_pred == 0:
        if progress is not None:
            progress(0, 0)
        return Pairs.empty(n_gt, n_pred)
    gi, pi, n_img = dense_image_keys(np.asarray(gt.image_id), np.asarray(pred.image_id))
    g_order = np.argsort(gi, kind="stable")
    p_order = np.argsort(pi, kind="stable")
    g_cnt = np.bincount(gi, minlength=n_img)
    p_cnt = np.bincount(pi, minlength=n_img)
    step = max(1, int(chunk_pairs))

    def unit(task) -> list[tuple]:
        g0, g1, p0, p1, _ = task
        grows, prows = g_order[g0:g1], p_order[p0:p1]
        out = []
        if len(grows) and len(prows):
            gc, pc = gt.corners[grows], pred.corners[prows]
            gb, pb = gt.box2d[grows], pred.box2d[prows]
            ia, ib = candidate_pairs(gi[grows], pi[prows], gc, pc, gb, pb)
            for s in range(0, len(ia), step):
                a, b = ia[s:s + step], ib[s:s + step]
                ga, pb_rows = grows[a], prows[b]
                out.append((ga, pb_rows, paired_iou_3d(gc, pc, a, b, check_valid=True), paired_iou_2d(gb, pb, a, b),
                            np.linalg.norm(gt.center[ga] - pred.center[pb_rows], axis=1)))
        return out

    tasks = list(_tasks(g_cnt, p_cnt, max(1, int(chunk_products)), max(2, int(chunk_boxes))))
    parts: list[tuple] = []
    with _unit_runner(len(tasks)) as run:
        for task, out in zip(tasks, run(unit, tasks)):  # in task order, whatever the threads' finishing order
            parts += out
            if progress is not None:
                progress(task[4], int(n_img))
    if not parts:
        return Pairs.empty(n_gt, n_pred)
    return Pairs(*_sorted_columns(parts, n_pred), n_gt=n_gt, n_pred=n_pred)


def geometry_threads() -> int:
    """Work units computed at once (:func:`ov3d_core.eval.threads.kernel_threads`). The kernels release the GIL;
    each unit's result is the same whichever thread computes it."""
    return kernel_threads()


@contextmanager
def _unit_runner(n_tasks: int):
    """``run(fn, tasks)``: an iterator of ``fn(task)`` in task order, from a thread pool when it pays (more than one
    unit and thread); at most 2 units per thread are in flight, so finished results wait in order without piling up
    working memory."""
    threads = min(geometry_threads(), n_tasks)
    if threads <= 1:
        yield lambda fn, tasks: map(fn, tasks)
        return
    with ThreadPoolExecutor(threads, thread_name_prefix="ov3d-geometry") as pool:
        def run(fn, tasks):
            pending: deque = deque()
            for task in tasks:
                pending.append(pool.submit(fn, task))
                if len(pending) >= 2 * threads:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        yield run


def _sorted_columns(parts: list[tuple], n_pred: int) -> list[np.ndarray]:
    """The parts' five columns concatenated and sorted by (gt, pred), one column at a time (so the peak is the table
    plus one column, not two or three copies of it). Whether a sort is needed at all (GT sorted by image, a dense
    image split by GT rows) is checked part by part, without a key over the whole table."""
    n = max(n_pred, 1)
    in_order, last = True, -1
    for p in parts:
        if len(p[0]):
            key = p[0] * n + p[1]
            if key[0] <= last or (len(key) > 1 and not bool(np.all(key[1:] > key[:-1]))):
                in_order = False
                break
            last = int(key[-1])
    cols: list[np.ndarray] = []
    for i in range(5):
        cols.append(np.concatenate([p[i] for p in parts]))
        for k, p in enumerate(parts):  # let each part's column go as soon as it is copied
            parts[k] = p[:i] + (None,) + p[i + 1:]
    parts.clear()
    if in_order:
        return cols
    order = np.argsort(cols[0] * n + cols[1], kind="stable")
    for i in range(5):
        cols[i] = cols[i][order]
    return cols


# ---------------------------------------------------------------------------------------------------------- cache
def geometry_key(gt, pred) -> str:
    """xxh3-128 of what defines the pair geometry: image ids, corners, 2D boxes and centres of both sides, plus
    GEOMETRY_VERSION. Any change of these gives a new key (and a new cache file)."""
    h = xxhash.xxh3_128(GEOMETRY_VERSION.encode())
    for side, boxes in (("gt", gt), ("pred", pred)):
        h.update(side.encode())
        for name in ("image_id", "corners", "box2d", "center"):
            h.update(name.encode())
            a = np.asarray(getattr(boxes, name))
            if a.dtype == object:  # (not from the loaders, which give int64 ids) hash the values, not pointers
                h.update(repr(a.tolist()).encode())
            else:
                update_digest(h, a)
    return h.hexdigest()


class PairCache:
    """Pairs on disk under ``root`` as ``<geometry_key>.npz`` (``ov3d_core.io.npzstore``: uncompressed, checksummed,
    pickle-free), plus a small in-memory memo.

    Each file records the geometry key of the boxes it was computed from, the sizes of both sides and a digest of
    every column; all are verified on load (a file with the right metadata but other or fewer pairs is refused),
    then ``Pairs.check``. Anything that fails is recomputed and replaced: the cache never raises because of its own
    files. With ``mmap`` (default) loaded columns are read-only memory maps of the file: no private copy.

    Attributes:
        hits, misses: counters of disk/memory hits and recomputations (for tests and benchmarks).
    """

    def __init__(self, root, *, memory_items: int = 4, mmap: bool = True):
        self.root = Path(root)
        self.memory_items = int(memory_items)
        self.mmap = bool(mmap)
        self._memo: Memo[str, Pairs] = Memo(self.memory_items)
        self._lock = threading.Lock()
        self._disk_hits = 0
        self.misses = 0

    @property
    def hits(self) -> int:
        """Lookups answered from memory or from the disk cache."""
        return self._memo.hits + self._disk_hits

    def path_for(self, gt, pred) -> Path:
        return self.root / f"{geometry_key(gt, pred)}.npz"

    def get_or_compute(self, gt, pred, key_parts=(), *, progress=None) -> Pairs:
        """The pairs of (gt, pred): from memory, else from disk, else computed and stored (once, when several threads
        ask at the same time).

        ``key_parts`` (e.g. ``(dataset, run)``) are recorded in the file for humans; the file name is the geometry
        hash only, so renaming a run does not recompute and changed boxes always do.
        """
        key = geometry_key(gt, pred)

        def load_or_compute() -> Pairs:
            path = self.root / f"{key}.npz"
            pairs = self._load(path, key, len(gt), len(pred))
            if pairs is not None:
                with self._lock:
                    self._disk_hits += 1
                return pairs
            pairs = compute_pairs(gt, pred, progress=progress)
            with self._lock:
                self.misses += 1
            self._store(path, pairs, key_parts, key)
            return pairs

        return self._memo.get(key, load_or_compute)

    def clear_memory(self) -> None:
        self._memo.clear()

    def _load(self, path: Path, key: str, n_gt: int, n_pred: int) -> Pairs | None:
        npzstore.wait(path)
        if not path.exists():
            return None
        try:
            arrays, meta = npzstore.read(path, mmap=self.mmap)
            expect = {"version": GEOMETRY_VERSION, "geometry_key": key, "n_gt": n_gt, "n_pred": n_pred}
            if {k: meta.get(k) for k in expect} != expect or set(arrays) != set(_FIELDS):
                raise ValueError(f"metadata mismatch: {meta}")
            pairs = Pairs(*(arrays[f] for f in _FIELDS), n_gt=n_gt, n_pred=n_pred)
            if meta.get("n_pairs") != len(pairs):
                raise ValueError(f"{len(pairs)} pairs, recorded {meta.get('n_pairs')}")
            pairs.check()
            return pairs
        except Exception as exc:  # noqa: BLE001 - any unreadable file is recomputed, never raised
            log.warning("pair cache file %s is unreadable (%s: %s); recomputing", path, type(exc).__name__, exc)
            return None

    def _store(self, path: Path, pairs: Pairs, key_parts, key: str) -> None:
        meta = {"version": GEOMETRY_VERSION, "geometry_key": key, "n_gt": pairs.n_gt, "n_pred": pairs.n_pred,
                "n_pairs": len(pairs), "key_parts": [str(k) for k in (key_parts or ())]}
        try:
            npzstore.write(path, {f: getattr(pairs, f) for f in _FIELDS}, meta)
        except OSError as exc:
            log.warning("could not write pair cache file %s (%s); continuing without it", path, exc)
