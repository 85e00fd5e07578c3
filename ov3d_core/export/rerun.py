"""A Rerun recording (``.rrd``) of one or more images of a dataset: the image, its depth map and point cloud, the
camera, the ground truth and every run's boxes with their statuses, one step of the ``image`` timeline per image.

Open it with the Rerun viewer (``rerun scene.rrd``, from ``pip install rerun-sdk``). ``rerun-sdk`` is an optional
dependency (the ``rerun`` extra): it is imported by :func:`export_rerun` only, and a missing one is
:class:`RerunMissing`, whose message names the extra.

Entity paths (one step per image on the ``image`` timeline, its id on the ``image_id`` timeline)::

    world                          view coordinates RDF (static): the Omni3D camera frame, x right, y down, z forward
    world/camera                   Pinhole: K and the image size, camera_xyz RDF (the camera sits at the origin)
    world/camera/image             the image file (encoded as it is on disk)
    world/camera/depth             the depth map (metres), when the dataset has depth maps
    world/points                   the point-cloud file's points (coloured), when the dataset has point clouds
    world/gt/boxes                 GT boxes: label "class" (" ignored"), GT / ignored colour
    world/runs/<run>/boxes         the run's predictions: label "class score status", colour by status
    world/runs/<run>/missed        the GT boxes this run missed (status FN), label "class FN"
    world/camera/image/gt/boxes    the GT boxes' edges projected through K (one 2D strip per visible edge)
    world/camera/image/runs/<run>/boxes   the run's boxes' edges projected through K
    info                           a text: dataset, image id, view (protocol, IoU, score threshold), runs

Statuses are the ``Analysis``'s for the given ``View`` (``pred_details(view, image_id)`` per run and image,
``gt_status(view)`` per run); colours are the app's (``viz.image_overlay.STATUS_COLORS``). Boxes are centres, half
sizes (``l, h, w`` / 2 along the local x, y, z axes of ``geometry.boxes``) and the quaternion of ``R``. An image
without boxes of an entity logs an empty batch there, and an image without a depth map, point cloud or image file
clears that entity, so that nothing of the previous image stays on screen.
"""

from __future__ import annotations

import importlib.util
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from ov3d_core.errors import InputError
from ov3d_core.io.pointcloud import load_depth, scene_points

#: The extra that installs rerun-sdk.
EXTRA_HINT = 'pip install "ov3d-explorer[rerun]"'
MISSING_MESSAGE = f"the Rerun export needs rerun-sdk, which is not installed: {EXTRA_HINT}"
APPLICATION_ID = "ov3d_explorer"
#: One step per exported image (0, 1, ...), and the image's id.
TIMELINE = "image"
ID_TIMELINE = "image_id"
#: Most points logged per point-cloud file (voxel-downsampled beyond it, as the app's 3D view does).
MAX_POINTS = 310_000

WORLD = "world"
CAMERA = "world/camera"
IMAGE = "world/camera/image"
DEPTH = "world/camera/depth"
POINTS = "world/points"
GT_BOXES = "world/gt/boxes"
GT_BOXES_2D = "world/camera/image/gt/boxes"
INFO = "info"


class RerunMissing(RuntimeError):
    """rerun-sdk is not installed (the message says how to install it)."""

    def __init__(self):
        super().__init__(MISSING_MESSAGE)


def rerun_available() -> bool:
    """Whether rerun-sdk can be imported (without importing it)."""
    return importlib.util.find_spec("rerun") is not None


def _import_rerun():
    try:
        import rerun as rr
    except ImportError:
        raise RerunMissing() from None
    return rr


def run_entities(run: str) -> dict[str, str]:
    """The entity paths of one run: ``boxes``, ``missed`` (3D) and ``boxes2d`` (projected), the run's name escaped as
    one path part (``rerun.escape_entity_path_part``)."""
    part = _import_rerun().escape_entity_path_part(run)
    return {"boxes": f"world/runs/{part}/boxes", "missed": f"world/runs/{part}/missed",
            "boxes2d": f"world/camera/image/runs/{part}/boxes"}


