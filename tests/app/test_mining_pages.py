"""The failure-mining page lists ``Analysis.mine(...)`` (every kind, on the tiny demo), opens its images in the scene
inspector with the box highlighted, pins lists and images; the object view shows every run's row of
``Analysis.object_view`` and is reached from the mining list, the confusion gallery and the oracle page."""

from __future__ import annotations

import pandas as pd
import pytest

from ov3d_app.ui import md
from ov3d_core.analysis import MINING_KINDS, Analysis
from ov3d_core.tags import TagStore, tags_path
from tests.app.test_pages import app, problems
from tests.app.test_parity import _frame

DS = "demo_indoor"
MULTI = ("disagreement", "missed-by-all")


@pytest.fixture(scope="module")
def core(tiny_demo):
    return Analysis.from_yaml(tiny_demo / "benchmark.yaml")


def _ranking(core, kind: str, run: str):
    if kind in MULTI:
        return core.mine(core.view(DS, None), kind, runs=tuple(core.runs(DS)))
    return core.mine(core.view(DS, run), kind)


@pytest.mark.parametrize("ds", ["demo_indoor", "demo_outdoor"])
@pytest.mark.parametrize("kind", MINING_KINDS)
def test_mining_page_lists_the_ranking_for_every_kind(tiny_demo, core, kind, ds):
    at = app("app_pages/mining.py", ds=ds, mine=kind)
    assert not problems(at), problems(at)
    assert at.selectbox(key="w:mine_kind").value == kind
    run = None if kind in MULTI else at.selectbox(key="w:focus_run:mine").value
    view = core.view(ds, run)
    ref = core.mine(view, kind, runs=tuple(core.runs(ds)) if kind in MULTI else None)
    assert any(md(ref.description) in m.value for m in at.markdown)  # the Ranking's own description is shown
    if ref.images.empty:
        assert any("Nothing to mine" in i.value for i in at.info)
        return
    shown = _frame(at, "rank", "image_id", ref.value, "n_boxes")
    pd.testing.assert_frame_equal(shown.reset_index(drop=True), ref.images)
    boxes = _frame(at, *ref.boxes.columns[:3])
    pd.testing.assert_frame_equal(boxes.reset_index(drop=True), ref.boxes.reset_index(drop=True))


def test_a_ranked_image_opens_in_the_inspector_with_its_top_box(tiny_demo, core):
    at = app("app_pages/mining.py", ds=DS, mine="cross-class")
    run = at.selectbox(key="w:focus_run:mine").value
    ref = _ranking(core, "cross-class", run)
    image_id = int(ref.images["image_id"].iloc[1])  # the second-ranked image
    top = ref.boxes[ref.boxes["image_id"] == image_id].iloc[0]
    at.button(key=f"mine_open_{image_id}").click().run()
    assert not problems(at), problems(at)
    assert at.title[0].value == "Scene inspector"
    assert int(at.session_state["image_id"]) == image_id
    hl = f"pred|{run}|{int(top['pred_row'])}"
    assert at.session_state["highlight"] == hl
    assert at.query_params["img"] == str(image_id) and at.query_params["hl"] == hl  # a shareable URL
    assert at.selectbox(key="w:image_id").value == image_id  # the inspector shows that image


def test_a_gt_row_opens_the_object_view_of_that_object(tiny_demo, core):
    at = app("app_pages/mining.py", ds=DS, mine="missed-by-all")
    ref = _ranking(core, "missed-by-all", None)
    g = int(ref.boxes["gt_row"].iloc[0])  # the first box of the list (no row selected yet)
    at.button(key="mine_box_object").click().run()
    assert not problems(at), problems(at)
    assert at.title[0].value == "Object view" and int(at.session_state["gt_row"]) == g
    ov = core.object_view(core.view(DS), g, runs=tuple(core.runs(DS)))
    pd.testing.assert_frame_equal(_frame(at, "run", "iou3d", "pred_class", "status").reset_index(drop=True),
                                  ov.to_frame())
    assert at.subheader[0].value == ov.sentence()


def test_pins_add_views_and_tag_the_image(tiny_demo, core):
    path = tags_path(tiny_demo / "benchmark.yaml", None)
    path.unlink(missing_ok=True)
    try:
        at = app("app_pages/mining.py", ds=DS, mine="depth-error")
        at.button(key="mine_pin").click().run()
        assert not problems(at), problems(at)
        views = at.session_state["saved_views"]
        assert len(views) == 1 and views[0]["page"] == "mining" and views[0]["params"]["mine"] == "depth-error"
        run = at.selectbox(key="w:focus_run:mine").value
        image_id = int(_ranking(core, "depth-error", run).images["image_id"].iloc[0])
        at.button(key=f"mine_pin_{image_id}").click().run()
        assert not problems(at), problems(at)
        views = at.session_state["saved_views"]
        assert len(views) == 2 and views[1]["page"] == "scene" and views[1]["params"]["img"] == str(image_id)
        assert views[1]["params"]["hl"].startswith(f"pred|{run}|")
        assert "for the talk" in TagStore(path).get(DS, image_id).tags
        at.selectbox(key="w:mine_kind").set_value("missed-by-all").run()
        at.sidebar.button(key="view_go_0").click().run()  # the Lab-meeting list brings the pinned list back
        assert not problems(at), problems(at)
        assert at.title[0].value == "Failure mining" and at.selectbox(key="w:mine_kind").value == "depth-error"
        at.sidebar.button(key="view_go_1").click().run()  # and the pinned image, in the inspector
        assert at.title[0].value == "Scene inspector" and int(at.session_state["image_id"]) == image_id
    finally:
        path.unlink(missing_ok=True)


