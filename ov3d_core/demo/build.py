"""Build the demo benchmark: scenes -> renders -> GT -> simulated runs -> crops -> files, config and manifest.

Layout of the output folder (``data/demo`` by default)::

    benchmark.yaml                      the benchmark config the app and the CLI read (ov3d_core.config)
    manifest.json                       seed, generator version, counts, sha256 of every GT and prediction file
    indoor/gt.json                      Omni3D GT JSON per dataset (outdoor/, outdoor_av/ likewise)
    indoor/images/<image_id>.jpg        rendered RGB (JPEG)
    indoor/depth/<image_id>.png         depth, 16-bit PNG in millimetres (0 = none); indoor only
    indoor/points/<image_id>.ply        point cloud in the camera frame (indoor: from depth; outdoor: LiDAR scan)
    runs/<run>__<dataset>.json          Cube R-CNN flat predictions (omni_instances_results.json format)
    runs/<run>__<dataset>.pth           Cube R-CNN per-image records (instances_predictions.pth format)
    runs/<run>__<dataset>.crops.json    crop descriptors aligned with the prediction records

Everything depends only on (seed, dataset, image index): each image draws from its own
``PCG64(SeedSequence([seed, dataset stream, image index, purpose]))`` stream, so a build with fewer images is a prefix
of a bigger one and the same seed gives the same bytes. JSON is written with sorted keys and fixed rounding.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import numpy as np

from ov3d_core.demo import detectors as D
from ov3d_core.demo.annotate import annotate
from ov3d_core.demo.crops import describe
from ov3d_core.demo.scenes import DATASETS, DatasetSpec, make_scene, scene_rng
from ov3d_core.demo.shapes import build_shape
from ov3d_core.taxonomy import super_category

#: Bump whenever the output changes (ensure_demo rebuilds on a mismatch).
GENERATOR_VERSION = "1.0.0"
DEFAULT_IMAGES = 150
MAX_IMAGES = 99_999
JPEG_QUALITY = 82

Progress = Callable[[float, str], None]


def _dumps(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def typical_dims(seed: int = 0) -> dict[str, np.ndarray]:
    """Box dimensions of one representative instance per category name (for hallucinated boxes)."""
    out: dict[str, np.ndarray] = {}
    rng = np.random.Generator(np.random.PCG64(np.random.SeedSequence([int(seed), 99])))
    for spec in DATASETS:
        for kind, cat in spec.taxonomy.items():
            if cat is not None and cat not in out:
                out[cat] = build_shape(kind, rng).dims
    return out


def run_file_name(run: D.ErrorProfile, spec: DatasetSpec) -> str:
    return f"{run.name}__{spec.name}" + (".pth" if run.format == "cubercnn-pth" else ".json")


def process_image(spec: DatasetSpec, index: int, seed: int, *, render_images: bool, out: Path | None,
                  dims_table: dict) -> dict:
    """Everything for one image: image record, annotations, and per-run predictions with crop descriptors."""
    scene = make_scene(spec, index, seed)
    image_id = scene.image_id
    rend = None
    if render_images:
        from ov3d_core.demo import render as R

        rend = R.render(scene)
        folder = out / spec.folder
        R.save_rgb(folder / "images" / f"{image_id}.jpg", rend.rgb, JPEG_QUALITY)
        if spec.environment == "indoor":
            R.save_depth(folder / "depth" / f"{image_id}.png", rend.depth)
        R.save_points(folder / "points" / f"{image_id}.ply", rend.points)
    anns, gts = annotate(scene, rend)
    image = {"id": int(image_id), "dataset_id": spec.dataset_id, "width": spec.width, "height": spec.height,
             "file_path": f"images/{image_id}.jpg", "K": np.round(spec.K, 6).tolist(), "src_90_rotate": 0,
             "src_flagged": False}
    runs = {}
    for k, run in enumerate(D.RUNS):
        rng = scene_rng(seed, spec, index, purpose=10 + k)
        preds = D.simulate(run, scene, gts, rng, dims_table)
        if run.format == "cubercnn-pth":
            ids = [run.closed_vocabulary.index(p.category) for p in preds]
            names = [None] * len(preds)
        else:
            ids = [spec.category_id(p.category) for p in preds]
            names = [p.category for p in preds]
        recs = [D.prediction_record(p, image_id, spec.K, i, n) for p, i, n in zip(preds, ids, names)]
        runs[run.name] = (recs, describe(scene, preds, gts, rend))
    return {"image": image, "annotations": anns, "runs": runs, "kind": scene.kind}


def _gt_document(spec: DatasetSpec, images: list, annotations: list) -> dict:
    return {
        "info": {"id": spec.dataset_id, "name": spec.name, "split": "test", "source": spec.source,
                 "version": GENERATOR_VERSION, "url": ""},
        "images": images,
        "categories": [{"id": spec.category_id(c), "name": c, "supercategory": super_category(c)}
                       for c in spec.vocabulary],
        "annotations": annotations,
    }


def _benchmark_yaml(seed: int, annotations_only: bool) -> str:
    import yaml

    datasets = []
    for spec in DATASETS:
        d = {"name": spec.name, "gt": f"{spec.folder}/gt.json", "images": spec.folder,
             "environment": spec.environment}
        if not annotations_only:
            if spec.environment == "indoor":
                d["depth"] = f"{spec.folder}/depth/{{image_id}}.png"
            d["points"] = f"{spec.folder}/points/{{image_id}}.ply"
        d["subsets"] = {k: list(v) for k, v in spec.subsets.items()}
        datasets.append(d)
    runs = []
    for run in D.RUNS:
        for spec in DATASETS:
            r = {"name": run.name, "dataset": spec.name, "predictions": f"runs/{run_file_name(run, spec)}",
                 "format": run.format}
            if run.format == "cubercnn-pth":
                r["category_list"] = list(run.closed_vocabulary)
            r["trained_on"] = list(run.trained_on)
            if run.closed_vocabulary is not None:
                r["closed_vocabulary"] = list(run.closed_vocabulary)
            r["crops"] = f"runs/{run.name}__{spec.name}.crops.json"
            r["description"] = run.description
            runs.append(r)
    doc = {"name": "OV3D demo benchmark", "generator": {"version": GENERATOR_VERSION, "seed": int(seed)},
           "datasets": datasets, "runs": runs}
    head = ("# Generated by `python -m ov3d_core demo build` (ov3d_core/demo). Do not edit: rebuilt when the\n"
            "# generator version changes. Error profiles of the runs: ov3d_core/demo/detectors.py.\n")
    return head + yaml.safe_dump(doc, sort_keys=False, width=110, allow_unicode=True)


def _process_index(spec, seed, render_images, stage, dims_table, index):
    return process_image(spec, index, seed, render_images=render_images, out=stage, dims_table=dims_table)


def _n_workers(total: int, annotations_only: bool) -> int:
    """Threads for rendering: ray casting and big numpy operations release the GIL, so two threads overlap one
    image's shading with the next one's ray casting. Small or annotations-only builds stay single-threaded."""
    if annotations_only or total < 24:
        return 1
    return max(1, min(2, os.cpu_count() or 1))


def _map(fn, items, workers: int):
    """``map`` in input order, on a thread pool when ``workers`` > 1 (results do not depend on scheduling: every
    image draws from its own random streams)."""
    if workers <= 1:
        yield from map(fn, items)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(workers) as ex:
        yield from ex.map(fn, items)


def build_demo(out: str | os.PathLike, *, images: int = DEFAULT_IMAGES, seed: int = 0,
               annotations_only: bool = False, progress: Progress | None = None,
               workers: int | None = None) -> dict:
    """Generate the benchmark into ``out`` (replacing a previous demo build there); returns the manifest.

    ``workers``: rendering threads (default: 2 on a multi-core machine for full builds, else 1)."""
    out = Path(out)
    images = int(images)
    if not 1 <= images <= MAX_IMAGES:
        raise ValueError(f"images must be in [1, {MAX_IMAGES}], got {images}")
    t0 = time.perf_counter()
    stage = out.parent / f".{out.name}.building-{os.getpid()}"
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    try:
        for spec in DATASETS:
            sub = ["images", "points"] + (["depth"] if spec.environment == "indoor" else [])
            for s in ([] if annotations_only else sub):
                (stage / spec.folder / s).mkdir(parents=True, exist_ok=True)
            (stage / spec.folder).mkdir(parents=True, exist_ok=True)
        (stage / "runs").mkdir()
        dims_table = typical_dims(seed)
        total = images * len(DATASETS)
        workers = _n_workers(total, annotations_only) if workers is None else max(1, int(workers))
        done = 0
        counts: dict = {"images": {}, "annotations": {}, "predictions": {}}
        hashes: dict[str, str] = {}
        for spec in DATASETS:
            imgs, anns = [], []
            run_recs = {r.name: [] for r in D.RUNS}
            run_crops = {r.name: [] for r in D.RUNS}
            work = partial(_process_index, spec, seed, not annotations_only, stage, dims_table)
            for i, res in enumerate(_map(work, range(images), workers)):
                imgs.append(res["image"])
                anns.extend(res["annotations"])
                for name, (recs, crops) in res["runs"].items():
                    if D.RUNS_BY_NAME[name].format == "cubercnn-pth":
                        run_recs[name].append({"image_id": res["image"]["id"], "K": res["image"]["K"],
                                               "width": spec.width, "height": spec.height, "instances": recs})
                    else:
                        run_recs[name].extend(recs)
                    run_crops[name].extend(crops)
                done += 1
                if progress is not None:
                    progress(done / total, f"{spec.name}: image {i + 1}/{images}")
            gt_path = stage / spec.folder / "gt.json"
            gt_path.write_text(_dumps(_gt_document(spec, imgs, anns)), encoding="utf-8")
            hashes[f"{spec.folder}/gt.json"] = _sha256(gt_path)
            counts["images"][spec.name] = len(imgs)
            counts["annotations"][spec.name] = len(anns)
            for run in D.RUNS:
                fname = run_file_name(run, spec)
                path = stage / "runs" / fname
                if run.format == "cubercnn-pth":
                    import torch

                    torch.save(run_recs[run.name], path)
                    n = sum(len(r["instances"]) for r in run_recs[run.name])
                else:
                    path.write_text(_dumps(run_recs[run.name]), encoding="utf-8")
                    n = len(run_recs[run.name])
                crops = [dict(c, record=k) for k, c in enumerate(run_crops[run.name])]
                assert len(crops) == n
                (stage / "runs" / f"{run.name}__{spec.name}.crops.json").write_text(_dumps(crops), encoding="utf-8")
                hashes[f"runs/{fname}"] = _sha256(path)
                counts["predictions"][f"{run.name}__{spec.name}"] = n
        (stage / "benchmark.yaml").write_text(_benchmark_yaml(seed, annotations_only), encoding="utf-8")
        manifest = {
            "generator_version": GENERATOR_VERSION, "seed": int(seed), "images_per_dataset": images,
            "annotations_only": bool(annotations_only), "datasets": [d.name for d in DATASETS],
            "runs": [r.name for r in D.RUNS], "counts": counts, "sha256": hashes,
            "build_seconds": round(time.perf_counter() - t0, 1),
        }
        (stage / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
        _replace(stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    if progress is not None:
        progress(1.0, "done")
    return manifest


def _replace(stage: Path, out: Path) -> None:
    """Move the finished build into place; refuses to delete a folder that is not a demo build."""
    for _ in range(3):  # a concurrent build of the same folder may finish between the two steps
        if out.exists():
            entries = list(out.iterdir())
            if entries and not ((out / "manifest.json").exists() or (out / "benchmark.yaml").exists()):
                raise FileExistsError(f"{out} exists and is not a demo build (no manifest.json); not overwriting it")
            shutil.rmtree(out, ignore_errors=True)
        try:
            stage.rename(out)
            return
        except OSError:
            continue
    raise FileExistsError(f"could not move the new demo build into {out}")


def read_manifest(out: str | os.PathLike) -> dict | None:
    p = Path(out) / "manifest.json"
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def ensure_demo(out: str | os.PathLike, *, images: int | None = None, seed: int = 0,
                progress: Progress | None = None) -> Path:
    """The demo folder ``out``, built first if it is missing, incomplete, from another generator version or seed,
    an annotations-only build, or (when ``images`` is given) of another size. Returns ``out`` (it holds
    ``benchmark.yaml``). ``progress(fraction, message)`` is called while building."""
    out = Path(out)
    m = read_manifest(out)
    ok = (m is not None and m.get("generator_version") == GENERATOR_VERSION and m.get("seed") == int(seed)
          and not m.get("annotations_only") and (images is None or m.get("images_per_dataset") == int(images))
          and (out / "benchmark.yaml").is_file()
          and all((out / rel).is_file() for rel in m.get("sha256", {})))
    if not ok:
        build_demo(out, images=DEFAULT_IMAGES if images is None else images, seed=seed, progress=progress)
    elif progress is not None:
        progress(1.0, "demo benchmark ready")
    return out
