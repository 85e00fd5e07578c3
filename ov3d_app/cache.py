"""The app's data layer: the shared ``Analysis`` of a config, plus image and figure work.

- ``analysis(cfg_key)`` (``cache_resource``): one ``ov3d_core.Analysis`` per config for the whole server. Every
  number a page shows is one of its methods for a ``View`` (``ui.Context.view``); it memoises results per ``View``
  once for all sessions, so nothing here re-composes a metric or a view recipe.
- ``cache_data``: names, image tables, box tables for drawing, point clouds, image data URIs and thumbnails.

``cfg_key`` is ``"<config path>::<mtime_ns>"`` so an edited config is re-read, with ``.<n>`` appended once the
files it names changed on disk (``fresh_key``: each new session re-checks them). Every file a page reads (the config,
the files it names, image, depth and point files) lies inside ``sources.allowed_roots()``, checked after symlinks;
refusals name only a basename. Pages call these functions and render what they return; nothing here draws. Heavy
modules (open3d, torch, transformers) are imported inside the functions that need them.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

import numpy as np
import pandas as pd
import streamlit as st

from ov3d_app import sources
from ov3d_core.errors import InputError
from ov3d_core.io.paths import DEMO_DIR_ENV, check_under_roots, demo_dir, is_under_roots
from ov3d_core.io.yaml_safe import Kind
from ov3d_core.memo import Memo

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[1]
#: Environment variable naming the folder of the demo benchmark (tests point it at a tiny demo).
DEMO_ENV = DEMO_DIR_ENV
#: Environment variable with the demo's images per dataset (``demo_images``).
DEMO_IMAGES_ENV = "OV3D_DEMO_IMAGES"
#: Environment variable with a Hugging Face checkpoint for the prompt lab (else the demo proxy encoder).
ENCODER_ENV = "OV3D_ENCODER"


# ================================================================================================ data source
@dataclass(frozen=True)
class DemoStatus:
    """Where the server's one demo build stands: ``path`` of its benchmark.yaml once ready, or the ``error``."""

    fraction: float = 0.0
    message: str = ""
    elapsed: float = 0.0
    path: str | None = None
    error: BaseException | None = None

    @property
    def eta(self) -> float | None:
        """Seconds left, extrapolated from the progress so far (None until there is enough of it)."""
        if self.path is not None or self.fraction < 0.03 or self.elapsed < 3:
            return None
        return self.elapsed * (1 - self.fraction) / self.fraction


_demo_lock = threading.Lock()
_demo: dict[str, dict] = {}  # demo folder -> {"t0", "fraction", "message", "path", "error"}


def demo_ready() -> str | None:
    """The demo's ``benchmark.yaml`` if this process already found or built it (no disk work), else None."""
    state = _demo.get(str(demo_dir()))
    return state["path"] if state else None


def demo_status(start: bool = True) -> DemoStatus:
    """The demo build of this server: found at once when it is on disk and current, else built once per process in
    a background thread (its worker processes do the rendering), whatever happens to the session that started it.
    Every session polls the same status. A failed build is reported once and retried on the next call."""
    out = demo_dir()
    key = str(out)
    with _demo_lock:
        state = _demo.get(key)
        if state is None:
            if not start:
                return DemoStatus()
            state = _demo[key] = {"t0": time.perf_counter(), "fraction": 0.0, "message": "starting", "path": None,
                                  "error": None}
            worker = threading.Thread(target=_build_demo, args=(out, state), name="ov3d-demo-build", daemon=True)
            worker.start()
            worker.join(0.5)  # a demo already on disk is found within this: no progress bar flashes
        snap = DemoStatus(state["fraction"], state["message"], time.perf_counter() - state["t0"], state["path"],
                          state["error"])
        if snap.error is not None:
            del _demo[key]
        return snap


