"""Issue 25, item 14: a pinned view's title names what its own page shows. Pinning Confusion after an image was
opened in the scene inspector gave "… · image 100052": the image id of another page. The title is now built by
``selection.pinned_title`` with the page's own keys (``state.PAGE_VIEW_KEYS``); the view's parameters still carry
the whole state, so going back to it restores everything."""

from __future__ import annotations

from ov3d_app import selection
from tests.app.test_pages import app, problems

DS = "demo_indoor"


def _pin(at):
    next(b for b in at.sidebar.button if b.label == "Pin this view").click().run()
    assert not problems(at), problems(at)
    return at.session_state["saved_views"][-1]


def test_pinning_confusion_after_the_inspector_names_no_image(tiny_demo):
    at = app("app_pages/scene.py", ds=DS)
    at.button[1].click().run()  # Next: an image touched on the inspector
    assert not problems(at), problems(at)
    image_id = at.session_state["image_id"]
    assert image_id is not None
    at.switch_page("app_pages/confusion.py")
    at.run()
    assert not problems(at), problems(at)
    view = _pin(at)
    run = at.session_state["focus_run"]
    assert view["page"] == "confusion"
    assert view["title"] == f"Confusion · {DS} · {run} · dataset-level · fine classes", view["title"]
    assert str(image_id) not in view["title"] and "image" not in view["title"]
    assert view["params"]["img"] == str(image_id)  # the state is kept whole; only the title is the page's

    at.switch_page("app_pages/scene.py")
    at.run()
    scene = _pin(at)
    assert f"image {image_id}" in scene["title"], scene["title"]  # where the image is the view, it is named


def test_page_keys_decide_the_title():
    params = {"ds": "demo_indoor", "run": "r", "img": "100052", "cell": "chair|sofa", "gt": "12"}
    assert selection.pinned_title(params, "Confusion", "confusion") == \
        "Confusion · demo_indoor · r · dataset-level · fine classes · chair → sofa"
    assert selection.pinned_title(params, "Object view", "object") == "Object view · demo_indoor · r · dataset-level · GT 12"
    assert selection.pinned_title(params, "Oracle", "oracle") == "Oracle · demo_indoor · r · dataset-level · image 100052"
    assert selection.pinned_title(params, "Sample grid", "grid") == "Sample grid · demo_indoor · r · dataset-level"
