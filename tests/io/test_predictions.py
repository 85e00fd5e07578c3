"""Prediction loaders: Cube R-CNN JSON / .pth, DetAny3D JSON, category resolution, derived poses."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ov3d_core.errors import InputError
from ov3d_core.geometry.boxes import corners_from_pose, rotation_y
from ov3d_core.io import CUBERCNN_50, DETANY3D_97, DETANY3D_CATEGORIES, load_omni3d_gt, load_predictions
from ov3d_core.io.predictions import dataset_category_ids, pose_from_corners
from ov3d_core.taxonomy import OMNI3D_CATEGORIES
from tests.io.factories import (
    DROP, make_annotation, make_categories, make_gt_json, make_image, make_pred, make_pred_from_annotation,
    make_pred_json,
)


@pytest.fixture
def anns():
    return [make_annotation(1, 1, category="chair"), make_annotation(2, 1, category="table", center=(1, 0, 7)),
            make_annotation(3, 2, category="car", center=(-1, 0.5, 12), yaw=0.7)]


@pytest.fixture
def ds(tmp_path, anns):
    return load_omni3d_gt(make_gt_json(tmp_path, images=[make_image(1), make_image(2)], annotations=anns))


def test_cubercnn_json_fields(tmp_path, ds, anns):
    preds = [make_pred_from_annotation(a, score=0.5 + 0.1 * i) for i, a in enumerate(anns)]
    preds[0]["center_2D"] = [300.0, 200.0]
    preds.append(make_pred(2, category_id=5, score=0.3))  # truck: not in the vocabulary
    run = load_predictions(make_pred_json(tmp_path, preds), ds, name="cube")
    p = run.pred
    assert run.name == "cube" and run.dataset == ds.name and run.meta["format"] == "cubercnn-json"
    assert p.category.tolist() == ["chair", "table", "car", "truck"]
    assert p.data["in_vocab"].tolist() == [True, True, True, False]
    assert p.data["category_id"].tolist() == [18, 37, 1, 5]
    assert p.record.tolist() == [0, 1, 2, 3]
    np.testing.assert_allclose(p.score, [0.5, 0.6, 0.7, 0.3])
    np.testing.assert_allclose(p.box2d[:3], np.array([a["bbox2D_proj"] for a in anns]))  # XYWH -> XYXY
    np.testing.assert_allclose(p.corners[:3], np.array([a["bbox3D_cam"] for a in anns]))
    np.testing.assert_allclose(p.depth[:3], [5.0, 7.0, 12.0])
    np.testing.assert_allclose(p.R[2], rotation_y([0.7])[0])
    assert p.data["center_2D"][0].tolist() == [300.0, 200.0] and np.isnan(p.data["center_2D"][1]).all()
    assert not p.ignore.any()


def test_default_run_name_is_stem(tmp_path, ds, anns):
    run = load_predictions(make_pred_json(tmp_path, [make_pred_from_annotation(anns[0])], name="omni.json"), ds)
    assert run.name == "omni" and run.sources == (str(tmp_path / "omni.json"),)


def test_empty_prediction_list(tmp_path, ds):
    run = load_predictions(make_pred_json(tmp_path, []), ds)
    assert len(run.pred) == 0 and run.pred.corners.shape == (0, 8, 3)


def test_pose_derived_from_corners(tmp_path, ds):
    pred = make_pred(1, center=(0.3, -0.2, 6.0), dims=(0.8, 1.5, 2.5), yaw=1.1, center_cam=DROP, dimensions=DROP,
                     pose=DROP)
    p = load_predictions(make_pred_json(tmp_path, [pred]), ds).pred
    np.testing.assert_allclose(p.center[0], [0.3, -0.2, 6.0], atol=1e-12)
    np.testing.assert_allclose(p.dims[0], [0.8, 1.5, 2.5], atol=1e-12)
    np.testing.assert_allclose(p.R[0], rotation_y([1.1])[0], atol=1e-12)
    np.testing.assert_allclose(corners_from_pose(p.center, p.dims, p.R), p.corners, atol=1e-12)


def test_pose_from_corners_random_rotations():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(20, 4))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q.T
    R = np.stack([np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
                  np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
                  np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1)], 1)
    c, d = rng.normal(size=(20, 3)), rng.uniform(0.1, 3, size=(20, 3))
    c2, d2, R2 = pose_from_corners(corners_from_pose(c, d, R))
    np.testing.assert_allclose(c2, c, atol=1e-12)
    np.testing.assert_allclose(d2, d, atol=1e-12)
    np.testing.assert_allclose(R2, R, atol=1e-10)


def test_missing_corners_built_from_pose(tmp_path, ds):
    pred = make_pred(1, yaw=0.3, bbox3D=DROP)
    p = load_predictions(make_pred_json(tmp_path, [pred]), ds).pred
    np.testing.assert_allclose(p.corners, corners_from_pose(np.array([pred["center_cam"]]),
                                                            np.array([pred["dimensions"]]), rotation_y([0.3])))


def test_depth_falls_back_to_centre_z(tmp_path, ds):
    p = load_predictions(make_pred_json(tmp_path, [make_pred(1, center=(0, 0, 9.5), depth=DROP),
                                                   make_pred(1, depth=4.25)]), ds).pred
    assert p.depth.tolist() == [9.5, 4.25]


def test_degenerate_boxes_load(tmp_path, ds):
    dummy = make_pred(1, bbox3D=[[1.0, 1.0, 1.0]] * 8, center_cam=DROP, dimensions=DROP, pose=DROP)
    flat = make_pred(1, dims=(1.0, 0.0, 1.0))
    p = load_predictions(make_pred_json(tmp_path, [dummy, flat]), ds).pred
    assert len(p) == 2
    np.testing.assert_allclose(p.dims[0], 0.0)
    assert np.isfinite(p.R).all()
    np.testing.assert_allclose(np.linalg.det(p.R[0]), 1.0)


# ------------------------------------------------------------------------------------------------ categories

def test_category_name_field_wins(tmp_path, ds):
    preds = [make_pred(1, category_id=5, category_name="chair"),
             make_pred(1, category_id=None, category_name="sofa chair")]
    p = load_predictions(make_pred_json(tmp_path, preds), ds).pred
    assert p.category.tolist() == ["chair", "sofa chair"]
    assert p.data["category_id"].tolist() == [5, -1]
    assert p.data["in_vocab"].tolist() == [True, False]


def test_category_list_maps_ids(tmp_path, ds):
    preds = [make_pred(1, category_id=0), make_pred(1, category_id=1)]
    run = load_predictions(make_pred_json(tmp_path, preds), ds, category_list=["table", "stool"])
    assert run.pred.category.tolist() == ["table", "stool"]
    assert run.meta["category_list"] == ("table", "stool")
    with pytest.raises(InputError, match=r"\[1\].*`category_id`.*category_list.*got 1"):
        load_predictions(make_pred_json(tmp_path, preds), ds, category_list=["table"])


def test_custom_gt_ids_resolve_predictions(tmp_path):
    cats = [{"id": 500, "name": "sofa chair"}, {"id": 18, "name": "chair"}]
    anns = [make_annotation(1, category_id=500, category_name=DROP), make_annotation(2, category="chair")]
    ds = load_omni3d_gt(make_gt_json(tmp_path, annotations=anns, categories=cats))
    assert dataset_category_ids(ds) == {500: "sofa chair", 18: "chair"}
    preds = [make_pred(1, category_id=500), make_pred(1, category_id=18), make_pred(1, category_id=1)]
    p = load_predictions(make_pred_json(tmp_path, preds), ds).pred
    assert p.category.tolist() == ["sofa chair", "chair", "car"]
    assert p.data["in_vocab"].tolist() == [True, True, False]


def test_detany3d_ids_are_omni3d_ids_without_the_placeholder(tmp_path, ds):
    """DetAny3D writes ``thing_classes.index(name)`` of its ``data/category_meta.json``: the Omni3D table for 0-97
    with entry 93 replaced by the placeholder "todo". Every id is checked."""
    ids = [i for i in range(98) if i != 93]
    preds = [make_pred(1, category_id=i) for i in ids]
    run = load_predictions(make_pred_json(tmp_path, preds), ds, format="detany3d-json")
    assert run.pred.category.tolist() == [OMNI3D_CATEGORIES[i] for i in ids]
    assert run.pred.data["category_id"].tolist() == ids
    assert run.pred.category[ids.index(97)] == "fireplace" and run.pred.category[ids.index(94)] == "shower curtain"
    assert run.pred.category[ids.index(92)] == "soundsystem" and run.pred.category[ids.index(96)] == "pen"
    assert len(DETANY3D_CATEGORIES) == 97 and 93 not in DETANY3D_CATEGORIES
    assert DETANY3D_97 == tuple(DETANY3D_CATEGORIES[i] for i in ids)
    for bad in (93, 98, -1):
        with pytest.raises(InputError, match=rf"preds.json: \[1\] \(image_id 1\).*`category_id`.*placeholder.*got {bad}"):
            load_predictions(make_pred_json(tmp_path, [make_pred(1), make_pred(1, category_id=bad)]), ds,
                             format="detany3d-json")
    # The same ids read as Cube R-CNN JSON are Omni3D global ids too, 93 included ("fire place").
    run = load_predictions(make_pred_json(tmp_path, [make_pred(1, category_id=i) for i in range(98)]), ds)
    assert run.pred.category.tolist() == [OMNI3D_CATEGORIES[i] for i in range(98)]


# ------------------------------------------------------------------------------------------------ .pth

def _pth_records(anns, contiguous: dict[str, int]):
    recs = {}
    for a in anns:
        x1, y1, x2, y2 = a["bbox2D_proj"]
        inst = {"image_id": a["image_id"], "category_id": contiguous[a["category_name"]],
                "bbox": [x1, y1, x2 - x1, y2 - y1], "score": 0.8, "depth": a["center_cam"][2],
                "bbox3D": torch.tensor(a["bbox3D_cam"], dtype=torch.float64),
                "center_cam": torch.tensor(a["center_cam"], dtype=torch.float64),
                "dimensions": a["dimensions"], "pose": torch.tensor(a["R_cam"], dtype=torch.float64),
                "center_2D": [320.0, 240.0]}
        recs.setdefault(a["image_id"], []).append(inst)
    return [{"image_id": i, "K": np.array(make_image(i)["K"]), "width": 640, "height": 480, "instances": inst}
            for i, inst in recs.items()]


def test_pth_round_trip_omni3d50_category_list(tmp_path, ds, anns):
    contiguous = {n: i for i, n in enumerate(CUBERCNN_50)}
    path = tmp_path / "instances_predictions.pth"
    torch.save(_pth_records(anns, contiguous), path)
    run = load_predictions(path, ds, category_list=CUBERCNN_50)
    p = run.pred
    assert run.meta["format"] == "cubercnn-pth" and run.meta["n_records"] == 2
    assert p.category.tolist() == ["chair", "table", "car"]
    assert p.data["category_id"].tolist() == [contiguous["chair"], contiguous["table"], contiguous["car"]]
    assert p.record.tolist() == [0, 1, 2]
    np.testing.assert_allclose(p.corners, np.array([a["bbox3D_cam"] for a in anns]))
    np.testing.assert_allclose(p.box2d, np.array([a["bbox2D_proj"] for a in anns]))
    assert CUBERCNN_50[:5] == ("pedestrian", "car", "cyclist", "van", "truck")


def test_pth_with_category_list(tmp_path, ds, anns):
    names = ["table", "car", "chair"]
    path = tmp_path / "p.pth"
    torch.save(_pth_records(anns, {n: i for i, n in enumerate(names)}), path)
    p = load_predictions(path, ds, category_list=names).pred
    assert p.category.tolist() == ["chair", "table", "car"]


def test_pth_custom_object_rejected(tmp_path, ds):
    path = tmp_path / "evil.pth"
    torch.save([{"image_id": 1, "instances": [_Custom()]}], path)
    with pytest.raises(InputError, match="evil.pth.*plain data") as e:
        load_predictions(path, ds)
    assert "Unsupported global: GLOBAL tests.io.test_predictions._Custom" in str(e.value)  # names the class


def test_pth_bad_structure(tmp_path, ds):
    path = tmp_path / "p.pth"
    torch.save({"image_id": 1}, path)
    with pytest.raises(InputError, match="p.pth.*a list of per-image records"):
        load_predictions(path, ds)
    torch.save([{"image_id": 1, "instances": [{"category_id": 0}]}, {"instances": []}], path)
    with pytest.raises(InputError, match=r"p.pth: \[1\].*`image_id`"):
        load_predictions(path, ds)
    torch.save([{"image_id": 1, "instances": "none"}], path)
    with pytest.raises(InputError, match=r"p.pth: \[0\].*`instances`"):
        load_predictions(path, ds)
    torch.save([{"image_id": 1, "instances": [{"image_id": 2}]}], path)
    with pytest.raises(InputError, match=r"\[0\]\.instances\[0\].*`image_id`"):
        load_predictions(path, ds)


def test_pth_bad_field_names_record_and_instance(tmp_path, ds, anns):
    recs = _pth_records(anns, {n: i for i, n in enumerate(CUBERCNN_50)})
    recs[1]["instances"][0]["bbox3D"] = torch.full((8, 3), float("nan"))
    path = tmp_path / "p.pth"
    torch.save(recs, path)
    with pytest.raises(InputError, match=r"p.pth: \[1\]\.instances\[0\].*`bbox3D`"):
        load_predictions(path, ds, category_list=CUBERCNN_50)


def test_pth_garbage_and_empty(tmp_path, ds):
    path = tmp_path / "p.pth"
    path.write_bytes(b"not a torch file")
    with pytest.raises(InputError, match="p.pth"):
        load_predictions(path, ds)
    path.write_bytes(b"")
    with pytest.raises(InputError, match="p.pth.*empty file"):
        load_predictions(path, ds)


class _Custom:
    pass


def test_names_outside_builtin_table_need_category_list(tmp_path):
    # GT with a custom id for a name missing from the table: predictions by id resolve via the GT.
    ds = load_omni3d_gt(make_gt_json(tmp_path, annotations=[make_annotation(1, category="chair")],
                                     categories=make_categories(["chair"])))
    with pytest.raises(InputError, match=r"preds.json: \[0\] \(image_id 1\).*`category_id`.*got 321"):
        load_predictions(make_pred_json(tmp_path, [make_pred(1, category_id=321)]), ds)