def _build_demo(out: Path, state: dict) -> None:
    def progress(fraction: float, message: str) -> None:
        state["fraction"], state["message"] = float(fraction), str(message)

    try:
        import ov3d_core.demo as demo

        # in a process of its own: multiprocessing's workers would re-run this server's script (app.py)
        cfg = Path(demo.ensure_demo(out, images=demo_images(), progress=progress, isolated=True)) / "benchmark.yaml"
        if not cfg.is_file():
            raise InputError(cfg.name, None, None, "the demo's benchmark.yaml", Kind("no such file"))
        state["path"] = str(cfg)
    except Exception as exc:  # noqa: BLE001 - shown by the session that polls next
        state["error"] = exc


def demo_images() -> int | None:
    """Images per dataset of the demo this server builds: ``$OV3D_DEMO_IMAGES`` (a smaller demo for a slow machine,
    or a test), else None (any size already on disk; 150 when it is built)."""
    raw = os.environ.get(DEMO_IMAGES_ENV, "").strip()
    if not raw:
        return None
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if not 1 <= n <= 99_999:
        raise InputError(DEMO_IMAGES_ENV, None, "images", "an integer in [1, 99999]", Kind("another value"))
    return n


def ensure_demo_config() -> str:
    """The demo's benchmark.yaml, waiting for the build when there is one (scripts and benchmarks)."""
    while True:
        s = demo_status()
        if s.error is not None:
            raise s.error
        if s.path is not None:
            return s.path
        time.sleep(0.2)


def config_key(path: str | Path) -> str:
    """``"<resolved path>::<mtime_ns>"`` of a benchmark config inside the allowed roots (``InputError`` naming the
    basename when it is outside them, whether it exists or not, or when it is not an existing file)."""
    p = check_under_roots(Path(path).expanduser(), sources.allowed_roots(), what="a benchmark config")
    if not p.is_file():
        raise InputError(p.name or "the path", None, None, "an existing benchmark config file (YAML)",
                         Kind("no such file"))
    return f"{p}::{p.stat().st_mtime_ns}"


def path_of(cfg_key: str) -> str:
    """The config path of a key from ``config_key`` / ``fresh_key``."""
    return cfg_key.rsplit("::", 1)[0]


def inputs_signature(bench) -> tuple:
    """``(path, device, inode, size, mtime_ns, ctime_ns)`` of every input file of a ``Benchmark``
    (``input_files()``): the rule of the load cache's digest memo (``ov3d_core.io.loadcache``), so any write or
    ``os.utime`` changes it (ctime always moves) while nothing is read. A file that appears or vanishes changes the
    list."""
    out = []
    for f in bench.input_files():
        try:
            st_ = os.stat(f)
        except OSError:
            out.append((str(f), None))
            continue
        out.append((str(f), st_.st_dev, st_.st_ino, st_.st_size, st_.st_mtime_ns, st_.st_ctime_ns))
    return tuple(out)


_inputs_lock = threading.Lock()
_generation: dict[str, int] = {}  # config_key -> generation of its inputs (0: as first built)
_built_with: dict[str, tuple] = {}  # fresh_key -> inputs_signature when its Analysis was built


def _with_generation(base: str, gen: int) -> str:
    return base if gen == 0 else f"{base}.{gen}"


def fresh_key(base: str) -> str:
    """The key of the shared ``Analysis`` of config key ``base`` whose input files are the ones on disk now: the
    current one when every input file has the size, mtime and ctime it had when that Analysis was built (only
    ``stat`` calls: nothing is re-read), else a new generation ``"<base>.<n>"`` (a new Analysis, new tables and
    figures; sessions still on the old key keep a consistent view until they re-check). app.py calls it when a session
    opens a source (a new session, another source, an edited config)."""
    with _inputs_lock:
        gen = _generation.get(base, 0)
    key = _with_generation(base, gen)
    bench = analysis(key).benchmark
    if _built_with.get(key) == inputs_signature(bench):
        return key
    with _inputs_lock:
        if _generation.get(base, 0) == gen:  # the first session to notice starts the next generation
            _generation[base] = gen + 1
        new = _with_generation(base, _generation[base])
    # The stale Analysis stays (until ``analysis`` evicts it) so that the sessions still on its key see numbers,
    # tables and figures of one and the same state.
    return new


