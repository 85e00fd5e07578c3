"""The Rerun export (``ov3d_core.export.rerun``) on the tiny demo, read back with the rerun SDK itself: the entity
paths, one step per image, the box count of every entity equal to the image's GT / prediction count (counted from
the GT and prediction files, or from the loaded arrays and the Analysis's statuses), the boxes' corners equal to the
benchmark's, labels and colours from the statuses, the camera equal to K, the image / depth / point-cloud files; and
that nothing imports rerun unless the export runs."""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ov3d_core.errors import InputError
from tests.export.rrd import by_step, corners, packed, read_rrd

REPO = Path(__file__).resolve().parents[2]
INDOOR, OUTDOOR = "demo_indoor", "demo_outdoor"


@pytest.fixture(scope="module")
def core(tiny_demo):
    from ov3d_core.analysis import Analysis

    return Analysis.from_yaml(tiny_demo / "benchmark.yaml")


def _ids(core, dataset):
    return core.benchmark.dataset(dataset).images["image_id"].astype(int).tolist()


@pytest.fixture(scope="module")
def indoor(core, tmp_path_factory):
    """The recording of every tiny-demo indoor image (in reverse id order: the timeline follows the list given)."""
    from ov3d_core.analysis import View
    from ov3d_core.export.rerun import export_rerun

    ids = _ids(core, INDOOR)[::-1]
    out = tmp_path_factory.mktemp("rrd") / "indoor.rrd"
    res = export_rerun(core, View(INDOOR), ids, out=out)
    return ids, res, read_rrd(out)


def _run_entity(run: str, what: str = "boxes") -> str:
    return f"world/runs/{run}/{what}"


def test_every_entity_is_there_with_one_step_per_image(core, indoor):
    ids, res, rec = indoor
    runs = core.runs(INDOOR)
    assert res.runs == tuple(runs) and res.image_ids == tuple(ids) and res.notes == ()
    expected = {"world/camera", "world/camera/image", "world/camera/depth", "world/points", "world/gt/boxes",
                "world/camera/image/gt/boxes", "info"}
    for r in runs:
        expected |= {_run_entity(r), _run_entity(r, "missed"), f"world/camera/image/runs/{r}/boxes"}
    assert expected <= set(rec)
    for path in expected:
        steps = by_step(rec[path])
        assert sorted(steps) == list(range(len(ids))), path
        assert [steps[s]["image_id"] for s in range(len(ids))] == ids, path
    (world,) = rec["world"]  # static: the Omni3D camera frame, x right, y down, z forward
    assert world.get("image") is None and world["ViewCoordinates:xyz"] == [[3, 2, 5]]  # Right, Down, Forward


def test_gt_box_counts_equal_the_gt_file(tiny_demo, indoor):
    ids, _, rec = indoor
    gt = json.loads((tiny_demo / "indoor" / "gt.json").read_text())
    per_image = collections.Counter(a["image_id"] for a in gt["annotations"])
    steps = by_step(rec["world/gt/boxes"])
    assert sum(per_image[i] for i in ids) > 0
    for s, image_id in enumerate(ids):
        assert len(steps[s]["Boxes3D:centers"]) == per_image[image_id]
        assert len(steps[s]["Boxes3D:labels"]) == len(steps[s]["Boxes3D:colors"]) == per_image[image_id]


def test_prediction_counts_equal_the_prediction_files_and_the_runs(core, tiny_demo, indoor):
    ids, _, rec = indoor
    checked_files = 0
    for run in core.runs(INDOOR):
        spec = core.benchmark.run_spec(run, INDOOR)
        pred_image = np.asarray(core.benchmark.run(run, INDOOR).pred.image_id, np.int64)
        from_file = None
        if str(spec.predictions).endswith(".json"):
            records = json.loads(Path(spec.predictions).read_text())
            from_file = collections.Counter(int(r["image_id"]) for r in records)
            checked_files += 1
        steps = by_step(rec[_run_entity(run)])
        for s, image_id in enumerate(ids):
            n = len(steps[s]["Boxes3D:centers"])
            assert n == int((pred_image == image_id).sum()), (run, image_id)
            if from_file is not None:
                assert n == from_file[image_id], (run, image_id)
    assert checked_files >= 3  # the demo's JSON runs, counted from their files


