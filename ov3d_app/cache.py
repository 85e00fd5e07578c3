"""Every ``st.cache_resource`` / ``st.cache_data`` of the app, keyed on hashable ids.

- ``cache_resource``: the ``Benchmark`` (one per config file and modification time), encoders and live remappers.
- ``cache_data``: result tables (scores, leaderboards, confusion matrices, point clouds, thumbnails), keyed on
  ``(cfg_key, dataset, run, protocol, min_score, iou, ...)``. ``cfg_key`` is ``"<config path>::<mtime_ns>"`` so an
  edited config is re-read.

Pages call these functions and render what they return; nothing here draws. Heavy modules (open3d, torch,
transformers) are imported inside the functions that need them.
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

LEADERBOARD_METRICS = ("AP3D", "AP3D@15", "AP3D@25", "AP3D@50", "AP3D-N", "AP3D-M", "AP3D-F", "recall3D@15")


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
def benchmark(cfg_key: str):
    """The ``Benchmark`` of a config (shared by all sessions; it is thread-safe and lazily loads its parts)."""
    from ov3d_core.benchmark import Benchmark

    return Benchmark.from_yaml(_path_of(cfg_key))


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


def _score(b, run: str, dataset: str, protocol: str, min_score: float, view=None):
    return b.score(run, dataset, protocol=protocol, min_score=min_score, view=view)


def _plain_score(rs, iou: float) -> dict:
    """A ``RunScore`` as picklable tables; statuses at 3D IoU ``iou``."""
    return {"summary": {k: float(v) for k, v in dict(rs.summary).items()},
            "per_category": pd.DataFrame(rs.per_category).copy(),
            "pred_status": pd.DataFrame(rs.pred_status(iou)).copy(),
            "gt_status": pd.DataFrame(rs.gt_status(iou)).copy()}


@st.cache_resource(show_spinner=False, max_entries=128)
def run_score(cfg_key: str, dataset: str, run: str, protocol: str, min_score: float):
    """The ``RunScore`` of a run (shared, read-only): AP with match records, recall, and the scored view."""
    return _score(benchmark(cfg_key), run, dataset, protocol, float(min_score))


@st.cache_data(show_spinner=False, max_entries=256)
def score(cfg_key: str, dataset: str, run: str, protocol: str, min_score: float, iou: float = 0.25) -> dict:
    """``Benchmark.score`` as plain tables: summary dict, per_category, pred_status, gt_status (at ``iou``)."""
    return _plain_score(run_score(cfg_key, dataset, run, protocol, float(min_score)), float(iou))


LEADERBOARD_COLUMNS = ["dataset", "run", *LEADERBOARD_METRICS, "in_domain"]


@st.cache_data(show_spinner=False, max_entries=1024)
def leaderboard_row(cfg_key: str, dataset: str, run: str, protocol: str, min_score: float) -> dict:
    """One leaderboard row: the summary metrics of a run on a dataset (AP in percent, recall as a fraction)."""
    s = score(cfg_key, dataset, run, protocol, min_score)["summary"]
    spec = benchmark(cfg_key).run_spec(run, dataset)
    return {"dataset": dataset, "run": run, **{m: s.get(m, np.nan) for m in LEADERBOARD_METRICS},
            "in_domain": spec.in_domain if spec.trained_on else None}


def leaderboard_pairs(cfg_key: str, datasets: tuple[str, ...] | None = None) -> list[tuple[str, str]]:
    """The (dataset, run) rows of the leaderboard, in config order."""
    b = benchmark(cfg_key)
    return [(ds, run) for ds in (datasets or tuple(b.dataset_names)) for run in b.run_names(ds)]


def leaderboard(cfg_key: str, protocol: str, min_score: float, datasets: tuple[str, ...] | None = None
                ) -> pd.DataFrame:
    """One row per (dataset, run); see :func:`leaderboard_row`."""
    rows = [leaderboard_row(cfg_key, ds, run, protocol, min_score) for ds, run in leaderboard_pairs(cfg_key, datasets)]
    return pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS)


@st.cache_data(show_spinner=False, max_entries=64)
def per_category(cfg_key: str, dataset: str, runs: tuple[str, ...], protocol: str, min_score: float
                 ) -> pd.DataFrame:
    """Per-category AP3D of several runs, long format: run, category, AP3D, n_gt, n_pred."""
    parts = []
    for run in runs:
        pc = score(cfg_key, dataset, run, protocol, min_score)["per_category"].copy()
        pc.insert(0, "run", run)
        parts.append(pc)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["run", "category", "AP3D"])


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
def boxes(cfg_key: str, dataset: str, runs: tuple[str, ...], protocol: str, min_score: float, iou: float
          ) -> pd.DataFrame:
    """The box table (``ov3d_app.selection.box_table``) of a dataset and runs under a protocol and threshold."""
    from ov3d_app.selection import box_table

    b = benchmark(cfg_key)
    ds = b.dataset(dataset)
    preds, gt_status = {}, {}
    for run in runs:
        sc = score(cfg_key, dataset, run, protocol, min_score, iou)
        pred = b.run(run, dataset).pred
        ps = _status_frame(sc["pred_status"], len(pred), "not evaluated")
        preds[run] = pd.DataFrame({"image_id": pred.image_id, "category": pred.category, "score": pred.score,
                                   "status": ps["status"], "matched": ps["matched"], "iou": ps["iou"]})
        gt_status[run] = _status_frame(sc["gt_status"], len(ds.gt), "FN")["status"].to_numpy()
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
def point_cloud(cfg_key: str, dataset: str, image_id: int, budget: int = 60_000
                ) -> tuple[np.ndarray, np.ndarray | None, str] | None:
    """Camera-frame points (float32) and colours of an image from its point-cloud file, else from its depth map
    back-projected through K (coloured by the image); voxel-downsampled to ``budget``. None when neither exists."""
    from ov3d_core.io.pointcloud import depth_to_points, load_depth, load_point_cloud, voxel_downsample

    b = benchmark(cfg_key)
    p = b.asset_path(dataset, "points", image_id)
    if p is not None:
        pts, cols = load_point_cloud(p)
        src = f"point cloud {Path(p).name}"
    else:
        d = b.asset_path(dataset, "depth", image_id)
        if d is None:
            return None
        depth = load_depth(d)
        meta = image_meta(cfg_key, dataset, image_id)
        img = None
        if meta["path"]:
            from PIL import Image

            im = Image.open(meta["path"]).convert("RGB")
            if im.size == (depth.shape[1], depth.shape[0]):
                img = np.asarray(im)
        out = depth_to_points(depth, meta["K"], colors=img)
        pts, cols = out if isinstance(out, tuple) else (out, None)
        src = f"depth map {Path(d).name}"
    pts, cols = voxel_downsample(pts, cols, budget=budget)
    return pts.astype(np.float32), (None if cols is None else cols.astype(np.float32)), src


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


# ================================================================================================ diagnostics
def _label_view(b, dataset: str, run: str, protocol: str, min_score: float):
    """The label view ``Benchmark.score`` evaluates: the run's labels -> protocol filter -> score threshold."""
    import ov3d_core.eval.scoring as sc
    ds, r = b.dataset(dataset), b.run(run, dataset)
    return sc.threshold_view(sc.apply_protocol(sc.default_view(ds, r), ds, r, protocol), min_score)