@st.cache_resource(show_spinner=False, max_entries=8)
def analysis(cfg_key: str):
    """The ``Analysis`` of a config: shared by every session of the server (it is thread-safe, loads its files lazily
    and memoises every result per ``View`` once for all sessions). Every path the config names must lie inside the
    allowed roots. The signature of its input files is taken here, before any of them is read (``fresh_key``)."""
    from ov3d_core.analysis import Analysis

    a = Analysis.from_yaml(path_of(cfg_key), allowed_roots=sources.allowed_roots())
    with _inputs_lock:
        _built_with[cfg_key] = inputs_signature(a.benchmark)
    return a


def benchmark(cfg_key: str):
    """The ``Benchmark`` (files, geometry) behind :func:`analysis`."""
    return analysis(cfg_key).benchmark


def readable(path: str | Path | None) -> str | None:
    """``path`` (resolved) when it is an existing file inside the allowed roots, else None (outside the roots it
    is treated as missing, so a page never tells which files exist elsewhere)."""
    if path is None:
        return None
    p = Path(path)
    if not is_under_roots(p, sources.allowed_roots()):
        return None
    p = p.resolve()
    return str(p) if p.is_file() else None


def failures(cfg_key: str) -> list[tuple[str, str, Exception]]:
    """(dataset, run, error) of every run whose files fail to load. Like ``Analysis.failures`` but keeping the
    error itself, so that the page can word it (``ui.error_text``: basename, no file content), and counting any
    error, not only ``InputError``, as a failure of that run alone."""
    b = benchmark(cfg_key)
    out = []
    for spec in b.config.runs.values():
        try:
            b.run(spec.name, spec.dataset)
        except Exception as exc:  # noqa: BLE001 - listed with its message; the other runs still load
            out.append((spec.dataset, spec.name, exc))
    return out


_ABS_PATH = re.compile(r"(?<![\w.~])/(?:[^\s:;,'\"()`/]+/)*([^\s:;,'\"()`/]+)")


def load_warnings(cfg_key: str, dataset: str | None = None, runs: tuple[str, ...] | None = None) -> list:
    """The counted warnings of the loads done so far (``Benchmark.load_warnings``: GT of ``dataset``, its ``runs``;
    None: all), their messages with every path cut to its basename (the server's folders stay private)."""
    import dataclasses

    b = benchmark(cfg_key)
    found = b.load_warnings(dataset, runs)
    if not found:  # the usual case: no path to resolve (every page asks, on every run)
        return []
    paths = [Path(f) for f in b.input_files()]
    paths += [p for s in b.config.datasets.values() for p in (*s.gt, s.images, s.calib) if p is not None]
    paths += [s.predictions for s in b.config.runs.values()]
    known = sorted({v for p in paths for v in (str(p), str(Path(p).resolve()))}, key=len, reverse=True)

    def private(text: str) -> str:
        for v in known:
            if v and v != "/":
                text = text.replace(v, Path(v).name)
        return _ABS_PATH.sub(r"\1", text)

    return [dataclasses.replace(w, message=private(w.message)) for w in found]


_warm_lock = threading.Lock()
_warm_started: set[str] = set()


