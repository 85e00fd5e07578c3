"""Build the demo benchmark: scenes -> renders -> GT -> simulated runs -> crops -> files, config and manifest.

Layout of the output folder (``data/demo`` by default)::

    benchmark.yaml                      the benchmark config the app and the CLI read (ov3d_core.io.config)
    manifest.json                       seed, generator version, counts, sha256 of every GT, prediction and subset file
    indoor/gt.json                      Omni3D GT JSON per dataset (outdoor/, outdoor_av/ likewise)
    indoor/images/<image_id>.jpg        rendered RGB (JPEG)
    indoor/depth/<image_id>.png         depth, 16-bit PNG in millimetres (0 = none); indoor only
    indoor/points/<image_id>.ply        point cloud in the camera frame (indoor: from depth; outdoor: LiDAR scan)
    runs/<run>__<dataset>.json          Cube R-CNN flat predictions (omni_instances_results.json format)
    runs/<run>__<dataset>.pth           Cube R-CNN per-image records (instances_predictions.pth format)
    runs/<run>__<dataset>.crops.json    crop descriptors aligned with the prediction records
    runs/<run>__<dataset>__<template>.json
                                        a prompt-conditioned run (``promptable``): one Cube R-CNN JSON file per
                                        prompt template (``per_template`` in benchmark.yaml; no crops)
    subsets/runtime__<dataset>.txt      the dataset's ``runtime`` image subset (one image id a line)

Everything depends only on (seed, dataset, image index): each image draws from its own
``ov3d_core.demo.rng.Stream([seed, dataset stream, image index, purpose])`` (the raw words of NumPy's PCG64 bit
generator turned into numbers by transforms written out in that module, so no NumPy release changes the output), so
a build with fewer images is a prefix of a bigger one and the same seed gives the same bytes. JSON is written with
sorted keys and fixed rounding. A run added later draws from purposes of its own (the next ``10 + k``; a
prompt-conditioned run's templates from sub-streams ``[..., purpose, crc32(template id)]``), so the files of the
runs before it keep their bytes.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable
from functools import partial
from itertools import chain
from pathlib import Path

import numpy as np

from ov3d_core.demo import detectors as D
from ov3d_core.demo import jsonfast as J
from ov3d_core.demo.annotate import annotate
from ov3d_core.demo.crops import crop_boxes, describe
from ov3d_core.demo.rng import Stream
from ov3d_core.demo.scenes import DATASETS, DatasetSpec, make_scene, scene_rng
from ov3d_core.demo.shapes import build_shape
from ov3d_core.taxonomy import super_category

#: Bump whenever the output changes (ensure_demo rebuilds on a mismatch). 1.1.0: the prompt-conditioned run
#: ``promptable`` (one file per template), declared runtimes and the image subsets; every 1.0.0 file is unchanged.
GENERATOR_VERSION = "1.1.0"
#: ``info.version`` of the GT files: the version that last changed their content (they are byte-identical since).
GT_VERSION = "1.0.0"
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
    rng = Stream([int(seed), 99])
    for spec in DATASETS:
        for kind, cat in spec.taxonomy.items():
            if cat is not None and cat not in out:
                out[cat] = build_shape(kind, rng, mesh=False).dims
    return out


#: The demo's image subsets (``image_subsets`` in benchmark.yaml), scaled from OV3D-Bench's: the 500-image prompt
#: probe as a seeded rule and the 200-image runtime subset as an id-list file, each capped at the dataset's images.
PROMPT_PROBE_IMAGES = 100  # a proper subset of the default 150 images
RUNTIME_IMAGES = 50
#: Second entropy word of the runtime subset's draw (``Stream([seed, RUNTIME_SUBSET_STREAM, dataset stream])``).
RUNTIME_SUBSET_STREAM = 0x2E7C


def run_file_name(run: D.ErrorProfile, spec: DatasetSpec, template: str | None = None) -> str:
    """``<run>__<dataset>.json`` (``.pth``), or ``<run>__<dataset>__<template>.json`` for one template's file."""
    return (f"{run.name}__{spec.name}" + (f"__{template}" if template is not None else "")
            + (".pth" if run.format == "cubercnn-pth" else ".json"))


