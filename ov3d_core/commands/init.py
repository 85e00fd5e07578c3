"""``ov3d init FOLDER``: look at a folder of GT and prediction files and write a commented ``benchmark.yaml``.

What it recognises (by content, not only by name):

* Omni3D GT JSON: an object with ``images``, ``categories`` and ``annotations`` lists;
* Cube R-CNN JSON predictions (``omni_instances_results.json``): a list of records with ``image_id`` and
  ``bbox3D`` / ``center_cam``; DetAny3D's ``{dataset}_output_results.json`` (same records) is taken as
  ``detany3d-json`` from its file name;
* Cube R-CNN ``.pth`` predictions (``instances_predictions.pth``): per-image records with ``instances``, read with
  ``torch.load(weights_only=True)``. Their contiguous ids need the model's training classes: a
  ``category_list.txt`` / ``categories.txt`` / ``thing_classes.txt`` beside the file (one name a line) is used,
  otherwise the run is written commented out, with the key to fill in;
* crop descriptors ``<run file stem>.crops.json`` beside a run file;
* KITTI ``label_2`` folders (15 values a line; ``calib`` and ``image_2`` beside them) and KITTI result folders
  (16 values a line);
* the images root of each GT (the folder its ``file_path`` values resolve in), and ``depth`` / ``points`` folders of
  files named by image id.

Runs are assigned to the dataset whose GT holds their image ids. Every choice that is a guess says so in a comment;
files it could not use are listed at the end. It never overwrites a file without ``--force``, and the text it
writes is checked with ``load_config`` before it is written.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ov3d_core.errors import InputError
from ov3d_core.io._validate import read_bytes
from ov3d_core.io.config import known_template_ids, parse_config
from ov3d_core.io.jsontext import parse_json
from ov3d_core.io.kitti import KITTI_TYPES
from ov3d_core.io.predictions import _read_pth
from ov3d_core.io.yaml_safe import Kind, load_yaml_bytes

SKIP_DIRS = {".ov3d_cache", "__pycache__", "node_modules", ".git"}
MAX_DEPTH = 8
MAX_FILES = 200_000
CATEGORY_FILES = ("category_list.txt", "categories.txt", "thing_classes.txt", "class_names.txt")
DEPTH_DIRS = ("depth", "depths", "depth_maps")
POINT_DIRS = ("points", "pointclouds", "point_clouds", "pcd", "lidar")
DEPTH_EXTS = (".png", ".npz", ".npy", ".tif", ".tiff")
POINT_EXTS = (".ply", ".pcd")
IMAGE_EXTS = (".jpg", ".jpeg", ".png")
#: Folder names that say nothing about which method a run file belongs to.
GENERIC_DIRS = {"inference", "iter_final", "final", "results", "result", "output", "outputs", "preds",
                "predictions", "runs", "data", "exps", "eval", "evaluation", "test"}
GENERIC_STEMS = {"gt", "annotations", "test", "val", "labels", "ground_truth", "groundtruth"}
#: Environment of the Omni3D / OV3D-Bench sources, by name prefix (Objectron is left unguessed: it is both).
ENVIRONMENT_OF = (("SUNRGBD", "indoor"), ("ARKitScenes", "indoor"), ("Hypersim", "indoor"), ("ScanNet", "indoor"),
                  ("KITTI", "outdoor"), ("nuScenes", "outdoor"), ("Argoverse", "outdoor"), ("AV2", "outdoor"),
                  ("Waymo", "outdoor"))


@dataclass
class FoundDataset:
    name: str
    gt: Path
    kind: str                      # "omni3d" | "kitti"
    image_ids: frozenset
    notes: list[str] = field(default_factory=list)
    name_note: str = ""
    images: Path | None = None
    calib: Path | None = None
    environment: str | None = None
    depth: str | None = None       # pattern relative to the config's folder
    points: str | None = None
    summary: str = ""


@dataclass
class FoundRun:
    path: Path
    format: str
    image_ids: frozenset
    summary: str
    format_note: str = ""
    name: str = ""
    dataset: FoundDataset | None = None
    dataset_note: str = ""
    category_list: tuple[str, ...] | None = None
    category_note: str = ""
    crops: Path | None = None
    disabled: str = ""             # why the run is written commented out
    name_note: str = "guessed from the file or folder name"
    template: str | None = None    # the prompt template of a per-template file (<run>__<dataset>__<template>)
    per_template: dict[str, Path] = field(default_factory=dict)  # a prompt-conditioned run: template -> file


@dataclass
class Scan:
    folder: Path
    datasets: list[FoundDataset] = field(default_factory=list)
    runs: list[FoundRun] = field(default_factory=list)
    skipped: list[tuple[Path, str]] = field(default_factory=list)
    truncated: bool = False


# ------------------------------------------------------------------------------------------------- scanning
def _walk(folder: Path) -> tuple[list[Path], list[Path], bool]:
    files: list[Path] = []
    dirs: list[Path] = []
    for root, subdirs, names in os.walk(folder):
        r = Path(root)
        depth = len(r.relative_to(folder).parts)
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and d not in SKIP_DIRS
                            and depth < MAX_DEPTH)
        dirs.extend(r / d for d in subdirs)
        for n in sorted(names):
            if not n.startswith("."):
                files.append(r / n)
                if len(files) >= MAX_FILES:
                    return files, dirs, True
    return files, dirs, False


def _n(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _first_char(p: Path) -> str:
    with open(p, "rb") as fh:
        head = fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head[:1].decode("latin-1")


def _int_ids(values) -> frozenset | None:
    ids = set()
    for v in values:
        if not isinstance(v, int) or isinstance(v, bool):
            return None
        ids.add(v)
    return frozenset(ids)


def _read_json_file(p: Path):
    try:
        return parse_json(str(p), read_bytes(p)), None
    except InputError as exc:
        return None, str(exc).split(": ", 1)[-1]
    except RecursionError:
        return None, "JSON nested too deeply to read"
    except OSError as exc:
        return None, f"unreadable ({exc.strerror or type(exc).__name__})"


def _classify_json(p: Path, scan: Scan, crops: dict[Path, Path]) -> None:
    if p.name.endswith(".crops.json"):
        crops[p.parent / p.name[: -len(".crops.json")]] = p
        return
    try:
        first = _first_char(p)
    except OSError as exc:
        scan.skipped.append((p, f"unreadable ({exc.strerror or type(exc).__name__})"))
        return
    if first not in "{[":
        scan.skipped.append((p, "not a JSON object or list"))
        return
    doc, err = _read_json_file(p)
    if err:
        scan.skipped.append((p, err))
        return
    if isinstance(doc, dict):
        if all(isinstance(doc.get(k), list) for k in ("images", "categories", "annotations")):
            _add_omni3d_gt(p, doc, scan)
        else:
            scan.skipped.append((p, "a JSON object that is not Omni3D GT (no images / categories / annotations "
                                    "lists)"))
        return
    if not isinstance(doc, list) or not doc:
        scan.skipped.append((p, "an empty JSON list" if isinstance(doc, list) else "not a JSON list"))
        return
    recs = [r for r in doc if isinstance(r, dict)]
    if len(recs) != len(doc) or "image_id" not in recs[0]:
        scan.skipped.append((p, "a JSON list whose records are not prediction objects with `image_id`"))
        return
    if "instances" in recs[0]:
        scan.skipped.append((p, "per-image records with `instances` (2D detections?), not 3D predictions"))
        return
    if not any(k in recs[0] for k in ("bbox3D", "center_cam")):
        scan.skipped.append((p, "records without `bbox3D` or `center_cam`: not 3D predictions"))
        return
    ids = _int_ids(r.get("image_id") for r in recs)
    if ids is None:
        scan.skipped.append((p, "prediction records whose `image_id` are not all integers"))
        return
    if p.name.endswith("_output_results.json"):
        fmt, note = "detany3d-json", "guessed from the file name (DetAny3D writes {dataset}_output_results.json)"
    else:
        fmt, note = "cubercnn-json", "guessed: a flat list of 3D prediction records (Cube R-CNN JSON)"
    scan.runs.append(FoundRun(p, fmt, ids, f"{_n(len(recs), 'prediction')} on {_n(len(ids), 'image')}", note))


def _add_omni3d_gt(p: Path, doc: dict, scan: Scan) -> None:
    images = [im for im in doc["images"] if isinstance(im, dict)]
    ids = _int_ids(im.get("id") for im in images)
    if ids is None:
        scan.skipped.append((p, "Omni3D GT whose image ids are not all integers"))
        return
    info = doc.get("info")
    info = (info[0] if info else {}) if isinstance(info, list) else info
    info_name = info.get("name") if isinstance(info, dict) else None
    if p.stem.lower() not in GENERIC_STEMS:
        name, note = p.stem, "the file name"
    elif isinstance(info_name, str) and info_name.strip():
        name, note = info_name.strip(), "the file's info.name"
    else:
        name, note = p.parent.name or p.stem, "the folder name"
    cats = [c.get("name") for c in doc["categories"] if isinstance(c, dict)]
    ds = FoundDataset(name=name, gt=p, kind="omni3d", image_ids=ids, name_note=note,
                      summary=f"Omni3D GT: {len(images)} images, {len(doc['annotations'])} annotations, "
                              f"{len(cats)} categories")
    ds.images, img_note = _images_root(p, scan.folder, [im.get("file_path") for im in images[:20]])
    ds.notes.append("images: " + img_note)
    scan.datasets.append(ds)


def _images_root(gt: Path, folder: Path, file_paths: list) -> tuple[Path | None, str]:
    """The first folder (the GT's own, its parents up to ``folder``, ``folder/datasets``) in which at least half of
    the GT's first ``file_path`` values exist."""
    paths = [fp for fp in file_paths if isinstance(fp, str) and fp]
    if not paths:
        return None, "the GT's images have no file_path"
    candidates = [gt.parent, *[q for q in gt.parent.parents if q.is_relative_to(folder)], folder / "datasets"]
    for root in dict.fromkeys(candidates):
        hits = sum((root / fp).is_file() for fp in paths)
        if hits * 2 >= len(paths):
            return root, f"guessed: {hits} of the first {len(paths)} image file_path values exist under it"
    return None, "none of the GT's first image file_path values exist under its folder or the folders above it; " \
                 "set `images` to the folder they are relative to"


def _kitti_txt_fields(folder: Path) -> tuple[int, list[Path]] | None:
    """Values per line of the first non-empty line in a folder of digit-named .txt files (None if not such)."""
    txts = sorted(f for f in folder.glob("*.txt") if f.stem.isascii() and f.stem.isdigit())
    if not txts:
        return None
    for f in txts[:50]:
        try:
            with open(f, encoding="utf-8", errors="replace") as fh:
                for line in fh:
                    parts = line.split()
                    if parts:
                        return (len(parts), txts) if parts[0] in KITTI_TYPES else None
        except OSError:
            return None
    return 0, txts  # every file empty: result files of a method that found nothing


def _classify_dir(d: Path, scan: Scan) -> None:
    found = _kitti_txt_fields(d)
    if found is None:
        return
    n, txts = found
    ids = frozenset(int(f.stem) for f in txts)
    if n == 15 or (d.name == "label_2" and n != 16):
        calib = d.parent / "calib"
        image_dir = d.parent / "image_2"
        ds = FoundDataset(name=_kitti_name(d, scan.folder), gt=d, kind="kitti", image_ids=ids,
                          name_note="the folder name", summary=f"KITTI label_2: {len(txts)} label files")
        ds.calib = calib if calib.is_dir() else None
        if ds.calib is None:
            ds.notes.append("calib: no `calib` folder beside label_2 (required for KITTI; add it)")
        ds.images = image_dir if image_dir.is_dir() else None
        ds.notes.append("images: the image_2 folder beside it" if ds.images else "images: no image_2 folder beside "
                        "label_2 (image sizes default to 1242x375)")
        ds.environment = "outdoor"
        scan.datasets.append(ds)
    elif n in (16, 0):
        scan.runs.append(FoundRun(d, "kitti", ids, f"KITTI results: {len(txts)} result files",
                                  "guessed: digit-named .txt files with 16 values a line (KITTI results)"))


def _kitti_name(label_dir: Path, folder: Path) -> str:
    for q in [label_dir.parent, *label_dir.parent.parents]:
        if q.name.lower() not in {"training", "testing", "train", "test", "val", "object", ""} or q == folder:
            return q.name or "KITTI"
    return "KITTI"


def _classify_pth(p: Path, scan: Scan) -> None:
    try:
        cols, meta = _read_pth(p)
        recs = [cols.record(i) for i in range(len(cols))]
    except InputError as exc:
        scan.skipped.append((p, str(exc).split(": ", 1)[-1]))
        return
    ids = _int_ids(r.get("image_id") for r in recs)
    if ids is None:
        scan.skipped.append((p, "a .pth whose image ids are not all integers"))
        return
    run = FoundRun(p, "cubercnn-pth", ids, f"{_n(len(recs), 'prediction')} on "
                   f"{_n(meta.get('n_records', len(ids)), 'image record')}",
                   "a list of per-image records with instances (Cube R-CNN .pth)")
    if recs and all(isinstance(r.get("category_name"), str) for r in recs):
        run.category_note = "the records carry category_name: no category_list needed"
    else:
        for q in (p.parent, p.parent.parent):
            for name in CATEGORY_FILES:
                f = q / name
                if f.is_file():
                    try:
                        names = tuple(ln.strip() for ln in f.read_text(encoding="utf-8").splitlines() if ln.strip())
                    except (OSError, UnicodeDecodeError):
                        continue
                    if names:
                        run.category_list = names
                        run.category_note = f"read from {f.name} ({len(names)} names)"
                        break
            if run.category_list:
                break
        if run.category_list is None:
            run.disabled = ("it needs `category_list`, the model's training classes in contiguous-id order, and no "
                            f"{' / '.join(CATEGORY_FILES)} is beside it (Cube R-CNN trained on Omni3D: the 50 "
                            "Omni3D categories sorted by id)")
    scan.runs.append(run)


def _environment(name: str) -> str | None:
    low = name.lower()
    for prefix, env in ENVIRONMENT_OF:
        if low.startswith(prefix.lower()):
            return env
    words = set(re.split(r"[^a-z]+", low))
    if "indoor" in words and "outdoor" not in words:
        return "indoor"
    if "outdoor" in words and "indoor" not in words:
        return "outdoor"
    return None


def _asset_pattern(ds: FoundDataset, dirs: list[Path], names: tuple[str, ...], exts: tuple[str, ...],
                   out_dir: Path) -> tuple[str | None, str]:
    """A ``{image_id}`` pattern for the first folder named like ``names`` near the dataset whose files are named by
    its image ids (optionally zero-padded)."""
    near = [ds.gt.parent] + ([ds.images] if ds.images else [])
    for d in dirs:
        if d.name.lower() not in names or not any(d.parent == q or d.parent.parent == q for q in near):
            continue
        by_ext: dict[str, list[str]] = {}
        for f in d.iterdir():
            if f.suffix.lower() in exts and f.stem.isascii() and f.stem.isdigit() and int(f.stem) in ds.image_ids:
                by_ext.setdefault(f.suffix, []).append(f.stem)
        if not by_ext:
            continue
        ext, stems = max(by_ext.items(), key=lambda kv: len(kv[1]))
        widths = {len(s) for s in stems}
        padded = len(widths) == 1 and any(s.startswith("0") for s in stems)
        field_text = f"{{image_id:0{widths.pop()}d}}" if padded else "{image_id}"
        return (_rel(d, out_dir) + "/" + field_text + ext,
                f"guessed: {len(stems)} of {len(ds.image_ids)} images have a {ext} file in {d.name}/")
    return None, ""


#: Prediction file stems that say nothing about the method (every Cube R-CNN output is omni_instances_results.json).
GENERIC_RUN_STEMS = ("omni_instances_results", "instances_predictions", "data")


def run_name(path: str | os.PathLike, *, fmt: str = "auto", dataset: str | None = None,
             datasets: Iterable[str] = ()) -> str:
    """THE naming rule of a run (``ov3d init``, the app's folder scan and its upload form all use it): for a
    prediction file (or a KITTI result folder) at ``path``, of format ``fmt``, on dataset ``dataset`` among
    ``datasets``:

    1. ``<run>__<dataset>.json`` (the demo's files) and ``<run>__<dataset>__<template id>.json`` (one file per prompt
       template of a prompt-conditioned run, :func:`template_of`): ``<run>``;
    2. a file stem that names something (not ``omni_instances_results`` / ``instances_predictions`` / ``data`` /
       ``*_output_results``, not the dataset's name): the stem (``_output_results`` cut from DetAny3D's names);
    3. otherwise the nearest folder above it whose name is neither generic (``GENERIC_DIRS``) nor a dataset's;
    4. otherwise the stem.

    Two runs of one dataset with the same name are told apart by :func:`unique_names` (``name_2``, ...)."""
    path = Path(path)
    stem = path.name if fmt == "kitti" else path.stem
    if "__" in stem:  # <run>__<dataset> (the demo's naming)
        if template_of(path, fmt=fmt, dataset=dataset) is not None:
            stem = stem.rsplit("__", 1)[0]
        head, tail = stem.rsplit("__", 1) if "__" in stem else (stem, "")
        if dataset is not None and tail == dataset and head:
            return head
    if fmt == "detany3d-json" or (fmt == "auto" and stem.endswith("_output_results")):
        stem = stem[: -len("_output_results")] if stem.endswith("_output_results") else stem
    generic = stem in GENERIC_RUN_STEMS or stem.endswith("_output_results") or not stem
    if not generic and stem != dataset and fmt != "kitti":
        return stem
    ds_names = {*datasets, *([dataset] if dataset else [])}
    for q in [path.parent if fmt != "kitti" else path, *path.parents]:
        if q.name and q.name.lower() not in GENERIC_DIRS and q.name not in ds_names:
            return q.name
    return stem


def template_of(path: str | os.PathLike, *, fmt: str = "auto", dataset: str | None = None) -> str | None:
    """The prompt template a prediction file is for, when its name says so: ``<run>__<dataset>__<template id>`` with
    a known template id (U1-U5, S1-S5, O1-O5, PB-<type>, ...: ``known_template_ids``) and ``dataset`` the run's
    dataset; else None."""
    path = Path(path)
    stem = path.name if fmt == "kitti" else path.stem
    parts = stem.rsplit("__", 2)
    if len(parts) == 3 and parts[0] and (dataset is None or parts[1] == dataset) and \
            parts[2] in known_template_ids():
        return parts[2]
    return None


def _group_templates(runs: list[FoundRun]) -> list[FoundRun]:
    """One run per (dataset, name) of the per-template files: ``per_template`` in template order (the known ids'
    order), ``path`` the default template's file (S1 when there is one, else the first)."""
    order = {t: i for i, t in enumerate(known_template_ids())}
    out, groups = [], {}
    for r in runs:
        if r.template is None or r.dataset is None:
            out.append(r)
            continue
        key = (r.dataset.name, r.name)
        if key not in groups:
            groups[key] = r
            out.append(r)
        groups[key].per_template[r.template] = r.path
    for r in groups.values():
        r.per_template = dict(sorted(r.per_template.items(), key=lambda kv: order.get(kv[0], len(order))))
        r.path = r.per_template.get("S1", next(iter(r.per_template.values())))
        r.summary = f"{len(r.per_template)} prompt templates (one file each): {r.summary}"
        r.name_note = "guessed from the file names (<run>__<dataset>__<template>)"
    return out


def unique_names(names: Iterable[str]) -> list[str]:
    """``names`` with repeats told apart the one way every route names runs: the second ``x`` becomes ``x_2``, the
    third ``x_3`` (case-sensitive, as run names are)."""
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}_{seen[n]}")
    return out


