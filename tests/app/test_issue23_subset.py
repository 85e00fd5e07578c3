"""Issue 23 (app): the sidebar's image subset (``View.subset``) on every page, in the shared state and the URL.

The tiny demo's subsets hold all of its 4 images (the demo caps them at the dataset's size), so a copy of it with a
2-image ``prompt_probe`` is opened as a benchmark config: there the subset's numbers differ from the full ones.
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from ov3d_core.analysis import Analysis, View
from tests.app.conftest import PAGES
from tests.app.test_pages import app, problems

DS = "demo_indoor"
SUB = "prompt_probe"
N_SUB = 2


def _md(text: str) -> str:
    """A name as the page's markdown writes it (``ui.md``: underscores escaped)."""
    return text.replace("_", "\\_")


@pytest.fixture(scope="module")
def sub_config(tiny_demo, tmp_path_factory):
    """``benchmark.yaml`` of a copy of the tiny demo whose ``prompt_probe`` subsets hold 2 of the 4 images."""
    root = tmp_path_factory.mktemp("i23_subset") / "bench"
    shutil.copytree(tiny_demo, root)
    cfg = root / "benchmark.yaml"
    text, n = re.subn(r"(prompt_probe:[^\n]*\n\s+rule: random\n\s+n: )\d+", rf"\g<1>{N_SUB}", cfg.read_text())
    assert n == 3
    cfg.write_text(text)
    return cfg


def _open(cfg, page=None, **query):
    return app(page, src="config", cfg=str(cfg), **query)


def _board(at):
    for d in at.dataframe:
        if {"dataset", "run", "AP3D", "n_images"} <= set(d.value.columns):
            return d.value.set_index("run")
    raise AssertionError("no leaderboard")


def _infos(at) -> str:
    return " ".join(i.value for i in at.info)


def test_subset_selector_scores_the_overview_on_the_subset(sub_config):
    A = Analysis.from_yaml(sub_config)
    ids = A.benchmark.image_subset(DS, SUB)
    assert len(ids) == N_SUB < len(A.benchmark.dataset(DS).images)
    at = _open(sub_config, ds=DS)
    assert not problems(at), problems(at)
    full = _board(at)
    assert "sub" not in at.query_params
    assert "subset" not in _infos(at)
    box = at.sidebar.selectbox(key="w:subset")
    assert box.options == ["all images", *A.benchmark.image_subsets(DS)]

    box.set_value(SUB).run()
    assert not problems(at), problems(at)
    assert at.query_params["sub"] == SUB
    assert at.session_state["subset"] == SUB
    assert f"subset **{_md(SUB)}** of {_md(DS)}, {N_SUB} of its 4 images" in _infos(at)
    board = _board(at)
    assert list(board.index) == A.runs(DS)
    for run in A.runs(DS):
        s = A.summary(View(DS, run, subset=SUB))
        for k in ("AP3D", "AP3D@15", "AP3D@25", "AP3D@50", "recall3D@15"):
            np.testing.assert_allclose(board.loc[run, k], s[k], rtol=1e-9, atol=1e-12, equal_nan=True, err_msg=k)
        assert board.loc[run, "n_images"] == N_SUB
    assert not np.allclose(board["AP3D"].to_numpy(float), full["AP3D"].to_numpy(float), equal_nan=True)
    # the per-run metrics above the board: the focus run on the subset
    focus = A.runs(DS)[0]
    assert any(m.label == "mAP3D" and m.value == f"{A.summary(View(DS, focus, subset=SUB))['AP3D']:.2f}"
               for m in at.metric)

    at.sidebar.selectbox(key="w:subset").set_value(None).run()
    assert not problems(at), problems(at)
    assert "sub" not in at.query_params
    back = _board(at)
    for run in A.runs(DS):
        s = A.summary(View(DS, run))
        np.testing.assert_allclose(back.loc[run, "AP3D"], s["AP3D"], rtol=1e-9, atol=1e-12, equal_nan=True)
        assert back.loc[run, "n_images"] == 4
    assert "subset" not in _infos(at)


def test_subset_from_the_url_reaches_another_page(sub_config):
    """The PR-curves page opened with ?sub=prompt_probe: its operating points are those of the subset's views."""
    A = Analysis.from_yaml(sub_config)
    at = _open(sub_config, "app_pages/curves.py", ds=DS, sub=SUB)
    assert not problems(at), problems(at)
    assert f"subset **{_md(SUB)}**" in _infos(at)
    ops = next(d.value for d in at.dataframe if {"run", "category", "tp", "fp"} <= set(d.value.columns))
    for run in A.runs(DS):
        want = A.operating_points(View(DS, run, subset=SUB))
        got = ops[ops["run"] == run]
        assert got["tp"].tolist() == want["tp"].tolist()
        assert got["fp"].tolist() == want["fp"].tolist()


@pytest.mark.parametrize("page", [p for p in PAGES if p.endswith(("overview.py", "curves.py", "errors.py",
                                                                      "splits.py"))])
def test_every_page_says_the_subset(sub_config, page):
    at = _open(sub_config, page, ds=DS, sub=SUB)
    assert not problems(at), problems(at)
    assert f"subset **{_md(SUB)}**" in _infos(at)


def test_unknown_subset_in_the_url_is_a_message(sub_config):
    at = _open(sub_config, ds=DS, sub="no_such_subset")
    assert not problems(at), problems(at)
    assert any("no image subset" in w.value and "no\\_such\\_subset" in w.value for w in at.warning)
    assert at.session_state["subset"] is None
    assert "sub" not in at.query_params
    assert _board(at)["n_images"].eq(4).all()


def test_the_scene_inspector_steps_through_the_subsets_images_only(sub_config):
    """The per-box pages list the subset's images only, with the whole dataset's rows (ui.per_box): the statuses of
    a box depend on its own image, so they are those of the subset's evaluation."""
    a = Analysis.from_yaml(sub_config)
    ids = a.benchmark.image_subset(DS, SUB).tolist()
    at = _open(sub_config, "app_pages/scene.py", ds=DS, sub=SUB)
    assert not problems(at), problems(at)
    box = next(s for s in at.selectbox if s.label == "Image")
    assert sorted(int(str(o).removeprefix("image ")) for o in box.options) == sorted(ids)  # "image 100000"
    # a box's status is the same in the subset's evaluation and in the whole dataset's, image by image
    run = a.runs(DS)[0]
    full, sub = a.status_tables(View(DS, run, iou=0.25)), a.status_tables(View(DS, run, iou=0.25, subset=SUB))
    kept = full["pred"][full["pred"]["image_id"].isin(ids)]
    assert kept["status"].tolist() == sub["pred"]["status"].tolist()


@pytest.mark.parametrize("page", ["app_pages/grid.py", "app_pages/mining.py", "app_pages/object.py"])
def test_the_per_box_pages_open_on_a_subset(sub_config, page):
    at = _open(sub_config, page, ds=DS, sub=SUB)
    assert not problems(at), problems(at)
