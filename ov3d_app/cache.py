"""The app's data layer: the shared ``Analysis`` of a config, plus image and figure work.

- ``analysis(cfg_key)`` (``cache_resource``): one ``ov3d_core.Analysis`` per config for the whole server. Every
  number a page shows is one of its methods for a ``View`` (``ui.Context.view``); it memoises results per ``View``
  once for all sessions, so nothing here re-composes a metric or a view recipe.
- ``cache_data``: names, image tables, box tables for drawing, point clouds, image data URIs and thumbnails.

``cfg_key`` is ``"<config path>::<mtime_ns>"`` so an edited config is re-read. Pages call these functions and render
what they return; nothing here draws. Heavy modules (open3d, torch, transformers) are imported inside the functions
that need them.
"""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd
import streamlit as st

from ov3d_core.errors import InputError

REPO = Path(__file__).resolve().parents[1]
#: Environment variable naming the folder of the demo benchmark (tests point it at a tiny demo).
DEMO_ENV = "OV3D_DEMO_DIR"
#: Environment variable with a Hugging Face checkpoint for the prompt lab (else the demo proxy encoder).
ENCODER_ENV = "OV3D_ENCODER"



# ================================================================================================ data source
_demo_lock = threading.Lock()
_demo_done: dict[str, str] = {}


def demo_dir() -> Path:
    """Where the demo benchmark lives: ``$OV3D_DEMO_DIR`` or ``data/demo`` in the repository."""
    env = os.environ.get(DEMO_ENV)
    return Path(env).expanduser().resolve() if env else REPO / "data" / "demo"


def demo_ready() -> str | None:
    """The demo's ``benchmark.yaml`` if it was already ensured by this process (no disk work), else None."""
    return _demo_done.get(str(demo_dir()))


def ensure_demo_config(progress: Callable | None = None) -> str:
    """Build the demo if needed (``ov3d_core.demo.ensure_demo``; once per process) and return its config path."""
    out = demo_dir()
    key = str(out)
    with _demo_lock:
        if key in _demo_done:
            return _demo_done[key]
        import ov3d_core.demo as demo
        folder = Path(demo.ensure_demo(out, progress=progress))
        cfg = folder / "benchmark.yaml"
        if not cfg.is_file():
            raise InputError(str(cfg), None, None, "the demo's benchmark.yaml", "no such file")
        _demo_done[key] = str(cfg)
        return _demo_done[key]


