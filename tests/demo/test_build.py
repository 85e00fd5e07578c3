"""The demo build: layout of the folder, manifest, benchmark.yaml, determinism, annotations-only mode, CLI."""

from __future__ import annotations

import hashlib
import json

import pytest
import yaml

from ov3d_core.demo import detectors as D
from ov3d_core.demo.build import GENERATOR_VERSION, build_demo, ensure_demo, read_manifest
from ov3d_core.demo.scenes import DATASETS

from .conftest import TINY_IMAGES

GT_KEYS = {"id", "image_id", "dataset_id", "category_id", "category_name", "valid3D", "bbox2D_tight", "bbox2D_proj",
           "bbox2D_trunc", "bbox3D_cam", "center_cam", "dimensions", "R_cam", "behind_camera", "visibility",
           "truncation", "depth_error", "lidar_pts", "segmentation_pts"}
PRED_KEYS = {"image_id", "category_id", "bbox", "score", "depth", "bbox3D", "center_cam", "center_2D", "dimensions",
             "pose"}


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _gt(folder, spec):
    return json.loads((folder / spec.folder / "gt.json").read_text())


def test_folder_layout_and_manifest(tiny_build):
    out, manifest = tiny_build
    assert manifest["generator_version"] == GENERATOR_VERSION and manifest["seed"] == 0
    assert read_manifest(out) == manifest
    for spec in DATASETS:
        ids = [im["id"] for im in _gt(out, spec)["images"]]
        assert len(ids) == TINY_IMAGES == manifest["counts"]["images"][spec.name]
        for i in ids:
            assert (out / spec.folder / "images" / f"{i}.jpg").is_file()
            assert (out / spec.folder / "points" / f"{i}.ply").is_file()
            assert (out / spec.folder / "depth" / f"{i}.png").is_file() == (spec.environment == "indoor")
    # per dataset: the GT, one file per single-file run, one per template of the prompt-conditioned run, the runtime
    # subset's id list
    per_dataset = 1 + sum(len(r.templates) or 1 for r in D.RUNS) + 1
    assert per_dataset == 1 + 5 + 23 + 1
    assert len(manifest["sha256"]) == len(DATASETS) * per_dataset
    for rel, digest in manifest["sha256"].items():
        assert _sha(out / rel) == digest, rel
    for run in D.RUNS:
        for spec in DATASETS:
            assert (out / "runs" / f"{run.name}__{spec.name}.crops.json").is_file() == (not run.templates)
            for t in run.templates:
                assert f"runs/{run.name}__{spec.name}__{t}.json" in manifest["sha256"]
                assert f"{run.name}__{spec.name}__{t}" in manifest["counts"]["predictions"]


def test_benchmark_yaml_matches_the_agreed_format(tiny_build):
    out, _ = tiny_build
    doc = yaml.safe_load((out / "benchmark.yaml").read_text())
    assert doc["name"] == "OV3D demo benchmark"
    assert doc["generator"] == {"version": GENERATOR_VERSION, "seed": 0}
    assert [d["name"] for d in doc["datasets"]] == ["demo_indoor", "demo_outdoor", "demo_outdoor_av"]
    for d in doc["datasets"]:
        assert (out / d["gt"]).is_file() and (out / d["images"]).is_dir()
        assert d["environment"] in ("indoor", "outdoor")
        assert set(d["subsets"]) == {"base", "novel"}
        assert "{image_id}" in d["points"]
    assert len(doc["runs"]) == len(D.RUNS) * len(DATASETS)
    for r in doc["runs"]:
        prof = D.RUNS_BY_NAME[r["name"]]
        if prof.templates:  # prompt-conditioned: a file per template, no single file, no crops
            assert "predictions" not in r and "crops" not in r
            assert list(r["per_template"]) == list(prof.templates) and r["default_template"] == "S1"
            assert all((out / f).is_file() for f in r["per_template"].values())
        else:
            assert (out / r["predictions"]).is_file() and (out / r["crops"]).is_file()
        assert r["format"] == prof.format and r["trained_on"] == list(prof.trained_on) and r["description"]
        rt = r["runtime"]
        assert rt["source"] == "demo (synthetic)" and rt["images"] == TINY_IMAGES and rt["device"]
        assert {"semantic_ms", "geometry_ms", "total_ms"} & set(rt)
        if r["format"] == "cubercnn-pth":
            assert r["category_list"] == list(D.CLOSED_VOCABULARY) == r["closed_vocabulary"]
    # the lead's config reader accepts it
    from ov3d_core.io.config import load_config

    cfg = load_config(out / "benchmark.yaml")
    assert len(cfg.runs) == len(doc["runs"])