@dataclass(frozen=True)
class RerunExport:
    """What :func:`export_rerun` wrote.

    Attributes:
        data: the recording's bytes (when no ``out`` path was given), else None.
        path: the file written, else None.
        nbytes: size of the recording in bytes.
        image_ids: the exported images, in timeline order.
        runs: the runs whose boxes it holds.
        counts: one row per image and box entity: ``image_id``, ``entity``, ``n`` (boxes logged).
        notes: what could not be shown (images without an image file, depth map or point cloud; boxes whose ``R``
            is not a rotation), one line each; empty when everything was there.
        seconds: wall time of the export.
    """

    data: bytes | None
    path: Path | None
    nbytes: int
    image_ids: tuple[int, ...]
    runs: tuple[str, ...]
    counts: pd.DataFrame
    notes: tuple[str, ...]
    seconds: float


def _default_readable(path) -> str | None:
    return None if path is None or not Path(path).is_file() else str(path)


def _rgb(hex_color: str) -> np.ndarray:
    h = hex_color.lstrip("#")
    return np.array([int(h[i:i + 2], 16) for i in (0, 2, 4)], np.uint8)


def quaternions(R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """xyzw quaternions ``(N, 4)`` of object->camera rotations ``(N, 3, 3)`` (the nearest rotation of each), and a
    mask of the matrices that are no proper rotation (non-finite, or determinant <= 0: drawn with the rotation
    nearest to ``R`` with its last axis flipped)."""
    from scipy.spatial.transform import Rotation

    R = np.asarray(R, np.float64).reshape(-1, 3, 3)
    if not len(R):
        return np.zeros((0, 4)), np.zeros(0, bool)
    finite = np.isfinite(R).all(axis=(1, 2))
    M = np.where(finite[:, None, None], R, np.eye(3))
    det = np.linalg.det(M)
    bad = ~finite | (det <= 1e-9)
    M[bad & finite] = M[bad & finite] * np.array([1.0, 1.0, -1.0])
    M[np.abs(np.linalg.det(M)) <= 1e-9] = np.eye(3)
    return Rotation.from_matrix(M).as_quat(), bad


def _check_inputs(analysis, view, image_ids, runs) -> tuple[list[int], list[str]]:
    bench = analysis.benchmark
    config = str(bench.config.path or "<config>")
    ds = bench.dataset(view.dataset)  # InputError naming the config for an unknown dataset
    have = analysis.runs(view.dataset)
    runs = list(have if runs is None else dict.fromkeys(runs))
    for r in runs:
        if r not in have:
            raise InputError(config, f"dataset {view.dataset}", "runs", f"runs of the dataset ({', '.join(have)})", r)
    ids: list[int] = []
    for v in image_ids:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise InputError(config, f"dataset {view.dataset}", "image_id", "an integer image id", v)
        ids.append(int(v))
    ids = list(dict.fromkeys(ids))
    if not ids:
        raise InputError(config, f"dataset {view.dataset}", "image_id", "at least one image id")
    rows = ds.image_index(np.array(ids, np.int64))
    if (rows < 0).any():
        raise InputError(config, f"dataset {view.dataset}", "image_id", "an image of the dataset",
                         ids[int(np.flatnonzero(rows < 0)[0])])
    return ids, runs


class _Sink:
    """Where the recording goes: a file (written beside ``out`` and moved onto it when complete) or memory."""

    def __init__(self, rec, out: Path | None):
        self.rec, self.out = rec, out
        if out is None:
            self.stream, self.tmp = rec.binary_stream(), None
        else:
            self.stream, self.tmp = None, out.with_name(f".{out.name}.{os.getpid()}.partial")
            rec.save(str(self.tmp))

    def close(self) -> tuple[bytes | None, int]:
        self.rec.flush()
        if self.stream is not None:
            data = self.stream.read() or b""
            self.rec.disconnect()
            return data, len(data)
        self.rec.disconnect()
        os.replace(self.tmp, self.out)
        return None, self.out.stat().st_size

    def abort(self) -> None:
        try:
            self.rec.disconnect()
        finally:
            if self.tmp is not None:
                self.tmp.unlink(missing_ok=True)


def export_rerun(analysis, view, image_ids: Sequence[int], runs: Sequence[str] | None = None, *,
                 out: str | Path | None = None, readable: Callable | None = None,
                 max_points: int = MAX_POINTS, progress: Callable | None = None) -> RerunExport:
    """Write the Rerun recording of ``image_ids`` of ``view.dataset`` (entity paths: the module docstring).

    Args:
        analysis: the ``Analysis`` whose statuses the boxes carry.
        view: its ``View`` (dataset, protocol, score threshold, IoU, remap, classes); ``view.run`` is ignored.
        image_ids: the images, one timeline step each, in this order (repeats dropped).
        runs: the runs whose boxes to include (default: every run of the dataset).
        out: the ``.rrd`` file to write (complete or not at all); None: return the bytes (``RerunExport.data``).
        readable: maps an image / depth / point-cloud path to the path to read, or None when it may not be read
            (the app's allowed roots); default: the path when it is an existing file.
        max_points: most points logged per point-cloud file.
        progress: wraps the iterable of images (e.g. a tqdm bar).

    Raises ``RerunMissing`` without rerun-sdk, and ``InputError`` for an unknown dataset, run or image id (before
    anything is written)."""
    rr = _import_rerun()
    from ov3d_core.viz.image_overlay import STATUS_COLORS, project_segments  # plotly: only when exporting

    t0 = time.perf_counter()
    ids, runs = _check_inputs(analysis, view, image_ids, runs)
    readable = readable or _default_readable
    bench = analysis.benchmark
    ds = bench.dataset(view.dataset)
    spec = bench.dataset_spec(view.dataset)
    gt = ds.gt
    gt_image = np.asarray(gt.image_id, np.int64)
    gt_category = np.asarray(gt.category, object)
    colors = {k: _rgb(v) for k, v in STATUS_COLORS.items()}
    other = _rgb("#17becf")
    entities = {r: run_entities(r) for r in runs}
    run_views = {r: view.with_(run=r) for r in runs}
    gt_status = {r: _gt_status_array(analysis.gt_status(run_views[r]), len(gt)) for r in runs}
    preds = {r: bench.run(r, view.dataset).pred for r in runs}
    details = {r: _details_of(analysis, run_views[r], len(ids), len(ds.images)) for r in runs}
    rows_of = ds.image_index(np.array(ids, np.int64))
    counts: list[tuple[int, str, int]] = []
    missing: dict[str, list[int]] = {"image file": [], "depth map": [], "point cloud": []}
    improper = 0

    def color_of(status) -> np.ndarray:
        return np.stack([colors.get(s, other) for s in status]) if len(status) else np.zeros((0, 3), np.uint8)

    poses: dict[int, tuple] = {}  # id(BoxSet) -> (centres, half sizes, quaternions, not a rotation), computed once

    def boxes3d(path: str, image_id: int, boxes, rows: np.ndarray, labels, cols, *, count_improper=True) -> None:
        nonlocal improper
        if id(boxes) not in poses:
            quat, bad = quaternions(boxes.R)
            poses[id(boxes)] = (np.asarray(boxes.center, np.float64), 0.5 * np.asarray(boxes.dims)[:, [2, 1, 0]],
                                quat, bad)
        center, half, quat, bad = poses[id(boxes)]
        improper += int(bad[rows].sum()) if count_improper else 0
        rec.log(path, rr.Boxes3D(centers=center[rows], half_sizes=half[rows], quaternions=quat[rows],
                                 labels=list(labels), colors=cols))
        counts.append((image_id, path, len(rows)))

    def edges2d(path: str, corners, K, cols) -> None:
        uv, visible = project_segments(np.asarray(corners, np.float64).reshape(-1, 8, 3), K)
        box = np.broadcast_to(np.arange(len(uv))[:, None], visible.shape)[visible]
        rec.log(path, rr.LineStrips2D(uv[visible], colors=cols[box] if len(box) else None))

    rec = rr.RecordingStream(APPLICATION_ID)
    rec.set_log_time_enabled(False)
    sink = None
    try:
        sink = _Sink(rec, None if out is None else Path(out))
        rec.send_recording_name(f"{view.dataset}: {len(ids)} image(s), {len(runs)} run(s)")
        rec.log(WORLD, rr.ViewCoordinates.RDF, static=True)
        steps = enumerate(zip(ids, rows_of))
        for step, (image_id, row) in (steps if progress is None else progress(list(steps))):
            rec.set_time(TIMELINE, sequence=step)
            rec.set_time(ID_TIMELINE, sequence=image_id)
            K = np.asarray(ds.K[row], np.float64)
            w, h = int(ds.images["width"].iloc[row]), int(ds.images["height"].iloc[row])
            rec.log(CAMERA, rr.Pinhole(image_from_camera=K, resolution=[w, h], camera_xyz=rr.ViewCoordinates.RDF))
            image_path = readable(bench.image_path(view.dataset, image_id))
            image = _encoded_image(rr, image_path)
            rec.log(IMAGE, image if image is not None else rr.Clear(recursive=False))
            if image is None:
                missing["image file"].append(image_id)
            if getattr(spec, "depth", None):
                depth = _depth_image(rr, readable(bench.asset_path(view.dataset, "depth", image_id)), (w, h),
                                     load_depth)
                rec.log(DEPTH, depth if depth is not None else rr.Clear(recursive=False))
                if depth is None:
                    missing["depth map"].append(image_id)
            if getattr(spec, "points", None):
                pts_path = readable(bench.asset_path(view.dataset, "points", image_id))
                pc = None if pts_path is None else scene_points(K, points=pts_path, image=image_path,
                                                                image_size=(w, h), budget=int(max_points))
                if pc is None:
                    rec.log(POINTS, rr.Clear(recursive=False))
                    missing["point cloud"].append(image_id)
                else:
                    cols = None if pc.colors is None else np.clip(np.rint(pc.colors * 255), 0, 255).astype(np.uint8)
                    rec.log(POINTS, rr.Points3D(pc.points, colors=cols))

            g = np.flatnonzero(gt_image == image_id)
            gt_cat = gt_category[g]
            ignored = np.asarray(gt.ignore, bool)[g]
            gt_cols = color_of(np.where(ignored, "ignored", "GT"))
            boxes3d(GT_BOXES, image_id, gt, g, [f"{c} ignored" if i else str(c) for c, i in zip(gt_cat, ignored)],
                    gt_cols)
            edges2d(GT_BOXES_2D, gt.corners[g], K, gt_cols)
            for r in runs:
                det = details[r](image_id)
                p = det["pred"].to_numpy(np.int64)
                status = det["status"].astype(str).to_numpy(object)
                labels = [f"{c} {s:.2f} {st}" for c, s, st in zip(det["category"], det["score"], status)]
                pred = preds[r]
                cols = color_of(status)
                boxes3d(entities[r]["boxes"], image_id, pred, p, labels, cols)
                edges2d(entities[r]["boxes2d"], pred.corners[p], K, cols)
                fn = g[gt_status[r][g] == "FN"]
                boxes3d(entities[r]["missed"], image_id, gt, fn, [f"{c} FN" for c in gt_category[fn]],
                        color_of(np.full(len(fn), "FN", object)), count_improper=False)
            rec.log(INFO, rr.TextDocument(_info_text(view, image_id, image_path, runs), media_type="text/markdown"))
        data, nbytes = sink.close()
    except BaseException:
        if sink is None:
            rec.disconnect()
        else:
            sink.abort()
        raise
    notes = [f"{len(v)} image(s) without a readable {what} (first: image {v[0]})" for what, v in missing.items() if v]
    if improper:
        notes.append(f"{improper} box(es) whose R is not a rotation, drawn with the nearest rotation")
    return RerunExport(data=data, path=None if out is None else Path(out), nbytes=nbytes, image_ids=tuple(ids),
                       runs=tuple(runs), counts=pd.DataFrame(counts, columns=["image_id", "entity", "n"]),
                       notes=tuple(notes), seconds=time.perf_counter() - t0)


def _details_of(analysis, view, n_export: int, n_images: int) -> Callable[[int], pd.DataFrame]:
    """``image_id -> Analysis.pred_details(view, image_id)``: asked per image when the export holds a few images of
    the dataset, else the run's whole table (one call, the same rows and values) split by image."""
    if n_export < max(2, 0.1 * n_images):
        return lambda image_id: analysis.pred_details(view, image_id=image_id)
    table = analysis.pred_details(view)
    image = table["image_id"].to_numpy(np.int64)
    order = np.argsort(image, kind="stable")
    ids, first = np.unique(image[order], return_index=True)
    ends = np.r_[first[1:], len(order)].astype(np.int64)
    bounds = {int(i): (int(a), int(b)) for i, a, b in zip(ids, first, ends)}
    return lambda image_id: table.iloc[order[slice(*bounds.get(int(image_id), (0, 0)))]]


def _gt_status_array(gs: pd.DataFrame, n: int) -> np.ndarray:
    """Per GT row, its status in ``Analysis.gt_status``'s frame (rows it does not list: "not evaluated")."""
    out = np.full(n, "not evaluated", dtype=object)
    rows = gs["gt"].to_numpy(np.int64) if "gt" in gs else np.arange(len(gs))
    out[rows] = gs["status"].astype(str).to_numpy(object)
    return out


_MEDIA = {"JPEG": "image/jpeg", "PNG": "image/png"}


def _encoded_image(rr, path: str | None):
    """The image file as ``rr.EncodedImage`` (its bytes as on disk when JPEG / PNG, else decoded), or None when it is
    missing or no image."""
    if path is None:
        return None
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            fmt = im.format
            if fmt not in _MEDIA:
                return rr.Image(np.asarray(im.convert("RGB")))
        return rr.EncodedImage(contents=Path(path).read_bytes(), media_type=_MEDIA[fmt])
    except (OSError, UnidentifiedImageError, ValueError):
        return None


def _depth_image(rr, path: str | None, size: tuple[int, int], load_depth):
    """The depth map as a depth image of the camera's resolution (metres): a 16-bit PNG of that size as it is on disk
    (millimetres, ``meter=1000``), anything else read by ``io.pointcloud.load_depth`` and resampled (nearest pixel)
    to the image size. None when there is no file; ``InputError`` when it is not a depth map."""
    if path is None:
        return None
    d = load_depth(path)
    w, h = size
    if Path(path).suffix.lower() == ".png" and d.shape == (h, w):
        from PIL import Image

        with Image.open(path) as im:  # the header only: load_depth decoded it
            sixteen = im.mode in ("I;16", "I;16B", "I;16L")
        if sixteen:
            return rr.EncodedDepthImage(Path(path).read_bytes(), media_type="image/png", meter=1000.0)
    if d.shape != (h, w):
        rows = np.minimum((np.arange(h) + 0.5) * d.shape[0] / h, d.shape[0] - 1).astype(np.int64)
        cols = np.minimum((np.arange(w) + 0.5) * d.shape[1] / w, d.shape[1] - 1).astype(np.int64)
        d = d[rows[:, None], cols[None, :]]
    return rr.DepthImage(d.astype(np.float32), meter=1.0)


def _info_text(view, image_id: int, image_path: str | None, runs: Sequence[str]) -> str:
    name = Path(image_path).name if image_path else "no image file"
    extra = f" · score ≥ {view.min_score:g}" if view.min_score > 0 else ""
    remap = " · remapped labels" if view.remap is not None else ""
    return (f"**{view.dataset}** · image {image_id} ({name})\n\n{view.protocol} · statuses at 3D IoU {view.iou:g}"
            f"{extra}{remap}\n\nruns: {', '.join(runs) if runs else 'none'}")
