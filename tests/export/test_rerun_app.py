"""AppTest on the tiny demo: the scene inspector's and the object view's "Rerun (.rrd)" buttons hand the browser the
recording of the image shown (the bytes Streamlit's media file manager gets from the button, read back with the rerun
SDK); without rerun-sdk the button's click is a one-line error naming the extra; and rendering both pages imports
no rerun."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from tests.app.test_pages import app, problems
from tests.app.test_tags_export import downloads  # noqa: F401  (the fixture: file name -> the button's data)
from tests.export.rrd import by_step, read_rrd

DS = "demo_indoor"
REPO = Path(__file__).resolve().parents[2]


def _read(data, tmp_path) -> dict:
    assert isinstance(data, bytes) and data[:4] == b"RRF2", type(data)
    (tmp_path / "got.rrd").write_bytes(data)
    return read_rrd(tmp_path / "got.rrd")


def _counts(tiny_demo, image_id: int) -> dict[str, int]:
    from ov3d_core.analysis import Analysis

    b = Analysis.from_yaml(tiny_demo / "benchmark.yaml").benchmark
    out = {"world/gt/boxes": int((np.asarray(b.dataset(DS).gt.image_id) == image_id).sum())}
    for run in b.run_names(DS):
        out[f"world/runs/{run}/boxes"] = int((np.asarray(b.run(run, DS).pred.image_id) == image_id).sum())
    return out


def test_the_scene_inspectors_button_gives_the_recording_of_the_image(tiny_demo, downloads, tmp_path):  # noqa: F811
    at = app("app_pages/scene.py")
    assert not problems(at)
    image_id = int(at.session_state["image_id"])
    rec = _read(downloads[f"scene_{DS}_{image_id}.rrd"](), tmp_path)
    want = _counts(tiny_demo, image_id)
    assert len(want) > 2 and sum(want.values()) > 0
    for path, n in want.items():
        (row,) = rec[path]
        assert row["image_id"] == image_id and len(row["Boxes3D:centers"]) == n, path
    assert {"world/camera", "world/camera/image", "world/camera/depth", "world/points"} <= set(rec)


def test_the_object_views_button_gives_the_objects_image(tiny_demo, downloads, tmp_path):  # noqa: F811
    at = app("app_pages/object.py")
    assert not problems(at)
    g = int(at.session_state["gt_row"])
    from ov3d_core.analysis import Analysis

    image_id = int(Analysis.from_yaml(tiny_demo / "benchmark.yaml").benchmark.dataset(DS).gt.image_id[g])
    rec = _read(downloads[f"object_{DS}_{g}.rrd"](), tmp_path)
    assert by_step(rec["world/camera"])[0]["image_id"] == image_id
    for path, n in _counts(tiny_demo, image_id).items():
        assert len(by_step(rec[path])[0]["Boxes3D:centers"]) == n, path


def test_without_rerun_sdk_the_click_says_which_extra(tiny_demo, monkeypatch):
    from ov3d_core.export.rerun import MISSING_MESSAGE

    monkeypatch.setitem(sys.modules, "rerun", None)  # what `import rerun` meets when rerun-sdk is not installed
    at = app("app_pages/scene.py")
    assert not problems(at)
    (button,) = [b for b in at.button if b.key == "rrd:scene_rrd"]
    button.click().run()
    assert [e.value for e in at.error] == [MISSING_MESSAGE] and not at.exception


def test_rendering_the_pages_imports_no_rerun(tiny_demo):
    code = ("import sys\n"
            "from tests.app.test_pages import app, problems\n"
            "pages = (('app_pages/scene.py', 'dl:scene_rrd:rrd'), ('app_pages/object.py', 'dl:obj_rrd:rrd'))\n"
            "for page, key in pages:\n"
            "    at = app(page)\n"
            "    assert not problems(at), problems(at)\n"
            "    assert key in [b.key for b in at.get('download_button')], page  # the button is there\n"
            "print(sorted(m for m in sys.modules if m == 'rerun' or m.startswith(('rerun.', 'rerun_'))))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=dict(os.environ), capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