def test_gt_schema_and_ids(tiny_build):
    out, _ = tiny_build
    image_ids, ann_ids = set(), set()
    for spec in DATASETS:
        doc = _gt(out, spec)
        assert doc["info"]["name"] == spec.name and doc["info"]["split"] == "test"
        cats = {c["id"]: c["name"] for c in doc["categories"]}
        assert list(cats.values()) == list(spec.vocabulary)
        for cid, name in cats.items():
            if spec.name == "demo_outdoor_av" and name not in ("pedestrian", "bus"):
                assert cid >= 1000
        for im in doc["images"]:
            assert spec.image_id_base <= im["id"] < spec.image_id_base + 100_000
            assert (im["width"], im["height"]) == (spec.width, spec.height)
            assert (out / spec.folder / im["file_path"]).is_file()
            image_ids.add(im["id"])
        assert doc["annotations"], spec.name
        for a in doc["annotations"]:
            assert set(a) >= GT_KEYS
            assert a["id"] != 0 and a["id"] not in ann_ids
            ann_ids.add(a["id"])
            assert cats[a["category_id"]] == a["category_name"]
            assert 0 <= a["truncation"] <= 1 and 0 <= a["visibility"] <= 1
            assert (a["lidar_pts"] >= 0) == (spec.environment == "outdoor")
            assert (a["segmentation_pts"] >= 0) == (spec.environment == "indoor")
    assert len(image_ids) == TINY_IMAGES * len(DATASETS)


def test_same_seed_same_bytes_other_seed_other_bytes(tiny_build, tmp_path):
    out, manifest = tiny_build
    again = build_demo(tmp_path / "again", images=TINY_IMAGES, seed=0, workers=2)
    assert again["sha256"] == manifest["sha256"]  # threads do not change the output either
    for run in D.RUNS:
        for spec in DATASETS:
            if run.templates:
                continue  # no crops (its template files are in the manifest's digests)
            name = f"runs/{run.name}__{spec.name}.crops.json"
            assert (out / name).read_bytes() == (tmp_path / "again" / name).read_bytes()
    other = build_demo(tmp_path / "other", images=TINY_IMAGES, seed=1, annotations_only=True)
    for rel, digest in other["sha256"].items():
        assert digest != manifest["sha256"][rel], rel


def test_annotations_only_build(ann_build, tiny_build):
    out, manifest = ann_build
    assert manifest["annotations_only"]
    tiny_out, _ = tiny_build
    doc = yaml.safe_load((out / "benchmark.yaml").read_text())
    assert all("depth" not in d and "points" not in d for d in doc["datasets"])
    for spec in DATASETS:
        assert not (out / spec.folder / "images").exists()
        anns = _gt(out, spec)["annotations"]
        assert anns and all(set(a) == set(_gt(tiny_out, spec)["annotations"][0]) for a in anns)
        assert all(a["bbox2D_tight"] == [-1, -1, -1, -1] for a in anns)  # (-1.0 compares equal to -1)
        assert all(a["lidar_pts"] == -1 and a["segmentation_pts"] == -1 and a["depth_error"] == -1 for a in anns)
        vis = [a["visibility"] for a in anns]
        assert min(vis) >= 0 and max(vis) <= 1 and min(vis) < 0.34  # occlusion is estimated, and bites


def test_annotations_only_is_the_same_scene(ann_build, tiny_build):
    """The layouts (and so the 3D boxes) do not depend on rendering."""
    ann = _gt(ann_build[0], DATASETS[1])["annotations"]
    full = _gt(tiny_build[0], DATASETS[1])["annotations"]
    by_id = {a["id"]: a for a in ann}
    common = [a for a in full if a["id"] in by_id]
    assert len(common) == len(full)
    for a in common:
        b = by_id[a["id"]]
        assert (a["category_name"], a["center_cam"], a["dimensions"], a["R_cam"]) == \
            (b["category_name"], b["center_cam"], b["dimensions"], b["R_cam"])


def test_ensure_demo_builds_once_and_rebuilds_on_version_change(tmp_path):
    out = tmp_path / "demo"
    calls = []
    assert ensure_demo(out, images=1, progress=lambda f, m: calls.append(f)) == out
    assert (out / "benchmark.yaml").is_file() and calls and calls[-1] == 1.0
    stamp = (out / "manifest.json").stat().st_mtime_ns
    ensure_demo(out, images=1)
    assert (out / "manifest.json").stat().st_mtime_ns == stamp  # current: nothing rebuilt
    m = read_manifest(out)
    m["generator_version"] = "0.0.0-old"
    (out / "manifest.json").write_text(json.dumps(m))
    ensure_demo(out, images=1)
    assert read_manifest(out)["generator_version"] == GENERATOR_VERSION


def test_refuses_to_replace_a_folder_that_is_not_a_demo_build(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "precious.txt").write_text("keep me")
    with pytest.raises(FileExistsError):
        build_demo(out, images=1, annotations_only=True)
    assert (out / "precious.txt").read_text() == "keep me"
    assert not list(tmp_path.glob(".mine.building*"))


def test_cli_build(tmp_path, capsys):
    from ov3d_core.cli import main

    out = tmp_path / "cli"
    assert main(["demo", "build", "--out", str(out), "--images", "2", "--seed", "3", "--annotations-only",
                 "--no-progress"]) == 0
    assert read_manifest(out)["seed"] == 3 and "demo_outdoor_av" in capsys.readouterr().out
    assert main(["demo", "build", "--out", str(out), "--images", "0", "--no-progress"]) == 2


def test_stale_staging_folders_are_cleaned(tmp_path):
    stale = tmp_path / ".demo.building-999999"  # no such process
    stale.mkdir()
    build_demo(tmp_path / "demo", images=1, annotations_only=True)
    assert not stale.exists() and (tmp_path / "demo" / "manifest.json").is_file()