def test_missed_boxes_are_the_runs_false_negatives(core, indoor):
    ids, _, rec = indoor
    gt_image = np.asarray(core.benchmark.dataset(INDOOR).gt.image_id, np.int64)
    total = 0
    for run in core.runs(INDOOR):
        gs = core.gt_status(core.view(INDOOR, run))
        fn = gs.loc[gs["status"] == "FN", "gt"].to_numpy(np.int64)
        steps = by_step(rec[_run_entity(run, "missed")])
        for s, image_id in enumerate(ids):
            n = int((gt_image[fn] == image_id).sum())
            assert len(steps[s]["Boxes3D:centers"]) == n, (run, image_id)
            assert all(lab.endswith(" FN") for lab in steps[s]["Boxes3D:labels"])
            total += n
    assert total > 0


def test_labels_and_colours_carry_the_analysis_statuses(core, indoor):
    from ov3d_core.viz.image_overlay import STATUS_COLORS

    ids, _, rec = indoor
    seen = set()
    for run in core.runs(INDOOR):
        status = core.pred_status(core.view(INDOOR, run))["status"].to_numpy(object)
        pred = core.benchmark.run(run, INDOOR).pred
        steps = by_step(rec[_run_entity(run)])
        for s, image_id in enumerate(ids):
            rows = np.flatnonzero(np.asarray(pred.image_id) == image_id)
            labels, colours = steps[s]["Boxes3D:labels"], steps[s]["Boxes3D:colors"]
            for row, label, colour in zip(rows, labels, colours):
                assert label.endswith(f" {status[row]}") and colour == packed(STATUS_COLORS[status[row]])
                assert label.split(" ")[-2] == f"{pred.score[row]:.2f}"  # "class score status"
                seen.add(status[row])
    assert {"TP", "FP"} <= seen


def test_boxes_have_the_benchmarks_corners(core, indoor):
    ids, _, rec = indoor
    ds = core.benchmark.dataset(INDOOR)
    gt_steps = by_step(rec["world/gt/boxes"])
    n = 0
    for s, image_id in enumerate(ids):
        row = gt_steps[s]
        got = corners(row["Boxes3D:centers"], row["Boxes3D:half_sizes"], row["Boxes3D:quaternions"])
        want = ds.gt.corners[np.asarray(ds.gt.image_id) == image_id]
        np.testing.assert_allclose(got, want, atol=2e-4)  # float32 in the file
        n += len(want)
    run = core.runs(INDOOR)[0]
    pred = core.benchmark.run(run, INDOOR).pred
    steps = by_step(rec[_run_entity(run)])
    for s, image_id in enumerate(ids):
        row = steps[s]
        got = corners(row["Boxes3D:centers"], row["Boxes3D:half_sizes"], row["Boxes3D:quaternions"])
        np.testing.assert_allclose(got, pred.corners[np.asarray(pred.image_id) == image_id], atol=2e-4)
        n += len(got)
    assert n > 0


def test_camera_is_k_and_the_image_size(core, indoor):
    ids, _, rec = indoor
    ds = core.benchmark.dataset(INDOOR)
    steps = by_step(rec["world/camera"])
    for s, image_id in enumerate(ids):
        row = int(ds.image_index(np.array([image_id]))[0])
        # Mat3x3 is stored column by column
        (flat,) = steps[s]["Pinhole:image_from_camera"]
        K = np.asarray(flat, np.float64).reshape(3, 3).T
        np.testing.assert_allclose(K, ds.K[row], rtol=1e-6)
        assert steps[s]["Pinhole:resolution"] == [[float(ds.images["width"].iloc[row]),
                                                   float(ds.images["height"].iloc[row])]]
        assert steps[s]["Pinhole:camera_xyz"] == [[3, 2, 5]]