@st.cache_data(show_spinner=False, max_entries=64)
def confusion(cfg_key: str, dataset: str, run: str, protocol: str, min_score: float, level: str = "fine",
              iou: float = 0.5):
    """The confusion matrix (``eval.confusion.ConfusionMatrix``) of a run, fine or super-category level, plus the
    super-category summary numbers (dict) for ``level="super"``."""
    import ov3d_core.diagnostics.confusion as conf
    import ov3d_core.eval.labels as labels
    b = benchmark(cfg_key)
    ds = b.dataset(dataset)
    view = _label_view(b, dataset, run, protocol, min_score)
    cm = conf.confusion_matrix(b.pairs(run, dataset), view, labels.gt_codes(ds.gt.category, view.vocabulary),
                               ds.gt.ignore, ds.gt.image_id, iou_threshold=iou)
    if level == "super":
        sup = conf.super_category_confusion(cm)
        return sup.matrix, {"cross_super_share_of_confusions": sup.cross_super_share_of_confusions,
                            "mean_off_diagonal": sup.mean_off_diagonal}
    return cm, {}


@st.cache_data(show_spinner=False, max_entries=64)
def protocol_comparison(cfg_key: str, dataset: str, run: str, min_score: float) -> dict:
    """Dataset-level vs target-aware on one run: per-class table, summary, removed predictions."""
    import ov3d_core.diagnostics.protocol_comparison as protocols
    b = benchmark(cfg_key)
    ds, r = b.dataset(dataset), b.run(run, dataset)
    view = _label_view(b, dataset, run, "dataset-level", min_score)
    cmp_ = protocols.compare_protocols_boxes(ds.gt, r.pred, b.pairs(run, dataset), view, proximity=ds.proximity,
                                             keep_results=False)
    return {"per_class": cmp_.to_frame(), "summary": cmp_.summary(), "removed": cmp_.removed.copy()}


