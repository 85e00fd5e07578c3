"""The front door: every number of the product is composed here, once, from a frozen :class:`View`.

``Analysis`` wraps a loaded :class:`~ov3d_core.benchmark.Benchmark` (files, lazily parsed; geometry cached on disk)
and answers one question per method for a ``View`` — which dataset, which run, under which protocol, score threshold,
TP/FP IoU, optional SigLIP remapping, class subset and centre-distance mode. The app (through ``ov3d_app.cache``), the
CLI (``evaluate``, ``report``, ``remap``) and notebooks call the same methods, so a number cannot differ between them.

The one recipe of a view (:meth:`Analysis.label_view`)::

    the run's own labels over the dataset vocabulary   (or: the remapped labels of ``view.remap``)
      -> class subset (``view.classes``: other classes are not evaluated, GT and predictions alike)
      -> protocol filter (dataset-level: nothing; target-aware: the per-image GT-class oracle)
      -> score threshold (``view.min_score``)

Results are memoised per ``View`` in a process-wide, thread-safe memo (one computation per key even when many app
sessions ask at once). Units: AP-like numbers in percent (0-100), recall, shares and ratios as fractions (0-1)
(:mod:`ov3d_core.eval.constants`).

Notebook use::

    from ov3d_core import Analysis
    a = Analysis.from_files(gt=["SUNRGBD_test.json"], predictions=["omni_instances_results.json"])
    a.per_category(a.view())                       # DataFrame: category, AP3D (percent), n_gt, n_pred, ...
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from ov3d_core.errors import InputError
from ov3d_core.eval.constants import (CONFUSION_IOU, CROSS_CLASS_IOU, PROTOCOLS, RECALL_KEY, STATUS_IOU,
                                      SUMMARY_KEYS)
from ov3d_core.scorecache import ScoreCache, decode_frame, encode_frame, encode_row

__all__ = ["View", "RemapSpec", "Analysis", "DISTANCE_MODES", "DEFAULT_TEMPLATES", "MINING_KINDS"]

#: Centre-distance matching modes of :meth:`Analysis.distance` (``ov3d_core.diagnostics.distance.DISTANCE_MODES``;
#: repeated here so that importing this module stays light; a test holds the two equal).
DISTANCE_MODES = ("3dmood", "3dmood-compat", "nuscenes")
#: The 15 preset templates of the paper's prompt probe (3 types x 5), in display order.
DEFAULT_TEMPLATES = ("U1", "U2", "U3", "U4", "U5", "S1", "S2", "S3", "S4", "S5", "O1", "O2", "O3", "O4", "O5")


def _view_error(field_: str, expected: str, got) -> InputError:
    return InputError(None, "view", field_, expected, got)


def _finite_number(name: str, v, lo: float | None = None, hi: float | None = None, *, lo_open: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise _view_error(name, "a number", v)
    f = float(v)
    if not math.isfinite(f):
        raise _view_error(name, "a finite number", v)
    if (lo is not None and (f < lo or (lo_open and f == lo))) or (hi is not None and f > hi):
        raise _view_error(name, f"a number in {'(' if lo_open else '['}{lo}, {hi}]", v)
    return f


@dataclass(frozen=True)
class RemapSpec:
    """Training-free VLM remapping of a run (OV3D-Bench, Cube R-CNN*): every predicted box is relabelled with its most
    similar dataset class under ``template`` when the similarity reaches ``theta``.

    Attributes:
        encoder: ``"proxy"`` (the demo's stand-in) or ``"hf:<checkpoint or local dir>"`` (SigLIP 2 / SigLIP / CLIP).
        template: a template id ("S1"), a group ("standard", ensembled), ids joined by commas, or a literal template
            with one ``{}``.
        theta: acceptance threshold on the top-1 value (probability for calibrated encoders, else cosine); None: the
            encoder's default (0.5 for a calibrated probability, 0.0 for a cosine).
        score_mode: "detector" (keep the detector score), "similarity" (the top-1 value) or "product".
        templates_file: optional YAML/JSON of user templates (id, group, text) that ``template`` may name.
        pad, min_size: crop context (fraction per side) and smallest crop side in pixels (pixel encoders).
    """

    encoder: str = "proxy"
    template: str = "S1"
    theta: float | None = None
    score_mode: str = "detector"
    templates_file: str | None = None
    pad: float = 0.0
    min_size: float = 8.0

    def __post_init__(self):
        from ov3d_core.remap.remap import SCORE_MODES

        if not isinstance(self.encoder, str) or not (self.encoder == "proxy" or
                                                     (self.encoder.startswith("hf:") and len(self.encoder) > 3)):
            raise _view_error("remap.encoder", "`proxy` or `hf:<checkpoint or local dir>`", self.encoder)
        if not isinstance(self.template, str) or not self.template.strip():
            raise _view_error("remap.template", "a template id, group or text with one {}", self.template)
        if self.theta is not None:
            object.__setattr__(self, "theta", _finite_number("remap.theta", self.theta, -1.0, 1.0))
        if self.score_mode not in SCORE_MODES:
            raise _view_error("remap.score_mode", f"one of {SCORE_MODES}", self.score_mode)
        if self.templates_file is not None:
            object.__setattr__(self, "templates_file", str(self.templates_file))
        object.__setattr__(self, "pad", _finite_number("remap.pad", self.pad, 0.0, 2.0))
        object.__setattr__(self, "min_size", _finite_number("remap.min_size", self.min_size, 0.0))

    def embedding_key(self, dataset: str, run: str) -> tuple:
        """What the crop embeddings (and the live remapper) of a run depend on."""
        return (dataset, run, self.encoder, self.templates_file, self.pad, self.min_size)


@dataclass(frozen=True)
class View:
    """What to score: frozen and hashable, so it keys every memo and cache of the app.

    Attributes:
        dataset: dataset name.
        run: run name (None for dataset-wide tables such as the leaderboard).
        protocol: "dataset-level" (OV3D-Bench) or "target-aware" (each image prompted with its GT classes only).
        min_score: predictions scoring below it are dropped before anything is scored.
        iou: 3D IoU at which boxes are marked TP / FP / FN (statuses, inspector, mining).
        remap: optional :class:`RemapSpec` (the run's labels are replaced by the remapped ones).
        classes: optional subset of the vocabulary to evaluate (None: the whole dataset vocabulary).
        distance_mode: centre-distance matching of :meth:`Analysis.distance` ("3dmood" or "nuscenes").
    """

    dataset: str
    run: str | None = None
    protocol: str = "dataset-level"
    min_score: float = 0.0
    iou: float = STATUS_IOU
    remap: RemapSpec | None = None
    classes: tuple[str, ...] | None = None
    distance_mode: str = "3dmood"

    def __post_init__(self):
        if not isinstance(self.dataset, str) or not self.dataset:
            raise _view_error("dataset", "a dataset name", self.dataset)
        if self.run is not None and (not isinstance(self.run, str) or not self.run):
            raise _view_error("run", "a run name", self.run)
        if self.protocol not in PROTOCOLS:
            raise _view_error("protocol", f"one of {PROTOCOLS}", self.protocol)
        object.__setattr__(self, "min_score", _finite_number("min_score", self.min_score))
        object.__setattr__(self, "iou", _finite_number("iou", self.iou, 0.0, 1.0, lo_open=True))
        if self.remap is not None and not isinstance(self.remap, RemapSpec):
            raise _view_error("remap", "a RemapSpec or None", self.remap)
        if self.classes is not None:
            if isinstance(self.classes, str) or not all(isinstance(c, str) and c for c in self.classes):
                raise _view_error("classes", "a tuple of category names", self.classes)
            classes = tuple(dict.fromkeys(self.classes))
            if not classes:
                raise _view_error("classes", "at least one category name", self.classes)
            object.__setattr__(self, "classes", classes)
        if self.distance_mode not in DISTANCE_MODES:
            raise _view_error("distance_mode", f"one of {DISTANCE_MODES}", self.distance_mode)

    def with_(self, **changes) -> "View":
        return replace(self, **changes)

    @property
    def label(self) -> str:
        """A short human title: run (with * when remapped) on dataset, protocol, threshold."""
        run = (self.run or "all runs") + ("*" if self.remap else "")
        extra = f", score ≥ {self.min_score:g}" if self.min_score > 0 else ""
        return f"{run} on {self.dataset} · {self.protocol}{extra}"

    def to_dict(self) -> dict:
        return asdict(self)


class _Memo:
    """A bounded, thread-safe memo that computes each key once even when several threads ask at the same time."""

    def __init__(self, max_items: int = 512):
        self.max_items = max_items
        self._data: OrderedDict = OrderedDict()
        self._locks: dict = {}
        self._lock = threading.Lock()

    def get(self, key, compute: Callable[[], Any]):
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            with self._lock:
                if key in self._data:
                    return self._data[key]
            value = compute()
            with self._lock:
                self._data[key] = value
                self._locks.pop(key, None)
                while len(self._data) > self.max_items:
                    self._data.popitem(last=False)
            return value

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


@dataclass(frozen=True)
class RunFailure:
    """A run whose files could not be loaded: listed with its message, the other runs still load."""

    dataset: str
    run: str
    message: str


class Analysis:
    """Every table of the product for a :class:`View` of a loaded benchmark (see the module docstring)."""

    def __init__(self, benchmark, *, memo_items: int = 1024, embedding_dir: str | Path | None = None,
                 encoder_options: Mapping[str, Any] | None = None):
        """``embedding_dir``: crop-embedding cache (default ``<cache_dir>/embeddings``); ``encoder_options``:
        keywords for ``make_encoder`` (device, batch_size) used the first time an encoder spec is needed."""
        self.benchmark = benchmark
        self._memo = _Memo(memo_items)
        self._scores = ScoreCache(Path(benchmark.config.cache_dir) / "scores")
        self._hashed = threading.Event()
        self.embedding_dir = Path(embedding_dir) if embedding_dir else Path(benchmark.config.cache_dir) / "embeddings"
        self.encoder_options = dict(encoder_options or {})

    # ================================================================================================ construction
    @classmethod
    def from_yaml(cls, path: str | Path, **kw) -> "Analysis":
        """A benchmark config (YAML; ``docs/benchmark_yaml.md``)."""
        from ov3d_core.benchmark import Benchmark

        return cls(Benchmark.from_yaml(path, **kw))

    @classmethod
    def from_files(cls, gt: str | Path | Sequence[str | Path], predictions: str | Path | Sequence[str | Path], *,
                   run_names: Sequence[str] | None = None, formats: Sequence[str] | None = None,
                   category_list: Sequence[str] | None = None, categories: Sequence[str] | None = None,
                   cache_dir: str | Path | None = None, dataset_name: str | None = None) -> "Analysis":
        """One dataset from Omni3D GT file(s) and one run per prediction file (what ``ov3d evaluate`` builds)."""
        from ov3d_core.benchmark import Benchmark
        from ov3d_core.io.config import config_from_files

        gts = [gt] if isinstance(gt, (str, Path)) else list(gt)
        preds = [predictions] if isinstance(predictions, (str, Path)) else list(predictions)
        cfg = config_from_files(gts, preds, run_names=list(run_names) if run_names else None,
                                formats=list(formats) if formats else None,
                                category_list=tuple(category_list) if category_list else None,
                                cache_dir=cache_dir, dataset_name=dataset_name)
        if categories is not None:
            ds = next(iter(cfg.datasets.values()))
            cfg = replace(cfg, datasets={ds.name: replace(ds, categories=tuple(categories))})
        return cls(Benchmark(cfg))

    @classmethod
    def from_objects(cls, dataset, runs: Iterable, *, cache_dir: str | Path | None = None) -> "Analysis":
        """In-memory data: a :class:`~ov3d_core.model.Dataset` and :class:`~ov3d_core.model.Run` objects (built from
        arrays with ``ov3d_core.model.BoxSet``)."""
        from ov3d_core.benchmark import Benchmark

        return cls(Benchmark.from_objects(dataset, list(runs), cache_dir=cache_dir))

    # ================================================================================================ names
    @property
    def datasets(self) -> list[str]:
        return self.benchmark.dataset_names

    def runs(self, dataset: str | None = None) -> list[str]:
        return self.benchmark.run_names(dataset)

    def view(self, dataset: str | None = None, run: str | None = None, **kw) -> View:
        """A :class:`View` with defaults: the first dataset and its first run."""
        dataset = dataset or (self.datasets[0] if self.datasets else None)
        if dataset is None:
            raise InputError(self._config_file, None, "datasets", "at least one dataset", "none")
        if run is None and self.runs(dataset):
            run = self.runs(dataset)[0]
        return View(dataset=dataset, run=run, **kw)

    @property
    def _config_file(self) -> str:
        return str(self.benchmark.config.path or "<config>")

    def _need_run(self, view: View) -> str:
        if view.run is None:
            raise _view_error("run", f"a run on dataset {view.dataset!r}", None)
        self.benchmark.run_spec(view.run, view.dataset)  # InputError when unknown
        return view.run

    def _memoised(self, name: str, key, compute: Callable[[], Any]):
        return self._memo.get((name, key), compute)

    def clear(self) -> None:
        """Forget memoised results (the benchmark's loaded files and geometry stay)."""
        self._memo.clear()

    def failures(self) -> list[RunFailure]:
        """Runs whose files fail to load, each with its one-line message (the others are unaffected)."""
        out = []
        for spec in self.benchmark.config.runs.values():
            try:
                self.benchmark.run(spec.name, spec.dataset)
            except InputError as exc:
                out.append(RunFailure(spec.dataset, spec.name, str(exc)))
        return out

    # ================================================================================================ the recipe
    def base_view(self, view: View):
        """The run's labels over the evaluated vocabulary before protocol and threshold: its own labels, or the
        remapped labels of ``view.remap``; restricted to ``view.classes`` when given."""
        run = self._need_run(view)

        def compute():
            from ov3d_core.eval.labels import label_view_from_names

            ds, r = self.benchmark.dataset(view.dataset), self.benchmark.run(run, view.dataset)
            if view.remap is None:
                lv = label_view_from_names(r.pred.category, r.pred.score, ds.vocabulary)
            else:
                rm = self.remapper(view.dataset, run, view.remap)
                lv = rm.label_view(view.remap.template, self.theta(view), view.remap.score_mode,
                                   vocabulary=ds.vocabulary)
            if view.classes is not None:
                lv = _restrict(lv, view.classes, ds.vocabulary, self._config_file)
            return lv

        return self._memoised("base_view", (view.dataset, run, view.remap, view.classes), compute)

    def label_view(self, view: View):
        """The ``LabelView`` every number of ``view`` is computed from (the recipe in the module docstring)."""
        from ov3d_core.eval.scoring import apply_protocol, threshold_view

        def compute():
            ds, r = self.benchmark.dataset(view.dataset), self.benchmark.run(view.run, view.dataset)
            return threshold_view(apply_protocol(self.base_view(view), ds, r, view.protocol), view.min_score)

        return self._memoised("label_view", _score_key(view), compute)

    def vocabulary(self, view: View) -> tuple[str, ...]:
        """The evaluated category names of a view (the subset when ``view.classes`` is given)."""
        ds = self.benchmark.dataset(view.dataset)
        return tuple(c for c in ds.vocabulary if view.classes is None or c in view.classes)

    def theta(self, view: View) -> float:
        """The remapping threshold of a view: the spec's, else the encoder's default."""
        if view.remap is None:
            raise _view_error("remap", "a RemapSpec", None)
        if view.remap.theta is not None:
            return float(view.remap.theta)
        enc = self.encoder(view.remap.encoder)
        return 0.5 if getattr(enc, "has_calibrated_bias", False) else 0.0

    # ================================================================================================ scoring
    def score(self, view: View):
        """The :class:`~ov3d_core.eval.scoring.RunScore` of a view: Omni3D AP with match records, class-agnostic
        recall, the scored label view. Geometry is the cached pair table; only matching and accumulation run."""
        from ov3d_core.eval.scoring import score_view

        self._need_run(view)

        def compute():
            ds, r = self.benchmark.dataset(view.dataset), self.benchmark.run(view.run, view.dataset)
            return score_view(ds, r, self.benchmark.pairs(view.run, view.dataset), self.label_view(view),
                              protocol=view.protocol)

        return self._memoised("score", _score_key(view), compute)

    def summary(self, view: View) -> dict[str, float]:
        """AP3D, AP3D@15/25/50, AP3D-N/M/F (percent) and recall3D@15 (fraction)."""
        return dict(self.score(view).summary)

    def per_category(self, view: View) -> pd.DataFrame:
        """One row per evaluated category: AP3D and its slices (percent), AR, n_gt, n_pred, recall3D (fraction).
        Kept on disk beside the load caches (``ov3d_core.scorecache``): a new process shows it without loading."""
        self._need_run(view)
        return self._memoised("per_category", _score_key(view), lambda: self._persisted(
            "per_category", view, lambda: self.score(view).per_category, encode_frame, decode_frame))

    def pred_status(self, view: View) -> pd.DataFrame:
        """Per prediction: TP / FP / mislabelled / ignored / not evaluated at ``view.iou``, matched GT, best IoU."""
        return self._memoised("pred_status", (_score_key(view), view.iou), lambda: self.score(view).pred_status(view.iou))

    def gt_status(self, view: View) -> pd.DataFrame:
        """Per GT row: TP / FN / ignored / not evaluated at ``view.iou`` and the matched prediction."""
        return self._memoised("gt_status", (_score_key(view), view.iou), lambda: self.score(view).gt_status(view.iou))

    def out_of_vocabulary(self, view: View) -> pd.DataFrame:
        """Predictions of the run whose category (from its file) is outside the dataset vocabulary: not scored, never
        silently dropped. One row per such category with its count (empty when there are none)."""
        run = self._need_run(view)

        def compute():
            from ov3d_core.eval.labels import encode_names

            ds, r = self.benchmark.dataset(view.dataset), self.benchmark.run(run, view.dataset)
            cats = np.asarray(r.pred.category, dtype=object)
            s = pd.Series(cats[encode_names(cats, ds.vocabulary) < 0], dtype=object).value_counts(sort=True)
            return pd.DataFrame({"category": s.index.astype(str).tolist(), "n_pred": s.to_numpy(np.int64)})

        return self._memoised("out_of_vocabulary", (view.dataset, run), compute)

    # ================================================================================================ tables over runs
    def leaderboard(self, view: View, datasets: Sequence[str] | None = None) -> pd.DataFrame:
        """One row per (dataset, run) of ``datasets`` (default: ``view.dataset``; ``"all"`` / every dataset with
        ``datasets=self.datasets``), scored under ``view``'s protocol, threshold and class subset (no remapping).

        Columns: dataset, run, environment, in_domain, protocol, n_images, n_gt, n_pred, n_out_of_vocabulary, then
        :data:`SUMMARY_KEYS`. Runs whose files fail to load are left out (see :meth:`failures`)."""
        names = [view.dataset] if datasets is None else list(datasets)
        rows = []
        for ds_name in names:
            for run in self.runs(ds_name):
                v = view.with_(dataset=ds_name, run=run, remap=None)
                try:
                    rows.append(self.leaderboard_row(v))
                except InputError:
                    continue
        return pd.DataFrame(rows, columns=LEADERBOARD_COLUMNS)

    def leaderboard_row(self, view: View) -> dict:
        """One leaderboard row (see :meth:`leaderboard`)."""
        def compute():
            sc = self.score(view)
            spec = self.benchmark.run_spec(view.run, view.dataset)
            ds = self.benchmark.dataset(view.dataset)
            s = sc.summary
            return {"dataset": view.dataset, "run": view.run + ("*" if view.remap else ""),
                    "environment": self.environment(view.dataset),
                    "in_domain": spec.in_domain if spec.trained_on else None, "protocol": view.protocol,
                    "n_images": int(len(ds.images)), "n_gt": int(sc.recall.n_gt),
                    "n_pred": int(np.count_nonzero(sc.view.evaluated)),
                    "n_out_of_vocabulary": int(self.out_of_vocabulary(view)["n_pred"].sum()),
                    **{k: float(s.get(k, np.nan)) for k in SUMMARY_KEYS}}

        self._need_run(view)
        return self._memoised("leaderboard_row", _score_key(view), lambda: self._persisted(
            "leaderboard_row", view, compute, encode_row, dict))

    def _persisted(self, kind: str, view: View, compute: Callable[[], Any], encode, decode):
        """``compute()`` through the disk cache of small results, keyed by the content of the view's input files
        (remapped views, which also depend on an encoder, and folder inputs are computed every time)."""
        return self._scores.get(kind, None if view.remap is not None else self._input_identity(view), compute,
                                encode, decode)

    def _input_identity(self, view: View) -> dict | None:
        """The config entries of the view's dataset and run and the (path, content digest) of their input files;
        None when one is not a regular file (a KITTI folder, a missing file: computing then says what is wrong)."""
        from ov3d_core.io.loadcache import file_digest

        self.digest_inputs()
        ds_spec = self.benchmark.dataset_spec(view.dataset)
        run_spec = self.benchmark.run_spec(view.run, view.dataset)
        files = [*ds_spec.gt, run_spec.predictions, *([run_spec.crops] if run_spec.crops else [])]
        if ds_spec.calib is not None or not all(Path(f).is_file() for f in files):
            return None
        try:
            digests = [(str(Path(f).resolve()), file_digest(f)) for f in files]
        except OSError:
            return None
        return {"view": repr(_score_key(view)), "dataset": repr(ds_spec), "run": repr(run_spec), "files": digests}

    def digest_inputs(self) -> None:
        """Digest the GT and prediction files of the whole config once, on threads (the key of the score cache; the
        first cached lookup does it, a page may call it first under a progress message). A leaderboard needs them
        all, and one file after another leaves a core idle (0.36 s per 1.9 GB file alone, 0.21 s two at a time). The
        digests are memoised per process (``file_digest``); a file that cannot be read is left to the view that
        needs it, which then says so."""
        if self._hashed.is_set():
            return
        self._hashed.set()
        from concurrent.futures import ThreadPoolExecutor

        from ov3d_core.eval.threads import kernel_threads
        from ov3d_core.io.loadcache import file_digest

        cfg = self.benchmark.config
        files = [*(f for spec in cfg.datasets.values() for f in spec.gt), *(r.predictions for r in cfg.runs.values())]
        files = [f for f in dict.fromkeys(Path(f) for f in files) if f.is_file()]

        def digest(f: Path) -> None:
            try:
                file_digest(f)
            except OSError:
                pass

        if len(files) > 1:
            with ThreadPoolExecutor(min(kernel_threads(), len(files)), thread_name_prefix="ov3d-hash") as pool:
                list(pool.map(digest, files))

    def per_category_runs(self, view: View, runs: Sequence[str]) -> pd.DataFrame:
        """Per-category AP3D of several runs on ``view.dataset``, long format (run first)."""
        parts = []
        for run in runs:
            pc = self.per_category(view.with_(run=run)).copy()
            pc.insert(0, "run", run)
            parts.append(pc)
        return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["run", "category", "AP3D"])

    def pooled(self, view: View, datasets: Sequence[str] | None = None) -> dict:
        """Omni3D's pooled row for ``view.run`` over several datasets (the union vocabulary):
        ``{"summary", "per_category", "ap"}``."""
        from ov3d_core.eval.scoring import score_pooled

        names = list(datasets) if datasets is not None else [d for d in self.datasets if view.run in self.runs(d)]

        def compute():
            parts = []
            for d in names:
                v = view.with_(dataset=d)
                sc = self.score(v)
                parts.append((self.benchmark.dataset(d), self.benchmark.run(view.run, d),
                              self.benchmark.pairs(view.run, d), sc.view))
            return score_pooled(parts)

        return self._memoised("pooled", (_score_key(view), tuple(names)), compute)

    def environment(self, dataset: str) -> str | None:
        """The dataset's environment: the config's ``environment:``, else what the loader found (e.g. KITTI is
        outdoor), else None. The one rule every transfer table uses."""
        spec = self.benchmark.config.datasets.get(dataset)
        env = spec.environment if spec is not None else None
        if env is None:
            env = getattr(self.benchmark.dataset(dataset), "environment", None)
        return env

    # ================================================================================================ paper diagnostics
    def confusion(self, view: View, *, level: str = "fine", iou: float = CONFUSION_IOU, include_missed: bool = True):
        """Hungarian confusion at 3D IoU >= ``iou`` (paper: 0.5): a ``ConfusionMatrix`` (``level="fine"``) or a
        ``SuperCategoryConfusion`` (``level="super"``, the 9 super-categories)."""
        import ov3d_core.diagnostics.confusion as conf

        if level not in ("fine", "super"):
            raise _view_error("level", "'fine' or 'super'", level)

        def fine():
            sc = self.score(view)
            ds = self.benchmark.dataset(view.dataset)
            return conf.confusion_matrix(sc.pairs, sc.view, sc.gt_label, ds.gt.ignore, ds.gt.image_id,
                                         iou_threshold=float(iou), include_missed=include_missed)

        cm = self._memoised("confusion", (_score_key(view), float(iou), include_missed), fine)
        if level == "fine":
            return cm
        return self._memoised("confusion_super", (_score_key(view), float(iou), include_missed),
                              lambda: conf.super_category_confusion(cm))

    def protocol_comparison(self, view: View, *, overlap_threshold: float = CROSS_CLASS_IOU):
        """Dataset-level vs target-aware on the same thresholded predictions (Table 7): a ``ProtocolComparison``
        with per-class AP under both, the removed predictions and the cross-class ones among them."""
        from ov3d_core.diagnostics.protocol_comparison import compare_protocols_boxes

        def compute():
            ds, r = self.benchmark.dataset(view.dataset), self.benchmark.run(view.run, view.dataset)
            base = self.label_view(view.with_(protocol="dataset-level"))
            return compare_protocols_boxes(ds.gt, r.pred, self.benchmark.pairs(view.run, view.dataset), base,
                                           proximity=ds.proximity, overlap_threshold=overlap_threshold,
                                           keep_results=False)

        return self._memoised("protocol_comparison", (_score_key(view.with_(protocol="dataset-level")),
                                                      overlap_threshold), compute)

    def class_splits(self, view: View, *, subset_size: int = 10, n_subsets: int = 5000, seed: int | None = 0):
        """Class-split sensitivity (Table 9): mAP over random ``subset_size``-class subsets of the per-category AP."""
        from ov3d_core.diagnostics.splits import class_split_sensitivity

        def compute():
            pc = self.per_category(view)
            return class_split_sensitivity(pd.Series(pc["AP3D"].to_numpy(np.float64), index=pc["category"]),
                                           subset_size=int(subset_size), n_subsets=int(n_subsets), seed=seed)

        return self._memoised("class_splits", (_score_key(view), int(subset_size), int(n_subsets), seed), compute)

    def trained_on(self) -> dict[str, list[str]]:
        """Per run name: the union of the ``trained_on`` datasets of its config entries."""
        out: dict[str, set] = {}
        for spec in self.benchmark.config.runs.values():
            out.setdefault(spec.name, set()).update(spec.trained_on)
        return {k: sorted(v) for k, v in out.items()}

    def transfer(self, view: View, *, prompt_cv: Mapping[str, float] | None = None) -> dict[str, pd.DataFrame]:
        """Domain transfer (Tables 4/5) and the three-axis breakdown (Fig. 5) over every (run, dataset), under
        ``view``'s protocol and threshold: ``{"transfer", "transfer_per_run", "transfer_pairs", "three_axis"}``.
        ``prompt_cv`` (run -> CV over the 15 preset templates) fills the prompt-robustness column; without it the
        column is NaN (never invented)."""
        from ov3d_core.diagnostics.transfer import domain_transfer, three_axis_breakdown

        cv = tuple(sorted((prompt_cv or {}).items()))

        def compute():
            lb = self.leaderboard(view.with_(remap=None), datasets=self.datasets)
            results = pd.DataFrame({"run": lb["run"], "dataset": lb["dataset"], "map3d": lb["AP3D"],
                                    "recall": lb[RECALL_KEY]})
            envs = {d: self.environment(d) for d in self.datasets}
            tt = domain_transfer(results, self.trained_on(), envs)
            axes = three_axis_breakdown(tt, dict(cv) or None)
            table = axes.to_frame()
            ranks = axes.ranks().set_index("run")
            for ax in axes.AXES:
                table[f"rank_{ax}"] = table["run"].map(ranks[ax]).astype("Int64")
            return {"transfer": tt.table, "transfer_per_run": tt.per_run, "transfer_pairs": tt.pairs,
                    "three_axis": table}

        return self._memoised("transfer", (view.protocol, view.min_score, view.classes, cv), compute)

    # ================================================================================================ beyond the paper
    def tide(self, view: View, *, fg: float = 0.25, bg: float = 0.1):
        """3D TIDE error bins (``diagnostics.tide``): a ``TideResult`` (bins do not sum; see its note)."""
        from ov3d_core.diagnostics.tide import tide_3d_view

        def compute():
            ds, r = self.benchmark.dataset(view.dataset), self.benchmark.run(view.run, view.dataset)
            return tide_3d_view(ds.gt, r.pred, self.benchmark.pairs(view.run, view.dataset), self.label_view(view),
                                fg=float(fg), bg=float(bg), proximity=ds.proximity)

        return self._memoised("tide", (_score_key(view), float(fg), float(bg)), compute)

    def tide_examples(self, view: View, *, fg: float = 0.25, bg: float = 0.1, bin: str | None = None,
                      n: int = 20) -> pd.DataFrame:
        """The highest-scoring false positives of every TIDE bin (``bin``: one bin, or a ``cls_within`` /
        ``cls_across`` split) and up to ``n`` missed GT, with image id and category: ``kind`` ("prediction" / "gt"),
        ``pred`` or ``gt`` row, ``bin``, ``score``, ``iou``, ..."""
        t = self.tide(view, fg=fg, bg=bg)
        ds = self.benchmark.dataset(view.dataset)
        pred = self.benchmark.run(view.run, view.dataset).pred
        d = t.dets
        if bin is not None and bin != "missed":
            col = "cls_split" if bin.startswith("cls_") and "cls_split" in d else "bin"
            d = d[d[col] == bin]
        d = d.sort_values(["bin", "score"], ascending=[True, False], kind="stable").groupby("bin").head(n)
        p = d["pred"].to_numpy(np.int64)
        det = d.assign(kind="prediction", image_id=pred.image_id[p], category=pred.category[p])
        g = np.flatnonzero(np.asarray(t.gt_status) == "missed")[:n]
        missed = pd.DataFrame({"bin": "missed", "kind": "gt", "gt": g, "image_id": ds.gt.image_id[g],
                               "category": ds.gt.category[g], "depth": ds.gt.depth[g]})
        parts = [det] if bin not in (None, "missed") else [missed] if bin == "missed" else [det, missed]
        return pd.concat(parts, ignore_index=True)

    def oracles(self, view: View, *, association: str = "greedy"):
        """Monocular oracles (GT depth / size / rotation substituted): an ``OracleResult``."""
        from ov3d_core.diagnostics.oracles import monocular_oracles_view

        def compute():
            ds, r = self.benchmark.dataset(view.dataset), self.benchmark.run(view.run, view.dataset)
            return monocular_oracles_view(ds.gt, r.pred, self.benchmark.pairs(view.run, view.dataset),
                                          self.label_view(view), association=association, proximity=ds.proximity)

        return self._memoised("oracles", (_score_key(view), association), compute)

    def distance(self, view: View):
        """Centre-distance AP with true-positive errors (``view.distance_mode``: "3dmood" = our reading of WildDet3D /
        3D-MOOD ODS, "3dmood-compat" = 3D-MOOD's evaluator as its code runs, "nuscenes" = nuscenes-devkit's rules;
        ``docs/distance_modes.md``). The dataset's proximity flag applies in the 3D-MOOD modes."""
        from ov3d_core.diagnostics.distance import evaluate_distance_view

        def compute():
            ds, r = self.benchmark.dataset(view.dataset), self.benchmark.run(view.run, view.dataset)
            height = None
            if view.distance_mode == "3dmood-compat":
                rows = ds.image_index(ds.gt.image_id)
                height = ds.images["height"].to_numpy(np.float64)[np.maximum(rows, 0)]
            return evaluate_distance_view(ds.gt, r.pred, self.label_view(view), mode=view.distance_mode,
                                          proximity=ds.proximity, image_height=height)

        return self._memoised("distance", (_score_key(view), view.distance_mode), compute)

    def distance_table(self, view: View) -> dict[str, pd.DataFrame | dict]:
        """:meth:`distance` as plain tables: ``summary`` (dict), ``per_category`` and ``per_threshold`` (or None)."""
        res = self.distance(view)
        out: dict = {"summary": {k: float(v) for k, v in res.summary().items()}}
        for name in ("per_category", "per_threshold"):
            fn = getattr(res, name, None)
            out[name] = fn() if callable(fn) else None
        return out

    def semantic_confusion(self, view: View, *, cost: str = "tree", iou: float = CONFUSION_IOU):
        """Confusion cost weighted by semantic distance (the paper's future work): ``cost="tree"`` (same
        super-category 0.5, else 1) or ``"embedding"`` (1 - cosine of the remap encoder's text embeddings of the class
        names; needs ``view.remap``)."""
        from ov3d_core.diagnostics.semantic import embedding_cost, semantic_confusion_cost, tree_cost

        cm = self.confusion(view, iou=iou)
        names = list(cm.class_names)
        if cost == "tree":
            c = tree_cost(names)
        elif cost == "embedding":
            c = embedding_cost(self.class_text_embeddings(view))
        else:
            raise _view_error("cost", "'tree' or 'embedding'", cost)
        return semantic_confusion_cost(cm.counts, c, names)

    # ================================================================================================ remapping
    def encoder(self, spec: str):
        """The remap encoder of a spec (one per process and spec: loads torch/transformers on first use)."""
        return _shared_encoder(spec, self.encoder_options)

    def remapper(self, dataset: str, run: str, remap: "RemapSpec | str", *, progress: bool = False):
        """A ``LiveRemapper`` over the run's crop embeddings (computed once, then read from the cache on disk).
        ``remap`` is a :class:`RemapSpec` (or an encoder spec string: default crops and templates)."""
        spec = remap if isinstance(remap, RemapSpec) else RemapSpec(encoder=remap)

        def compute():
            import ov3d_core.remap.cache as cache
            import ov3d_core.remap.pipeline as pipeline
            import ov3d_core.remap.templates as templates

            b = self.benchmark
            ds, r = b.dataset(dataset), b.run(run, dataset)
            enc = self.encoder(spec.encoder)
            store = cache.EmbeddingStore(self.embedding_dir)
            emb = pipeline.embed_run(store, ds, r, enc, crops_json=b.run_spec(run, dataset).crops, pad=spec.pad,
                                     min_size=spec.min_size, progress=progress)
            text_cache = cache.TextEmbeddingCache(Path(b.config.cache_dir) / "text")
            return pipeline.LiveRemapper(emb, r.pred.record, r.pred.score, enc, ds.vocabulary,
                                         text_cache=text_cache, templates=templates.load_templates(spec.templates_file))

        return self._memoised("remapper", spec.embedding_key(dataset, run), compute)

    def remappable_runs(self, dataset: str, encoder: str) -> list[str]:
        """Runs the prompt lab can remap: with a crops file (the demo's caption proxy) or any run (pixel encoders)."""
        runs = self.runs(dataset)
        if encoder == "proxy":
            return [r for r in runs if self.benchmark.run_spec(r, dataset).crops is not None]
        return runs

    def remap_result(self, view: View):
        """The ``RemapResult`` of ``view.remap`` (labels before the class subset; ``keep`` = the θ rule)."""
        if view.remap is None:
            raise _view_error("remap", "a RemapSpec", None)
        rm = self.remapper(view.dataset, self._need_run(view), view.remap)
        return rm.result(view.remap.template, self.theta(view), view.remap.score_mode)

    def class_text_embeddings(self, view: View) -> np.ndarray:
        """``(C, D)`` text embeddings of the dataset's classes under the view's template (needs ``view.remap``)."""
        if view.remap is None:
            raise _view_error("remap", "a RemapSpec (the text encoder gives the class embeddings)", None)
        rm = self.remapper(view.dataset, self._need_run(view), view.remap)
        return rm.text_embeddings(view.remap.template)

    def template_labels(self, view: View, templates: Sequence[str] = DEFAULT_TEMPLATES) -> pd.DataFrame:
        """``template`` (its id, or its text for a custom template, or the spec of an ensemble), ``group`` and
        ``text`` of each template spec (no scoring)."""
        if view.remap is None:
            raise _view_error("remap", "a RemapSpec (encoder, θ, score mode)", None)
        rm = self.remapper(view.dataset, self._need_run(view), view.remap)
        rows = []
        for spec in templates:
            ts = rm.resolve(spec)
            one = ts[0] if len(ts) == 1 else None
            rows.append({"template": (one.text if one.group == "custom" else one.id) if one else spec,
                         "group": ts[0].group if len({t.group for t in ts}) == 1 else "ensemble",
                         "text": ts[0].text if len(ts) == 1 else " | ".join(t.text for t in ts)})
        return pd.DataFrame(rows, columns=["template", "group", "text"])

    def template_scores(self, view: View, templates: Sequence[str] = DEFAULT_TEMPLATES) -> pd.DataFrame:
        """One row per template: template, group, text, AP3D, AP3D@25 (percent), recall3D@15, n_kept — the run
        remapped under each template at the view's θ and scored under its protocol."""
        out = self.template_labels(view, templates)
        vals = []
        for spec in templates:
            v = view.with_(remap=replace(view.remap, template=spec))
            s = self.summary(v)
            vals.append({"AP3D": s.get("AP3D", np.nan), "AP3D@25": s.get("AP3D@25", np.nan),
                         RECALL_KEY: s.get(RECALL_KEY, np.nan),
                         "n_kept": int(np.count_nonzero(self.label_view(v).evaluated))})
        return pd.concat([out, pd.DataFrame(vals, columns=["AP3D", "AP3D@25", RECALL_KEY, "n_kept"])], axis=1)

    def prompt_sensitivity(self, view: View, templates: Sequence[str] = DEFAULT_TEMPLATES):
        """Prompt sensitivity (Table 8): mAP3D per template and prompt type, CV (σ/μ, population σ), drops."""
        from ov3d_core.diagnostics.prompts import prompt_sensitivity

        t = self.template_scores(view, templates)
        return prompt_sensitivity(dict(zip(t["template"], t["AP3D"])), dict(zip(t["template"], t["group"])))

    def prompt_cv(self, view: View, remap: "RemapSpec | str", templates: Sequence[str] = DEFAULT_TEMPLATES, *,
                  runs: Sequence[str] | None = None) -> dict[str, float]:
        """Per run: the mean over datasets of the prompt CV over ``templates`` (every remappable run remapped with
        ``remap``, an encoder spec string meaning its default θ, under ``view``'s protocol and threshold): the
        prompt-robustness axis of the three-axis table."""
        spec = remap if isinstance(remap, RemapSpec) else RemapSpec(encoder=remap)
        out: dict[str, list[float]] = {}
        for d in self.datasets:
            for run in self.remappable_runs(d, spec.encoder):
                if runs is not None and run not in runs:
                    continue
                v = view.with_(dataset=d, run=run, remap=spec)
                out.setdefault(run, []).append(float(self.prompt_sensitivity(v, templates).cv))
        return {r: float(np.mean(v)) for r, v in out.items()}

    def label_flips(self, view: View, reference: str, templates: Sequence[str] = DEFAULT_TEMPLATES):
        """Kept boxes whose remapped top-1 class changes between ``reference`` and the other templates."""
        from ov3d_core.diagnostics.prompts import label_flips

        top1 = {}
        for spec in templates:
            res = self.remap_result(view.with_(remap=replace(view.remap, template=spec)))
            top1[spec] = np.where(res.keep, res.label, -1)
        return label_flips(top1, reference, list(self.benchmark.dataset(view.dataset).vocabulary))

    def _inputs(self, view: View):
        from ov3d_core.eval.ap import APInputs, APParams

        ds, r = self.benchmark.dataset(view.dataset), self.benchmark.run(view.run, view.dataset)
        return APInputs.from_view(ds.gt, r.pred, self.benchmark.pairs(view.run, view.dataset), self.label_view(view),
                                  APParams.omni3d_3d(), proximity=ds.proximity)

    def consistency(self, view: View, templates: Sequence[str] = DEFAULT_TEMPLATES, *, iou: float = CONFUSION_IOU):
        """PCR / PLC (Pro-Bench) of the remapped run over ``templates``: GT recovered under every template, and the
        localisation agreement of the boxes that recover them (1 with remapping: the boxes are shared)."""
        from ov3d_core.diagnostics.consistency import prompt_consistency_from_inputs

        if view.remap is None:
            raise _view_error("remap", "a RemapSpec", None)

        def compute():
            inputs = [self._inputs(view.with_(remap=replace(view.remap, template=t))) for t in templates]
            r = self.benchmark.run(view.run, view.dataset)
            return prompt_consistency_from_inputs(inputs, r.pred.corners, n_categories=len(self.vocabulary(view)),
                                                  iou=iou, template_names=list(templates),
                                                  vocabulary=self.vocabulary(view))

        return self._memoised("consistency", (_score_key(view), tuple(templates), iou), compute)

    def label_ranks(self, view: View, *, iou: float = CONFUSION_IOU) -> pd.DataFrame:
        """FG-OVD label rank of every evaluated GT under the remapped scores (1 = the correct class ranks first)."""
        from ov3d_core.diagnostics.fgovd import gt_label_ranks

        res = self.remap_result(view)
        ds = self.benchmark.dataset(view.dataset)
        out = gt_label_ranks(self._inputs(view), res.full, iou_threshold=iou, vocabulary=ds.vocabulary)
        out.insert(1, "image_id", ds.gt.image_id[out["gt"].to_numpy(np.int64)])
        return out

    def vocabulary_curve(self, view: View, ks: Sequence[int] | None = None) -> pd.DataFrame:
        """FG-OVD vocabulary-size curve: mAP3D and rank as the number of hard negatives grows (remapped run)."""
        from ov3d_core.diagnostics.fgovd import vocabulary_size_curve
        from ov3d_core.diagnostics.semantic import cosine_similarity_matrix

        res = self.remap_result(view)
        sim = cosine_similarity_matrix(self.class_text_embeddings(view))
        V = len(self.benchmark.dataset(view.dataset).vocabulary)
        return vocabulary_size_curve(self._inputs(view), res.full, sim, n_categories=V, ks=ks)

    def calibration(self, view: View, **kw):
        """Calibrated remap acceptance (logistic regression on held-out images) vs the fixed θ rule."""
        from ov3d_core.diagnostics.calibration import calibrated_acceptance_from_remap

        ds, r = self.benchmark.dataset(view.dataset), self.benchmark.run(view.run, view.dataset)
        return calibrated_acceptance_from_remap(ds.gt, r.pred, self.benchmark.pairs(view.run, view.dataset),
                                                self.remap_result(view), ds.vocabulary, proximity=ds.proximity, **kw)

    # ---- scene and curves (appviews)
    def pred_details(self, view: View, image_id: int | None = None) -> pd.DataFrame:
        """Per prediction: status at ``view.iou``, score ranks, the reference GT (matched, else best 3D overlap) and
        the errors against it: 3D / 2D IoU, centre distance, depth error, aligned size error, yaw error
        (``diagnostics.box_errors``). ``image_id``: that image's predictions only (the same rows and values; what
        per-image views ask for, so that a 2M-prediction run is not tabulated whole for one image)."""
        from ov3d_core.diagnostics.box_errors import pred_details, pred_ranks

        def compute():
            ds, r = self.benchmark.dataset(view.dataset), self.benchmark.run(view.run, view.dataset)
            lv = self.label_view(view)
            rows = None if image_id is None else np.flatnonzero(np.asarray(r.pred.image_id) == int(image_id))
            ranks = self._memoised("pred_ranks", _score_key(view), lambda: pred_ranks(r.pred, lv))
            return pred_details(ds.gt, r.pred, self.benchmark.pairs(view.run, view.dataset), lv,
                                self.pred_status(view), rows=rows, ranks=ranks)

        key = (_score_key(view), view.iou) if image_id is None else (_score_key(view), view.iou, int(image_id))
        return self._memoised("pred_details", key, compute)

    def gt_details(self, view: View) -> pd.DataFrame:
        """Per GT box: status at ``view.iou``, ignore reason, truncation, visibility, depth, volume, 2D height and
        the matched prediction (``diagnostics.box_errors``)."""
        from ov3d_core.diagnostics.box_errors import gt_details

        def compute():
            ds = self.benchmark.dataset(view.dataset)
            return gt_details(ds.gt, self.gt_status(view), self.label_view(view).score,
                              self.benchmark.pairs(self._need_run(view), view.dataset))

        return self._memoised("gt_details", (_score_key(view), view.iou), compute)

    def pr_curves(self, view: View, iou: float | None = None) -> pd.DataFrame:
        """Interpolated precision-recall curves (101 recall points, Omni3D) per category with GT and their class
        mean, at 3D IoU ``iou`` (default ``view.iou``), of the view *without* its score threshold: the threshold is
        a point on these curves (:meth:`operating_points`)."""
        from ov3d_core.eval.curves import interpolated_pr

        sc = self.score(view.with_(min_score=0.0))
        return interpolated_pr(sc.ap, view.iou if iou is None else iou, sc.view.vocabulary)

    def pr_points(self, view: View, iou: float | None = None) -> pd.DataFrame:
        """The raw precision-recall curve per category (one row per non-ignored evaluated detection in score order)
        at ``iou`` (default ``view.iou``), of the view without its score threshold (``eval.curves.pr_points``)."""
        from ov3d_core.eval.curves import pr_points

        v0 = view.with_(min_score=0.0)
        t = view.iou if iou is None else float(iou)

        def compute():
            sc = self.score(v0)
            pred = self.benchmark.run(view.run, view.dataset).pred
            a_all = sc.ap.range_index("all")
            return pr_points(sc.ap.matches, sc.view.codes, sc.view.score, pred.image_id, sc.ap.n_gt[:, a_all], t,
                             sc.view.vocabulary)

        return self._memoised("pr_points", (_score_key(v0), t), compute)

    def operating_points(self, view: View, iou: float | None = None) -> pd.DataFrame:
        """Where ``view.min_score`` sits on each category's raw curve at ``iou`` (default ``view.iou``): detections
        kept, TP, FP, recall and precision, then the class mean on the mean curve (``eval.curves.operating_points``)."""
        from ov3d_core.eval.curves import operating_points

        from ov3d_core.eval.curves import ALL_CLASSES

        sc = self.score(view.with_(min_score=0.0))
        a_all = sc.ap.range_index("all")
        curves = self.pr_curves(view, iou)
        return operating_points(self.pr_points(view, iou), view.min_score, sc.ap.n_gt[:, a_all], sc.view.vocabulary,
                                mean_curve=curves[curves["category"] == ALL_CLASSES])


    # ================================================================================================ statistics
    def resamples(self, dataset: str, n_resamples: int = 1000, seed: int = 0):
        """The image bootstrap resamples of a dataset (every image of its GT file, with or without boxes): drawn
        once per (dataset, B, seed) and shared by every view scored on them, which is what pairs a comparison."""
        from ov3d_core.diagnostics.bootstrap import ImageResamples

        n, sd = _positive_int("n_resamples", n_resamples), _seed(seed)

        def compute():
            return ImageResamples.draw(self.benchmark.dataset(dataset).images["image_id"].to_numpy(), n, sd)

        return self._memoised("resamples", (dataset, n, sd), compute)

    def bootstrap(self, view: View, *, n_resamples: int = 1000, seed: int = 0, level: float = 0.95,
                  method: str = "bca", ods: bool = False):
        """Image-bootstrap intervals of every headline number of a view (``diagnostics.bootstrap``): a
        ``BootstrapResult`` whose ``to_frame()`` is ``metric, value, lo, hi, se, n_valid, level, method`` (AP3D,
        AP3D@15/25/50, N/M/F, recall3D@15, with ``ods=True`` ODS / ODS_canonical) and ``per_category_frame()``.

        Matching is fixed per image, so each resample only re-accumulates with image weights (exact: equal to the
        evaluator on the replicated images). ``method``: "bca" (default) or "percentile". ODS is the "3dmood"
        distance mode (with the dataset's proximity flag); other distance modes have no bootstrap."""
        from ov3d_core.diagnostics.bootstrap import METHODS, bootstrap_ods, bootstrap_score
        from ov3d_core.diagnostics.distance import DistanceParams

        if method not in METHODS:
            raise _view_error("method", f"one of {METHODS}", method)
        lvl = _finite_number("level", level, 0.0, 1.0, lo_open=True)
        if lvl >= 1.0:
            raise _view_error("level", "a value in (0, 1)", level)
        if not isinstance(ods, bool):
            raise _view_error("ods", "True or False", ods)
        if ods and view.distance_mode != "3dmood":
            raise _view_error("distance_mode", "'3dmood' for an ODS bootstrap", view.distance_mode)
        self._need_run(view)
        rs = self.resamples(view.dataset, n_resamples, seed)

        def compute():
            ds, r = self.benchmark.dataset(view.dataset), self.benchmark.run(view.run, view.dataset)
            sc = self.score(view)
            out = bootstrap_score(ds, r, sc, rs)
            if ods:
                out = out.join(bootstrap_ods(ds.gt, r.pred, sc.view, rs, gt_label=sc.gt_label,
                                             params=DistanceParams(proximity=bool(ds.proximity))))
            return out

        res = self._memoised("bootstrap", (_score_key(view), rs.n_resamples, rs.seed, ods), compute)
        return replace(res, level=lvl, method=method)

    def paired(self, a: View, b: View, *, n_resamples: int = 1000, seed: int = 0, level: float = 0.95,
               method: str = "percentile", correction: str = "holm", ods: bool = False):
        """Paired bootstrap test of A - B on the same image resamples: two runs on one dataset, or one run under two
        protocols, templates, θ or thresholds. A ``PairedComparison``: ``to_frame()`` per headline number
        (``diff, lo, hi, p_value, significant``), ``per_category_frame()`` with ``correction`` ("holm": family-wise,
        "bh": false discovery rate, "none") over the categories. Names: the runs, else what differs."""
        from ov3d_core.diagnostics.bootstrap import paired_comparison

        if a.dataset != b.dataset:
            raise _view_error("dataset", f"the same dataset in both views ({a.dataset!r})", b.dataset)
        if _score_key(a) == _score_key(b):
            raise _view_error("view", "two views that differ in run, protocol, threshold, remapping or classes",
                              a.label)
        name_a, name_b = _pair_names(a, b)
        ra = self.bootstrap(a, n_resamples=n_resamples, seed=seed, ods=ods)
        rb = self.bootstrap(b, n_resamples=n_resamples, seed=seed, ods=ods)
        try:
            return paired_comparison(ra, rb, name_a=name_a, name_b=name_b, level=level, method=method,
                                     correction=correction)
        except ValueError as exc:
            raise _view_error("paired", "a valid level, method and correction", str(exc)) from None

    def leaderboard_tiers(self, view: View, *, metric: str = "AP3D", n_resamples: int = 1000, seed: int = 0,
                          level: float = 0.95, correction: str = "holm") -> pd.DataFrame:
        """The runs of ``view.dataset`` ranked by ``metric`` under ``view``'s protocol and threshold, each with its
        BCa interval, and whether the gap to the next run is significant (paired bootstrap, ``correction`` over the
        n - 1 gaps): ``rank, run, value, lo, hi, gap, gap_lo, gap_hi, p_value, p_adjusted, significant, tier``
        (runs joined by non-significant gaps share a tier). Runs that fail to load are left out."""
        from ov3d_core.diagnostics.bootstrap import leaderboard

        results = []
        for run in self.runs(view.dataset):
            try:
                results.append((run, self.bootstrap(view.with_(run=run, remap=None), n_resamples=n_resamples,
                                                    seed=seed)))
            except InputError:
                continue
        if not results:
            raise InputError(self._config_file, None, "runs", f"at least one loadable run on {view.dataset!r}",
                             "none")
        if metric not in results[0][1].metrics:
            raise _view_error("metric", f"one of {list(results[0][1].metrics)}", metric)
        return leaderboard(results, metric=metric, level=level, correction=correction)

    # ================================================================================================ mining
    def _entries(self, view: View, runs: Sequence[str] | None) -> dict:
        """run -> (Run, RunScore) under ``view``'s settings (the view's own remapping for its run only)."""
        names = list(runs) if runs is not None else self.runs(view.dataset)
        out = {}
        for run in names:
            v = view if run == view.run else view.with_(run=run, remap=None)
            try:
                out[run] = (self.benchmark.run(run, view.dataset), self.score(v))
            except InputError:
                if runs is not None:
                    raise
        if not out:
            raise InputError(self._config_file, None, "runs", f"at least one loadable run on {view.dataset!r}",
                             "none")
        return out

    def mine(self, view: View, kind: str, *, runs: Sequence[str] | None = None):
        """Failure mining (``diagnostics.mining``): a ``Ranking`` of images (``images``: ``rank, image_id, <value>,
        n_boxes``) and of the boxes behind them (``boxes``), for ``kind`` in :data:`MINING_KINDS`:

        - "cross-class": false positives at ``view.iou`` sitting on a GT of another class (well localised, misnamed);
        - "oracle-gain": what the target-aware oracle hides (needs a dataset-level view);
        - "depth-error": true positives by |z_pred - z_gt|;
        - "disagreement": GT localised by several runs under different labels (``runs``, default all);
        - "missed-by-all": GT every run misses at ``view.iou`` (``runs``, default all)."""
        from ov3d_core.diagnostics import mining

        if kind not in MINING_KINDS:
            raise _view_error("kind", f"one of {MINING_KINDS}", kind)
        ds = self.benchmark.dataset(view.dataset)
        key = (_score_key(view), view.iou, kind, None if runs is None else tuple(runs))
        if kind in ("disagreement", "missed-by-all"):
            def compute():
                entries = self._entries(view, runs)
                if kind == "disagreement":
                    return mining.run_disagreement(ds, entries)
                return mining.missed_by_all(ds, entries, iou=view.iou)
        else:
            self._need_run(view)
            if kind == "oracle-gain" and view.protocol != "dataset-level":
                raise _view_error("protocol", "'dataset-level' (the oracle's gain is measured against it)",
                                  view.protocol)
            fn = {"cross-class": mining.cross_class_false_positives, "oracle-gain": mining.oracle_gain,
                  "depth-error": mining.depth_errors}[kind]

            def compute():
                return fn(ds, self.benchmark.run(view.run, view.dataset), self.score(view), iou=view.iou)

        return self._memoised("mine", key, compute)

    def object_view(self, view: View, gt_row: int, *, runs: Sequence[str] | None = None):
        """One GT object against every run (the paper's Fig. 1): an ``ObjectView`` whose table has, per run, the
        best-overlapping prediction (any class), its IoU, class, score and status at ``view.iou``, and whether the
        evaluator matched the object; ``sentence()`` reads "5 of 5 runs localise this chair, none names it"."""
        from ov3d_core.diagnostics.mining import object_view

        ds = self.benchmark.dataset(view.dataset)
        if isinstance(gt_row, bool) or not isinstance(gt_row, (int, np.integer)) or not 0 <= int(gt_row) < len(ds.gt):
            raise _view_error("gt_row", f"a GT row in [0, {len(ds.gt)})", gt_row)
        key = (_score_key(view), view.iou, int(gt_row), None if runs is None else tuple(runs))
        return self._memoised("object_view", key,
                              lambda: object_view(ds, self._entries(view, runs), int(gt_row), iou=view.iou))


#: Columns of :meth:`Analysis.leaderboard`.
LEADERBOARD_COLUMNS = ["dataset", "run", "environment", "in_domain", "protocol", "n_images", "n_gt", "n_pred",
                       "n_out_of_vocabulary", *SUMMARY_KEYS]


#: Failure-mining lists of :meth:`Analysis.mine`.
MINING_KINDS = ("cross-class", "oracle-gain", "depth-error", "disagreement", "missed-by-all")


def _positive_int(name: str, v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < 1:
        raise _view_error(name, "a positive integer", v)
    return int(v)


def _seed(v) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or int(v) < 0:
        raise _view_error("seed", "a non-negative integer", v)
    return int(v)


def _pair_names(a: View, b: View) -> tuple[str, str]:
    """Names of the two sides of a paired comparison: the runs, else the first field that differs."""
    if a.run != b.run:
        return a.run or "A", b.run or "B"
    if a.protocol != b.protocol:
        return a.protocol, b.protocol
    if a.remap != b.remap:
        if a.remap is None or b.remap is None:
            return ("own labels", "remapped") if a.remap is None else ("remapped", "own labels")
        for field_ in ("template", "theta", "encoder", "score_mode", "templates_file", "pad", "min_size"):
            va, vb = getattr(a.remap, field_), getattr(b.remap, field_)
            if va != vb:
                return f"{field_} {va}", f"{field_} {vb}"
    if a.min_score != b.min_score:
        return f"score ≥ {a.min_score:g}", f"score ≥ {b.min_score:g}"
    return "A", "B"


def _score_key(view: View) -> tuple:
    """What a score depends on (the TP/FP IoU and the distance mode do not change AP)."""
    return (view.dataset, view.run, view.protocol, view.min_score, view.remap, view.classes)


def _restrict(lv, classes: tuple[str, ...], vocabulary: Sequence[str], file: str):
    """A label view over the subset ``classes`` of ``vocabulary`` (in vocabulary order): other labels become -1."""
    unknown = [c for c in classes if c not in vocabulary]
    if unknown:
        raise InputError(None, "view", "classes", f"categories of the dataset vocabulary; {unknown} are not", unknown)
    sub = tuple(c for c in vocabulary if c in classes)
    lut = np.array([sub.index(c) if c in sub else -1 for c in lv.vocabulary] + [-1], np.int64)
    return lv.relabel(lut[np.where(lv.label >= 0, lv.label, len(lv.vocabulary))], vocabulary=sub)


_encoders: dict = {}
_encoders_lock = threading.Lock()


def _shared_encoder(spec: str, options: Mapping[str, Any]):
    from ov3d_core.remap.encoders import make_encoder

    with _encoders_lock:
        if spec not in _encoders:
            _encoders[spec] = make_encoder(spec, **{k: v for k, v in options.items() if v is not None})
        return _encoders[spec]