@pytest.mark.parametrize("ds", ["demo_indoor", "demo_outdoor", "demo_outdoor_av"])
def test_object_view_shows_every_run(tiny_demo, core, ds):
    runs = core.runs(ds)
    at = app("app_pages/object.py", ds=ds, gt="2")
    assert not problems(at), problems(at)
    ov = core.object_view(core.view(ds), 2, runs=tuple(runs))
    table = _frame(at, "run", "pred_row", "iou3d", "pred_class", "score", "status")
    pd.testing.assert_frame_equal(table.reset_index(drop=True), ov.to_frame())
    assert list(table["run"]) == runs
    assert at.subheader[0].value == ov.sentence()
    assert len(at.image) == len(runs)  # one crop per run
    with_box = [r for r in ov.to_frame().itertuples() if not pd.isna(r.pred_row)]
    assert {b.key for b in at.button if b.key and b.key.startswith("obj_open_")} == {f"obj_open_{r.run}"
                                                                                     for r in with_box}


def test_object_view_3d_draws_the_gt_and_every_runs_box(tiny_demo, core):
    import json

    at = app("app_pages/object.py", ds=DS, gt="6")
    at.toggle(key="obj_3d").set_value(True).run()
    assert not problems(at), problems(at)
    ov = core.object_view(core.view(DS), 6, runs=tuple(core.runs(DS)))
    spec = next(json.loads(c.proto.spec) for c in at.get("plotly_chart") if '"scene"' in c.proto.spec)
    names = {tr.get("name") for tr in spec["data"] if tr.get("mode") == "lines"}
    assert "GT 6" in names
    runs_drawn = {n.split(":")[0] for n in names if n and ":" in n}
    assert runs_drawn == {r.run for r in ov.to_frame().itertuples() if not pd.isna(r.pred_row)}


def test_object_view_picks_an_object_by_image(tiny_demo, core):
    at = app("app_pages/object.py", ds=DS, gt="0")
    images = at.selectbox(key="obj_image:0").options
    gt_img = core.benchmark.dataset(DS).gt.image_id
    other = int(images[-1].split()[-1])
    at.selectbox(key="obj_image:0").set_value(other).run()
    assert not problems(at), problems(at)
    g = int(at.session_state["gt_row"])
    assert int(gt_img[g]) == other and g == int(min(i for i in range(len(gt_img)) if gt_img[i] == other))
    assert at.query_params["gt"] == str(g)


def test_a_confusion_example_opens_the_object_view(tiny_demo):
    at = app("app_pages/confusion.py", ds=DS, cell="chair|chair")
    assert not problems(at), problems(at)
    at.button(key="object_0").click().run()
    assert not problems(at), problems(at)
    assert at.title[0].value == "Object view"
    g = int(at.session_state["gt_row"])
    assert at.selectbox(key="w:gt_row:obj").value == g
    assert "chair" in at.subheader[0].value


def test_the_oracle_page_opens_the_gt_a_removed_prediction_overlaps(tiny_demo, core):
    at = app("app_pages/oracle.py", ds=DS)
    assert not problems(at), problems(at)
    run = at.selectbox(key="w:focus_run:or").value
    removed = core.protocol_comparison(core.view(DS, run)).removed.dropna(subset=["other_gt_row"])
    at.button(key="or_object").click().run()
    assert not problems(at), problems(at)
    assert at.title[0].value == "Object view"
    assert int(at.session_state["gt_row"]) == int(removed["other_gt_row"].iloc[0])


@pytest.mark.parametrize("page, query", [("app_pages/mining.py", {"mine": "cross-class"}),
                                         ("app_pages/mining.py", {"mine": "missed-by-all"}),
                                         ("app_pages/object.py", {"gt": "0"})])
def test_markup_in_names_is_shown_as_text(tiny_demo, tmp_path_factory, page, query):
    """Class, run and dataset names with HTML, links and Markdown (``tests.app.hostile``) are text on the new pages."""
    from tests.app import hostile
    from tests.app.test_security import shown_texts

    cfg = hostile.build(tmp_path_factory.mktemp("hostile_mining"))
    at = app(page, src="config", cfg=str(cfg), run=hostile.RUN, **query)
    assert not at.exception, [e.value for e in at.exception]
    texts = shown_texts(at)
    for t in texts:
        for bad in hostile.ALL:
            assert bad not in t, f"{bad!r} rendered raw in {t!r}"
    assert all(not m.proto.allow_html for m in at.markdown)
    assert at.session_state["dataset"] == hostile.DATASET and at.dataframe  # the page drew its tables
