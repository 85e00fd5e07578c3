"""Benchmark config: which datasets (GT files, images, environment) and which runs (prediction files) to load.

A benchmark is described by a YAML file; paths in it are relative to the file::

    name: My benchmark
    cache_dir: .ov3d_cache              # optional; geometry and embedding caches
    datasets:
      - name: SUNRGBD_test
        gt: Omni3D/SUNRGBD_test.json    # or a list of files
        images: /data/omni3d            # root that image file_path values are relative to
        environment: indoor             # indoor | outdoor (domain-transfer pairs stay within one)
        categories: [chair, table]      # optional evaluated vocabulary (default: the file's categories)
        proximity: true                 # optional (default: Omni3D's rule, on for SUNRGBD/Objectron)
        depth: depth/{image_id}.npz     # optional patterns
        points: points/{image_id}.ply
        subsets: {base: [...], novel: [...]}
    runs:
      - name: cubercnn
        dataset: SUNRGBD_test
        predictions: preds/cubercnn/omni_instances_results.json
        format: cubercnn-json           # auto | cubercnn-json | cubercnn-pth | detany3d-json | kitti
        category_list: [...]            # contiguous id -> name (for .pth)
        trained_on: [SUNRGBD_test]      # in-domain datasets
        closed_vocabulary: [...]        # a closed-vocabulary detector's own labels (for remapping)
        crops: preds/cubercnn/crops.json
        description: one line

Nothing here reads the GT or prediction files; ``ov3d_core.benchmark`` does that lazily.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ov3d_core.errors import InputError

ENVIRONMENTS = ("indoor", "outdoor")
RUN_FORMATS = ("auto", "cubercnn-json", "cubercnn-pth", "detany3d-json", "kitti")


@dataclass(frozen=True)
class DatasetSpec:
    name: str
    gt: tuple[Path, ...]
    images: Path | None = None
    environment: str | None = None
    categories: tuple[str, ...] | None = None
    proximity: bool | None = None
    depth: str | None = None
    points: str | None = None
    subsets: dict = field(default_factory=dict)
    calib: Path | None = None  # KITTI: calib folder (gt is then the label_2 folder)
    format: str = "omni3d"     # omni3d | kitti
    name_from_file: bool = False  # CLI: report the GT file's info.name (or stem) rather than `name`


@dataclass(frozen=True)
class RunSpec:
    name: str
    dataset: str
    predictions: Path
    format: str = "auto"
    category_list: tuple[str, ...] | None = None
    trained_on: tuple[str, ...] = ()
    closed_vocabulary: tuple[str, ...] | None = None
    crops: Path | None = None
    description: str = ""

    @property
    def key(self) -> tuple[str, str]:
        return (self.name, self.dataset)

    @property
    def in_domain(self) -> bool:
        return self.dataset in self.trained_on


@dataclass(frozen=True)
class BenchmarkConfig:
    name: str
    path: Path | None
    datasets: dict[str, DatasetSpec]
    runs: dict[tuple[str, str], RunSpec]
    cache_dir: Path

    @property
    def run_names(self) -> list[str]:
        return list(dict.fromkeys(r.name for r in self.runs.values()))

    def runs_on(self, dataset: str) -> list[RunSpec]:
        return [r for r in self.runs.values() if r.dataset == dataset]


def _req(rec: dict, key: str, file: str, where: str, typ, expected: str):
    if key not in rec:
        raise InputError(file, where, key, expected, "missing")
    val = rec[key]
    if not isinstance(val, typ):
        raise InputError(file, where, key, expected, val)
    return val


def _opt_names(rec: dict, key: str, file: str, where: str) -> tuple[str, ...] | None:
    val = rec.get(key)
    if val is None:
        return None
    if not isinstance(val, list) or not all(isinstance(v, str) for v in val):
        raise InputError(file, where, key, "a list of category names", val)
    return tuple(val)


def load_config(path: str | Path) -> BenchmarkConfig:
    """Read and validate a benchmark YAML file (InputError on any problem, naming the entry and field)."""
    import yaml

    path = Path(path)
    file = str(path)
    if not path.is_file():
        raise InputError(file, None, None, "an existing benchmark config file", "no such file")
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise InputError(file, None, None, f"valid YAML ({exc})") from None
    if not isinstance(doc, dict):
        raise InputError(file, None, None, "a mapping with `datasets` and `runs`", type(doc).__name__)
    base = path.parent

    def rel(p: str) -> Path:
        q = Path(p).expanduser()
        return q if q.is_absolute() else base / q

    datasets: dict[str, DatasetSpec] = {}
    for i, rec in enumerate(_req(doc, "datasets", file, None, list, "a list of datasets")):
        where = f"datasets[{i}]"
        if not isinstance(rec, dict):
            raise InputError(file, where, None, "a mapping", rec)
        name = _req(rec, "name", file, where, str, "a string")
        if name in datasets:
            raise InputError(file, where, "name", "a unique dataset name", name)
        gt = rec.get("gt")
        gts = [gt] if isinstance(gt, str) else gt
        if not isinstance(gts, list) or not gts or not all(isinstance(g, str) for g in gts):
            raise InputError(file, where, "gt", "a path or a list of paths", gt)
        env = rec.get("environment")
        if env is not None and env not in ENVIRONMENTS:
            raise InputError(file, where, "environment", f"one of {ENVIRONMENTS}", env)
        subsets = rec.get("subsets") or {}
        if not isinstance(subsets, dict):
            raise InputError(file, where, "subsets", "a mapping of name -> list of categories", subsets)
        datasets[name] = DatasetSpec(
            name=name, gt=tuple(rel(g) for g in gts),
            images=rel(rec["images"]) if rec.get("images") else None, environment=env,
            categories=_opt_names(rec, "categories", file, where), proximity=rec.get("proximity"),
            depth=rec.get("depth"), points=rec.get("points"),
            subsets={k: tuple(v) for k, v in subsets.items()},
            calib=rel(rec["calib"]) if rec.get("calib") else None, format=rec.get("format", "omni3d"))

    runs: dict[tuple[str, str], RunSpec] = {}
    for i, rec in enumerate(doc.get("runs") or []):
        where = f"runs[{i}]"
        if not isinstance(rec, dict):
            raise InputError(file, where, None, "a mapping", rec)
        name = _req(rec, "name", file, where, str, "a string")
        ds = _req(rec, "dataset", file, where, str, "a dataset name")
        if ds not in datasets:
            raise InputError(file, where, "dataset", f"one of the datasets {sorted(datasets)}", ds)
        fmt = rec.get("format", "auto")
        if fmt not in RUN_FORMATS:
            raise InputError(file, where, "format", f"one of {RUN_FORMATS}", fmt)
        if (name, ds) in runs:
            raise InputError(file, where, "name", f"a run name not already used on dataset {ds}", name)
        trained = rec.get("trained_on") or []
        if not isinstance(trained, list):
            raise InputError(file, where, "trained_on", "a list of dataset names", trained)
        runs[(name, ds)] = RunSpec(
            name=name, dataset=ds, predictions=rel(_req(rec, "predictions", file, where, str, "a path")),
            format=fmt, category_list=_opt_names(rec, "category_list", file, where),
            trained_on=tuple(trained), closed_vocabulary=_opt_names(rec, "closed_vocabulary", file, where),
            crops=rel(rec["crops"]) if rec.get("crops") else None, description=str(rec.get("description", "")))
    cache = doc.get("cache_dir", ".ov3d_cache")
    return BenchmarkConfig(name=str(doc.get("name", path.stem)), path=path, datasets=datasets, runs=runs,
                           cache_dir=rel(cache))


def config_from_files(gt: list[str | Path], predictions: list[str | Path], *, run_names: list[str] | None = None,
                      formats: list[str] | None = None, category_list: tuple[str, ...] | None = None,
                      cache_dir: str | Path | None = None, dataset_name: str | None = None) -> BenchmarkConfig:
    """A one-dataset config from GT files and prediction files (what the CLI's ``evaluate`` builds)."""
    gt = tuple(Path(g) for g in gt)
    ds = DatasetSpec(name=dataset_name or "+".join(g.stem for g in gt), gt=gt, images=gt[0].parent,
                     name_from_file=dataset_name is None)
    runs = {}
    for i, p in enumerate(predictions):
        p = Path(p)
        name = run_names[i] if run_names and i < len(run_names) else _default_run_name(p)
        fmt = formats[i] if formats and i < len(formats) else "auto"
        runs[(name, ds.name)] = RunSpec(name=name, dataset=ds.name, predictions=p, format=fmt,
                                        category_list=category_list)
    cache = Path(cache_dir) if cache_dir else Path(".ov3d_cache")
    return BenchmarkConfig(name="cli", path=None, datasets={ds.name: ds}, runs=runs, cache_dir=cache)


def _default_run_name(p: Path) -> str:
    # omni_instances_results.json / instances_predictions.pth carry no name: use the folder.
    if p.stem in ("omni_instances_results", "instances_predictions") and p.parent.name:
        return p.parent.name
    return p.stem