def warm_in_background(cfg_key: str, ctx=None, focus_run: str | None = None) -> None:
    """Once per config and process: load every dataset, run and pair cache in a daemon thread, so that switching
    dataset or page later does not wait for file parsing. Called after the first page has rendered. Within the run
    memory budget (``Benchmark.warm``) the runs it loads are let go before the runs the pages use. With the page's
    context ``ctx`` (``ui.Context``) and the session's ``focus_run``, the prompt lab's first view of its dataset is
    computed first (:func:`warm_prompt_lab`: the crop embeddings, ~10 s on the demo, and the tables it opens on)."""
    with _warm_lock:
        if cfg_key in _warm_started:
            return
        _warm_started.add(cfg_key)
    b = benchmark(cfg_key)
    a = analysis(cfg_key)

    def work():
        import logging

        if ctx is not None:
            try:
                warm_prompt_lab(a, ctx, focus_run)
            except Exception:  # noqa: BLE001 - the prompt lab reports it, with its message, when it is opened
                logging.getLogger(__name__).debug("prompt lab warm-up on %s failed", ctx.dataset, exc_info=True)
        for ds in b.dataset_names:
            for run in b.run_names(ds):
                try:
                    b.warm(run, ds)  # within the run memory budget, the pages' runs stay loaded
                except Exception:  # noqa: BLE001 - a broken file is reported when a page asks for it
                    logging.getLogger(__name__).debug("warm-up of %s on %s failed", run, ds, exc_info=True)

    threading.Thread(target=work, name="ov3d-warm-up", daemon=True).start()


def prompt_lab_run(a, ctx, focus_run: str | None = None) -> str | None:
    """The run the prompt lab opens on: ``focus_run`` when it can be remapped with the app's encoder, else the first
    run of the dataset that can (None: none can)."""
    runs = [r for r in a.remappable_runs(ctx.dataset, encoder_spec()) if r in ctx.all_runs]
    return (focus_run if focus_run in runs else runs[0]) if runs else None


#: ``(config path, dataset, run)`` whose prompt-lab warm-up has ended in this process (tests and benchmarks poll it).
prompt_lab_warm: set[tuple[str, str, str]] = set()


def warm_prompt_lab(a, ctx, focus_run: str | None = None) -> None:
    """What the prompt lab computes when it opens on ``ctx``'s dataset with its defaults (its run, the encoder's
    default θ, every preset template, the first one in detail), asked of the shared ``Analysis`` ``a`` with the
    very views the page builds, so the page then finds each in the Analysis memo (a page asking meanwhile waits
    for the same computation): the run's crop embeddings (the long part, then on disk), the template table and
    prompt sensitivity, the θ profile, and the first template's summary, classes, PCR / PLC, ranks, vocabulary
    curve and calibration. Only ``Analysis`` calls: no number is composed here."""
    import ov3d_core.remap.templates as tpl_mod
    from ov3d_core.analysis import RemapSpec

    spec = encoder_spec()
    check_encoder(spec)
    run = prompt_lab_run(a, ctx, focus_run)
    if run is None:
        return
    rm = a.remapper(ctx.dataset, run, spec)
    calibrated = bool(getattr(rm.encoder, "has_calibrated_bias", False))
    lo, hi = (0.0, 1.0) if calibrated else (-0.2, 1.0)
    theta = a.theta(ctx.view(run, remap=RemapSpec(encoder=spec)))
    view = ctx.view(run, remap=RemapSpec(encoder=spec, theta=theta))
    ids = [t.id for t in tpl_mod.load_templates()]
    a.theta_profile(view, lo=lo, hi=hi)
    a.template_scores(view, ids)
    a.prompt_sensitivity(view, ids)
    tview = view.with_(remap=RemapSpec(encoder=spec, theta=theta, template=ids[0]))
    a.summary(tview)
    a.per_category(tview)
    a.label_flips(view, ids[0], ids)
    a.consistency(view, ids)
    a.label_ranks(tview)
    a.vocabulary_curve(tview)
    with contextlib.suppress(ValueError):  # the page says why when calibration cannot be fitted
        a.calibration(tview)
    prompt_lab_warm.add((str(a.benchmark.config.path), ctx.dataset, run))


_ahead_lock = threading.Lock()  # guards the request counter
_ahead_run = threading.Lock()  # one computation ahead at a time, per process
_ahead_latest = [0]  # the newest request's number
_ahead_threads: list[threading.Thread] = []  # started, perhaps not ended


