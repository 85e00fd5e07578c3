"""Your own data in a minute: uploaded files and server folders become a benchmark config (``ov3d_app.sources``,
the Data source page). The upload through a real browser is in ``test_source_browser.py``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ov3d_app import sources
from ov3d_core.analysis import Analysis
from ov3d_core.errors import InputError

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def mini_uploads(mini_config: Path, *, with_images: bool = True):
    """The MiniIndoor GT, its two runs and (optionally) its images as uploads, as a browser sends them."""
    root = mini_config.parent
    gt = [sources.Upload("gt.json", (root / "MiniIndoor" / "gt.json").read_bytes())]
    preds = [sources.Upload(f"{run}.json", (root / "MiniIndoor" / run / "preds.json").read_bytes())
             for run in ("good", "sloppy")]
    images = [sources.Upload(f"my_images/{p.name}", p.read_bytes())
              for p in sorted((root / "MiniIndoor" / "images").glob("*.jpg"))] if with_images else []
    return gt, preds, images


def test_upload_layout_is_safe_and_places_images_where_the_gt_says(mini_config):
    gt, preds, images = mini_uploads(mini_config)
    hostile = [sources.Upload("../../etc/passwd.json", b"[]"), sources.Upload("/abs/x.json", b"[]"),
               sources.Upload("a/../../b\\c.pth", b"x"), sources.Upload("category_list.txt", b"chair\n")]
    layout = dict(sources.upload_layout(gt, preds + hostile, images))
    for rel in layout:
        parts = rel.split("/")
        assert ".." not in parts and not rel.startswith("/") and "\\" not in rel, rel
    assert "gt.json" in layout
    assert {"predictions/good/good.json", "predictions/sloppy/sloppy.json"} <= set(layout)
    assert "predictions/c/c.pth" in layout and "predictions/c/category_list.txt" in layout  # list beside the .pth
    # the GT's file_path values are MiniIndoor/images/<id>.jpg: the images go there, under the GT's folder
    file_paths = {im["file_path"] for im in json.loads(gt[0].data)["images"]}
    assert file_paths <= set(layout)
    assert sources.safe_parts("..\\..//x<y>.json") == ["x_y_.json"]
    with pytest.raises(InputError, match="at least one GT file"):
        sources.upload_layout([], preds)


def test_an_upload_is_stored_once_and_never_overwritten(mini_config, tmp_path):
    gt, preds, images = mini_uploads(mini_config)
    a = sources.store_upload(gt, preds, images, cache_dir=tmp_path)
    stamp = {p: p.stat().st_mtime_ns for p in a.rglob("*") if p.is_file()}
    b = sources.store_upload(gt, preds, images, cache_dir=tmp_path)
    assert a == b and {p: p.stat().st_mtime_ns for p in a.rglob("*") if p.is_file()} == stamp
    c = sources.store_upload(gt, preds[:1], images, cache_dir=tmp_path)  # other files: another folder
    assert c != a and not (c / "predictions" / "sloppy").exists()
    assert not [p for p in (tmp_path / "uploads").iterdir() if p.name.startswith(".")]  # no staging left


def test_an_upload_becomes_a_benchmark_with_the_same_numbers(mini_config, tmp_path):
    gt, preds, images = mini_uploads(mini_config)
    folder = sources.store_upload(gt, preds, images, cache_dir=tmp_path)
    roots = (tmp_path,)
    fc = sources.config_for_folder(folder, roots=roots, out_dir=folder, name="uploaded", cache_dir=tmp_path)
    assert fc.path == folder / "benchmark.yaml" and "guessed" in fc.text
    got = Analysis.from_yaml(fc.path, allowed_roots=roots)
    ref = Analysis.from_yaml(mini_config)
    [ds] = got.datasets
    assert sorted(got.runs(ds)) == ["good", "sloppy"]
    for run in ("good", "sloppy"):
        mine, theirs = got.leaderboard_row(got.view(ds, run)), ref.leaderboard_row(ref.view("MiniIndoor", run))
        assert mine["AP3D"] == pytest.approx(theirs["AP3D"], abs=1e-12)
    path = got.benchmark.image_path(ds, 100)
    assert path is not None and Path(path).is_file()  # the images resolve where the GT says
    again = sources.config_for_folder(folder, roots=roots, out_dir=folder, name="uploaded", cache_dir=tmp_path)
    assert again.path == fc.path  # the same text: the same file, untouched


def test_scanning_a_folder_writes_a_new_config_into_the_cache_only(mini_config, tmp_path):
    data = mini_config.parent
    before = sorted(p.name for p in data.iterdir())
    fc = sources.config_for_folder(data, roots=(data, tmp_path), cache_dir=tmp_path)
    assert fc.path.is_relative_to(tmp_path / "scans") and sorted(p.name for p in data.iterdir()) == before
    summary = sources.scan_summary(fc.scan)
    assert {d["dataset"] for d in summary["datasets"]} == {"MiniIndoor", "MiniOutdoor"}
    assert sorted(r["dataset"] for r in summary["runs"] if r["used"]) == ["MiniIndoor"] * 2 + ["MiniOutdoor"] * 2
    a = Analysis.from_yaml(fc.path, allowed_roots=(data, tmp_path))
    assert set(a.datasets) == {"MiniIndoor", "MiniOutdoor"}
    fc.path.write_text(fc.path.read_text() + "# edited by hand\n")
    again = sources.config_for_folder(data, roots=(data, tmp_path), cache_dir=tmp_path)
    assert again.path != fc.path and fc.path.read_text().endswith("# edited by hand\n")  # never overwritten


def test_a_folder_outside_the_roots_is_refused_by_basename(tmp_path):
    outside = tmp_path / "private_lab"
    outside.mkdir()
    for target in (outside, tmp_path / "nope" / "private_lab"):
        with pytest.raises(InputError) as info:
            sources.config_for_folder(target, roots=(tmp_path / "allowed",), cache_dir=tmp_path)
        assert str(info.value).startswith("private_lab: ") and str(tmp_path) not in str(info.value)


def test_the_data_source_page_scans_a_folder_and_opens_the_benchmark(tiny_demo, mini_config):
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params.update({"proto": "target-aware"})
    at.run()
    at.switch_page("app_pages/data_source.py")
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.text_input(key="scan_folder").input(str(mini_config.parent)).run()
    at.button(key="scan_go").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert {"MiniIndoor", "MiniOutdoor"} <= set(at.dataframe[0].value["dataset"])
    at.button(key="src_open").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    ctx = at.session_state["_ctx"]
    assert at.session_state["source"] == "config" and ctx.dataset in ("MiniIndoor", "MiniOutdoor")
    assert ctx.protocol == "target-aware"  # the settings stayed
    assert at.title[0].value == "Overview" and at.dataframe[0].value["run"].tolist()
    cfg = Path(at.session_state["config_path"])
    assert sources.app_cache_dir() in cfg.resolve().parents


def test_the_data_source_page_refuses_a_folder_outside_the_roots(tiny_demo, tmp_path_factory):
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    at.switch_page("app_pages/data_source.py")
    at.run()
    at.text_input(key="scan_folder").input("/etc").run()
    at.button(key="scan_go").click().run()
    assert not at.exception
    assert any(e.value.startswith("The scan: etc\\:") and "outside" in e.value for e in at.error)