def test_image_depth_and_points_are_the_files(core, indoor):
    import open3d as o3d

    ids, _, rec = indoor
    b = core.benchmark
    images, depth, points = (by_step(rec[p]) for p in ("world/camera/image", "world/camera/depth", "world/points"))
    for s, image_id in enumerate(ids):
        assert bytes(images[s]["EncodedImage:blob"][0]) == b.image_path(INDOOR, image_id).read_bytes()
        dpath = b.asset_path(INDOOR, "depth", image_id)
        assert bytes(depth[s]["EncodedDepthImage:blob"][0]) == dpath.read_bytes()
        assert depth[s]["EncodedDepthImage:meter"] == [1000.0]  # the demo's 16-bit PNG in millimetres
        ply = o3d.io.read_point_cloud(str(b.asset_path(INDOOR, "points", image_id)))
        got = np.asarray(points[s]["Points3D:positions"], np.float64)
        assert len(got) == len(ply.points) > 0  # fewer points than the budget: every one
        np.testing.assert_allclose(np.sort(got, axis=0), np.sort(np.asarray(ply.points), axis=0), atol=1e-5)
        assert len(points[s]["Points3D:colors"]) == len(got)


def test_a_dataset_without_depth_maps_has_points_and_no_depth(core, tmp_path):
    from ov3d_core.analysis import View
    from ov3d_core.export.rerun import export_rerun

    ids = _ids(core, OUTDOOR)
    res = export_rerun(core, View(OUTDOOR), ids, out=tmp_path / "out.rrd")
    rec = read_rrd(tmp_path / "out.rrd")
    assert "world/camera/depth" not in rec and res.notes == ()
    assert sorted(by_step(rec["world/points"])) == list(range(len(ids)))
    assert all(len(r["Points3D:positions"]) > 0 for r in rec["world/points"])


def test_bytes_read_back_like_the_file(core, indoor, tmp_path):
    from ov3d_core.analysis import View
    from ov3d_core.export.rerun import export_rerun

    ids, _, whole = indoor
    res = export_rerun(core, View(INDOOR), [ids[1]], core.runs(INDOOR)[:2])
    assert res.path is None and isinstance(res.data, bytes) and res.nbytes == len(res.data)
    (tmp_path / "one.rrd").write_bytes(res.data)
    one = read_rrd(tmp_path / "one.rrd")
    runs = core.runs(INDOOR)
    assert _run_entity(runs[0]) in one and _run_entity(runs[2]) not in one
    # the one-image export (statuses asked per image) holds the rows the whole export has at that image
    for path in ("world/gt/boxes", _run_entity(runs[0]), _run_entity(runs[1], "missed")):
        (row,) = one[path]
        ref = by_step(whole[path])[1]
        assert row["image_id"] == ids[1] and row["image"] == 0
        for comp in ("Boxes3D:labels", "Boxes3D:colors", "Boxes3D:centers"):
            assert row[comp] == ref[comp]


def test_an_image_without_boxes_or_files_logs_an_empty_batch_and_a_clear(tmp_path):
    from ov3d_core.analysis import Analysis
    from ov3d_core.export.rerun import export_rerun
    from ov3d_core.model import BoxSet, Dataset, Run

    eye = np.tile(np.eye(3), (3, 1, 1))
    gt = BoxSet.from_pose([1, 1, 2], ["car", "chair", "car"], [[0, 0, 10], [1, 0, 8], [0, 0, 12]],
                          [[2, 1.5, 4]] * 3, eye)
    pred = BoxSet.from_pose([1], ["car"], [[0, 0, 10]], [[2, 1.5, 4]], eye[:1], score=[0.9])
    K = np.array([[500.0, 0, 320], [0, 500, 240], [0, 0, 1]])
    a = Analysis.from_objects(Dataset.from_boxes("mine", gt, K=K, width=640, height=480), [Run("det", "mine", pred)])
    res = export_rerun(a, a.view("mine"), [1, 2], out=tmp_path / "m.rrd")
    rec = read_rrd(tmp_path / "m.rrd")
    boxes, missed = by_step(rec[_run_entity("det")]), by_step(rec[_run_entity("det", "missed")])
    assert [len(boxes[s]["Boxes3D:centers"]) for s in (0, 1)] == [1, 0]  # image 2: nothing of image 1 stays
    assert boxes[0]["Boxes3D:labels"] == ["car 0.90 TP"]
    assert [len(missed[s]["Boxes3D:centers"]) for s in (0, 1)] == [1, 1]  # the chair, then image 2's car
    assert [len(r["Boxes3D:centers"]) for r in rec["world/gt/boxes"]] == [2, 1]
    images = by_step(rec["world/camera/image"])
    assert all(images[s].get("Clear:is_recursive") == [False] for s in (0, 1))  # no image file: cleared
    assert res.notes == ("2 image(s) without a readable image file (first: image 1)",)