def compute_ahead(fn: Callable[..., object], *args, **kwargs) -> None:
    """Call ``fn(*args, **kwargs)`` in a daemon thread, for its cached result only: what the user's likely next
    interaction will ask for (e.g. the 3D view of the image on screen), computed while they look at the page.

    Best effort and bounded: one such computation runs at a time in the process, a request still waiting when a newer
    one arrives (from any session) is dropped, and a failure is only logged at debug level (the page's own call
    raises it again, with its message). ``fn`` should be a ``st.cache_data`` function, or call them: a page asking for
    the same value meanwhile waits for this computation instead of repeating it. The requesting script run's context
    goes with the thread, so Streamlit's caches see no context-less call."""
    from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

    with _ahead_lock:
        _ahead_latest[0] += 1
        ticket = _ahead_latest[0]

    def work():
        import logging

        with _ahead_run:
            if _ahead_latest[0] != ticket:
                return  # superseded while waiting
            try:
                fn(*args, **kwargs)
            except Exception:  # noqa: BLE001 - the page's own call reports it
                logging.getLogger(__name__).debug("computing ahead failed", exc_info=True)

    thread = threading.Thread(target=work, name="ov3d-ahead", daemon=True)
    ctx = get_script_run_ctx(suppress_warning=True)
    if ctx is not None:
        add_script_run_ctx(thread, ctx)
    with _ahead_lock:
        _ahead_threads[:] = [t for t in _ahead_threads if t.is_alive()] + [thread]
    thread.start()


def wait_ahead(timeout: float | None = None) -> None:
    """Wait until every computation ahead requested so far has ended (tests, benchmarks)."""
    with _ahead_lock:
        threads = list(_ahead_threads)
    for t in threads:
        t.join(timeout)


@st.cache_data(show_spinner=False, max_entries=16)
def catalog(cfg_key: str) -> dict:
    """Names only (no file is read beyond the config): datasets, runs per dataset, run descriptions."""
    b = benchmark(cfg_key)
    return {"name": b.config.name, "datasets": b.dataset_names,
            "runs": {d: b.run_names(d) for d in b.dataset_names},
            "descriptions": {f"{r.name}@{r.dataset}": r.description for r in b.config.runs.values()}}


# ================================================================================================ shared per server
SHARED_ITEMS = 256
_shared: Memo[tuple, object] = Memo(SHARED_ITEMS)


def shared(key: tuple, build: Callable[[], T], *, keep: int | None = None) -> T:
    """One value per ``key`` for the whole server: the tables and figures every session of a view shows, built
    once (the first session builds, the others wait for it) and then handed to every session as the same object,
    which must treat it as read-only (``ui.plot`` copies a figure before it changes one). The last
    ``SHARED_ITEMS`` keys are kept, and with ``keep`` only the last ``keep`` keys of this kind (same ``key[0]``: for
    values as large as a run's box table). ``key`` should include the config key, so an edited config builds anew."""
    value = _shared.get(key, build)  # a failed build is not kept: a waiting session tries (and fails) on its own
    if keep is not None:
        _shared.keep_last(lambda k: k[0] == key[0], keep)
    return value


def per_category_runs(cfg_key: str, view, runs: tuple[str, ...]) -> pd.DataFrame:
    """``Analysis.per_category_runs`` shared by every session (read-only)."""
    return shared(("per_category_runs", cfg_key, view, tuple(runs)),
                  lambda: analysis(cfg_key).per_category_runs(view, runs))


