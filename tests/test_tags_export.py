"""Tags and notes in exports (``ov3d_core.tags.join_tags``, ``views_bundle``; ``ov3d_app.tags.pinned_bundle``): image
rows take their image's tags, box rows their box's (GT keyed with run ""), a dataset without tags leaves the table
as it is, and tags of images or boxes outside the table are ignored."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from ov3d_core.tags import TagStore, join_tags, views_bundle


@pytest.fixture
def store(tmp_path):
    s = TagStore(tmp_path / "bench.tags.json")
    s.set("ds", 5, tags=["for the talk"], note="lab meeting")
    s.set("ds", 5, box=("pred", "run_a", 2), tags=["annotation error", "duplicate"], note="the GT chair is a stool")
    s.set("ds", 5, box=("gt", "", 2), tags=["wrong class"])
    s.set("ds", 7, box=("pred", "run_b", 0), note="only a note")
    s.set("ds", 99, tags=["not in any table"], note="ignored")
    s.set("other", 5, tags=["other dataset"])
    return s


def test_image_rows_take_their_image_tags(store):
    images = pd.DataFrame({"rank": [1, 2, 3], "image_id": [7, 5, 6], "n_boxes": [4, 2, 1]})
    out = join_tags(images, store.table("ds"), kind="image")
    assert out["tags"].tolist() == ["", "for the talk", ""]  # image 7 has a box note only: not an image tag
    assert out["note"].tolist() == ["", "lab meeting", ""]
    assert out[["rank", "image_id", "n_boxes"]].equals(images)  # the table's own columns untouched
    assert "tags" not in images  # the input frame is not modified


def test_box_rows_take_their_box_tags_with_gt_keyed_without_run(store):
    # the sample grid's listing: one run, a kind column, GT row 2 and prediction row 2 on the same image
    boxes = pd.DataFrame({"image_id": [5, 5, 5, 7, 5], "kind": ["gt", "pred", "pred", "pred", "gt"],
                          "row": [2, 2, 3, 0, 0]}, index=[10, 11, 12, 13, 14])
    out = join_tags(boxes, store.table("ds"), run="run_a")
    assert out["tags"].tolist() == ["wrong class", "annotation error, duplicate", "", "", ""]
    assert out["note"].tolist() == ["", "the GT chair is a stool", "", "", ""]  # run_b's note is not run_a's box
    assert out.index.tolist() == [10, 11, 12, 13, 14]
    # the run from a column, one image for every row, the row number in another column, a row with no box
    per_run = pd.DataFrame({"run": ["run_a", "run_b", "run_a"], "pred_row": pd.array([2, 2, None], dtype="Int64")})
    out = join_tags(per_run, store.table("ds"), kind="pred", row="pred_row", image_id=5)
    assert out["tags"].tolist() == ["annotation error, duplicate", "", ""]
    on_7 = join_tags(pd.DataFrame({"run": ["run_b"], "row": [0]}), store.table("ds"), kind="pred", image_id=7)
    assert on_7["tags"].tolist() == [""] and on_7["note"].tolist() == ["only a note"]


def test_no_tags_leaves_the_frame_unchanged(store, tmp_path):
    frame = pd.DataFrame({"image_id": [5, 6], "kind": ["gt", "pred"], "row": [2, 0]})
    empty = TagStore(tmp_path / "none.tags.json").table("ds")
    assert join_tags(frame, empty, run="run_a") is frame
    assert join_tags(frame, store.table("no such dataset"), run="run_a") is frame


def test_tags_outside_the_table_are_ignored(store):
    frame = pd.DataFrame({"image_id": [6, 8], "rank": [1, 2]})  # images 5, 7 and 99 are tagged, not listed
    out = join_tags(frame, store.table("ds"), kind="image")
    assert len(out) == 2 and out["tags"].tolist() == ["", ""] and out["note"].tolist() == ["", ""]


def test_refuses_what_it_cannot_join(store):
    with pytest.raises(ValueError, match="one dataset"):
        join_tags(pd.DataFrame({"image_id": [5]}), store.table(), kind="image")
    with pytest.raises(ValueError, match="already has"):
        join_tags(pd.DataFrame({"image_id": [5], "note": ["x"]}), store.table("ds"), kind="image")
    with pytest.raises(ValueError, match="row kinds"):
        join_tags(pd.DataFrame({"image_id": [5], "kind": ["box"], "row": [0]}), store.table("ds"), run="r")


def test_views_bundle_holds_the_views_and_every_item_of_their_datasets(store):
    views = [{"title": "Scene inspector · ds · image 5", "page": "scene", "params": {"ds": "ds", "img": "5"}}]
    out = json.loads(json.dumps(views_bundle(views, store.load(), ["ds", "ds", "untagged"])))
    assert out["views"] == views
    assert set(out["tags"]) == {"ds", "untagged"} and out["tags"]["untagged"] == []
    got = {(it["image_id"], None if it["box"] is None else tuple(it["box"].values())): (it["tags"], it["note"])
           for it in out["tags"]["ds"]}
    assert got == {(5, None): (["for the talk"], "lab meeting"),
                   (5, ("pred", "run_a", 2)): (["annotation error", "duplicate"], "the GT chair is a stool"),
                   (5, ("gt", "", 2)): (["wrong class"], ""), (7, ("pred", "run_b", 0)): ([], "only a note"),
                   (99, None): (["not in any table"], "ignored")}
    assert all(it["dataset"] == "ds" for it in out["tags"]["ds"])  # each item as the store keeps it


def test_pinned_bundle_links_each_view_and_skips_tags_of_another_source(store):
    from ov3d_app.tags import pinned_bundle

    views = [{"title": "A", "page": "scene", "params": {"ds": "ds", "img": "5"}},
             {"title": "B", "page": "overview", "params": {"proto": "target-aware"}},  # no dataset: the first one
             {"title": "C", "page": "grid", "params": {"src": "config", "cfg": "/elsewhere/b.yaml", "ds": "other"}}]
    out = pinned_bundle(views, tag_store=store, source="demo", config_path="", datasets=["ds", "other"],
                        default_page="overview")
    assert [v["url_query"] for v in out["views"]] == ["scene?ds=ds&img=5", "?proto=target-aware",
                                                      "grid?src=config&cfg=%2Felsewhere%2Fb.yaml&ds=other"]
    assert [v["title"] for v in out["views"]] == ["A", "B", "C"] and out["views"][0]["params"] == views[0]["params"]
    assert list(out["tags"]) == ["ds"]  # view C is of another benchmark: its "other" is not this store's "other"
    assert len(out["tags"]["ds"]) == 5
    same = pinned_bundle(views[2:], tag_store=store, source="config", config_path="/elsewhere/b.yaml",
                         datasets=["ds", "other"], default_page="overview")
    assert [it["tags"] for it in same["tags"]["other"]] == [["other dataset"]]
    none = pinned_bundle(views, tag_store=None, source="demo", config_path="", datasets=[], default_page="overview")
    assert none["tags"] == {} and len(none["views"]) == 3