def outputs() -> list[tuple[D.ErrorProfile, str | None]]:
    """Every prediction file a dataset gets, in writing order: (run, None) for a run with one file, (run, template)
    per template of a prompt-conditioned run."""
    return [(run, t) for run in D.RUNS for t in (run.templates or (None,))]


def output_key(run: D.ErrorProfile, template: str | None) -> str:
    """The key of one prediction file in an image's results: the run name, or ``<run>__<template>``."""
    return run.name if template is None else f"{run.name}__{template}"


def runtime_subset(spec: DatasetSpec, images: int, seed: int) -> list[int]:
    """The sorted image ids of the dataset's ``runtime`` subset: ``min(RUNTIME_IMAGES, images)`` images drawn by
    ``Stream([seed, RUNTIME_SUBSET_STREAM, dataset stream]).permutation``."""
    n = min(RUNTIME_IMAGES, int(images))
    order = Stream([int(seed), RUNTIME_SUBSET_STREAM, spec.stream]).permutation(int(images))
    return sorted(spec.image_id_base + int(i) for i in order[:n])


def runtime_subset_file(spec: DatasetSpec) -> str:
    return f"subsets/runtime__{spec.name}.txt"


def process_image(spec: DatasetSpec, index: int, seed: int, *, render_images: bool, out: Path | None,
                  dims_table: dict, json_records: bool = False) -> dict:
    """Everything for one image: image record, annotations, and per-run predictions with crop descriptors
    (``json_records``: the annotation, JSON-file prediction and crop records as their JSON texts instead of
    dicts)."""
    scene = make_scene(spec, index, seed, mesh=render_images, backdrop=render_images)
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
    anns, gts = annotate(scene, rend, json_records=json_records)
    image = {"id": int(image_id), "dataset_id": spec.dataset_id, "width": spec.width, "height": spec.height,
             "file_path": f"images/{image_id}.jpg", "K": np.round(spec.K, 6).tolist(), "src_90_rotate": 0,
             "src_flagged": False}
    table = D.GTTable(scene, gts)
    K = spec.K
    single = [run for run in D.RUNS if not run.templates]
    all_preds = [D.simulate(run, scene, gts, scene_rng(seed, spec, index, purpose=10 + k), dims_table, table)
                 for k, run in enumerate(D.RUNS) if not run.templates]
    # one projection for the crops of all runs (the projection of a box does not depend on the batch)
    boxes = crop_boxes([p for preds in all_preds for p in preds], K, spec.width, spec.height)
    runs = {}
    start = 0
    for k, run in enumerate(D.RUNS):  # prompt-conditioned runs: one prediction list per template, no crops
        if run.templates:
            purpose = 10 + k
            streams = {t: Stream([int(seed), spec.stream, int(index), purpose, D.template_stream_key(t)])
                       for t in run.templates}
            per_t = D.simulate_prompted(run, scene, gts, scene_rng(seed, spec, index, purpose=purpose), streams,
                                        dims_table, table)
            # the records of every template in one call (a record does not depend on the batch), then split
            preds = [p for t in run.templates for p in per_t[t]]
            ids = [spec.category_id(p.category) for p in preds]
            recs = (D.prediction_json if json_records else D.prediction_records)(
                preds, image_id, K, ids, [p.category for p in preds])
            start_t = 0
            for t in run.templates:
                n_t = len(per_t[t])
                runs[output_key(run, t)] = (recs[start_t:start_t + n_t], None)
                start_t += n_t
    for run, preds in zip(single, all_preds):
        if run.format == "cubercnn-pth":
            ids = [run.closed_vocabulary.index(p.category) for p in preds]
            names = [None] * len(preds)
        else:
            ids = [spec.category_id(p.category) for p in preds]
            names = [p.category for p in preds]
        as_json = json_records and run.format != "cubercnn-pth"  # .pth records stay objects (see _canonical)
        recs = (D.prediction_json if as_json else D.prediction_records)(preds, image_id, K, ids, names)
        runs[run.name] = (recs, describe(scene, preds, gts, rend, boxes[start:start + len(preds)], json_records))
        start += len(preds)
    return {"image": image, "annotations": anns, "runs": runs, "kind": scene.kind}