# ================================================================================================ datasets
@st.cache_data(show_spinner=False, max_entries=32)
def dataset_info(cfg_key: str, dataset: str, subset: str | None = None) -> dict:
    """Vocabulary, image table (id, width, height, file_path), environment and GT count of a dataset; with
    ``subset``, of its images in that image subset only (the sidebar's "Images")."""
    ds = benchmark(cfg_key).dataset(dataset)
    images, n_gt = ds.images[["image_id", "width", "height"]], int(len(ds.gt))
    if subset is not None:
        ids = benchmark(cfg_key).image_subset(dataset, subset)
        images = images[images["image_id"].isin(ids)]
        n_gt = int(np.isin(ds.gt.image_id, ids).sum())
    return {"vocabulary": list(ds.vocabulary), "images": images.reset_index(drop=True).copy(),
            "environment": ds.environment, "n_gt": n_gt, "n_images": int(len(images))}


def leaderboard_pairs(cfg_key: str, datasets: tuple[str, ...] | None = None) -> list[tuple[str, str]]:
    """The (dataset, run) rows of the leaderboard, in config order."""
    b = benchmark(cfg_key)
    return [(ds, run) for ds in (datasets or tuple(b.dataset_names)) for run in b.run_names(ds)]


# ================================================================================================ boxes
def _status_frame(df: pd.DataFrame, n: int, default: str) -> pd.DataFrame:
    """One row per box: ``status``, ``matched`` (the matched GT / prediction row, or for a mislabelled prediction
    the GT it overlaps; -1 if none) and ``iou`` (a prediction's best 3D IoU with any GT)."""
    from ov3d_app.selection import object_column

    out = pd.DataFrame(index=np.arange(n))
    out["status"] = object_column(df["status"].to_numpy(object) if "status" in df else np.full(n, default, object))
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


def boxes(cfg_key: str, view, runs: tuple[str, ...]) -> pd.DataFrame:
    """The box table (``ov3d_app.selection.box_table``) of ``view.dataset`` for ``runs``: statuses at ``view.iou``
    under ``view``'s protocol and threshold (``Analysis.pred_status`` / ``gt_status``). One read-only table per
    server and view (the last 8 views): a run of 2M predictions makes a 2.2M-row table, which ``st.cache_data``
    pickled on every rerun of every session (1.3 s at that size)."""
    return shared(("boxes", cfg_key, view, tuple(runs)), lambda: _boxes(cfg_key, view, tuple(runs)), keep=8)


def _boxes(cfg_key: str, view, runs: tuple[str, ...]) -> pd.DataFrame:
    from ov3d_app.selection import box_table, object_column

    a = analysis(cfg_key)
    ds = a.benchmark.dataset(view.dataset)
    preds, gt_status = {}, {}
    for run in runs:
        v = view.with_(run=run)
        pred = a.benchmark.run(run, view.dataset).pred
        ps = _status_frame(a.pred_status(v), len(pred), "not evaluated")
        preds[run] = pd.DataFrame({"image_id": pred.image_id, "category": object_column(pred.category),
                                   "score": pred.score, "status": object_column(ps["status"].to_numpy(object)),
                                   "matched": ps["matched"], "iou": ps["iou"]})
        gt_status[run] = _status_frame(a.gt_status(v), len(ds.gt), "FN")["status"].to_numpy()
    gt = pd.DataFrame({"image_id": ds.gt.image_id, "category": object_column(ds.gt.category),
                       "status": object_column(np.where(ds.gt.ignore, "ignored", "GT").astype(object))})
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
    return {"K": ds.K[row], "width": int(rec["width"]), "height": int(rec["height"]),
            "path": readable(b.image_path(dataset, image_id))}


# ================================================================================================ 3D
@st.cache_data(show_spinner=False, max_entries=32)
def point_cloud(cfg_key: str, dataset: str, image_id: int, budget: int = 60_000):
    """The 3D view's points of an image (``ov3d_core.io.pointcloud.scene_points``: the depth map back-projected at full
    resolution, else the point-cloud file; coloured; voxel-downsampled to ``budget``), or None when neither exists."""
    from ov3d_core.io.pointcloud import scene_points

    b = benchmark(cfg_key)
    meta = image_meta(cfg_key, dataset, image_id)
    # readable(): asset paths outside the allowed roots read as missing
    return scene_points(meta["K"], depth=readable(b.asset_path(dataset, "depth", image_id)),
                        points=readable(b.asset_path(dataset, "points", image_id)), image=meta["path"],
                        image_size=(meta["width"], meta["height"]), budget=int(budget))


