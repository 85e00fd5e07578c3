"""write_cubercnn_json round trip, and input files are never modified by any loader."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from ov3d_core.errors import InputError
from ov3d_core.io import (
    CUBERCNN_50, load_kitti_gt, load_kitti_predictions, load_omni3d_gt, load_predictions, write_cubercnn_json,
)
from tests.io.factories import (
    file_digest, make_annotation, make_gt_json, make_image, make_pred, make_pred_from_annotation, make_pred_json,
)
from tests.io.test_kitti import PED, write_kitti


@pytest.fixture
def setup(tmp_path):
    anns = [make_annotation(1, 1, category="chair"), make_annotation(2, 2, category="table", yaw=0.5,
                                                                      center=(0.5, 0.1, 7.0))]
    gt = make_gt_json(tmp_path, images=[make_image(1), make_image(2)], annotations=anns)
    ds = load_omni3d_gt(gt)
    preds = [make_pred_from_annotation(a, score=0.7) for a in anns]
    preds.append(make_pred(2, category_id=None, category_name="truck", yaw=-0.4, center_2D=[1.5, 2.5]))
    return ds, make_pred_json(tmp_path, preds), gt


def test_round_trip(tmp_path, setup):
    ds, preds, _ = setup
    run = load_predictions(preds, ds)
    out = write_cubercnn_json(run, tmp_path / "out" / "omni_instances_results.json")
    recs = json.loads(out.read_text())
    assert [r["category_id"] for r in recs] == [18, 37, 5]
    assert [r["category_name"] for r in recs] == ["chair", "table", "truck"]
    assert "center_2D" not in recs[0] and recs[2]["center_2D"] == [1.5, 2.5]
    back = load_predictions(out, ds)
    a, b = run.pred, back.pred
    for f in ("image_id", "category", "center", "dims", "R", "corners", "box2d", "depth", "score", "record"):
        np.testing.assert_array_equal(getattr(a, f), getattr(b, f), err_msg=f)
    assert b.data["in_vocab"].tolist() == a.data["in_vocab"].tolist()


def test_round_trip_from_pth(tmp_path, setup):
    ds, preds, _ = setup
    recs = json.loads(preds.read_text())[:2]
    contiguous = {n: i for i, n in enumerate(CUBERCNN_50)}
    for r in recs:
        r["category_id"] = contiguous[{18: "chair", 37: "table"}[r["category_id"]]]
        r["bbox3D"] = torch.tensor(r["bbox3D"], dtype=torch.float64)
    torch.save([{"image_id": 1, "instances": recs[:1]}, {"image_id": 2, "instances": recs[1:]}],
               tmp_path / "p.pth")
    run = load_predictions(tmp_path / "p.pth", ds, category_list=CUBERCNN_50)
    back = load_predictions(write_cubercnn_json(run, tmp_path / "p.json"), ds)
    assert back.pred.category.tolist() == ["chair", "table"]
    assert back.pred.data["category_id"].tolist() == [18, 37]  # Omni3D global ids in the JSON
    np.testing.assert_array_equal(back.pred.corners, run.pred.corners)


def test_names_outside_table_need_category_ids(tmp_path, setup):
    ds, _, _ = setup
    run = load_predictions(make_pred_json(tmp_path, [make_pred(1, category_id=None, category_name="sofa chair")],
                                          name="x.json"), ds)
    with pytest.raises(InputError, match=r"y.json: pred\[0\] \(record 0\).*`category`.*'sofa chair'"):
        write_cubercnn_json(run, tmp_path / "y.json")
    assert not (tmp_path / "y.json").exists()
    out = write_cubercnn_json(run, tmp_path / "y.json", category_ids={"sofa chair": 200})
    assert json.loads(out.read_text())[0]["category_id"] == 200


def test_refuses_to_overwrite_input(setup):
    ds, preds, _ = setup
    run = load_predictions(preds, ds)
    before = file_digest(preds)
    with pytest.raises(InputError, match="input files"):
        write_cubercnn_json(run, preds)
    assert file_digest(preds) == before


def test_input_files_unchanged(tmp_path, setup):
    ds, preds, gt = setup
    pth = tmp_path / "p.pth"
    torch.save([{"image_id": 1, "instances": [dict(json.loads(preds.read_text())[0], category_id=0)]}], pth)
    label_dir, calib_dir, image_dir = write_kitti(tmp_path)
    res = tmp_path / "results"
    res.mkdir()
    (res / "000000.txt").write_text(PED + " 0.5\n")
    files = [gt, preds, pth, res / "000000.txt"] + sorted(label_dir.iterdir()) + sorted(calib_dir.iterdir()) + \
        sorted(image_dir.iterdir())
    before = {f: (file_digest(f), f.stat().st_mtime_ns) for f in files}
    load_omni3d_gt(gt)
    load_predictions(preds, ds)
    load_predictions(pth, ds, category_list=CUBERCNN_50)
    kds = load_kitti_gt(label_dir, calib_dir, image_dir=image_dir)
    load_kitti_predictions(res, kds, calib_dir=calib_dir)
    after = {f: (file_digest(f), f.stat().st_mtime_ns) for f in files}
    assert before == after