def _gt_document(spec: DatasetSpec, images: list, annotations: list) -> dict:
    return {
        "info": {"id": spec.dataset_id, "name": spec.name, "split": "test", "source": spec.source,
                 "version": GT_VERSION, "url": ""},
        "images": images,
        "categories": [{"id": spec.category_id(c), "name": c, "supercategory": super_category(c)}
                       for c in spec.vocabulary],
        "annotations": annotations,
    }


def _runtime_entry(run: D.ErrorProfile, images: int) -> dict:
    """The run's ``runtime:`` entry: its declared (synthetic) ms per image, timed on the runtime subset."""
    return {**run.runtime, "device": "H100 NVL (simulated)", "images": min(RUNTIME_IMAGES, int(images)),
            "source": "demo (synthetic)"}


def _benchmark_yaml(seed: int, annotations_only: bool, images: int = DEFAULT_IMAGES) -> str:
    import re

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
        d["image_subsets"] = {"prompt_probe": {"rule": "random", "n": min(PROMPT_PROBE_IMAGES, int(images)),
                                               "seed": int(seed)},
                              "runtime": runtime_subset_file(spec)}
        datasets.append(d)
    runs = []
    for run in D.RUNS:
        for spec in DATASETS:
            if run.templates:  # prompt-conditioned: one file per template, the default one is the run's file
                r = {"name": run.name, "dataset": spec.name, "format": run.format,
                     "per_template": {t: f"runs/{run_file_name(run, spec, t)}" for t in run.templates},
                     "default_template": run.default_template, "trained_on": list(run.trained_on),
                     "description": run.description}
                if run.runtime:
                    r["runtime"] = _runtime_entry(run, images)
                runs.append(r)
                continue
            r = {"name": run.name, "dataset": spec.name, "predictions": f"runs/{run_file_name(run, spec)}",
                 "format": run.format}
            if run.format == "cubercnn-pth":
                r["category_list"] = list(run.closed_vocabulary)
            r["trained_on"] = list(run.trained_on)
            if run.closed_vocabulary is not None:
                r["closed_vocabulary"] = list(run.closed_vocabulary)
            r["crops"] = f"runs/{run.name}__{spec.name}.crops.json"
            r["description"] = run.description
            if run.runtime:
                r["runtime"] = _runtime_entry(run, images)
            runs.append(r)
    doc = {"name": "OV3D demo benchmark", "generator": {"version": GENERATOR_VERSION, "seed": int(seed)},
           "datasets": datasets, "runs": runs}
    class _Dumper(yaml.SafeDumper):  # lists of names in flow style: [chair, table, ...]
        pass

    def _list(dumper, data):
        flow = all(isinstance(v, (str, int, float)) for v in data)
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)

    _Dumper.add_representer(list, _list)
    head = ("# Generated by `python -m ov3d_core demo build` (ov3d_core/demo). Do not edit: rebuilt when the\n"
            "# generator version changes. Error profiles of the runs: ov3d_core/demo/detectors.py. Runtimes are\n"
            "# synthetic (source: demo (synthetic)), in the range of OV3D-Bench's Table 10.\n")
    text = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=110, allow_unicode=True)
    probe = (f"  # OV3D-Bench's 500-image prompt probe, scaled: {PROMPT_PROBE_IMAGES} seeded images (a proper "
             f"subset of the default {DEFAULT_IMAGES}), at most the dataset's {int(images)}")
    runtime = f"  # the 200-image runtime subset, scaled: {min(RUNTIME_IMAGES, int(images))} ids (runs' runtime.images)"
    text = re.sub(r"(?m)^(\s+prompt_probe:)$", lambda m: m.group(1) + probe, text)
    text = re.sub(r"(?m)^(\s+runtime: subsets/\S+)$", lambda m: m.group(1) + runtime, text)
    return head + text