# ================================================================================================ images
@st.cache_data(show_spinner=False, max_entries=256)
def image_uri(path: str, max_side: int = 1600) -> tuple[str, int, int, float]:
    """An image file as a JPEG data URI for the overlay: ``(uri, width, height, scale)`` (``viz.encode_image``)."""
    from ov3d_core.viz.image_overlay import encode_image

    with _image_errors(path):
        return encode_image(path, max_side=max_side)


@contextlib.contextmanager
def _image_errors(path: str):
    """``InputError`` (naming the file's basename and the GT field) for a ``file_path`` that is no readable image."""
    from PIL import Image, UnidentifiedImageError

    try:
        yield
    except InputError:
        raise
    except Image.DecompressionBombError:
        raise InputError(Path(path).name, None, "file_path", "an image of at most ~180 megapixels",
                         Kind("a bigger one")) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        raise InputError(Path(path).name, None, "file_path", "an image file (JPEG, PNG, ...) that can be read",
                         Kind("a file that is not one")) from None


# ================================================================================================ thumbnails
@st.cache_data(show_spinner=False, max_entries=2048)
def thumbnail(path: str, box: tuple[float, float, float, float], size: int = 160, pad: float = 0.15,
              square: bool = False) -> bytes:
    """A PNG crop of ``box`` (x1, y1, x2, y2 pixels, padded by ``pad`` of its size) from an image file; with
    ``square``, centred on a ``size`` x ``size`` canvas, so that a gallery's thumbnails line up."""
    from PIL import Image, ImageDraw

    with _image_errors(path):
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
    if square:
        canvas = Image.new("RGB", (size, size), (38, 39, 48))
        canvas.paste(crop, ((size - crop.width) // 2, (size - crop.height) // 2))
        crop = canvas
    buf = io.BytesIO()
    crop.save(buf, format="PNG")
    return buf.getvalue()


@st.cache_data(show_spinner=False, max_entries=4)
def thumbnail_placeholder(size: int = 160) -> bytes:
    """An empty ``size`` x ``size`` PNG: a gallery's place for an example without a readable image or box."""
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", (size, size), (38, 39, 48)).save(buf, format="PNG")
    return buf.getvalue()


# ================================================================================================ prompt lab
def encoder_spec() -> str:
    """``hf:<checkpoint>`` when ``$OV3D_ENCODER`` is set, else the demo proxy."""
    env = os.environ.get(ENCODER_ENV, "").strip()
    return env if env.startswith("hf:") else (f"hf:{env}" if env else "proxy")


def check_encoder(spec: str) -> None:
    """``InputError`` at once (no network) when ``spec`` names a Hugging Face checkpoint that is neither a local
    folder nor in the local Hugging Face cache: loading it would try to download it (minutes of retries offline).
    A cached checkpoint is then loaded without contacting the hub (``HF_HUB_OFFLINE``)."""
    if not spec.startswith("hf:"):
        return
    name = spec[3:].strip()
    if Path(name).expanduser().is_dir():
        return
    found = None
    if name and not Path(name).is_absolute() and name.count("/") <= 1:
        from huggingface_hub import try_to_load_from_cache

        try:
            found = try_to_load_from_cache(name, "config.json")
        except ValueError:  # not a valid repository id
            found = None
    if isinstance(found, str):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        return
    raise InputError(ENCODER_ENV, None, "encoder", "a checkpoint on this machine: a local model folder "
                     f"({ENCODER_ENV}=hf:/path/to/siglip2-base-patch16-224) or one already in the Hugging Face cache "
                     "(run `huggingface-cli download <checkpoint>` once where there is network, then restart the app)",
                     Kind("a checkpoint that is not on disk (the app does not download models)"))
