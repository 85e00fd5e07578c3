"""A tiny two-dataset, two-run benchmark written as Omni3D GT / Cube R-CNN JSON files, and one CLI report of it.

Built in code with ``tests.io.factories`` (self-consistent boxes), so the report runs through the real loaders,
the pair cache and the scoring layer. Predictions are seeded perturbations of the GT: near-perfect boxes, boxes
with a wrong label (inside and across super-categories), misses and false positives, so every table has content.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from tests.io.factories import make_annotation, make_gt_json, make_image, make_pred, make_pred_json

DATASETS = {
    "indoor_a": ("indoor", ("chair", "table", "sofa", "bed", "cabinet", "shelves")),
    "outdoor_b": ("outdoor", ("car", "van", "truck", "pedestrian", "cyclist", "tram")),
    "indoor_c": ("indoor", ("chair", "table", "sofa", "bed", "lamp")),
}
#: run -> trained_on ("external_set" is not in the config: its environment is unknown)
RUNS = {"run_in": ("indoor_a", "external_set"), "run_out": ("outdoor_b", "indoor_c")}
N_IMAGES = 4
SPLITS, SUBSET = 200, 3


def _scene(ds_index: int, classes, rng):
    images, anns = [], []
    aid = 1 + 1000 * ds_index
    for i in range(N_IMAGES):
        iid = 1 + 100 * ds_index + i
        images.append(make_image(iid))
        for j in range(4):
            cls = classes[(i + 2 * j) % len(classes)]
            center = (-3.0 + 2.0 * j, 0.5, 6.0 + 3.0 * j + rng.uniform(0, 1))
            dims = tuple(rng.uniform(0.6, 1.6, 3))
            anns.append(make_annotation(aid, iid, category=cls, center=center, dims=dims,
                                        yaw=float(rng.uniform(-0.5, 0.5))))
            aid += 1
    return images, anns


def _predictions(anns, classes, rng, skill: float):
    preds = []
    for a in anns:
        u = rng.uniform()
        if u > 0.85:
            continue  # miss
        cls = a["category_name"]
        if u > skill:  # well localised, wrong label
            cls = classes[(classes.index(cls) + 1) % len(classes)]
        jitter = rng.normal(0, 0.08, 3) if u < 0.5 else rng.normal(0, 0.3, 3)
        c = np.asarray(a["center_cam"]) + jitter
        preds.append(make_pred(a["image_id"], category_id=None, center=tuple(c), dims=tuple(a["dimensions"]),
                               score=float(rng.uniform(0.3, 1.0)), category_name=cls))
    for iid in sorted({a["image_id"] for a in anns}):  # false positives
        for _ in range(2):
            preds.append(make_pred(iid, category_id=None, center=(rng.uniform(-4, 4), 0.5, rng.uniform(5, 25)),
                                   score=float(rng.uniform(0.05, 0.6)), category_name=str(rng.choice(classes))))
    return preds


def build_tiny_benchmark(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    doc = {"name": "tiny", "cache_dir": "cache", "datasets": [], "runs": []}
    for k, (ds, (env, classes)) in enumerate(DATASETS.items()):
        images, anns = _scene(k, classes, rng)
        make_gt_json(root, images, anns, name=f"{ds}.json")
        doc["datasets"].append({"name": ds, "gt": f"{ds}.json", "environment": env})
        for run, trained in RUNS.items():
            skill = 0.7 if ds in trained else 0.45
            make_pred_json(root, _predictions(anns, list(classes), rng, skill), name=f"{run}_{ds}.json")
            doc["runs"].append({"name": run, "dataset": ds, "predictions": f"{run}_{ds}.json",
                                "format": "cubercnn-json", "trained_on": list(trained)})
    cfg = root / "bench.yaml"
    cfg.write_text(yaml.safe_dump(doc, sort_keys=False))
    return cfg


@pytest.fixture(scope="session")
def tiny_config(tmp_path_factory) -> Path:
    return build_tiny_benchmark(tmp_path_factory.mktemp("tiny_bench"))


@pytest.fixture(scope="session")
def cli_report(tiny_config, tmp_path_factory):
    """(exit status, output folder) of one ``report`` CLI run over the tiny benchmark."""
    from ov3d_core.cli import main

    out = tmp_path_factory.mktemp("report") / "report"
    rc = main(["report", "--config", str(tiny_config), "--out", str(out), "--splits", str(SPLITS),
               "--subset-size", str(SUBSET), "--seed", "0"])
    return rc, out