def config_key(path: str | Path) -> str:
    """``"<resolved path>::<mtime_ns>"`` of a benchmark config (InputError when it does not exist)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputError(str(p), None, None, "an existing benchmark config file (YAML)", "no such file")
    p = p.resolve()
    return f"{p}::{p.stat().st_mtime_ns}"


def _path_of(cfg_key: str) -> str:
    return cfg_key.rsplit("::", 1)[0]


@st.cache_resource(show_spinner=False, max_entries=4)
def analysis(cfg_key: str):
    """The ``Analysis`` of a config: shared by every session of the server (it is thread-safe, loads its files lazily
    and memoises every result per ``View`` once for all sessions)."""
    from ov3d_core.analysis import Analysis

    return Analysis.from_yaml(_path_of(cfg_key))


def benchmark(cfg_key: str):
    """The ``Benchmark`` (files, geometry) behind :func:`analysis`."""
    return analysis(cfg_key).benchmark


_warm_lock = threading.Lock()
_warm_started: set[str] = set()


def warm_in_background(cfg_key: str) -> None:
    """Once per config and process: load every dataset, run and pair cache in a daemon thread, so that switching
    dataset or page later does not wait for file parsing. Called after the first page has rendered."""
    with _warm_lock:
        if cfg_key in _warm_started:
            return
        _warm_started.add(cfg_key)
    b = benchmark(cfg_key)

    def work():
        import logging

        for ds in b.dataset_names:
            for run in b.run_names(ds):
                try:
                    b.pairs(run, ds)
                except Exception:  # noqa: BLE001 - a broken file is reported when a page asks for it
                    logging.getLogger(__name__).debug("warm-up of %s on %s failed", run, ds, exc_info=True)

    threading.Thread(target=work, name="ov3d-warm-up", daemon=True).start()


@st.cache_data(show_spinner=False, max_entries=16)
def catalog(cfg_key: str) -> dict:
    """Names only (no file is read beyond the config): datasets, runs per dataset, run descriptions."""
    b = benchmark(cfg_key)
    return {"name": b.config.name, "datasets": b.dataset_names,
            "runs": {d: b.run_names(d) for d in b.dataset_names},
            "descriptions": {f"{r.name}@{r.dataset}": r.description for r in b.config.runs.values()}}


# ================================================================================================ datasets
@st.cache_data(show_spinner=False, max_entries=32)
def dataset_info(cfg_key: str, dataset: str) -> dict:
    """Vocabulary, image table (id, width, height, file_path), environment and GT count of a dataset."""
    ds = benchmark(cfg_key).dataset(dataset)
    return {"vocabulary": list(ds.vocabulary), "images": ds.images[["image_id", "width", "height"]].copy(),
            "environment": ds.environment, "n_gt": int(len(ds.gt)), "n_images": int(len(ds.images))}


def leaderboard_pairs(cfg_key: str, datasets: tuple[str, ...] | None = None) -> list[tuple[str, str]]:
    """The (dataset, run) rows of the leaderboard, in config order."""
    b = benchmark(cfg_key)
    return [(ds, run) for ds in (datasets or tuple(b.dataset_names)) for run in b.run_names(ds)]


# ================================================================================================ boxes
def _status_frame(df: pd.DataFrame, n: int, default: str) -> pd.DataFrame:
    """One row per box: ``status``, ``matched`` (the matched GT / prediction row, or for a mislabelled prediction
    the GT it overlaps; -1 if none) and ``iou`` (a prediction's best 3D IoU with any GT)."""
    out = pd.DataFrame(index=np.arange(n))
    out["status"] = df["status"].astype(object).to_numpy() if "status" in df else default
    matched = np.full(n, -1, np.int64)
    for src in ("matched_gt", "matched_pred"):
        if src in df:
            matched = pd.to_numeric(df[src], errors="coerce").fillna(-1).astype(np.int64).to_numpy()
            break
    if "best_gt" in df:
        best = pd.to_numeric(df["best_gt"], errors="coerce").fillna(-1).astype(np.int64).to_numpy()
        matched = np.where((matched < 0) & (out["status"].to_numpy() == "mislabelled"), best, matched)
    out["matched"] = matched
    out["iou"] = pd.to_numeric(df["best_iou"], errors="coerce").to_numpy(np.float64) if "best_iou" in df else np.nan
    return out


@st.cache_data(show_spinner=False, max_entries=64)
def boxes(cfg_key: str, view, runs: tuple[str, ...]) -> pd.DataFrame:
    """The box table (``ov3d_app.selection.box_table``) of ``view.dataset`` for ``runs``: statuses at ``view.iou``
    under ``view``'s protocol and threshold (``Analysis.pred_status`` / ``gt_status``)."""
    from ov3d_app.selection import box_table

    a = analysis(cfg_key)
    ds = a.benchmark.dataset(view.dataset)
    preds, gt_status = {}, {}
    for run in runs:
        v = view.with_(run=run)
        pred = a.benchmark.run(run, view.dataset).pred
        ps = _status_frame(a.pred_status(v), len(pred), "not evaluated")
        preds[run] = pd.DataFrame({"image_id": pred.image_id, "category": pred.category, "score": pred.score,
                                   "status": ps["status"], "matched": ps["matched"], "iou": ps["iou"]})
        gt_status[run] = _status_frame(a.gt_status(v), len(ds.gt), "FN")["status"].to_numpy()
    gt = pd.DataFrame({"image_id": ds.gt.image_id, "category": ds.gt.category,
                       "status": np.where(ds.gt.ignore, "ignored", "GT")})
    return box_table(gt, preds, gt_status)


def corners_of(cfg_key: str, dataset: str, kind: str, run: str, rows: np.ndarray) -> np.ndarray:
    """``(len(rows), 8, 3)`` corners of GT rows (``kind="gt"``) or of a run's prediction rows."""
    b = benchmark(cfg_key)
    rows = np.asarray(rows, np.int64)
    if kind == "gt":
        return b.dataset(dataset).gt.corners[rows]
    return b.run(run, dataset).pred.corners[rows]


def image_meta(cfg_key: str, dataset: str, image_id: int) -> dict:
    """K, width, height and path of one image."""
    b = benchmark(cfg_key)
    ds = b.dataset(dataset)
    row = int(ds.image_index(np.array([image_id]))[0])
    if row < 0:
        raise InputError(str(b.config.path), f"dataset {dataset}", "image_id", "an image of the dataset", image_id)
    rec = ds.images.iloc[row]
    path = b.image_path(dataset, image_id)
    return {"K": ds.K[row], "width": int(rec["width"]), "height": int(rec["height"]),
            "path": str(path) if path is not None and Path(path).exists() else None}


# ================================================================================================ 3D
@st.cache_data(show_spinner=False, max_entries=32)
def point_cloud(cfg_key: str, dataset: str, image_id: int, budget: int = 60_000):
    """The 3D view's points of an image (``ov3d_core.io.pointcloud.scene_points``: the depth map back-projected at full
    resolution, else the point-cloud file; coloured; voxel-downsampled to ``budget``), or None when neither exists."""
    from ov3d_core.io.pointcloud import scene_points

    b = benchmark(cfg_key)
    meta = image_meta(cfg_key, dataset, image_id)
    return scene_points(meta["K"], depth=b.asset_path(dataset, "depth", image_id),
                        points=b.asset_path(dataset, "points", image_id), image=meta["path"],
                        image_size=(meta["width"], meta["height"]), budget=int(budget))


# ================================================================================================ images
@st.cache_data(show_spinner=False, max_entries=256)
def image_uri(path: str, max_side: int = 1600) -> tuple[str, int, int, float]:
    """An image file as a JPEG data URI for the overlay: ``(uri, width, height, scale)`` (``viz.encode_image``)."""
    from ov3d_core.viz.image_overlay import encode_image

    return encode_image(path, max_side=max_side)


# ================================================================================================ thumbnails
@st.cache_data(show_spinner=False, max_entries=2048)
def thumbnail(path: str, box: tuple[float, float, float, float], size: int = 160, pad: float = 0.15) -> bytes:
    """A PNG crop of ``box`` (x1, y1, x2, y2 pixels, padded by ``pad`` of its size) from an image file."""
    from PIL import Image, ImageDraw

    im = Image.open(path).convert("RGB")
    x1, y1, x2, y2 = box
    w, h = max(x2 - x1, 1.0), max(y2 - y1, 1.0)
    cx1, cy1 = max(0.0, x1 - pad * w), max(0.0, y1 - pad * h)
    cx2, cy2 = min(im.width, x2 + pad * w), min(im.height, y2 + pad * h)
    if cx2 - cx1 < 2 or cy2 - cy1 < 2:
        cx1, cy1, cx2, cy2 = 0, 0, im.width, im.height
    crop = im.crop((int(cx1), int(cy1), int(np.ceil(cx2)), int(np.ceil(cy2))))
    draw = ImageDraw.Draw(crop)
    draw.rectangle([x1 - int(cx1), y1 - int(cy1), x2 - int(cx1), y2 - int(cy1)], outline=(255, 200, 0), width=2)
    crop.thumbnail((size, size))
    buf = io.BytesIO()
    crop.save(buf, format="PNG")
    return buf.getvalue()


# ================================================================================================ prompt lab
def encoder_spec() -> str:
    """``hf:<checkpoint>`` when ``$OV3D_ENCODER`` is set, else the demo proxy."""
    env = os.environ.get(ENCODER_ENV, "").strip()
    return env if env.startswith("hf:") else (f"hf:{env}" if env else "proxy")
