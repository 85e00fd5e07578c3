"""AppTest on the tiny demo: tags and notes set through the real ``TagStore`` travel with every exported image-level
and box-level table (sample grid, scene inspector, failure mining, object view) and with the pinned-views bundle.

The exported bytes are the ones the download buttons hand the browser: a recorder on Streamlit's real media file
manager keeps each button's data (the deferred callable of a table export, the bytes of the bundle) by file name,
and passes every call through."""

from __future__ import annotations

import io
import json

import pandas as pd
import pytest
from streamlit.runtime.media_file_manager import MediaFileManager

from tests.app.test_pages import app, problems

DS = "demo_indoor"


@pytest.fixture
def downloads(monkeypatch):
    """file name -> a callable returning the bytes its download button serves (latest run wins)."""
    got: dict[str, object] = {}
    add_deferred, add = MediaFileManager.add_deferred, MediaFileManager.add

    def rec_deferred(self, data_callable, mimetype, coordinates, file_name=None, **kw):
        got[file_name] = data_callable
        return add_deferred(self, data_callable, mimetype, coordinates, file_name=file_name, **kw)

    def rec_add(self, path_or_data, mimetype, coordinates, file_name=None, **kw):
        if file_name is not None:
            got[file_name] = lambda data=path_or_data: data
        return add(self, path_or_data, mimetype, coordinates, file_name=file_name, **kw)

    monkeypatch.setattr(MediaFileManager, "add_deferred", rec_deferred)
    monkeypatch.setattr(MediaFileManager, "add", rec_add)
    return got


@pytest.fixture
def store(tiny_demo):
    """The real tags file of the tiny demo (beside its config), empty at the start and removed at the end."""
    from ov3d_core.tags import TagStore, tags_path

    path = tags_path(tiny_demo / "benchmark.yaml", None)
    path.unlink(missing_ok=True)
    yield TagStore(path)
    path.unlink(missing_ok=True)


def _csv(downloads, name: str) -> pd.DataFrame:
    data = downloads[name]()
    return pd.read_csv(io.BytesIO(data if isinstance(data, bytes) else data.encode("utf-8")), keep_default_na=False)


def _analysis(tiny_demo):
    from ov3d_core.analysis import Analysis

    return Analysis.from_yaml(tiny_demo / "benchmark.yaml")


def test_grid_listing_exports_box_tags_and_notes_on_their_rows(tiny_demo, store, downloads):
    at = app("app_pages/grid.py", ds=DS)
    assert not problems(at), problems(at)
    run = at.selectbox(key="w:focus_run:grid").value
    plain = _csv(downloads, f"grid_{DS}_{run}.csv")
    assert "tags" not in plain and "note" not in plain  # no tags yet: the export is what it was
    gt_rec = plain[plain["kind"] == "gt"].iloc[-1]
    pred_rec = plain[plain["kind"] == "pred"].iloc[0]
    store.set(DS, int(gt_rec["image_id"]), box=("gt", "", int(gt_rec["row"])), tags=["annotation error"],
              note="the GT chair is a stool")
    store.set(DS, int(pred_rec["image_id"]), box=("pred", run, int(pred_rec["row"])), tags=["for the talk"])
    store.set(DS, int(pred_rec["image_id"]), tags=["image tag"], note="not a box")  # image tags stay off box rows
    at.run()
    assert not problems(at), problems(at)
    got = _csv(downloads, f"grid_{DS}_{run}.csv")
    assert len(got) == len(plain) and list(got.columns) == [*plain.columns, "tags", "note"]
    key = got["kind"] + "|" + got["row"].astype(str)
    tagged = got[got["tags"] != ""]
    assert sorted(key[tagged.index]) == sorted([f"gt|{gt_rec['row']}", f"pred|{pred_rec['row']}"])
    g = got[key == f"gt|{gt_rec['row']}"].iloc[0]
    assert (g["tags"], g["note"]) == ("annotation error", "the GT chair is a stool")
    p = got[key == f"pred|{pred_rec['row']}"].iloc[0]
    assert (p["tags"], p["note"]) == ("for the talk", "")
    assert (got.loc[got["tags"] == "", "note"] == "").all()