def _run_name(run: FoundRun, datasets: list[FoundDataset]) -> str:
    return run_name(run.path, fmt=run.format, dataset=run.dataset.name if run.dataset else None,
                    datasets=[d.name for d in datasets])


def _assign(run: FoundRun, datasets: list[FoundDataset]) -> None:
    best, best_hits, ties = None, 0, []
    for ds in datasets:
        hits = len(run.image_ids & ds.image_ids)
        if hits > best_hits:
            best, best_hits, ties = ds, hits, [ds]
        elif hits == best_hits and hits:
            ties.append(ds)
    if best is None:
        run.disabled = run.disabled or "no dataset found here holds its image ids"
        return
    if len(ties) > 1:
        named = [d for d in ties if d.name in str(run.path)]
        best = named[0] if named else ties[0]
        run.dataset_note = (f"guessed: {len(ties)} datasets hold its image ids; "
                            + ("this one is named in its path" if named else "check"))
    else:
        run.dataset_note = f"guessed: {best_hits} of its {len(run.image_ids)} image ids are in this dataset"
    if best_hits < len(run.image_ids):
        run.dataset_note += f" ({len(run.image_ids) - best_hits} are not: check)"
    run.dataset = best


def scan_folder(folder: str | Path, out_dir: str | Path | None = None, *,
                run_names: Mapping[str | os.PathLike, str] | None = None) -> Scan:
    """Find GT, predictions, crops, images, depth and point folders under ``folder`` (paths in the result's
    patterns are relative to ``out_dir``, default ``folder``). Runs are named by :func:`run_name`, except those
    whose file ``run_names`` names (path relative to ``folder``, or absolute: the name given, e.g. on upload)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(str(folder), None, None, "an existing folder to look at", "no such folder")
    folder = folder.resolve()
    out_dir = folder if out_dir is None else Path(out_dir).resolve()
    scan = Scan(folder)
    files, dirs, scan.truncated = _walk(folder)
    crops: dict[Path, Path] = {}
    for p in files:
        ext = p.suffix.lower()
        if ext == ".json":
            _classify_json(p, scan, crops)
        elif ext == ".pth":
            _classify_pth(p, scan)
    for d in [folder, *dirs]:
        _classify_dir(d, scan)
    _unique_names(scan.datasets)
    for ds in scan.datasets:
        if ds.environment is None:
            ds.environment = _environment(ds.name)
        if ds.kind == "omni3d":
            ds.depth, note = _asset_pattern(ds, dirs, DEPTH_DIRS, DEPTH_EXTS, out_dir)
            if note:
                ds.notes.append("depth: " + note)
            ds.points, note = _asset_pattern(ds, dirs, POINT_DIRS, POINT_EXTS, out_dir)
            if note:
                ds.notes.append("points: " + note)
    given = {(folder / Path(k)).resolve(): str(v) for k, v in (run_names or {}).items()}
    for run in scan.runs:
        _assign(run, scan.datasets)
        run.name = _run_name(run, scan.datasets)
        run.template = template_of(run.path, fmt=run.format, dataset=run.dataset.name if run.dataset else None)
        if run.path.resolve() in given:
            run.name, run.name_note = given[run.path.resolve()], "as given"
        stem = run.path.parent / (run.path.stem if run.path.is_file() else run.path.name)
        if stem in crops:
            run.crops = crops.pop(stem)
    scan.runs = _group_templates(scan.runs)
    for ds in scan.datasets:
        mine = [r for r in scan.runs if r.dataset is ds]
        for r, name in zip(mine, unique_names(r.name for r in mine)):
            r.name = name
    scan.skipped += [(p, "crop descriptors without a run file of the same name") for p in crops.values()]
    return scan


def _unique_names(datasets: list[FoundDataset]) -> None:
    count: dict[str, int] = {}
    for ds in datasets:
        count[ds.name] = count.get(ds.name, 0) + 1
        if count[ds.name] > 1:
            ds.name = f"{ds.name}_{count[ds.name]}"
            ds.name_note += " (made unique)"


# ------------------------------------------------------------------------------------------------- writing
_PLAIN = re.compile(r"[A-Za-z0-9_./~+(][A-Za-z0-9_./~+() -]*")


def _q(value) -> str:
    """A YAML scalar that reads back as ``value`` (plain when that is safe, JSON-quoted otherwise)."""
    import yaml

    if isinstance(value, str):
        if _PLAIN.fullmatch(value) and not value.endswith(" ") and yaml.safe_load(value) == value:
            return value
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value)


def _flow(values) -> str:
    return "[" + ", ".join(_q(v) for v in values) + "]"


def _rel(p: Path, out_dir: Path) -> str:
    try:
        return Path(os.path.relpath(p, out_dir)).as_posix()
    except ValueError:  # another drive (Windows)
        return p.as_posix()


def _comment(lines: list[str], text: str, prefix: str = "    # ") -> None:
    """``text`` as comment lines (``prefix`` + text) of at most ~110 characters."""
    import textwrap

    lines += [prefix + ln for ln in textwrap.wrap(text, 110 - len(prefix), break_on_hyphens=False)]


def _entry(lines: list[str], pairs: list[tuple[str, str, str]], disabled: bool) -> None:
    """``- key: value  # note`` lines of one list entry (all commented out when ``disabled``)."""
    width = min(max((len(k) + len(v) for k, v, _ in pairs), default=0) + 8, 52)
    for i, (k, v, note) in enumerate(pairs):
        text = f"{'- ' if i == 0 else '  '}{k}: {v}"
        if note:
            text = f"{text:<{width}}# {note}" if len(text) < width else f"{text}  # {note}"
        lines.append(("  # " if disabled else "  ") + text)


