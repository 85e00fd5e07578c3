"""A loaded benchmark: datasets, runs and their cached geometry, loaded lazily and memoised.

It reads files through ``ov3d_core.io`` and keeps the sparse GT x prediction geometry in a ``PairCache`` on disk.
Scoring and every analysis go through ``ov3d_core.analysis.Analysis``, which wraps one of these.
"""

from __future__ import annotations

import contextlib
import os
import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ov3d_core.io.config import BenchmarkConfig, DatasetSpec, RunSpec, load_config
from ov3d_core.errors import InputError
from ov3d_core.heap import trim_heap
from ov3d_core.model import Dataset, Run
from ov3d_core.eval.pairs import PairCache
from ov3d_core.io import load_omni3d_gt, load_predictions
from ov3d_core.io.image_subsets import resolve_image_subset
from ov3d_core.io.kitti import load_kitti_gt, load_kitti_predictions
from ov3d_core.io.loadcache import cached_load, files_digest


#: Megabytes of loaded runs (their prediction arrays) a ``Benchmark`` keeps at most (``OV3D_RUN_MEMORY_MB``). Beyond
#: it the least recently used run that the load cache can give back is let go; its next use reads it from that
#: cache (memory-mapped, every digest checked). At 2M predictions a run is ~0.8 GB: a first Overview of 7 such runs
#: held 7.4 GB.
RUN_MEMORY_MB_DEFAULT = 3072


def run_memory_budget() -> int:
    """Bytes of loaded runs kept (``OV3D_RUN_MEMORY_MB``, default ``RUN_MEMORY_MB_DEFAULT``); a value that is not a
    positive integer is an ``InputError`` naming the variable."""
    raw = os.environ.get("OV3D_RUN_MEMORY_MB")
    if raw is None:
        return RUN_MEMORY_MB_DEFAULT << 20
    try:
        mb = int(raw)
    except ValueError:
        mb = 0
    if mb <= 0:
        raise InputError("environment", None, "OV3D_RUN_MEMORY_MB", "a positive whole number of megabytes", raw)
    return mb << 20


@dataclass(frozen=True)
class LoadWarning:
    """A warning raised while loading one input (e.g. ``CornerMismatchWarning``): the ``dataset``, the ``run``
    (None for the dataset's GT), the warning class's name and its message (which names the file, the field and how
    many records)."""

    dataset: str
    run: str | None
    category: str
    message: str