def _serialized(spec: DatasetSpec, res: dict) -> dict:
    """One image's results (``process_image(..., json_records=True)``) as JSON fragments (so workers, not the parent,
    pay for serialisation): the text ``_dumps`` writes, built by ``ov3d_core.demo.jsonfast``. The per-image record of
    a ``.pth`` run stays a (sorted-key) object."""
    runs = {}
    image = res["image"]
    for run, template in outputs():
        key = output_key(run, template)
        recs, crops = res["runs"][key]
        if run.format == "cubercnn-pth":  # an object for torch.save, keys in sorted order (see _canonical)
            body = {"K": image["K"], "height": int(spec.height), "image_id": int(image["id"]),
                    "instances": [{k: r[k] for k in sorted(r)} for r in recs], "width": int(spec.width)}
        else:
            body = ",".join(recs)
        # crop records get their running "record" index (the last key in sorted order) in the parent
        runs[key] = (body, len(recs), None if crops is None else
                     ",".join(c if type(c) is str else J.crop_json(c) for c in crops))
    return {"image": _dumps(image),
            "anns": ",".join(a if type(a) is str else J.annotation_json(a) for a in res["annotations"]),
            "n_anns": len(res["annotations"]), "runs": runs}


def _process_chunk(seed: int, render_images: bool, stage, dims_table, task) -> list[dict]:
    spec_index, indices = task
    spec = DATASETS[spec_index]
    return [_serialized(spec, process_image(spec, i, seed, render_images=render_images, out=stage,
                                            dims_table=dims_table, json_records=True)) for i in indices]


def _worker_init(parent: int | None = None) -> None:
    """Process workers: the generator allocates millions of short-lived acyclic objects, so rarer cyclic-GC passes
    save a few percent (workers only: the parent's settings are left alone). A worker also exits when the build's
    process is gone (killed, or its server stopped), instead of idling on as an orphan."""
    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], 20_000), *threshold[1:])
    if parent is not None:
        import threading

        threading.Thread(target=_exit_without, args=(parent,), name="ov3d-parent-watch", daemon=True).start()


def _exit_without(parent: int) -> None:
    while True:
        time.sleep(2.0)
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            os._exit(1)
        except PermissionError:  # alive (owned by another user after a pid reuse: cannot be ours, but harmless)
            pass


def _canonical(bodies: list[dict]) -> list[dict]:
    """The per-image records of a ``.pth`` run as the objects ``json.loads(_dumps(bodies))`` builds, so the pickle
    bytes do not depend on whether the records were built here or came back from worker processes (pickle writes a
    shared object once and then refers to it): one string object per distinct key. ``bodies``: dicts with sorted
    keys, holding numbers and lists of numbers that no two places share (as ``ndarray.tolist`` makes them); floats
    and ints are never shared in a pickle."""
    keys: dict[str, str] = {}
    key = keys.setdefault
    return [{key(k, k): ([{key(kk, kk): vv for kk, vv in r.items()} for r in v] if k == "instances" else v)
             for k, v in b.items()} for b in bodies]