def render_yaml(scan: Scan, out_dir: str | Path, *, name: str | None = None, command: str = "ov3d init") -> str:
    """The commented benchmark YAML of a scan (relative paths are relative to ``out_dir``)."""
    out_dir = Path(out_dir).resolve()
    today = _dt.date.today().isoformat()
    where = _rel(scan.folder, out_dir)
    where = "this folder" if where == "." else _q(where)
    lines = [f"# Written by `{command}` on {today}: what it found under {where}, and what it guessed",
             "# (lines marked \"guessed\"). Check those, fill in what is commented out, then run",
             "#   ov3d evaluate --benchmark <this file>",
             "# Every key, its type and default: docs/benchmark_yaml.md.",
             f"name: {_q(name or scan.folder.name or 'benchmark')}",
             "cache_dir: .ov3d_cache                # geometry and load caches (safe to delete)"]
    if scan.truncated:
        lines.append(f"# The scan stopped after {MAX_FILES:,} files: some files may be missing below.")
    lines.append("datasets:")
    if not scan.datasets:
        lines += ["  # No GT found (Omni3D JSON with images / categories / annotations, or a KITTI label_2 folder).",
                  "  # A benchmark needs at least one; fill this in:",
                  "  - name: my_dataset", "    gt: path/to/gt.json"]
    for ds in scan.datasets:
        disabled = ds.kind == "kitti" and ds.calib is None
        lines.append(f"  # {_rel(ds.gt, out_dir)}: {ds.summary}")
        pairs = [("name", _q(ds.name), f"from {ds.name_note}"), ("gt", _q(_rel(ds.gt, out_dir)), "")]
        if ds.kind == "kitti":
            pairs.append(("format", "kitti", "a label_2 folder"))
            if ds.calib is not None:
                pairs.append(("calib", _q(_rel(ds.calib, out_dir)), "the calib folder beside label_2"))
        notes = {n.split(": ", 1)[0]: n.split(": ", 1)[1] for n in ds.notes if ": " in n}
        if ds.images is not None:
            pairs.append(("images", _q(_rel(ds.images, out_dir)), notes.get("images", "")))
        if ds.environment:
            pairs.append(("environment", ds.environment, "guessed from the name"))
        if ds.depth:
            pairs.append(("depth", _q(ds.depth), notes.get("depth", "")))
        if ds.points:
            pairs.append(("points", _q(ds.points), notes.get("points", "")))
        _entry(lines, pairs, disabled)
        if ds.images is None and "images" in notes:
            _comment(lines, "images: " + notes["images"])
        if not ds.environment:
            lines.append("    # environment: indoor        # or outdoor: not guessed from the name; domain-transfer "
                         "tables need it")
        if disabled:
            _comment(lines, f"^ commented out: {notes.get('calib', 'no calib folder')}")
    lines.append("runs:")
    if not scan.runs:
        lines.append("  # No prediction files found (Cube R-CNN / DetAny3D JSON, .pth, KITTI result folders).")
    for run in scan.runs:
        disabled = bool(run.disabled) or run.dataset is None
        lines.append(f"  # {_rel(run.path, out_dir)}: {run.summary}")
        pairs = [("name", _q(run.name), run.name_note),
                 ("dataset", _q(run.dataset.name) if run.dataset else "?", run.dataset_note),
                 ("predictions", _q(_rel(run.path, out_dir)), ""), ("format", run.format, run.format_note)]
        if run.category_list is not None:
            pairs.append(("category_list", _flow(run.category_list), run.category_note))
        if run.crops is not None:
            pairs.append(("crops", _q(_rel(run.crops, out_dir)), "crop descriptors beside the run file"))
        if run.per_template:
            default = next(t for t, f in run.per_template.items() if f == run.path)
            pairs.append(("default_template", _q(default), "its file is `predictions`"))
        _entry(lines, pairs, disabled)
        if run.per_template:
            lines.append(("  # " if disabled else "  ") + "  per_template:                      # one prediction file "
                         "per prompt template (a prompt-conditioned run)")
            lines += [("  # " if disabled else "  ") + f"    {_q(t)}: {_q(_rel(f, out_dir))}"
                      for t, f in run.per_template.items()]
        if run.category_note and run.category_list is None:
            _comment(lines, run.category_note)
        if run.disabled:
            _comment(lines, f"^ commented out: {run.disabled}")
            if "category_list" in run.disabled:
                lines.append("    # category_list: [name_of_id_0, name_of_id_1, ...]")
        elif run.dataset is None:
            lines.append("    # ^ commented out: no dataset found here holds its image ids")
        lines.append("    # trained_on: [...]          # datasets this method was trained on (in-domain)")
    if scan.skipped:
        lines += ["", "# Not used (listed so that nothing is left out silently):"]
        for p, why in scan.skipped:
            _comment(lines, f"{_rel(p, out_dir)}: {why}", prefix="#   ")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------- command
