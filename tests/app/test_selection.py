"""ov3d_app.selection: clicks and table selections -> state changes and record ids; the scene image filter."""

import numpy as np
import pandas as pd
import pytest

from ov3d_app import selection as sel
from ov3d_core.diagnostics.confusion import ConfusionMatrix


def test_cell_from_plotly_event():
    event = {"selection": {"points": [{"x": "table", "y": "chair", "customdata": [0, 1, 7]}]}}
    assert sel.cell_from_event(event) == (0, 1)
    assert sel.cell_from_event({"selection": {"points": []}}) is None
    assert sel.cell_from_event(None) is None
    assert sel.cell_from_point({"customdata": "x"}) is None
    assert sel.cell_names((0, 1), ["chair", "table"]) == ("chair", "table")
    assert sel.cell_names((0, 2), ["chair", "table"], ["chair", "table", "missed"]) == ("chair", "missed")
    assert sel.cell_names((5, 0), ["chair"]) is None
    assert sel.cell_index(("table", "chair"), ["chair", "table"]) == (1, 0)
    assert sel.cell_index(("bed", "chair"), ["chair", "table"]) is None


def test_confusion_cell_maps_to_its_pairs_and_missed_gt():
    names = ("chair", "table")
    cm = ConfusionMatrix(
        counts=np.array([[1, 2], [0, 1]]), class_names=names, threshold=0.5, missed=np.array([1, 0]),
        match_gt=np.array([0, 1, 2, 4]), match_pred=np.array([10, 11, 12, 13]), match_image=np.array([5, 5, 6, 7]),
        match_iou=np.array([0.9, 0.6, 0.7, 0.8]), match_gt_label=np.array([0, 0, 0, 1]),
        match_pred_label=np.array([0, 1, 1, 1]))
    event = {"selection": {"points": [{"customdata": [0, 1, 2]}]}}
    cell = sel.cell_names(sel.cell_from_event(event), cm.class_names)
    pairs = cm.cell_pairs(*cell)
    assert pairs["pred_row"].tolist() == [12, 11] and pairs["gt_row"].tolist() == [2, 1]  # highest IoU first
    assert pairs["image_id"].tolist() == [6, 5]
    gt_cat = np.array(["chair", "chair", "chair", "chair", "table", "chair"], dtype=object)
    ignore = np.array([False, False, False, False, False, True])
    assert sel.missed_gt_rows(gt_cat, ignore, cm.match_gt, ["chair"]).tolist() == [3]  # row 5 is ignored


def test_leaderboard_row_and_bar_click_to_state():
    board = pd.DataFrame({"dataset": ["A", "B"], "run": ["r1", "r2"], "AP3D": [1.0, 2.0]})
    assert sel.leaderboard_row_to_state(board, 1) == {"dataset": "B", "focus_run": "r2"}
    assert sel.leaderboard_row_to_state(board, 5) == {}
    assert sel.dataframe_rows({"selection": {"rows": [1], "columns": []}}) == [1]
    assert sel.dataframe_rows({}) == []
    assert sel.dataframe_cell({"selection": {"cells": [[2, "AP3D"]]}}) == (2, "AP3D")
    assert sel.bar_point_to_state({"customdata": ["r2", "chair"]}) == {"category": "chair", "focus_run": "r2"}
    assert sel.bar_point_to_state({"customdata": ["", "chair"]}) == {"category": "chair"}


def test_box_click_and_highlight_keys():
    assert sel.box_from_point({"customdata": ["pred", "cube", 12]}) == "pred|cube|12"
    assert sel.box_from_point({"customdata": ["gt", "", 3]}) == "gt||3"
    assert sel.box_from_point({"customdata": [0, 1, 2]}) is None
    assert sel.parse_highlight("pred|cube|12") == ("pred", "cube", 12)
    assert sel.parse_highlight("pred|cube") is None and sel.parse_highlight(None) is None


@pytest.fixture
def boxes():
    gt = pd.DataFrame({"image_id": [1, 1, 2, 3], "category": ["car", "van", "car", "ped"],
                       "status": ["TP", "FN", "TP", "FN"]})
    r1 = pd.DataFrame({"image_id": [1, 2, 2, 3], "category": ["car", "car", "truck", "car"],
                       "score": [0.9, 0.8, 0.3, 0.6], "status": ["TP", "TP", "FP", "mislabelled"],
                       "matched": [0, 2, -1, 3], "iou": [0.7, 0.6, np.nan, 0.5]})
    r2 = pd.DataFrame({"image_id": [3], "category": ["ped"], "score": [0.4], "status": ["TP"], "matched": [3],
                       "iou": [0.8]})
    return sel.box_table(gt, {"r1": r1, "r2": r2})


def test_box_table_layout(boxes):
    assert list(boxes.columns) == sel.BOX_COLUMNS and len(boxes) == 9
    preds = boxes[boxes["kind"] == "pred"]
    assert preds["gt_category"].tolist() == ["car", "car", None, "ped", "ped"]
    assert preds["row"].tolist() == [0, 1, 2, 3, 0]
    labels = sel.box_labels(boxes)
    assert labels[0] == "car" and labels[4] == "car 0.90" and labels[7] == "car 0.60 ≠ ped"