class _DatasetWriter:
    """Streams one dataset's GT, prediction and crop files as image results arrive (in image order)."""

    def __init__(self, stage: Path, spec: DatasetSpec):
        self.spec = spec
        self.gt_path = stage / spec.folder / "gt.json"
        outs = outputs()
        self.files = {output_key(r, t): stage / "runs" / run_file_name(r, spec, t) for r, t in outs}
        self.gt = open(self.gt_path, "w", encoding="utf-8")
        self.writers = {output_key(r, t): open(self.files[output_key(r, t)], "w", encoding="utf-8") for r, t in outs
                        if r.format != "cubercnn-pth"}
        self.crops = {r.name: open(stage / "runs" / f"{r.name}__{spec.name}.crops.json", "w", encoding="utf-8")
                      for r, t in outs if t is None}
        self.pth: dict[str, list[dict]] = {r.name: [] for r, t in outs if r.format == "cubercnn-pth"}
        self.n_pred = {output_key(r, t): 0 for r, t in outs}
        self.images: list[str] = []
        self.n_anns = 0
        self.gt.write('{"annotations":[')
        for w in self._all():
            w.write("[")

    def _all(self):
        return list(self.writers.values()) + list(self.crops.values())

    def add(self, res: dict) -> None:
        self.images.append(res["image"])
        if res["n_anns"]:
            self.gt.write(("," if self.n_anns else "") + res["anns"])
            self.n_anns += res["n_anns"]
        for name, (body, n, crops) in res["runs"].items():
            start = self.n_pred[name]
            if name in self.pth:
                self.pth[name].append(body)
            elif n:
                self.writers[name].write(("," if start else "") + body)
            if n and crops is not None:  # fill in the running record indices
                parts = crops.split(J.RECORD)
                filled = "".join(chain.from_iterable(zip(parts, map(str, range(start, start + n))))) + parts[-1]
                self.crops[name].write(("," if start else "") + filled)
            self.n_pred[name] = start + n

    def close(self, hashes: dict, counts: dict) -> None:
        doc = _gt_document(self.spec, [], [])
        self.gt.write(f'],"categories":{_dumps(doc["categories"])},"images":[' + ",".join(self.images)
                      + f'],"info":{_dumps(doc["info"])}}}')
        for w in self._all():
            w.write("]")
        self.abort()
        for name, bodies in self.pth.items():
            import torch

            torch.save(_canonical(bodies), self.files[name])
        spec = self.spec
        hashes[f"{spec.folder}/gt.json"] = _sha256(self.gt_path)
        counts["images"][spec.name] = len(self.images)
        counts["annotations"][spec.name] = self.n_anns
        for run, t in outputs():
            name = run_file_name(run, spec, t)
            hashes[f"runs/{name}"] = _sha256(self.files[output_key(run, t)])
            counts["predictions"][name.rsplit(".", 1)[0]] = self.n_pred[output_key(run, t)]

    def abort(self) -> None:
        for w in [self.gt] + self._all():
            w.close()


