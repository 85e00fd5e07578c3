"""Issue 25, item 13: the tag editor.

- Its multiselect offers no "Select all" (Streamlit's default shows one below 1,000 options): one click put every
  suggested tag on an image.
- The demo's tags were saved inside the generated demo folder (``data/demo/benchmark.tags.json``), which a rebuild
  replaces whole (its YAML says "rebuilt when the generator version changes"): they now live beside the folder and a
  real rebuild (``ov3d_core.demo.build_demo`` on the same folder) keeps them; a file left inside by an earlier
  version is still read."""

from __future__ import annotations

import shutil

import pytest

from ov3d_app.cache import DEMO_ENV
from ov3d_core.tags import TagStore, legacy_tags_path, tags_path
from tests.app.conftest import TINY_IMAGES
from tests.app.test_pages import app, problems

DS = "demo_indoor"


def _editor(at):
    got = [m for m in at.multiselect if m.label == "Tags of this image"]
    assert len(got) == 1, [m.label for m in at.multiselect]
    return got[0]


@pytest.fixture
def demo_copy(tiny_demo, tmp_path, monkeypatch):
    """A copy of the tiny demo that the app serves (``OV3D_DEMO_DIR``), free to be rebuilt."""
    out = tmp_path / "demo"
    shutil.copytree(tiny_demo, out, ignore=shutil.ignore_patterns(".ov3d_cache"))
    monkeypatch.setenv(DEMO_ENV, str(out))
    return out


def test_the_tag_editor_has_no_select_all(tiny_demo):
    at = app("app_pages/scene.py", ds=DS)
    assert not problems(at), problems(at)
    ed = _editor(at)
    assert len(ed.options) >= 5  # the suggested tags are offered ...
    assert ed.proto.select_all == 0  # ... one by one: no "Select all" in the dropdown


def test_demo_tags_survive_a_rebuild_of_the_demo(demo_copy):
    from ov3d_core.demo import build_demo

    cfg = demo_copy / "benchmark.yaml"
    at = app("app_pages/scene.py", ds=DS)
    assert not problems(at), problems(at)
    image_id = at.session_state["image_id"]
    _editor(at).set_value(["for the talk"]).run()  # the editor writes at once
    assert not problems(at), problems(at)
    path = tags_path(cfg, None)
    assert TagStore(path).get(DS, image_id).tags == ["for the talk"]
    assert demo_copy not in path.parents  # not inside the folder a rebuild replaces

    build_demo(demo_copy, images=TINY_IMAGES, seed=0)  # what a generator-version bump or `ov3d demo build` does
    assert (demo_copy / "manifest.json").is_file()
    assert TagStore(tags_path(cfg, None)).get(DS, image_id).tags == ["for the talk"]
    at = app("app_pages/scene.py", ds=DS, img=str(image_id))  # a new session on the rebuilt demo shows them
    assert not problems(at), problems(at)
    assert at.session_state["image_id"] == image_id
    assert _editor(at).value == ["for the talk"]


def test_tags_left_inside_the_demo_folder_are_read_then_moved_out(demo_copy):
    cfg = demo_copy / "benchmark.yaml"
    old = legacy_tags_path(cfg)
    assert old == demo_copy / "benchmark.tags.json"
    TagStore(old).set(DS, 7, tags=["annotation error"])
    store = TagStore(tags_path(cfg, None), legacy=old)
    assert store.get(DS, 7).tags == ["annotation error"]
    store.set(DS, 8, tags=["for the talk"])  # the first write carries the old items over
    fresh = TagStore(tags_path(cfg, None))
    assert fresh.get(DS, 7).tags == ["annotation error"] and fresh.get(DS, 8).tags == ["for the talk"]


def test_a_config_of_ones_own_keeps_its_tags_beside_it(tmp_path):
    cfg = tmp_path / "bench.yaml"
    cfg.write_text("datasets: []\n")
    assert tags_path(cfg, tmp_path / "cache") == tmp_path / "bench.tags.json"
    assert legacy_tags_path(cfg) is None