@st.cache_data(show_spinner=False, max_entries=64)
def split_sensitivity(cfg_key: str, dataset: str, run: str, protocol: str, min_score: float, k: int, n: int,
                      seed: int = 0) -> dict:
    """Class-split sensitivity of one run: summary dict and the subset means."""
    import ov3d_core.diagnostics.splits as splits
    pc = score(cfg_key, dataset, run, protocol, min_score)["per_category"]
    s = splits.class_split_sensitivity(pd.Series(pc["AP3D"].to_numpy(np.float64), index=pc["category"]),
                                       subset_size=int(k), n_subsets=int(n), seed=seed)
    return {"summary": s.to_dict(), "subset_means": np.asarray(s.subset_means).copy()}


@st.cache_data(show_spinner=False, max_entries=32)
def transfer(cfg_key: str, protocol: str, min_score: float, prompt_cv: tuple = ()) -> dict:
    """Domain-transfer tables over every (run, dataset) of the benchmark; ``prompt_cv`` ((run, cv) pairs from the
    prompt lab) fills the three-axis table's prompt-robustness column."""
    import ov3d_core.diagnostics.transfer as tr
    b = benchmark(cfg_key)
    board = leaderboard(cfg_key, protocol, min_score)
    results = pd.DataFrame({"run": board["run"], "dataset": board["dataset"], "map3d": board["AP3D"],
                            "recall": board["recall3D@15"]})
    trained = {}
    for spec in b.config.runs.values():
        trained.setdefault(spec.name, set()).update(spec.trained_on)
    envs = {name: spec.environment for name, spec in b.config.datasets.items()}
    t = tr.domain_transfer(results, {k: sorted(v) for k, v in trained.items()}, envs)
    axes = tr.three_axis_breakdown(t, prompt_cv=dict(prompt_cv) or None)
    return {"table": t.table, "per_run": t.per_run, "pairs": t.pairs, "axes": axes.table,
            "has_training_info": any(trained.values())}


# ================================================================================================ prompt lab
def encoder_spec() -> str:
    """``hf:<checkpoint>`` when ``$OV3D_ENCODER`` is set, else the demo proxy."""
    env = os.environ.get(ENCODER_ENV, "").strip()
    return env if env.startswith("hf:") else (f"hf:{env}" if env else "proxy")


@st.cache_resource(show_spinner=False, max_entries=2)
def encoder(spec: str):
    """The remapping encoder (shared; loads torch/transformers on first use)."""
    import ov3d_core.remap.encoders as encoders
    return encoders.make_encoder(spec)


@st.cache_resource(show_spinner=False, max_entries=8)
def remapper(cfg_key: str, dataset: str, run: str, spec: str):
    """A ``LiveRemapper`` over the run's cached crop embeddings (computed on first use, then on disk)."""
    import ov3d_core.remap.pipeline as pipeline
    import ov3d_core.remap.cache as cache
    import ov3d_core.remap.templates as templates
    b = benchmark(cfg_key)
    ds, r = b.dataset(dataset), b.run(run, dataset)
    enc = encoder(spec)
    store = cache.EmbeddingStore(b.config.cache_dir / "embeddings")
    emb = pipeline.embed_run(store, ds, r, enc, crops_json=b.run_spec(run, dataset).crops, progress=False)
    text_cache = cache.TextEmbeddingCache(b.config.cache_dir / "text")
    return pipeline.LiveRemapper(emb, r.pred.record, r.pred.score, enc, ds.vocabulary, text_cache=text_cache,
                                 templates=templates.load_templates())