def _cpus() -> int:
    """CPUs this process may use (its affinity mask, e.g. a container's limit), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _plan(total: int, annotations_only: bool, workers: int | None) -> tuple[str, int, int]:
    """(pool kind, workers, images per task). Both kinds of build use worker processes when there is more than one
    CPU and the build is big enough to pay for starting them: scene building, shading and annotation are Python
    that holds the GIL, so threads overlap little of it. Rendering workers start from a fresh server process
    (``forkserver``), so a parent that already runs threads (the app's server) is never forked."""
    cpus = _cpus()
    if annotations_only:
        n = (2 if total >= 600 and cpus >= 2 else 1) if workers is None else max(1, int(workers))
        return ("process" if n > 1 else "serial"), n, 50
    n = (min(cpus, 8) if total >= 24 and cpus >= 2 else 1) if workers is None else max(1, int(workers))
    return ("render-process" if n > 1 else "serial"), n, 1


def _chunks(images: int, size: int) -> list[range]:
    return [range(a, min(a + size, images)) for a in range(0, images, size)]


def _run_tasks(kind: str, n: int, fn, tasks: list):
    """Results of ``fn(task)`` in task order (scheduling never changes the output: every image draws from its
    own random streams)."""
    if kind == "serial":
        yield from map(fn, tasks)
        return
    from concurrent import futures

    import multiprocessing as mp

    methods = mp.get_all_start_methods()
    if kind == "render-process":
        method = "forkserver" if "forkserver" in methods else "spawn"
    else:
        method = "fork" if "fork" in methods else "spawn"
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(["ov3d_core.demo.build"])
    ex = futures.ProcessPoolExecutor(n, mp_context=ctx, initializer=_worker_init, initargs=(os.getpid(),))
    with ex:
        yield from ex.map(fn, tasks)


def build_demo(out: str | os.PathLike, *, images: int = DEFAULT_IMAGES, seed: int = 0,
               annotations_only: bool = False, progress: Progress | None = None,
               workers: int | None = None) -> dict:
    """Generate the benchmark into ``out`` (replacing a previous demo build there); returns the manifest.

    ``workers``: parallel worker processes (default: one per CPU, at most 8, for rendered builds big enough to pay
    off; 2 for big annotations-only builds; else 1). The output does not depend on it."""
    out = Path(out)
    images = int(images)
    if not 1 <= images <= MAX_IMAGES:
        raise ValueError(f"images must be in [1, {MAX_IMAGES}], got {images}")
    t0 = time.perf_counter()
    stage = out.parent / f".{out.name}.building-{os.getpid()}"
    _remove_stale_stages(out)
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    try:
        for spec in DATASETS:
            (stage / spec.folder).mkdir(parents=True, exist_ok=True)
            if not annotations_only:
                for sub in ["images", "points"] + (["depth"] if spec.environment == "indoor" else []):
                    (stage / spec.folder / sub).mkdir()
        (stage / "runs").mkdir()
        (stage / "subsets").mkdir()
        dims_table = typical_dims(seed)
        total = images * len(DATASETS)
        kind, n_workers, chunk = _plan(total, annotations_only, workers)
        counts: dict = {"images": {}, "annotations": {}, "predictions": {}}
        hashes: dict[str, str] = {}
        tasks = [(si, r) for si in range(len(DATASETS)) for r in _chunks(images, chunk)]
        fn = partial(_process_chunk, seed, not annotations_only, stage, dims_table)
        writer: _DatasetWriter | None = None
        done = 0
        try:
            for (si, rng_), results in zip(tasks, _run_tasks(kind, n_workers, fn, tasks)):
                spec = DATASETS[si]
                if writer is None or writer.spec is not spec:
                    if writer is not None:
                        writer.close(hashes, counts)
                    writer = _DatasetWriter(stage, spec)
                for res in results:
                    writer.add(res)
                done += len(rng_)
                if progress is not None:
                    progress(done / total, f"{spec.name}: image {rng_[-1] + 1}/{images}")
            writer.close(hashes, counts)
            writer = None
        finally:
            if writer is not None:
                writer.abort()
        for spec in DATASETS:
            rel = runtime_subset_file(spec)
            ids = runtime_subset(spec, images, seed)
            (stage / rel).write_text(f"# runtime image subset of {spec.name}: {len(ids)} of its {images} images, "
                                     f"seed {int(seed)} (OV3D-Bench's 200-image runtime subset, scaled)\n"
                                     + "".join(f"{i}\n" for i in ids), encoding="utf-8")
            hashes[rel] = _sha256(stage / rel)
        (stage / "benchmark.yaml").write_text(_benchmark_yaml(seed, annotations_only, images), encoding="utf-8")
        manifest = {
            "generator_version": GENERATOR_VERSION, "seed": int(seed), "images_per_dataset": images,
            "annotations_only": bool(annotations_only), "datasets": [d.name for d in DATASETS],
            "runs": [r.name for r in D.RUNS], "counts": counts, "sha256": hashes,
            "build_seconds": round(time.perf_counter() - t0, 1), "workers": n_workers,
        }
        (stage / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True), encoding="utf-8")
        _replace(stage, out)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    if progress is not None:
        progress(1.0, "done")
    return manifest


def _remove_stale_stages(out: Path) -> None:
    """Delete staging folders of builds of ``out`` whose process is gone (a killed build leaves one behind)."""
    for p in out.parent.glob(f".{out.name}.building-*"):
        try:
            pid = int(p.name.rsplit("-", 1)[1])
            os.kill(pid, 0)
            alive = pid != os.getpid()
        except (ValueError, ProcessLookupError):
            alive = False
        except PermissionError:
            alive = True
        if not alive:
            shutil.rmtree(p, ignore_errors=True)


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


