"""``ov3d init FOLDER``: the YAML it writes loads, evaluates to the same numbers as a hand-written config, marks its
guesses, lists what it could not use, and never overwrites a file without ``--force``."""

from __future__ import annotations

import json
import math

import pytest
import torch
import yaml

from ov3d_core.analysis import Analysis, View
from ov3d_core.benchmark import Benchmark
from ov3d_core.cli import main
from ov3d_core.io.config import load_config
from tests.io.factories import (file_digest, make_annotation, make_gt_json, make_image, make_pred_from_annotation,
                                make_pred_json)
from tests.io.test_kitti import CAR, PED, write_kitti


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """An annotations-only demo build: its own benchmark.yaml is the hand-written reference."""
    from ov3d_core.demo.build import build_demo

    out = tmp_path_factory.mktemp("init_demo") / "demo"
    build_demo(out, images=6, seed=0, annotations_only=True)
    return out


def ap_by_run(config) -> dict:
    a = Analysis(Benchmark(config))
    out = {}
    for (run, ds) in config.runs:
        s = a.summary(View(ds, run))
        out[(run, ds)] = {k: s[k] for k in ("AP3D", "AP3D@15", "AP3D@50", "recall3D@15")}
    return out


def same(a: dict, b: dict) -> bool:
    return all((math.isnan(a[k]) and math.isnan(b[k])) or a[k] == b[k] for k in a)