def test_scene_box_tables_export_the_tags_and_note_of_each_box(tiny_demo, store, downloads):
    at = app("app_pages/scene.py", ds=DS)
    assert not problems(at), problems(at)
    image_id = int(at.session_state["image_id"])
    preds = _csv(downloads, f"pred_boxes_{DS}_{image_id}.csv")
    gts = _csv(downloads, f"gt_boxes_{DS}_{image_id}.csv")
    assert "note" not in preds and "tags" not in gts
    p, g = preds.iloc[len(preds) - 1], gts.iloc[0]
    store.set(DS, image_id, box=("pred", p["run"], int(p["row"])), tags=["wrong class", "duplicate"],
              note="a second box on the sofa")
    store.set(DS, image_id, box=("gt", "", int(g["row"])), tags=["annotation error"])
    at.run()
    assert not problems(at), problems(at)
    preds = _csv(downloads, f"pred_boxes_{DS}_{image_id}.csv")
    hit = (preds["run"] == p["run"]) & (preds["row"] == p["row"])
    assert preds.loc[hit, ["tags", "note"]].values.tolist() == [["wrong class, duplicate", "a second box on the sofa"]]
    assert (preds.loc[~hit, "tags"] == "").all() and (preds.loc[~hit, "note"] == "").all()
    gts = _csv(downloads, f"gt_boxes_{DS}_{image_id}.csv")
    # the GT table lists each GT box once per run: every copy of GT row g carries its tag, no other row does
    assert set(gts.loc[gts["tags"] != "", "row"]) == {int(g["row"])}
    assert (gts.loc[gts["row"] == g["row"], "tags"] == "annotation error").all()
    shown = next(d.value for d in at.dataframe if "yaw_err" in d.value.columns)
    assert shown.loc[(shown["run"] == p["run"]) & (shown["row"] == p["row"]), "note"].tolist() == [
        "a second box on the sofa"]  # the table on the page shows them too


def test_mining_and_object_view_exports_carry_tags(tiny_demo, store, downloads):
    a = _analysis(tiny_demo)
    run = a.runs(DS)[0]
    ranking = a.mine(a.view(DS, run, iou=0.25), "cross-class")
    top, box = int(ranking.images["image_id"].iloc[-1]), ranking.boxes.iloc[0]
    store.set(DS, top, tags=["interesting"], note="ranked last")
    store.set(DS, int(box["image_id"]), box=("pred", run, int(box["pred_row"])), note="a cross-class FP")
    at = app("app_pages/mining.py", ds=DS, run=run)
    assert not problems(at), problems(at)
    assert at.selectbox(key="w:mine_kind").value == "cross-class"
    images = _csv(downloads, f"mining_cross-class_{DS}.csv")
    assert images["image_id"].tolist() == ranking.images["image_id"].tolist()
    assert images.loc[images["image_id"] == top, ["tags", "note"]].values.tolist() == [["interesting", "ranked last"]]
    assert (images.loc[images["image_id"] != top, "tags"] == "").all()
    boxes = _csv(downloads, f"mining_cross-class_boxes_{DS}.csv")
    noted = boxes[boxes["note"] != ""]
    assert noted[["image_id", "pred_row", "note"]].values.tolist() == [
        [int(box["image_id"]), int(box["pred_row"]), "a cross-class FP"]]

    ov = a.object_view(a.view(DS, iou=0.25), 0, runs=tuple(a.runs(DS)))
    table = ov.to_frame()
    rec = table.dropna(subset=["pred_row"]).iloc[-1]
    store.set(DS, ov.image_id, box=("pred", rec["run"], int(rec["pred_row"])), tags=["for the talk"])
    obj = app("app_pages/object.py", ds=DS, gt="0")
    assert not problems(obj), problems(obj)
    got = _csv(downloads, f"object_{DS}_0.csv")
    assert got["run"].tolist() == table["run"].tolist()
    assert got.loc[got["tags"] != "", "run"].tolist() == [rec["run"]]


def test_pinned_views_download_holds_the_views_and_the_tags_of_their_datasets(tiny_demo, store, downloads):
    at = app("app_pages/scene.py", ds=DS)
    assert not problems(at), problems(at)
    image_id = int(at.session_state["image_id"])
    store.set(DS, image_id, tags=["for the talk"], note="slide 3")
    store.set(DS, image_id, box=("gt", "", 0), tags=["annotation error"])
    store.set("demo_outdoor", 1, tags=["not pinned"])  # a dataset no pinned view shows
    assert "pinned_views.json" not in downloads  # nothing pinned: no bundle button
    pin = next(b for b in at.button if b.label == "Pin this view")
    pin.click().run()
    assert not problems(at), problems(at)
    at.switch_page("app_pages/grid.py")
    at.run()
    next(b for b in at.button if b.label == "Pin this view").click().run()
    assert not problems(at), problems(at)
    bundle = json.loads(downloads["pinned_views.json"]())
    views = at.session_state["saved_views"]
    assert len(views) == 2 and [v["page"] for v in bundle["views"]] == ["scene", "grid"]
    for got, want in zip(bundle["views"], views):
        assert (got["title"], got["params"]) == (want["title"], want["params"])
    assert bundle["views"][0]["url_query"].startswith("scene?") and f"img={image_id}" in bundle["views"][0]["url_query"]
    assert list(bundle["tags"]) == [DS]
    items = {(it["image_id"], json.dumps(it["box"])): (it["tags"], it["note"]) for it in bundle["tags"][DS]}
    assert items == {(image_id, "null"): (["for the talk"], "slide 3"),
                     (image_id, json.dumps({"kind": "gt", "run": "", "row": 0})): (["annotation error"], "")}