def build_demo_isolated(out: str | os.PathLike, *, images: int = DEFAULT_IMAGES, seed: int = 0,
                        progress: Progress | None = None) -> dict:
    """``build_demo`` in a fresh Python process (``python -c``, whose ``__main__`` is no file); returns the manifest.

    For callers whose ``__main__`` must not run again: multiprocessing's forkserver and spawn workers re-import the
    parent's main module by path, and in a Streamlit server that is the app's script (``app.py`` as
    ``__mp_main__``: every worker would run the app, without a Streamlit runtime). The child's workers import only
    this module. Progress and the manifest come back as JSON lines on the child's stdout; its stderr is this
    process's. The child exits when this process is gone (and its workers then follow it)."""
    import subprocess
    import sys

    out = Path(out).resolve()
    spec = json.dumps({"out": str(out), "images": int(images), "seed": int(seed)})
    env = dict(os.environ)
    # the child imports this package from where this process found it (a source tree or an installed copy)
    here = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join([here, *filter(None, [env.get("PYTHONPATH")])])
    cmd = [sys.executable, "-c", "import sys; from ov3d_core.demo.build import _isolated_child; "
           "sys.exit(_isolated_child(sys.argv[1]))", spec]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=env, text=True,
                            encoding="utf-8", errors="replace")
    manifest, error = None, None
    try:
        for line in proc.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                continue  # a library's own output in a worker
            if not isinstance(msg, dict):
                continue
            if "progress" in msg and progress is not None:
                progress(float(msg["progress"][0]), str(msg["progress"][1]))
            elif "manifest" in msg:
                manifest = msg["manifest"]
            elif "error" in msg:
                error = msg["error"]
    finally:
        if proc.poll() is None and manifest is None and error is None:
            proc.kill()  # this thread was interrupted: the child's build stops too
        rc = proc.wait()
    if error is not None:
        kind, text = error
        raise (FileExistsError if kind == "FileExistsError" else ValueError if kind == "ValueError"
               else RuntimeError)(text if kind in ("FileExistsError", "ValueError") else f"{kind}: {text}")
    if manifest is None or rc != 0:
        raise RuntimeError(f"the demo build process exited with status {rc} (its error is in the log above)")
    return manifest


def _isolated_child(spec: str) -> int:
    """The child of ``build_demo_isolated``: build, reporting progress, the manifest or an error as JSON lines."""
    import threading

    args = json.loads(spec)
    threading.Thread(target=_exit_without, args=(os.getppid(),), name="ov3d-parent-watch", daemon=True).start()

    def say(**msg) -> None:
        print(json.dumps(msg), flush=True)

    try:
        manifest = build_demo(args["out"], images=args["images"], seed=args["seed"],
                              progress=lambda f, m: say(progress=[f, m]))
    except (FileExistsError, ValueError) as exc:  # the caller's mistake: its message, no traceback
        say(error=[type(exc).__name__, str(exc)])
        return 1
    except Exception as exc:
        say(error=[type(exc).__name__, str(exc)])
        raise  # a bug: its traceback goes to stderr
    say(manifest=manifest)
    return 0


def ensure_demo(out: str | os.PathLike, *, images: int | None = None, seed: int = 0,
                progress: Progress | None = None, isolated: bool = False) -> Path:
    """The demo folder ``out``, built first if it is missing, incomplete, from another generator version or seed,
    an annotations-only build, or (when ``images`` is given) of another size. Returns ``out`` (it holds
    ``benchmark.yaml``). ``progress(fraction, message)`` is called while building; ``isolated``: the build runs in
    its own process (``build_demo_isolated``: for a caller such as a Streamlit server)."""
    out = Path(out)
    m = read_manifest(out)
    ok = (m is not None and m.get("generator_version") == GENERATOR_VERSION and m.get("seed") == int(seed)
          and not m.get("annotations_only") and (images is None or m.get("images_per_dataset") == int(images))
          and (out / "benchmark.yaml").is_file()
          and all((out / rel).is_file() for rel in m.get("sha256", {})))
    if not ok:
        (build_demo_isolated if isolated else build_demo)(out, images=DEFAULT_IMAGES if images is None else images,
                                                          seed=seed, progress=progress)
    elif progress is not None:
        progress(1.0, "demo benchmark ready")
    return out
