"""Issue 25, item 10: "Open" (failure mining -> scene, sample grid -> scene, object view -> scene) opens the scene
inspector without running the page the click was on first.

Where the 2.4 s went (``bench/RESULTS.md``, "Issue 25: interactions"): the click's script run drew the source page
again up to the button (the grid's 24 thumbnails; the whole failure-mining page, lists and gallery) before
``st.switch_page``; then the browser drew the inspector while the hidden 3D view's stand-in scene (a WebGL build,
1-4 s in software WebGL) blocked it. The buttons are now callbacks (``ov3d_app.navigate``), and the stand-in waits
until the page has settled.

Which pages a click ran is read from ``ui.page_header``, which every page calls first with its title (a recording
wrapper around the real function; Streamlit itself runs unchanged)."""

from __future__ import annotations

import pytest

from ov3d_app import ui
from tests.app.test_pages import app, problems


@pytest.fixture
def headers(monkeypatch):
    """Titles of the pages run, in order (``ui.page_header`` records, then draws as before)."""
    seen: list[str] = []
    real = ui.page_header

    def page_header(title: str, intro: str) -> None:
        seen.append(title)
        real(title, intro)

    monkeypatch.setattr(ui, "page_header", page_header)
    return seen


def _opened(at, image_id: int) -> None:
    assert not problems(at), problems(at)
    assert [t.value for t in at.title][:1] == ["Scene inspector"]
    assert at.session_state["image_id"] == image_id
    assert at.session_state["_page"] == "scene"


def test_open_from_the_grid_runs_the_inspector_only(tiny_demo, headers):
    at = app("app_pages/grid.py", ds="demo_indoor")
    assert not problems(at), problems(at)
    keys = [b.key for b in at.button if b.key and b.key.startswith("grid_open_")]
    assert len(keys) >= 2
    target = int(keys[1].rsplit("_", 1)[1])
    headers.clear()
    at.button(key=keys[1]).click().run()
    _opened(at, target)
    assert headers == ["Scene inspector"]  # not "Sample grid" first


def test_open_from_failure_mining_runs_the_inspector_only(tiny_demo, headers):
    at = app("app_pages/mining.py", ds="demo_indoor")
    assert not problems(at), problems(at)
    keys = [b.key for b in at.button if b.key and b.key.startswith("mine_open_")]
    assert keys
    target = int(keys[-1].rsplit("_", 1)[1])
    headers.clear()
    at.button(key=keys[-1]).click().run()
    _opened(at, target)
    assert headers == ["Scene inspector"]  # not "Failure mining" first
    hl = at.session_state["highlight"]
    assert hl is not None and hl.split("|")[0] in ("gt", "pred")  # its top box highlighted

    at.switch_page("app_pages/mining.py")
    at.run()
    headers.clear()
    at.button(key="mine_box_open").click().run()  # the box list's "Open in the scene inspector"
    assert not problems(at), problems(at)
    assert headers == ["Scene inspector"]
    assert [t.value for t in at.title][:1] == ["Scene inspector"]


def test_every_run_on_its_gt_opens_the_object_view_only(tiny_demo, headers):
    at = app("app_pages/mining.py", ds="demo_indoor", mine="missed-by-all")
    assert not problems(at), problems(at)
    button = at.button(key="mine_box_object")
    assert not button.disabled
    headers.clear()
    button.click().run()
    assert not problems(at), problems(at)
    assert headers == ["Object view"]
    assert at.session_state["_page"] == "object" and at.session_state["gt_row"] is not None

    headers.clear()
    at.button(key="obj_scene").click().run()  # the object view's "Open in the scene inspector"
    assert not problems(at), problems(at)
    assert headers == ["Scene inspector"]
