"""Omni3D GT loader: parsing, the §1.7 filter and ignore rules, category resolution, corner check."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from ov3d_core.errors import InputError
from ov3d_core.geometry.boxes import corners_from_pose
from ov3d_core.io import CornerMismatchWarning, FilterSettings, load_omni3d_gt
from ov3d_core.io.omni3d import IGNORE_REASONS, AnnotationTable, ignore_reasons
from ov3d_core.taxonomy import OMNI3D_50
from tests.io.factories import DROP, make_annotation, make_categories, make_gt_json, make_image

GOOD_BOX = [100.0, 100.0, 200.0, 250.0]  # height 150 px in a 480 px image: passes the height rules


def load_one(tmp_path, **fields):
    """Load a GT with a single chair annotation (trunc box fixed to GOOD_BOX unless overridden)."""
    ann = make_annotation(7, **{"bbox2D_trunc": GOOD_BOX, **fields})
    return load_omni3d_gt(make_gt_json(tmp_path, annotations=[ann], categories=make_categories(["chair"])))


# ------------------------------------------------------------------------------------------------ basics

def test_basic_load(tmp_path):
    anns = [make_annotation(1, category="chair"), make_annotation(2, category="table", center=(1, 0, 8))]
    path = make_gt_json(tmp_path, images=[make_image(1), make_image(2, width=320, height=240)], annotations=anns)
    ds = load_omni3d_gt(path)
    assert ds.name == "Test"
    assert ds.vocabulary == ("chair", "table")
    assert ds.sources == (str(path),)
    assert ds.root == str(tmp_path)
    assert ds.proximity is False
    assert list(ds.images.columns) == ["image_id", "width", "height", "file_path", "dataset_id"]
    assert ds.images["image_id"].tolist() == [1, 2]
    assert ds.images["height"].tolist() == [480, 240]
    assert ds.K.shape == (2, 3, 3) and ds.K[0, 0, 0] == 500.0
    gt = ds.gt
    assert len(gt) == 2
    assert gt.record.tolist() == [1, 2]
    assert gt.category.tolist() == ["chair", "table"]
    np.testing.assert_allclose(gt.depth, [5.0, 8.0])
    np.testing.assert_allclose(gt.box2d, np.array([a["bbox2D_trunc"] for a in anns]))
    np.testing.assert_allclose(gt.corners, np.array([a["bbox3D_cam"] for a in anns]))
    assert not gt.ignore.any()
    assert gt.ignore_reason if False else True
    for key in ("truncation", "visibility", "valid3D", "behind_camera", "lidar_pts", "segmentation_pts",
                "depth_error", "bbox2D_tight", "bbox2D_proj", "bbox2D_trunc", "category_id", "ignore_reason"):
        assert key in gt.data, key
    assert gt.data["bbox2D_tight"].shape == (2, 4)
    assert gt.data["category_id"].tolist() == [18, 37]
    assert gt.data["ignore_reason"].tolist() == ["", ""]


def test_name_root_proximity_overrides(tmp_path):
    path = make_gt_json(tmp_path, annotations=[make_annotation(1)], info={"name": "SUNRGBD_test", "id": 4})
    ds = load_omni3d_gt(path)
    assert ds.name == "SUNRGBD_test" and ds.proximity is True
    assert ds.images["dataset_id"].tolist() == [0]
    ds = load_omni3d_gt(path, name="X", proximity=False, root="/data", environment="indoor")
    assert (ds.name, ds.proximity, ds.root, ds.environment) == ("X", False, "/data", "indoor")


def test_name_defaults_to_stem_and_dataset_id_to_info(tmp_path):
    img = make_image(1, dataset_id=DROP)
    path = make_gt_json(tmp_path, images=[img], annotations=[make_annotation(1)], info={"id": 12},
                        name="Objectron_test.json")
    ds = load_omni3d_gt(path)
    assert ds.name == "Objectron_test" and ds.proximity is True
    assert ds.images["dataset_id"].tolist() == [12]


def test_unknown_keys_tolerated_and_p2_kept(tmp_path):
    p2 = [[700.0, 0, 600, 45], [0, 700, 170, 0.2], [0, 0, 1, 0.003]]
    img = make_image(1, incomplete=False, p2=p2, anything={"x": 1})
    ds = load_omni3d_gt(make_gt_json(tmp_path, images=[img, make_image(2)], annotations=[make_annotation(1)]))
    np.testing.assert_allclose(ds.images["p2"].iloc[0], p2)
    assert ds.images["p2"].iloc[1] is None


def test_concatenates_files(tmp_path):
    a = make_gt_json(tmp_path, images=[make_image(1)], annotations=[make_annotation(1, category="chair")],
                     name="a.json")
    b = make_gt_json(tmp_path, images=[make_image(2)], annotations=[make_annotation(2, 2, category="car")],
                     name="b.json", info={"name": "B"})
    ds = load_omni3d_gt([a, b])
    assert ds.name == "Test"
    assert ds.images["image_id"].tolist() == [1, 2]
    assert ds.gt.record.tolist() == [1, 2]
    assert ds.vocabulary == ("chair", "car")
    assert ds.sources == (str(a), str(b))


def test_optional_fields_default_to_unknown(tmp_path):
    fields = {k: DROP for k in ("valid3D", "behind_camera", "bbox2D_tight", "bbox2D_proj", "truncation",
                                "visibility", "lidar_pts", "segmentation_pts", "depth_error", "category_name",
                                "dataset_id")}
    ds = load_one(tmp_path, **fields)
    d = ds.gt.data
    assert d["valid3D"].tolist() == [True] and d["behind_camera"].tolist() == [False]
    for k in ("truncation", "visibility", "lidar_pts", "segmentation_pts", "depth_error"):
        assert d[k].tolist() == [-1.0], k
    assert d["bbox2D_tight"].tolist() == [[-1.0] * 4] and d["bbox2D_proj"].tolist() == [[-1.0] * 4]
    assert ds.gt.category.tolist() == ["chair"]  # resolved by id through the file's categories
    assert not ds.gt.ignore[0]


def test_null_optional_fields_are_unknown(tmp_path):
    ds = load_one(tmp_path, truncation=None, depth_error=None)
    assert ds.gt.data["truncation"].tolist() == [-1.0] and not ds.gt.ignore[0]


def test_missing_bbox3d_is_rebuilt(tmp_path):
    ann = make_annotation(1, yaw=0.4, bbox3D_cam=DROP)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ds = load_omni3d_gt(make_gt_json(tmp_path, annotations=[ann]))
    expected = corners_from_pose(np.array([ann["center_cam"]]), np.array([ann["dimensions"]]),
                                 np.array([ann["R_cam"]]))
    np.testing.assert_allclose(ds.gt.corners, expected)


# ------------------------------------------------------------------------------------------------ filter

@pytest.mark.parametrize("fields, reason", [
    ({"behind_camera": True}, "behind_camera"),
    ({"valid3D": False}, "invalid3D"),
    ({"dimensions": [1.0, 0.0, 1.0], "bbox3D_cam": DROP}, "dimensions"),
    ({"dimensions": [-1.0, 1.0, 1.0], "bbox3D_cam": DROP}, "dimensions"),
    ({"center_cam": [0.0, 0.0, 2e8], "bbox3D_cam": DROP}, "max_depth"),
    ({"lidar_pts": 0}, "lidar_pts"),
    ({"segmentation_pts": 0}, "segmentation_pts"),
    ({"depth_error": 0.6}, "depth_error"),
    ({"bbox2D_trunc": [100.0, 100.0, 200.0, 130.0]}, "min_height"),  # exactly 0.0625 * 480 = 30
    ({"bbox2D_trunc": [100.0, 100.0, 200.0, 110.0]}, "min_height"),
    ({"bbox2D_trunc": [100.0, -200.0, 200.0, 520.0]}, "max_height"),  # exactly 1.5 * 480 = 720
    ({"truncation": 1 / 3}, "truncation"),  # 0.3333333333 >= 0.33333333
    ({"truncation": 0.9}, "truncation"),
    ({"visibility": 0.33333333}, "visibility"),  # boundary: <= threshold
    ({"visibility": 0.0}, "visibility"),
])
def test_each_ignore_rule_fires_alone(tmp_path, fields, reason):
    ds = load_one(tmp_path, **fields)
    assert len(ds.gt) == 1, "ignored GT stay in the data"
    assert ds.gt.ignore.tolist() == [True]
    assert ds.gt.data["ignore_reason"].tolist() == [reason]


@pytest.mark.parametrize("fields", [
    {"lidar_pts": -1, "segmentation_pts": -1},  # -1 = unknown, not ignored
    {"lidar_pts": 1, "segmentation_pts": 5},
    {"truncation": -1, "visibility": -1, "depth_error": -1},
    {"depth_error": 0.5},
    {"truncation": 0.3333},
    {"visibility": 0.33334},
    {"bbox2D_trunc": [100.0, 100.0, 200.0, 130.01]},
    {"bbox2D_trunc": [100.0, -200.0, 200.0, 519.9]},
    {"center_cam": [0.0, 0.0, 1e8], "bbox3D_cam": DROP},
])
def test_not_ignored(tmp_path, fields):
    ds = load_one(tmp_path, **fields)
    assert ds.gt.ignore.tolist() == [False]
    assert ds.gt.data["ignore_reason"].tolist() == [""]


def test_first_rule_wins_in_ignore_reason(tmp_path):
    ds = load_one(tmp_path, truncation=0.9, visibility=0.1, lidar_pts=0)
    assert ds.gt.data["ignore_reason"].tolist() == ["lidar_pts"]


def test_ignore_name_rule_in_ignore_reasons():
    # Ignore-name annotations are dropped by the loader; the rule itself is checked on the table.
    t = AnnotationTable(
        id=np.array([1, 2]), image_id=np.array([1, 1]), category=np.array(["dontcare", "car"], object),
        category_id=np.array([2, 1]), center=np.array([[0, 0, 5.0]] * 2), dims=np.ones((2, 3)),
        R=np.stack([np.eye(3)] * 2), corners=np.zeros((2, 8, 3)), valid3D=np.ones(2, bool),
        behind_camera=np.zeros(2, bool), bbox2D_tight=-np.ones((2, 4)), bbox2D_proj=np.array([GOOD_BOX] * 2),
        bbox2D_trunc=np.array([GOOD_BOX] * 2), proj_given=np.ones(2, bool), truncation=np.zeros(2),
        visibility=np.ones(2), lidar_pts=-np.ones(2), segmentation_pts=-np.ones(2), depth_error=-np.ones(2))
    reasons = ignore_reasons(t, np.array([480.0, 480.0]), t.bbox2D_trunc)
    assert reasons.tolist() == ["ignore_name", ""]
    assert set(IGNORE_REASONS) >= {"ignore_name", "truncation", "min_height"}


def test_ignore_names_dropped_and_not_in_vocabulary(tmp_path):
    anns = [make_annotation(1, category="dontcare"), make_annotation(2, category="chair"),
            make_annotation(3, category="void", category_id=500)]
    cats = make_categories(["dontcare", "chair"]) + [{"id": 500, "name": "void"}]
    ds = load_omni3d_gt(make_gt_json(tmp_path, annotations=anns, categories=cats))
    assert ds.vocabulary == ("chair",)
    assert ds.gt.record.tolist() == [2]
    ds = load_omni3d_gt(make_gt_json(tmp_path, annotations=anns, categories=cats), categories=["chair", "dontcare"])
    assert ds.vocabulary == ("chair",)


def test_nonpositive_dims_and_behind_camera_load_as_ignored(tmp_path):
    anns = [make_annotation(1, dims=(0.0, -1.0, 2.0), bbox2D_trunc=GOOD_BOX),
            make_annotation(2, center=(0.0, 0.0, -3.0), bbox2D_trunc=DROP, bbox2D_tight=GOOD_BOX)]
    ds = load_omni3d_gt(make_gt_json(tmp_path, annotations=anns))
    assert ds.gt.ignore.tolist() == [True, True]
    assert ds.gt.data["ignore_reason"].tolist() == ["dimensions", "behind_camera"]
    assert np.isfinite(ds.gt.corners).all()


# ------------------------------------------------------------------------------------------------ 2D box priority

BOX_T, BOX_P, BOX_TR = [10.0, 20.0, 110.0, 220.0], [11.0, 21.0, 111.0, 221.0], [12.0, 22.0, 112.0, 222.0]
NONE = [-1.0, -1.0, -1.0, -1.0]


@pytest.mark.parametrize("tight, proj, trunc, expected", [
    (BOX_T, BOX_P, BOX_TR, BOX_TR),
    (BOX_T, BOX_P, NONE, BOX_P),
    (BOX_T, BOX_P, [-1.0, 5.0, 6.0, 100.0], [-1.0, 5.0, 6.0, 100.0]),  # trunc used unless *all* -1
    (BOX_T, NONE, NONE, BOX_T),
    (BOX_T, [-1.0, 21.0, 111.0, 221.0], NONE, BOX_T),  # proj needs [0] != -1
    (NONE, BOX_P, NONE, BOX_P),
    (NONE, NONE, BOX_TR, BOX_TR),
])
def test_box2d_priority(tmp_path, tight, proj, trunc, expected):
    ds = load_one(tmp_path, bbox2D_tight=tight, bbox2D_proj=proj, bbox2D_trunc=trunc)
    assert ds.gt.box2d.tolist() == [expected]


def test_annotation_without_any_2d_box_is_dropped(tmp_path):
    anns = [make_annotation(1, bbox2D_tight=NONE, bbox2D_proj=NONE, bbox2D_trunc=NONE),
            make_annotation(2, bbox2D_tight=DROP, bbox2D_proj=DROP, bbox2D_trunc=DROP),
            make_annotation(3)]
    ds = load_omni3d_gt(make_gt_json(tmp_path, annotations=anns))
    assert ds.gt.record.tolist() == [3]


def test_height_rule_uses_proj_key_even_when_unknown(tmp_path):
    # Omni3D quirk: with no trunc box and bbox2D_proj present but -1, the height is 0 -> ignored, while the
    # evaluation box falls back to the tight box.
    ds = load_one(tmp_path, bbox2D_tight=BOX_T, bbox2D_proj=NONE, bbox2D_trunc=NONE)
    assert ds.gt.box2d.tolist() == [BOX_T]
    assert ds.gt.data["ignore_reason"].tolist() == ["min_height"]
    ds = load_one(tmp_path, bbox2D_tight=BOX_T, bbox2D_proj=DROP, bbox2D_trunc=NONE)
    assert ds.gt.ignore.tolist() == [False]


def test_filter_settings_are_configurable(tmp_path):
    ann = make_annotation(1, truncation=0.5, bbox2D_trunc=GOOD_BOX, bbox2D_tight=BOX_T)
    path = make_gt_json(tmp_path, annotations=[ann])
    assert load_omni3d_gt(path).gt.ignore.tolist() == [True]
    ds = load_omni3d_gt(path, settings=FilterSettings(truncation_thres=0.99, modal_2D_boxes=True))
    assert ds.gt.ignore.tolist() == [False]
    assert ds.gt.box2d.tolist() == [BOX_T]
    with pytest.raises(Exception):
        FilterSettings().truncation_thres = 0.5  # frozen


# ------------------------------------------------------------------------------------------------ vocabulary

def test_vocabulary_subset_drops_other_classes(tmp_path):
    anns = [make_annotation(1, category="chair"), make_annotation(2, category="table"),
            make_annotation(3, category="lamp")]
    ds = load_omni3d_gt(make_gt_json(tmp_path, annotations=anns), categories=["lamp", "chair"])
    assert ds.vocabulary == ("lamp", "chair")
    assert ds.gt.record.tolist() == [1, 3]


def test_vocabulary_accepts_omni3d_names_absent_from_file(tmp_path):
    ds = load_omni3d_gt(make_gt_json(tmp_path, annotations=[make_annotation(1)]), categories=OMNI3D_50)
    assert ds.vocabulary == OMNI3D_50
    assert len(ds.gt) == 1


def test_unknown_vocabulary_name(tmp_path):
    path = make_gt_json(tmp_path, annotations=[make_annotation(1)])
    with pytest.raises(InputError, match=r"categories\[1\].*categories.*'chiar'"):
        load_omni3d_gt(path, categories=["chair", "chiar"])


def test_vocabulary_default_file_order(tmp_path):
    cats = make_categories(["table", "dontcare", "chair", "lamp"])
    ds = load_omni3d_gt(make_gt_json(tmp_path, annotations=[make_annotation(1)], categories=cats))
    assert ds.vocabulary == ("table", "chair", "lamp")


# ------------------------------------------------------------------------------------------------ categories

def test_category_resolution_paths(tmp_path):
    cats = [{"id": 200, "name": "sofa chair", "supercategory": "nan"}, {"id": 18, "name": "chair"}]
    anns = [make_annotation(1, category="lamp"),  # category_name wins
            make_annotation(2, category_id=200, category_name=DROP),  # the file's categories
            make_annotation(3, category_id=37, category_name=DROP)]  # the Omni3D table (37 = table)
    ds = load_omni3d_gt(make_gt_json(tmp_path, annotations=anns, categories=cats),
                        categories=["lamp", "sofa chair", "table"])
    assert ds.gt.category.tolist() == ["lamp", "sofa chair", "table"]
    assert ds.gt.data["category_id"].tolist() == [25, 200, 37]


def test_unresolvable_category_id(tmp_path):
    path = make_gt_json(tmp_path, annotations=[make_annotation(1), make_annotation(5, category_id=1234,
                                                                                    category_name=DROP)])
    with pytest.raises(InputError) as e:
        load_omni3d_gt(path)
    msg = str(e.value)
    assert "gt.json" in msg and "annotations[1] (id 5)" in msg and "`category_id`" in msg and "1234" in msg


# ------------------------------------------------------------------------------------------------ corner check

def test_corner_mismatch_warns_once_per_file(tmp_path):
    anns = []
    for i in range(1, 9):
        a = make_annotation(i, center=(0.1 * i, 0.0, 5.0))
        if i > 1:
            a["bbox3D_cam"][0][0] += 1e-3
        anns.append(a)
    path = make_gt_json(tmp_path, annotations=anns)
    with pytest.warns(CornerMismatchWarning) as rec:
        ds = load_omni3d_gt(path)
    assert len(rec) == 1
    msg = str(rec[0].message)
    assert "gt.json" in msg and "7 annotation(s)" in msg and "2, 3, 4, 5, 6" in msg
    # The stored corners are kept.
    np.testing.assert_allclose(ds.gt.corners[1, 0, 0], anns[1]["bbox3D_cam"][0][0])


def test_small_corner_difference_is_silent(tmp_path):
    a = make_annotation(1)
    a["bbox3D_cam"][3][2] += 5e-5
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_omni3d_gt(make_gt_json(tmp_path, annotations=[a]))


def test_empty_files_load(tmp_path):
    ds = load_omni3d_gt(make_gt_json(tmp_path, images=[], annotations=[]))
    assert len(ds.gt) == 0 and ds.K.shape == (0, 3, 3) and ds.vocabulary == ()
    ds = load_omni3d_gt(make_gt_json(tmp_path, images=[make_image(1)], annotations=[]))
    assert len(ds.gt) == 0 and "ignore_reason" in ds.gt.data


def test_conflicting_category_names_across_files(tmp_path):
    a = make_gt_json(tmp_path, images=[make_image(1)], annotations=[make_annotation(1)], name="a.json")
    b = make_gt_json(tmp_path, images=[make_image(2)], annotations=[make_annotation(2, 2)], name="b.json",
                     categories=[{"id": 18, "name": "stool"}])
    with pytest.raises(InputError, match=r"b.json: categories \(id 18\).*`name`.*'chair'"):
        load_omni3d_gt([a, b])