def test_quaternions_round_trip_and_flag_reflections():
    from scipy.spatial.transform import Rotation

    from ov3d_core.export.rerun import quaternions

    R = Rotation.from_euler("xyz", [[0.1, 0.7, -0.3], [0, 0, 0], [1.2, -0.4, 2.0]]).as_matrix()
    q, bad = quaternions(np.concatenate([R, np.diag([1.0, 1.0, -1.0])[None], np.full((1, 3, 3), np.nan)]))
    np.testing.assert_allclose(Rotation.from_quat(q[:3]).as_matrix(), R, atol=1e-12)
    assert bad.tolist() == [False, False, False, True, True]
    np.testing.assert_allclose(Rotation.from_quat(q[3:]).as_matrix(), np.broadcast_to(np.eye(3), (2, 3, 3)),
                               atol=1e-12)


def test_unknown_images_runs_and_datasets_are_input_errors_and_write_nothing(core, tmp_path):
    from ov3d_core.analysis import View
    from ov3d_core.export.rerun import export_rerun

    out = tmp_path / "x.rrd"
    with pytest.raises(InputError, match="image_id.*got 123"):
        export_rerun(core, View(INDOOR), [_ids(core, INDOOR)[0], 123], out=out)
    with pytest.raises(InputError, match="runs.*got 'nope'"):
        export_rerun(core, View(INDOOR), _ids(core, INDOOR)[:1], ["nope"], out=out)
    with pytest.raises(InputError, match="dataset named 'nope'"):
        export_rerun(core, View("nope"), [1], out=out)
    with pytest.raises(InputError, match="at least one image id"):
        export_rerun(core, View(INDOOR), [], out=out)
    assert list(tmp_path.iterdir()) == []


def test_without_rerun_sdk_the_message_names_the_extra(core, monkeypatch, tmp_path):
    from ov3d_core.analysis import View
    from ov3d_core.export import rerun as export

    monkeypatch.setitem(sys.modules, "rerun", None)  # what `import rerun` meets when rerun-sdk is not installed
    assert not export.rerun_available()
    with pytest.raises(export.RerunMissing) as err:
        export.export_rerun(core, View(INDOOR), _ids(core, INDOOR)[:1], out=tmp_path / "x.rrd")
    assert str(err.value) == export.MISSING_MESSAGE and 'pip install "ov3d-explorer[rerun]"' in str(err.value)
    assert "\n" not in str(err.value) and list(tmp_path.iterdir()) == []


def test_importing_the_core_the_cli_and_the_app_helpers_does_not_import_rerun():
    code = ("import sys\n"
            "import ov3d_core, ov3d_core.analysis, ov3d_core.export, ov3d_core.export.rerun\n"
            "import ov3d_core.commands.export_rerun, ov3d_app.rerun_button\n"
            "from ov3d_core.cli import build_parser\n"
            "build_parser().parse_args(['export-rerun', '--benchmark', 'b.yaml', '--dataset', 'd', '--images', '1',"
            " '--out', 'x.rrd'])\n"
            "print('rerun' in sys.modules, any(m.startswith('rerun') for m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]