def register(sub) -> None:
    p = sub.add_parser("init", help="write a commented benchmark.yaml for a folder of GT and prediction files",
                       description="Look at FOLDER (Omni3D GT JSON, Cube R-CNN / DetAny3D predictions, .pth, KITTI "
                                   "label_2 and result folders, images, depth and point-cloud folders) and write a "
                                   "commented benchmark.yaml listing what was found and what was guessed.")
    p.add_argument("folder", help="the folder to look at (searched recursively)")
    p.add_argument("--out", help="the YAML to write (default: FOLDER/benchmark.yaml)")
    p.add_argument("--name", help="benchmark name (default: the folder's name)")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.set_defaults(func=run)


def run(args) -> int:
    folder = Path(args.folder)
    out = Path(args.out) if args.out else folder / "benchmark.yaml"
    if out.exists() and not out.is_file():
        raise InputError(str(out), None, None, "a file to write the benchmark YAML to", Kind("a folder"))
    if out.exists() and not args.force:
        raise InputError(str(out), None, None, "a file that does not exist yet (pass --force to overwrite it)",
                         Kind("an existing file"))
    scan = scan_folder(folder, out.parent if out.parent.exists() else None)
    text = render_yaml(scan, out.parent if out.parent.exists() else folder, name=args.name)
    # What we write must load: parse it as load_config would, before touching the disk.
    parse_config(load_yaml_bytes(text.encode("utf-8"), file=str(out)), file=str(out), base=out.parent, path=out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(str(out), None, None, f"a writable path ({exc.strerror or exc})") from None
    active = [r for r in scan.runs if not r.disabled and r.dataset is not None]
    print(f"wrote {out}: {len(scan.datasets)} dataset(s), {len(active)} run(s)"
          + (f", {len(scan.runs) - len(active)} run(s) commented out" if len(active) < len(scan.runs) else "")
          + (f", {len(scan.skipped)} file(s) not used (listed at the end)" if scan.skipped else ""))
    return 0
