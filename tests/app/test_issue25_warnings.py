"""Issue 25, item 3: the counted warnings of a load (here ``CornerMismatchWarning``: a GT whose ``bbox3D_cam`` corners
are stored in another order) reach the app, not only the CLI: every page that uses the dataset shows one
``st.warning`` with the count, the file (its basename only) and the field; the Data source page lists them with the
benchmark that is open."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import pytest

from ov3d_core.benchmark import Benchmark
from ov3d_core.io import CornerMismatchWarning
from tests.app.test_pages import app, problems

N_SWAPPED = 3


@pytest.fixture(scope="module")
def swapped(mini_config, tmp_path_factory) -> Path:
    """A copy of the mini benchmark whose MiniIndoor GT lists the corners of its first ``N_SWAPPED`` annotations in
    another order (corners 0 and 6 exchanged: same box, other corner convention)."""
    root = tmp_path_factory.mktemp("corner_order") / "bench"
    shutil.copytree(mini_config.parent, root, ignore=shutil.ignore_patterns(".ov3d_cache"))
    gt = root / "MiniIndoor" / "gt.json"
    doc = json.loads(gt.read_text())
    for a in doc["annotations"][:N_SWAPPED]:
        c = a["bbox3D_cam"]
        c[0], c[6] = c[6], c[0]
    gt.write_text(json.dumps(doc))
    return root / mini_config.name


def _warnings(at) -> list[str]:
    return [w.value for w in at.warning]


def test_the_benchmark_hands_its_load_warnings_over(swapped):
    b = Benchmark.from_yaml(swapped)
    with pytest.warns(CornerMismatchWarning):  # still raised for the CLI
        b.dataset("MiniIndoor")
    [w] = b.load_warnings("MiniIndoor")
    assert (w.dataset, w.run, w.category) == ("MiniIndoor", None, "CornerMismatchWarning")
    assert f"{N_SWAPPED} annotation(s)" in w.message and "gt.json" in w.message and "bbox3D_cam" in w.message
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        b.dataset("MiniOutdoor")
    assert b.load_warnings("MiniOutdoor") == [] and len(b.load_warnings()) == 1


@pytest.mark.parametrize("page", ["app_pages/overview.py", "app_pages/scene.py", "app_pages/object.py"])
def test_a_page_using_the_gt_shows_its_warning(swapped, page):
    at = app(page, src="config", cfg=str(swapped), ds="MiniIndoor")
    assert not problems(at), problems(at)
    shown = [w for w in _warnings(at) if "CornerMismatchWarning" in w]
    assert len(shown) == 1, _warnings(at)
    text = shown[0]
    assert f"{N_SWAPPED} annotation(s)" in text and "gt.json" in text and "`bbox3D_cam`" in text
    assert str(swapped.parent) not in text  # the file by its basename: the server's folders stay private


def test_a_page_on_another_dataset_does_not(swapped):
    at = app("app_pages/scene.py", src="config", cfg=str(swapped), ds="MiniOutdoor")
    assert not problems(at), problems(at)
    assert not [w for w in _warnings(at) if "CornerMismatchWarning" in w]


def test_the_data_source_page_lists_the_warnings_of_the_open_benchmark(swapped):
    at = app("app_pages/data_source.py", src="config", cfg=str(swapped))
    assert not problems(at), problems(at)
    shown = [w for w in _warnings(at) if "CornerMismatchWarning" in w]
    assert len(shown) == 1 and f"{N_SWAPPED} annotation(s)" in shown[0] and "MiniIndoor" in shown[0]
    assert any("with 1 warning(s) above" in c.value for c in at.caption)