@contextlib.contextmanager
def _recording(out: list, dataset: str, run: str | None):
    """Collect the warnings of a load into ``out`` (as ``LoadWarning``), then raise them again for the caller
    (the CLI prints them, a test's ``pytest.warns`` sees them)."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        yield
    out.extend(LoadWarning(dataset, run, w.category.__name__, str(w.message)) for w in rec)
    for w in rec:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)


class Benchmark:
    """Lazy, memoised access to the datasets, runs and pair geometry of a benchmark config. Thread-safe.

    Loaded runs are kept in recency order within ``run_memory_budget()``; a run read through the load cache may be let
    go beyond it and is read back on its next use (runs given as objects and KITTI runs are always kept)."""

    def __init__(self, config: BenchmarkConfig):
        self.config = config
        self._lock = threading.RLock()
        self._datasets: dict[str, Dataset] = {}
        self._runs: OrderedDict[tuple[str, str], Run] = OrderedDict()
        self._reloadable: set[tuple[str, str]] = set()  # runs the load cache can give back
        self.runs_released = 0  # runs let go for the memory budget (for tests and benchmarks)
        self._pairs: dict[tuple[str, str], object] = {}
        self._crops: dict[tuple[str, str], object] = {}
        self._image_subsets: dict[tuple[str, str], np.ndarray] = {}
        self._pair_cache = None
        self._warnings: dict[tuple[str, str | None], list[LoadWarning]] = {}  # (dataset, run) -> its load's

    @classmethod
    def from_yaml(cls, path: str | Path, **kw) -> "Benchmark":
        """A benchmark config file (keywords go to ``load_config``)."""
        return cls(load_config(path, **kw))

    @classmethod
    def from_objects(cls, dataset: Dataset, runs: list[Run], *, cache_dir: str | Path | None = None) -> "Benchmark":
        """A benchmark over data already in memory: one ``Dataset`` and its ``Run`` objects (no file is read).
        Geometry is cached under ``cache_dir`` (default: a fresh temporary folder)."""
        import tempfile

        names = [r.name for r in runs]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise InputError(None, f"run {dup}", "name", "a unique run name", dup)
        ds_spec = DatasetSpec(name=dataset.name, gt=(), environment=dataset.environment,
                              proximity=dataset.proximity)
        specs = {(r.name, dataset.name): RunSpec(name=r.name, dataset=dataset.name, predictions=Path(f"<memory:{r.name}>"))
                 for r in runs}
        root = Path(cache_dir) if cache_dir is not None else Path(tempfile.mkdtemp(prefix="ov3d-cache-"))
        b = cls(BenchmarkConfig(name=dataset.name, path=None, datasets={dataset.name: ds_spec}, runs=specs,
                                cache_dir=root))
        b._datasets[dataset.name] = dataset
        for r in runs:
            b._runs[(r.name, dataset.name)] = r
        return b

    # ---------------------------------------------------------------- names
    @property
    def dataset_names(self) -> list[str]:
        return list(self.config.datasets)

    def run_names(self, dataset: str | None = None) -> list[str]:
        return [r.name for r in self.config.runs.values() if dataset is None or r.dataset == dataset]

    def run_spec(self, run: str, dataset: str) -> RunSpec:
        try:
            return self.config.runs[(run, dataset)]
        except KeyError:
            raise InputError(str(self.config.path or "<config>"), None, "runs",
                             f"a run named {run!r} on dataset {dataset!r}; have {sorted(self.config.runs)}") from None

    def dataset_spec(self, dataset: str) -> DatasetSpec:
        try:
            return self.config.datasets[dataset]
        except KeyError:
            raise InputError(str(self.config.path or "<config>"), None, "datasets",
                             f"a dataset named {dataset!r}; have {sorted(self.config.datasets)}") from None

    # ---------------------------------------------------------------- input identity
    def input_files(self) -> list[Path]:
        """Every input file the config names (GT, predictions, crops; not KITTI folders), in config order."""
        files: list[Path] = []
        for spec in self.config.datasets.values():
            files += [Path(f) for f in spec.gt if Path(f).is_file()]
        for spec in self.config.runs.values():
            files += [Path(f) for f in (spec.predictions, *spec.per_template.values(), spec.crops)
                      if f is not None and Path(f).is_file()]
        return list(dict.fromkeys(files))

    def fingerprint(self) -> dict[str, str]:
        """``{resolved path: xxh3-128 digest of the whole content}`` of ``input_files()``, always read from disk
        (seconds for GBs). The load caches key on these digests; the app re-checks each new session more cheaply,
        with ``ov3d_app.cache.inputs_signature`` (size, mtime and ctime: stat only), and rebuilds when one changed."""
        return dict(files_digest(self.input_files(), recheck=True))

    # ---------------------------------------------------------------- loading
    def dataset(self, name: str) -> Dataset:
        with self._lock:
            if name not in self._datasets:
                caught: list[LoadWarning] = []
                with _recording(caught, name, None):
                    self._datasets[name] = self._load_dataset(self.dataset_spec(name))
                self._warnings[(name, None)] = caught
                trim_heap()  # the step freed many temporaries: give them back before the next allocates
            return self._datasets[name]

    def _load_dataset(self, spec: DatasetSpec) -> Dataset:
        files = list(spec.gt) if spec.format != "kitti" else []
        params = {"spec": repr(spec)}
        return cached_load(self._load_cache_root(files), "dataset", files, params,
                           lambda: self._read_dataset(spec))

    def _load_cache_root(self, files) -> Path | None:
        # KITTI folders are not fingerprinted file by file: no caching for them.
        return self.config.cache_dir if files else None

    def _read_dataset(self, spec: DatasetSpec) -> Dataset:
        if spec.format == "kitti":
            if spec.calib is None:
                raise InputError(str(self.config.path), spec.name, "calib", "the KITTI calib folder")
            return load_kitti_gt(spec.gt[0], spec.calib, image_dir=spec.images, name=spec.name)
        return load_omni3d_gt(list(spec.gt), categories=spec.categories,
                              name=None if spec.name_from_file else spec.name, environment=spec.environment,
                              proximity=spec.proximity, root=str(spec.images) if spec.images else None)

    def run_templates(self, run: str, dataset: str | None = None) -> tuple[str, ...]:
        """The template ids of a prompt-conditioned run's ``per_template`` files, in YAML order (on ``dataset``;
        None: over every dataset the run is on, first seen first); ``()`` for a run with one file."""
        specs = [s for s in self.config.runs.values() if s.name == run and (dataset is None or s.dataset == dataset)]
        if not specs:
            self.run_spec(run, dataset if dataset is not None else "<any>")  # the error naming what there is
        return tuple(dict.fromkeys(t for s in specs for t in s.per_template))

    def default_template(self, run: str, dataset: str) -> str | None:
        """The template whose file is the run's default (``run(run, dataset)``), or None for a run with one file
        (or whose ``predictions`` is a file of its own)."""
        spec = self.run_spec(run, dataset)
        if spec.default_template is not None and spec.per_template.get(spec.default_template) == spec.predictions:
            return spec.default_template
        return None

    def template_spec(self, run: str, dataset: str, template: str | None = None) -> RunSpec:
        """The run's spec with ``predictions`` set to ``template``'s file (None: the run's own spec). A template the
        run has no file for is an ``InputError`` listing the ones it has; a file that does not exist names the config
        and the field (``runs[2].per_template.S9``)."""
        spec = self.run_spec(run, dataset)
        if template is None:
            return spec
        if template not in spec.per_template:
            raise InputError(str(self.config.path or "<config>"), spec.record or f"run {run}", "per_template",
                             f"a template of run {run!r} on {dataset!r}: one of {list(spec.per_template) or 'none'}",
                             f"{template!r}")
        f = Path(spec.per_template[template])
        if not (f.exists() if spec.format == "kitti" else f.is_file()):
            raise InputError(str(self.config.path or "<config>"), spec.record or f"run {run}",
                             f"per_template.{template}", "an existing prediction file", "no such file")
        return replace(spec, predictions=f)

    def run(self, run: str, dataset: str, template: str | None = None) -> Run:
        """The run's predictions: its ``predictions`` file, or with ``template`` that template's ``per_template``
        file (same format and loader; cached per (run, dataset, template))."""
        with self._lock:
            key = (run, dataset) if template is None else (run, dataset, template)
            if key not in self._runs:
                spec = self.template_spec(run, dataset, template)
                ds = self.dataset(dataset)
                caught: list[LoadWarning] = []
                with _recording(caught, dataset, run):
                    self._runs[key] = self._load_run(spec, ds)
                self._warnings[(dataset, run) if template is None else (dataset, run, template)] = caught
                if spec.format != "kitti" and self._load_cache_root([spec.predictions]) is not None:
                    self._reloadable.add(key)
                self._release_beyond_budget(keep=key)
                trim_heap()  # the step freed many temporaries: give them back before the next allocates
            self._runs.move_to_end(key)
            return self._runs[key]

    def load_warnings(self, dataset: str | None = None, runs=None) -> list[LoadWarning]:
        """The warnings of the loads done so far (GT first, then runs, in config order): of ``dataset`` (None: every
        dataset) and of its ``runs`` (None: every run; GT warnings are always included). A run let go for the memory
        budget keeps its warnings (its reload raises the same ones)."""
        items = self._warnings.copy()  # no lock: a page never waits for a load in another thread
        order = [(d, None) for d in self.dataset_names] + [
            k for s in self.config.runs.values()
            for k in [(s.dataset, s.name), *((s.dataset, s.name, t) for t in s.per_template)]]
        keep = None if runs is None else set(runs)
        return [w for k in order if k in items and (dataset is None or k[0] == dataset)
                and (k[1] is None or keep is None or k[1] in keep) for w in items[k]]

    def _release_beyond_budget(self, keep: tuple) -> None:
        """Let go of the least recently used reloadable runs (and their in-memory pairs) while the loaded runs exceed
        the budget; ``keep`` (the run just asked for) always stays."""
        budget = run_memory_budget()
        sizes = {k: r.pred.nbytes for k, r in self._runs.items()}  # per-prediction arrays
        total = sum(sizes.values())
        for k in [k for k in self._runs if k != keep and k in self._reloadable]:
            if total <= budget:
                break
            del self._runs[k]
            self._pairs.pop(k, None)
            total -= sizes[k]
            self.runs_released += 1

    def _load_run(self, spec: RunSpec, ds: Dataset) -> Run:
        if spec.format == "kitti":
            return load_kitti_predictions(spec.predictions, ds, name=spec.name)
        dspec = self.dataset_spec(spec.dataset)
        files = [spec.predictions, *dspec.gt]  # the run's parse depends on the GT (ids, vocabulary)
        return cached_load(self._load_cache_root(files), "run", files, {"spec": repr(spec), "ds": repr(dspec)},
                           lambda: self._read_run(spec, ds))

    @staticmethod
    def _read_run(spec: RunSpec, ds: Dataset) -> Run:
        return load_predictions(spec.predictions, ds, name=spec.name, format=spec.format,
                                category_list=spec.category_list)

    @property
    def pair_cache(self):
        with self._lock:
            if self._pair_cache is None:
                self._pair_cache = PairCache(self.config.cache_dir / "pairs")
            return self._pair_cache

    def pairs(self, run: str, dataset: str, progress=None, template: str | None = None):
        """Sparse GT x prediction geometry of a run (with ``template``: of that template's file), computed once and
        cached on disk."""
        with self._lock:
            key = (run, dataset) if template is None else (run, dataset, template)
            if key not in self._pairs:
                ds, r = self.dataset(dataset), self.run(run, dataset, template)
                self._pairs[key] = self.pair_cache.get_or_compute(ds.gt, r.pred, progress=progress)
                trim_heap()  # the step freed many temporaries: give them back before the next allocates
            return self._pairs[key]

    def warm(self, run: str, dataset: str, template: str | None = None) -> None:
        """``pairs(run, dataset)`` ahead of need, without counting as a use: the runs' order of recent use is kept,
        and a run this call loads goes to the least recently used end. A background warm-up of many large runs then
        lets go of its own loads first when the memory budget is reached, not of the runs the pages are using."""
        with self._lock:
            order = list(self._runs)
            self.pairs(run, dataset, template=template)
            for k in order:
                if k in self._runs:
                    self._runs.move_to_end(k)

    def crops(self, run: str, dataset: str):
        """The run's crop descriptors (demo) as a DataFrame aligned with prediction records, or None."""
        import json

        import pandas as pd

        spec = self.run_spec(run, dataset)
        if spec.crops is None:
            return None
        with self._lock:
            key = (run, dataset)
            if key not in self._crops:
                try:
                    recs = json.loads(Path(spec.crops).read_text())
                except FileNotFoundError:
                    raise InputError(str(spec.crops), None, None, "an existing crops file", "no such file") from None
                except json.JSONDecodeError as exc:
                    raise InputError(str(spec.crops), None, None, f"valid JSON ({exc})") from None
                self._crops[key] = pd.DataFrame(recs)
            return self._crops[key]

    def image_path(self, dataset: str, image_id: int) -> Path | None:
        ds = self.dataset(dataset)
        row = ds.image_index(np.array([image_id]))[0]
        if row < 0:
            return None
        root = Path(ds.root) if ds.root else None
        rel = ds.images["file_path"].iloc[row]
        return (root / rel) if root else Path(rel)

    def asset_path(self, dataset: str, kind: str, image_id: int) -> Path | None:
        """Optional per-image asset (``kind`` = "depth" or "points") from the config's filename pattern."""
        spec = self.dataset_spec(dataset)
        pattern = getattr(spec, kind, None)
        if not pattern:
            return None
        base = self.config.path.parent if self.config.path else Path(".")
        p = base / pattern.format(image_id=image_id)
        return p if p.exists() else None



    # ---------------------------------------------------------------- image subsets
    def image_subsets(self, dataset: str) -> tuple[str, ...]:
        """Names of the dataset's ``image_subsets``, in YAML order."""
        return tuple(self.dataset_spec(dataset).image_subsets)

    def image_subset(self, dataset: str, name: str) -> np.ndarray:
        """The sorted image ids (int64) of the dataset's image subset ``name`` (``ov3d_core.io.image_subsets``);
        computed once. An unknown name is an ``InputError`` listing the known ones."""
        spec = self.dataset_spec(dataset)
        if name not in spec.image_subsets:
            raise InputError(str(self.config.path or "<config>"), spec.record or f"dataset {dataset}",
                             "image_subsets", f"the name of an image subset of {dataset!r}: one of "
                             f"{list(spec.image_subsets) or 'none'}", f"{name!r}")
        with self._lock:
            key = (dataset, name)
            if key not in self._image_subsets:
                ids = self.dataset(dataset).images["image_id"].to_numpy()
                out = resolve_image_subset(spec.image_subsets[name], ids, config=str(self.config.path or "<config>"),
                                           record=spec.record or f"dataset {dataset}", field=f"image_subsets.{name}")
                out.setflags(write=False)
                self._image_subsets[key] = out
            return self._image_subsets[key]