def remappable_runs(cfg_key: str, dataset: str, spec: str) -> list[str]:
    """Runs that the prompt lab can remap: with crops (any encoder) or any run (pixel encoders)."""
    b = benchmark(cfg_key)
    runs = b.run_names(dataset)
    if spec == "proxy":
        return [r for r in runs if b.run_spec(r, dataset).crops is not None]
    return runs


@st.cache_data(show_spinner=False, max_entries=512)
def template_score(cfg_key: str, dataset: str, run: str, spec: str, template: str, theta: float, protocol: str
                   ) -> dict:
    """Remap a run under one template spec and threshold, then score it: summary, per-category, top-1 labels."""
    rm = remapper(cfg_key, dataset, run, spec)
    view = rm.label_view(template, float(theta))
    b = benchmark(cfg_key)
    rs = _score(b, run, dataset, protocol, 0.0, view=view)
    res = rm.result(template, float(theta))
    return {"summary": {k: float(v) for k, v in dict(rs.summary).items()},
            "per_category": pd.DataFrame(rs.per_category).copy(), "label": np.asarray(res.label).copy(),
            "n_kept": int(np.asarray(res.keep).sum())}


# ================================================================================================ error breakdown
@st.cache_data(show_spinner=False, max_entries=64)
def distance_scores(cfg_key: str, dataset: str, run: str, protocol: str, min_score: float, mode: str = "3dmood"
                    ) -> dict:
    """Centre-distance AP and TP errors (3D-MOOD / WildDet3D ODS, or the nuScenes-style variant) of a run."""
    import ov3d_core.diagnostics.distance as dist
    b = benchmark(cfg_key)
    ds, r = b.dataset(dataset), b.run(run, dataset)
    view = _label_view(b, dataset, run, protocol, min_score)
    res = dist.evaluate_distance_view(ds.gt, r.pred, view, mode=mode)
    out = {"summary": {k: float(v) for k, v in res.summary().items()}}
    for name in ("per_category", "per_threshold"):
        fn = getattr(res, name, None)
        out[name] = fn() if callable(fn) else None
    return out


@st.cache_data(show_spinner=False, max_entries=64)
def tide(cfg_key: str, dataset: str, run: str, protocol: str, min_score: float, fg: float = 0.25, bg: float = 0.1
         ) -> dict:
    """3D TIDE error bins of a run (``eval.errors.tide_3d_view``): bin table, base mAP, binned detections, missed GT."""
    import ov3d_core.diagnostics.tide as errors
    b = benchmark(cfg_key)
    ds, r = b.dataset(dataset), b.run(run, dataset)
    res = errors.tide_3d_view(ds.gt, r.pred, b.pairs(run, dataset), _label_view(b, dataset, run, protocol, min_score),
                              fg=fg, bg=bg, proximity=ds.proximity)
    return {"table": res.table.copy(), "base_ap": float(res.base_ap), "dets": res.dets.copy(),
            "missed": np.flatnonzero(np.asarray(res.gt_status) == "missed"), "note": res.note}


@st.cache_data(show_spinner=False, max_entries=64)
def mono_oracles(cfg_key: str, dataset: str, run: str, protocol: str, min_score: float) -> dict:
    """Monocular oracles of a run (GT depth / size / rotation substituted; ``eval.errors.monocular_oracles_view``)."""
    import ov3d_core.diagnostics.oracles as errors
    b = benchmark(cfg_key)
    ds, r = b.dataset(dataset), b.run(run, dataset)
    res = errors.monocular_oracles_view(ds.gt, r.pred, b.pairs(run, dataset),
                                        _label_view(b, dataset, run, protocol, min_score), proximity=ds.proximity)
    return {"table": res.table.copy(), "base_ap": float(res.base_ap)}