def test_filtered_images(boxes):
    images = [1, 2, 3, 4]
    assert sel.filtered_images(boxes, images) == images  # no filter: every image, image 4 without boxes too
    assert sel.filtered_images(boxes, images, classes=["truck"]) == [2]
    assert sel.filtered_images(boxes, images, errors=["FN"]) == [1, 3]
    assert sel.filtered_images(boxes, images, errors=["FP"]) == [2]
    assert sel.filtered_images(boxes, images, errors=["FP"], min_score=0.5) == []
    assert sel.filtered_images(boxes, images, errors=["mislabelled"], runs=["r2"]) == []
    assert sel.filtered_images(boxes, images, errors=["mislabelled"], runs=["r1"]) == [3]
    # a mislabelled prediction passes the class filter of its GT
    assert sel.filtered_images(boxes, images, classes=["ped"], errors=["mislabelled"]) == [3]
    assert sel.filtered_images(boxes, images, classes=["van"], errors=["FN"]) == [1]


def test_step_image_wraps():
    ids = [4, 8, 15]
    assert sel.step_image(ids, 8, 1) == 15 and sel.step_image(ids, 15, 1) == 4 and sel.step_image(ids, 4, -1) == 15
    assert sel.step_image(ids, 99, 1) == 4 and sel.step_image(ids, 99, -1) == 15
    assert sel.step_image([], 3, 1) is None


def test_removed_status_and_counts(boxes):
    assert sel.removed_status(["TP", "FP", "FP"], [2, 9]).tolist() == ["TP", "FP", "removed"]
    counts = sel.status_counts(boxes)
    assert counts.loc[(counts["run"] == "r1") & (counts["status"] == "TP"), "n"].item() == 2


def test_box_keys_and_rows_by_image(boxes):
    assert sel.box_keys(boxes[boxes["image_id"] == 2]) == ["gt||2", "pred|r1|1", "pred|r1|2"]
    assert [sel.parse_highlight(k) for k in sel.box_keys(boxes.iloc[[0, 8]])] == [("gt", "", 0), ("pred", "r2", 0)]
    got = sel.rows_by_image(boxes, [3, 7, 1])
    assert list(got) == [3, 7, 1]  # the order asked for; image 7 has no boxes
    for image_id, rows in got.items():
        want = boxes[boxes["image_id"] == image_id]
        pd.testing.assert_frame_equal(rows, want)  # the same rows and index labels as a filter per image
    assert got[7].empty and list(got[7].columns) == list(boxes.columns)
    rows = got[3]
    keys = sel.box_keys(rows)
    assert sel.labels_with_keys(rows, {keys[-1], keys[0], "pred|nope|0"}) == (rows.index[0], rows.index[-1])
    assert sel.labels_with_keys(rows, set()) == () and sel.labels_with_keys(got[7], set(keys)) == ()


def test_run_counts_of_one_image():
    """The panel captions: per run its predictions by status and the GT it missed; the GT boxes counted once each
    (the table repeats every GT row per run)."""
    gt = pd.DataFrame({"image_id": [1, 1, 1, 2], "category": ["car", "van", "ped", "car"], "status": ["GT"] * 4})
    a = pd.DataFrame({"image_id": [1, 1, 1, 2], "category": ["car", "car", "ped", "car"], "score": [0.9, 0.8, 0.3, 0.7],
                      "status": ["TP", "FP", "mislabelled", "TP"], "matched": [0, -1, 1, 3]})
    b = pd.DataFrame({"image_id": [1], "category": ["van"], "score": [0.6], "status": ["TP"], "matched": [1]})
    table = sel.box_table(gt, {"a": a, "b": b}, {"a": ["TP", "FN", "FN", "TP"], "b": ["FN", "TP", "FN", "FN"]})
    image1 = table[table["image_id"] == 1]
    assert sel.run_counts(image1, ["a", "b", "c"]) == {
        "a": "TP 1 · FP 1 · mislabelled 1 · missed 2", "b": "TP 1 · FP 0 · mislabelled 0 · missed 2",
        "c": "TP 0 · FP 0 · mislabelled 0 · missed 0", "": "3 GT boxes"}
    assert sel.run_counts(table[table["image_id"] == 2], ["a", "b"]) == {
        "a": "TP 1 · FP 0 · mislabelled 0 · missed 0", "b": "TP 0 · FP 0 · mislabelled 0 · missed 1",
        "": "1 GT boxes"}
    assert sel.run_counts(table.iloc[:0], ["a"]) == {"a": "TP 0 · FP 0 · mislabelled 0 · missed 0", "": "0 GT boxes"}


def test_gt_statuses_are_per_run():
    gt = pd.DataFrame({"image_id": [1, 2], "category": ["car", "car"], "status": ["GT", "GT"]})
    pred = pd.DataFrame({"image_id": [1], "category": ["car"], "score": [0.9], "status": ["TP"], "matched": [0]})
    empty = pred.iloc[:0]
    table = sel.box_table(gt, {"a": pred, "b": empty}, {"a": ["TP", "FN"], "b": ["FN", "FN"]})
    g = table[table["kind"] == "gt"]
    assert g.groupby("run")["status"].apply(list).to_dict() == {"a": ["TP", "FN"], "b": ["FN", "FN"]}
    assert sel.filtered_images(table, [1, 2], errors=["FN"], runs=["a"]) == [2]
    assert sel.filtered_images(table, [1, 2], errors=["FN"], runs=["b"]) == [1, 2]
    assert len(sel.filter_boxes(table, runs=["a"])) == 3  # a's GT rows and its prediction
