"""Every bad GT / prediction input raises InputError naming the file, the record and the field."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ov3d_core.errors import InputError
from ov3d_core.io import load_omni3d_gt, load_predictions
from tests.io.factories import (
    DROP, make_annotation, make_categories, make_gt_json, make_image, make_pred, make_pred_json,
)


def raises(fn, *parts):
    """Call ``fn``; it must raise InputError whose message contains every part."""
    with pytest.raises(InputError) as e:
        fn()
    msg = str(e.value)
    for part in parts:
        assert part in msg, f"{part!r} not in {msg!r}"
    return e.value


def gt_with(tmp_path, images=None, annotations=None, **kw):
    images = [make_image(1), make_image(2)] if images is None else images
    annotations = [make_annotation(1), make_annotation(2, 2)] if annotations is None else annotations
    return make_gt_json(tmp_path, images=images, annotations=annotations,
                        categories=kw.pop("categories", make_categories(["chair"])), **kw)


# ------------------------------------------------------------------------------------------------ files

def test_missing_file(tmp_path):
    p = tmp_path / "nope.json"
    raises(lambda: load_omni3d_gt(p), str(p), "no such file")


def test_folder_instead_of_file(tmp_path):
    raises(lambda: load_omni3d_gt(tmp_path), str(tmp_path), "regular file")


def test_no_paths():
    raises(lambda: load_omni3d_gt([]), "`paths`")


def test_empty_file(tmp_path):
    p = tmp_path / "gt.json"
    p.write_text("  \n")
    raises(lambda: load_omni3d_gt(p), "gt.json", "empty file")


def test_malformed_json_names_line_and_column(tmp_path):
    p = tmp_path / "gt.json"
    p.write_text('{"images": [\n  {"id": 1,}\n]}')
    e = raises(lambda: load_omni3d_gt(p), "gt.json", "line 2 column", "valid JSON")
    assert e.file == str(p)


def test_not_utf8(tmp_path):
    p = tmp_path / "gt.json"
    p.write_bytes(b'{"a": "\xff\xfe\xfa"}')
    raises(lambda: load_omni3d_gt(p), "gt.json", "UTF-8")


@pytest.mark.parametrize("doc, part", [
    ([], "a JSON object"),
    ({"images": [], "categories": []}, "`annotations`"),
    ({"images": {}, "categories": [], "annotations": []}, "`images` to be a list"),
    ({"images": [], "categories": "chair", "annotations": []}, "`categories` to be a list"),
])
def test_wrong_top_level(tmp_path, doc, part):
    p = make_gt_json(tmp_path, raw=doc)
    raises(lambda: load_omni3d_gt(p), "gt.json", part)


# ------------------------------------------------------------------------------------------------ images

@pytest.mark.parametrize("field, value, expected", [
    ("K", [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], "a 3x3 array of finite numbers"),
    ("K", "identity", "a 3x3 array"),
    ("K", DROP, "present"),
    ("width", -5, "a positive integer"),
    ("height", "480", "an integer"),
    ("height", 480.5, "an integer"),
    ("id", "one", "an integer"),
    ("file_path", 3, "a string"),
])
def test_bad_image_field(tmp_path, field, value, expected):
    images = [make_image(1), make_image(2, **{field: value})]
    p = gt_with(tmp_path, images=images)
    e = raises(lambda: load_omni3d_gt(p), "gt.json", "images[1]", f"`{field}`", expected)
    assert e.field == field


def test_image_not_object(tmp_path):
    p = gt_with(tmp_path, images=[make_image(1), [2]])
    raises(lambda: load_omni3d_gt(p), "gt.json", "images[1]", "an image object")


def test_duplicate_image_ids(tmp_path):
    p = gt_with(tmp_path, images=[make_image(1), make_image(2), make_image(1)])
    raises(lambda: load_omni3d_gt(p), "gt.json", "images[2]", "`id`", "unique")


def test_duplicate_image_ids_across_files(tmp_path):
    a = make_gt_json(tmp_path, images=[make_image(1)], annotations=[make_annotation(1)], name="a.json")
    b = make_gt_json(tmp_path, images=[make_image(3), make_image(1)], annotations=[make_annotation(2)],
                     name="b.json")
    raises(lambda: load_omni3d_gt([a, b]), "b.json", "images[1]", "`id`", "unique across")


def test_duplicate_annotation_ids_across_files(tmp_path):
    a = make_gt_json(tmp_path, images=[make_image(1)], annotations=[make_annotation(5)], name="a.json")
    b = make_gt_json(tmp_path, images=[make_image(2)], annotations=[make_annotation(5, 2)], name="b.json")
    raises(lambda: load_omni3d_gt([a, b]), "b.json", "annotations[0]", "`id`", "unique")


# ------------------------------------------------------------------------------------------------ annotations

@pytest.mark.parametrize("field, value, expected", [
    ("center_cam", DROP, "present (3 finite numbers)"),
    ("dimensions", DROP, "present"),
    ("R_cam", DROP, "present"),
    ("image_id", DROP, "present"),
    ("category_id", DROP, "present"),
    ("id", None, "an integer"),
    ("dimensions", [1.0, 1.0], "3 finite numbers"),
    ("dimensions", "1 1 1", "3 finite numbers"),
    ("dimensions", [1.0, float("nan"), 1.0], "3 finite numbers"),
    ("center_cam", [0.0, 0.0, float("inf")], "3 finite numbers"),
    ("R_cam", [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]], "a 3x3 array"),
    ("bbox3D_cam", [[0.0, 0.0, 0.0]] * 7, "a 8x3 array"),
    ("bbox3D_cam", [[0.0, 0.0, float("nan")]] * 8, "a 8x3 array"),
    ("bbox2D_trunc", [1.0, 2.0, 3.0], "4 finite numbers"),
    ("bbox2D_tight", [1.0, 2.0, 3.0, None], "4 finite numbers"),
    ("truncation", "high", "a finite number"),
    ("lidar_pts", [3], "a finite number"),
    ("valid3D", "yes", "true or false"),
    ("category_id", 1.5, "an integer"),
    ("category_name", 7, "a non-empty string"),
])
def test_bad_annotation_field(tmp_path, field, value, expected):
    anns = [make_annotation(1), make_annotation(42, **{"image_id": 2, field: value})]
    p = gt_with(tmp_path, annotations=anns)
    e = raises(lambda: load_omni3d_gt(p), "gt.json", "annotations[1]", f"`{field}`", expected)
    assert e.file == str(p) and e.field == field


def test_nan_literal_in_file(tmp_path):
    p = tmp_path / "gt.json"
    doc = json.loads(gt_with(tmp_path).read_text())
    doc["annotations"][1]["dimensions"] = [1.0, float("nan"), 1.0]
    p.write_text(json.dumps(doc))  # json writes the NaN literal
    assert "NaN" in p.read_text()
    raises(lambda: load_omni3d_gt(p), "gt.json", "annotations[1] (id 2)", "`dimensions`", "finite")


def test_annotation_not_object(tmp_path):
    p = gt_with(tmp_path, annotations=[make_annotation(1), "oops"])
    raises(lambda: load_omni3d_gt(p), "gt.json", "annotations[1]", "an annotation object")


def test_duplicate_annotation_ids(tmp_path):
    p = gt_with(tmp_path, annotations=[make_annotation(1), make_annotation(2), make_annotation(1, 2)])
    raises(lambda: load_omni3d_gt(p), "gt.json", "annotations[2]", "`id`", "unique")


def test_annotation_for_unknown_image(tmp_path):
    p = gt_with(tmp_path, annotations=[make_annotation(1), make_annotation(2, image_id=99)])
    raises(lambda: load_omni3d_gt(p), "gt.json", "annotations[1] (id 2)", "`image_id`", "99")


def test_conflicting_category_ids(tmp_path):
    cats = make_categories(["chair"]) + [{"id": 18, "name": "stool"}]
    p = gt_with(tmp_path, categories=cats)
    raises(lambda: load_omni3d_gt(p), "gt.json", "categories[1]", "`id`", "unique")


def test_category_entry_missing_name(tmp_path):
    p = gt_with(tmp_path, categories=[{"id": 18}])
    raises(lambda: load_omni3d_gt(p), "gt.json", "categories[0]", "`name`")


# ------------------------------------------------------------------------------------------------ predictions

@pytest.fixture
def ds(tmp_path):
    return load_omni3d_gt(gt_with(tmp_path))


def preds_with(tmp_path, **fields):
    return make_pred_json(tmp_path, [make_pred(1), make_pred(**{"image_id": 2, **fields})])


def test_pred_top_level_not_list(tmp_path, ds):
    p = make_pred_json(tmp_path, {"predictions": []})
    raises(lambda: load_predictions(p, ds), "preds.json", "a JSON list")


def test_pred_empty_and_malformed(tmp_path, ds):
    p = tmp_path / "preds.json"
    p.write_text("")
    raises(lambda: load_predictions(p, ds), "preds.json", "empty file")
    p.write_text('[{"image_id": 1,\n "score": }]')
    raises(lambda: load_predictions(p, ds), "preds.json", "line 2 column 11", "valid JSON")


def test_pred_missing_file(tmp_path, ds):
    raises(lambda: load_predictions(tmp_path / "x.json", ds), "x.json", "no such file")


def test_pred_unknown_image_id(tmp_path, ds):
    p = make_pred_json(tmp_path, [make_pred(1), make_pred(2), make_pred(77)])
    e = raises(lambda: load_predictions(p, ds), "preds.json", "[2]", "`image_id`", "77", "'Test'")
    assert e.record.startswith("[2]")


@pytest.mark.parametrize("field, value, expected", [
    ("bbox", [1.0, 2.0, 3.0], "4 finite numbers"),
    ("bbox", DROP, "present"),
    ("score", DROP, "present"),
    ("score", "high", "a finite number"),
    ("score", float("nan"), "a finite number"),
    ("bbox3D", [[1.0, 2.0, float("nan")]] * 8, "a 8x3 array of finite numbers"),
    ("bbox3D", [[1.0, 2.0]] * 8, "a 8x3 array"),
    ("pose", [[1.0, 0.0, 0.0]], "a 3x3 array"),
    ("dimensions", [1.0, float("inf"), 1.0], "3 finite numbers"),
    ("depth", float("-inf"), "a finite number"),
    ("center_cam", [1.0, 2.0], "3 finite numbers"),
    ("image_id", 1.5, "an integer"),
    ("category_id", "chair", "an integer"),
    ("category_id", 4000, "an id of"),
    ("category_name", "", "a non-empty string"),
])
def test_pred_bad_field(tmp_path, ds, field, value, expected):
    p = preds_with(tmp_path, **{field: value})
    e = raises(lambda: load_predictions(p, ds), "preds.json", "[1]", f"`{field}`", expected)
    assert e.field == field


def test_pred_without_category(tmp_path, ds):
    p = make_pred_json(tmp_path, [make_pred(1), make_pred(2, category_id=None)])
    raises(lambda: load_predictions(p, ds), "preds.json", "[1]", "`category_id`", "present")


def test_pred_without_any_3d_box(tmp_path, ds):
    p = preds_with(tmp_path, bbox3D=DROP, pose=DROP)
    raises(lambda: load_predictions(p, ds), "preds.json", "[1]", "`bbox3D`", "`pose` is missing")


def test_pred_record_not_object(tmp_path, ds):
    p = make_pred_json(tmp_path, [make_pred(1), 3])
    raises(lambda: load_predictions(p, ds), "preds.json", "[1]", "a prediction object")


def test_pred_format_errors(tmp_path, ds):
    p = make_pred_json(tmp_path, [make_pred(1)], name="preds.txt")
    raises(lambda: load_predictions(p, ds), "preds.txt", "`format`", ".json or .pth")
    raises(lambda: load_predictions(p, ds, format="yolo"), "preds.txt", "`format`", "cubercnn-json")
    raises(lambda: load_predictions(p, ds, format="cubercnn-json", category_list="chair"), "`category_list`")


def test_nan_detected_vectorised_but_first_record_named(tmp_path, ds):
    preds = [make_pred(1) for _ in range(500)]
    preds[321]["bbox3D"][4][1] = float("nan")
    preds[400]["bbox3D"][0][0] = float("nan")
    p = make_pred_json(tmp_path, preds)
    raises(lambda: load_predictions(p, ds), "[321] (image_id 1)", "`bbox3D`")
    assert np.isnan(json.loads(p.read_text())[321]["bbox3D"][4][1])