def test_refuses_to_overwrite_without_force(demo, capsys):
    cfg = demo / "benchmark.yaml"
    before = file_digest(cfg)
    assert main(["init", str(demo)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "--force" in err and str(cfg) in err
    assert file_digest(cfg) == before


def test_demo_folder_gives_the_demo_configs_numbers(demo, tmp_path, capsys):
    reference = load_config(demo / "benchmark.yaml")
    out = demo / "init.yaml"
    assert main(["init", str(demo), "--out", str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    written = load_config(out)
    assert sorted(written.datasets) == sorted(reference.datasets)
    for name, ds in written.datasets.items():
        assert ds.gt == reference.datasets[name].gt and ds.environment == reference.datasets[name].environment
    # Every JSON run is found, on the right dataset, with its crops; the .pth runs need a category list.
    json_runs = {k for k, r in reference.runs.items() if r.format == "cubercnn-json"}
    assert set(written.runs) == json_runs
    for key in json_runs:
        assert written.runs[key].predictions == reference.runs[key].predictions
        assert written.runs[key].crops == reference.runs[key].crops
        # the prompt-conditioned run: its per-template files grouped under one run, every template found
        assert written.runs[key].per_template == reference.runs[key].per_template
        assert written.runs[key].default_template == reference.runs[key].default_template
    assert any(r.per_template for r in written.runs.values())
    text = out.read_text()
    assert text.count("# - name: cubercnn_star") == 3 and "needs `category_list`" in text
    assert "guessed" in text and "manifest.json" in text.split("# Not used")[1]
    mine, theirs = ap_by_run(written), ap_by_run(reference)
    assert all(same(mine[k], theirs[k]) for k in mine), (mine, theirs)


def test_a_category_list_file_beside_a_pth_enables_the_run(demo, tmp_path):
    import shutil

    folder = tmp_path / "copy"
    shutil.copytree(demo, folder)
    (folder / "benchmark.yaml").unlink()
    reference = load_config(demo / "benchmark.yaml")
    pth = {k: r for k, r in reference.runs.items() if r.format == "cubercnn-pth"}
    (folder / "runs" / "category_list.txt").write_text("\n".join(next(iter(pth.values())).category_list) + "\n")
    assert main(["init", str(folder)]) == 0
    written = load_config(folder / "benchmark.yaml")
    assert set(pth) <= set(written.runs)
    for key, ref in pth.items():
        assert written.runs[key].category_list == ref.category_list and written.runs[key].format == "cubercnn-pth"
    ref_config = load_config(demo / "benchmark.yaml")
    mine = ap_by_run(written)
    theirs = ap_by_run(ref_config)
    assert all(same(mine[k], theirs[k]) for k in pth)
    assert main(["init", str(folder)]) == 2  # the file it wrote is not overwritten either
    assert main(["init", str(folder), "--force"]) == 0


def _hand_folder(root):
    """Omni3D GT with images, depth and points; Cube R-CNN, DetAny3D and KITTI runs; KITTI GT; files to skip."""
    ds = root / "SUNRGBD_test"
    (ds / "images").mkdir(parents=True)
    images = [make_image(i) for i in (1, 2)]
    anns = [make_annotation(10, 1, category="chair", center=(0.3, 0.1, 5.0)),
            make_annotation(11, 2, category="table", center=(-0.5, 0.2, 7.0), dims=(1.2, 0.8, 0.9))]
    gt = make_gt_json(ds, images, anns, name="SUNRGBD_test.json")
    for im in images:
        (ds / im["file_path"]).write_bytes(b"\xff\xd8\xff")  # only existence is checked
    (ds / "depth").mkdir()
    (ds / "points").mkdir()
    for i in (1, 2):
        (ds / "depth" / f"{i}.npy").write_bytes(b"")
        (ds / "points" / f"{i:06d}.ply").write_bytes(b"")
    preds = [make_pred_from_annotation(a, score=0.9 - 0.1 * i) for i, a in enumerate(anns)]
    (root / "exp1" / "inference" / "SUNRGBD_test").mkdir(parents=True)
    make_pred_json(root / "exp1" / "inference" / "SUNRGBD_test", preds, name="omni_instances_results.json")
    (root / "exps" / "detany").mkdir(parents=True)
    make_pred_json(root / "exps" / "detany", preds[:1], name="SUNRGBD_test_output_results.json")
    kitti = root / "kitti" / "training"
    kitti.mkdir(parents=True)
    write_kitti(kitti)
    res = root / "results" / "mono" / "data"
    res.mkdir(parents=True)
    (res / "000000.txt").write_text(PED + " 0.9\n")
    (res / "000003.txt").write_text(CAR + " 0.8\n")
    (root / "notes.json").write_text(json.dumps({"owner": "lab"}))
    torch.save({"weight": torch.zeros(2)}, root / "model_final.pth")
    return gt


def test_a_hand_built_folder(tmp_path, capsys):
    root = tmp_path / "lab"
    gt = _hand_folder(root)
    assert main(["init", str(root), "--name", "lab bench"]) == 0
    out = capsys.readouterr().out
    assert "2 dataset(s), 3 run(s)" in out and "2 file(s) not used" in out
    cfg = load_config(root / "benchmark.yaml")
    assert cfg.name == "lab bench"
    sun, kitti = cfg.datasets["SUNRGBD_test"], cfg.datasets["kitti"]
    assert sun.gt == (gt,) and sun.images == gt.parent and sun.environment == "indoor"
    assert sun.depth == "SUNRGBD_test/depth/{image_id}.npy" and sun.points == "SUNRGBD_test/points/{image_id:06d}.ply"
    assert kitti.format == "kitti" and kitti.calib == root / "kitti" / "training" / "calib"
    assert kitti.images == root / "kitti" / "training" / "image_2" and kitti.environment == "outdoor"
    assert set(cfg.runs) == {("exp1", "SUNRGBD_test"), ("detany", "SUNRGBD_test"), ("mono", "kitti")}
    assert cfg.runs[("detany", "SUNRGBD_test")].format == "detany3d-json"
    assert cfg.runs[("exp1", "SUNRGBD_test")].format == "cubercnn-json"
    assert cfg.runs[("mono", "kitti")].format == "kitti"
    text = (root / "benchmark.yaml").read_text()
    skipped = text.split("# Not used")[1]
    assert "notes.json" in skipped and "model_final.pth" in skipped
    # It evaluates: perfect predictions of both GT boxes, and the KITTI run on the KITTI labels.
    bench = Benchmark(cfg)
    a = Analysis(bench)
    assert a.summary(View("SUNRGBD_test", "exp1"))["AP3D"] == pytest.approx(100.0)
    assert a.summary(View("kitti", "mono"))["recall3D@15"] > 0
    assert bench.asset_path("SUNRGBD_test", "points", 2) == root / "SUNRGBD_test" / "points" / "000002.ply"


def test_out_elsewhere_writes_paths_relative_to_it(tmp_path):
    root = tmp_path / "lab"
    gt = _hand_folder(root)
    out = tmp_path / "configs" / "lab.yaml"
    out.parent.mkdir()
    assert main(["init", str(root), "--out", str(out)]) == 0
    doc = yaml.safe_load(out.read_text())
    assert doc["datasets"][0]["gt"] == "../lab/SUNRGBD_test/SUNRGBD_test.json"
    assert load_config(out).datasets["SUNRGBD_test"].gt == (out.parent / "../lab/SUNRGBD_test/SUNRGBD_test.json",)
    assert load_config(out).datasets["SUNRGBD_test"].gt[0].resolve() == gt.resolve()


def test_an_empty_folder_and_a_missing_one(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["init", str(empty)]) == 0
    text = (empty / "benchmark.yaml").read_text()
    assert "No GT found" in text and "No prediction files found" in text
    load_config(empty / "benchmark.yaml")  # a placeholder the user fills in, but valid YAML of the schema
    capsys.readouterr()
    assert main(["init", str(tmp_path / "nope")]) == 2
    assert "an existing folder" in capsys.readouterr().err


def test_names_that_need_quotes_round_trip(tmp_path):
    root = tmp_path / "odd"
    d = root / "yes"  # a folder name YAML 1.1 would read as true
    d.mkdir(parents=True)
    make_gt_json(d, [make_image(1)], [make_annotation(1, 1)], name="gt.json", info={"name": "2024: chairs #1"})
    assert main(["init", str(root)]) == 0
    cfg = load_config(root / "benchmark.yaml")
    assert list(cfg.datasets) == ["2024: chairs #1"]
    assert cfg.datasets["2024: chairs #1"].gt == (d / "gt.json",)
