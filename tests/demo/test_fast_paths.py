"""The generator's fast paths give exactly what the straightforward code gives: the inlined uniform draw, JSON texts
written without json.dumps, the .pth pickling shortcut, the one-projection crop boxes and the layouts without a
backdrop. A build's bytes depend on these being exact, not close."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from ov3d_core.demo import detectors as D
from ov3d_core.demo import jsonfast as J
from ov3d_core.demo.annotate import annotate, projected_box2d_fast
from ov3d_core.demo.build import _canonical, _dumps, build_demo, typical_dims
from ov3d_core.demo.crops import crop_boxes, describe
from ov3d_core.demo.rng import Stream
from ov3d_core.demo.scenes import DATASETS, make_scene, scene_rng
from ov3d_core.demo.shapes import Kit
from ov3d_core.geometry.boxes import corners_from_pose, projected_box2d


# ------------------------------------------------------------------------------------------------ draws
def test_kit_uniform_is_stream_uniform():
    # the shape builder's inlined uniform draw (the generator's transforms themselves: test_rng.py)
    src = np.random.default_rng(7)
    for t in range(2000):
        a, b = Stream([t]), Stream([t])
        lo = float(src.uniform(-50, 50))
        hi = lo + float(src.uniform(0, 30)) * (t % 7 != 0)  # some empty ranges
        assert Kit(a, mesh=False).u(lo, hi) == b.uniform(lo, hi)
        assert a.random() == b.random()


# ------------------------------------------------------------------------------------------------ geometry
def test_projected_box2d_fast_is_projected_box2d():
    rng = np.random.default_rng(0)
    for spec in DATASETS:
        for _ in range(300):
            n = int(rng.integers(1, 30))
            C = rng.uniform(-30, 30, (n, 3))
            C[:, 2] = rng.uniform(-5, 60, n)  # some behind the camera, some straddling it
            Dm = rng.uniform(0.2, 12, (n, 3))
            R = np.linalg.qr(rng.normal(size=(n, 3, 3)))[0]
            corners = corners_from_pose(C, Dm, R)
            for a, b in zip(projected_box2d(corners, spec.K, spec.width, spec.height),
                            projected_box2d_fast(corners, spec.K, spec.width, spec.height)):
                assert a.tobytes() == b.tobytes()


def test_crop_boxes_of_all_runs_at_once_equal_per_run():
    dims = typical_dims(0)
    for spec in DATASETS:
        for index in range(4):
            scene = make_scene(spec, index, 0, mesh=False, backdrop=False)
            _, gts = annotate(scene)
            runs = [D.simulate(run, scene, gts, scene_rng(0, spec, index, 10 + k), dims)
                    for k, run in enumerate(D.RUNS) if not run.templates]  # (a prompt-conditioned run: no crops)
            together = crop_boxes([p for preds in runs for p in preds], spec.K, spec.width, spec.height)
            start = 0
            for preds in runs:
                alone = crop_boxes(preds, spec.K, spec.width, spec.height)
                assert alone.tobytes() == together[start:start + len(preds)].tobytes()
                start += len(preds)


def test_a_layout_without_backdrop_has_the_same_objects():
    for spec in DATASETS:
        for index in range(6):
            full, bare = make_scene(spec, index, 0, mesh=False), make_scene(spec, index, 0, mesh=False, backdrop=False)
            assert [(o.kind, o.x, o.z, o.heading, o.base, o.shape.dims.tolist()) for o in full.objects] == \
                [(o.kind, o.x, o.z, o.heading, o.base, o.shape.dims.tolist()) for o in bare.objects]
            assert (full.cam_x, full.cam_z, full.psi, full.cam_h, full.pitch, full.roll) == \
                (bare.cam_x, bare.cam_z, bare.psi, bare.cam_h, bare.pitch, bare.roll)


# ------------------------------------------------------------------------------------------------ JSON
@pytest.mark.parametrize("value", [
    0.0, -0.0, 1.5, -2.25, 1e-05, -3.5e-06, 123456.789, 1e16, 7, -1, [], [1.0, -0.0, 2], [[0.1, 2e-05], [3.0, 4]],
    float("nan"), float("inf"), [1.0, float("-inf")], [np.float64(1.5)], (1.0, 2.0), True, [True, 1.0]])
def test_nums_is_json_dumps(value):
    assert J.nums(value) == _dumps(value)


def test_record_texts_are_json_dumps_of_the_records():
    dims = typical_dims(0)
    for spec in DATASETS:
        for index in range(5):
            scene = make_scene(spec, index, 0, mesh=False, backdrop=False)
            records, gts = annotate(scene)
            texts, gts2 = annotate(scene, json_records=True)
            assert texts == [_dumps(r) for r in records] == [J.annotation_json(r) for r in records]
            assert [g.ann_id for g in gts] == [g.ann_id for g in gts2]
            for k, run in enumerate(D.RUNS):
                if run.templates:  # one prediction list per template, no crops
                    streams = {t: Stream([0, spec.stream, index, 10 + k, D.template_stream_key(t)])
                               for t in run.templates}
                    per_t = D.simulate_prompted(run, scene, gts, scene_rng(0, spec, index, 10 + k), streams, dims)
                    for preds in per_t.values():
                        ids = [spec.category_id(p.category) for p in preds]
                        names = [p.category for p in preds]
                        assert D.prediction_json(preds, scene.image_id, spec.K, ids, names) == \
                            [_dumps(r) for r in D.prediction_records(preds, scene.image_id, spec.K, ids, names)]
                    continue
                preds = D.simulate(run, scene, gts, scene_rng(0, spec, index, 10 + k), dims)
                ids = [spec.category_id(p.category) for p in preds]
                for names in ([p.category for p in preds], [None] * len(preds)):
                    assert D.prediction_json(preds, scene.image_id, spec.K, ids, names) == \
                        [_dumps(r) for r in D.prediction_records(preds, scene.image_id, spec.K, ids, names)]
                crops = describe(scene, preds, gts)
                for n, (c, text) in enumerate(zip(crops, describe(scene, preds, gts, json_records=True))):
                    assert J.crop_json(c) == text
                    assert text.replace(J.RECORD, str(n)) == _dumps({**c, "record": n})


def test_unusual_records_fall_back_to_json_dumps():
    rec = {"caption": 'a "quoted" caf\u00e9 sign\n', "crop_box": [0.0, float("nan"), 3.5, 4.0], "image_id": 1,
           "overlaps": [{"ann_id": 2, "category": "chair", "fraction": 0.25}]}
    assert J.crop_json(rec).replace(J.RECORD, "7") == _dumps({**rec, "record": 7})
    odd = dict(rec, extra=1)
    assert J.crop_json(odd).replace(J.RECORD, "0") == _dumps({**odd, "record": 0})
    assert J.jstr("caf\u00e9 \u2014 \\") == _dumps("caf\u00e9 \u2014 \\")
    text = J.crop_text(rec["caption"], rec["crop_box"], 1, [(2, "chair", 0.25)])
    assert text.replace(J.RECORD, "7") == _dumps({**rec, "record": 7})


# ------------------------------------------------------------------------------------------------ .pth
def test_pth_objects_and_pickler_write_the_bytes_of_the_plain_route():
    import torch

    dims = typical_dims(0)
    run = D.RUNS_BY_NAME["cubercnn_star"]
    bodies = []
    for spec in DATASETS:
        for index in range(3):
            scene = make_scene(spec, index, 0, mesh=False, backdrop=False)
            _, gts = annotate(scene)
            preds = D.simulate(run, scene, gts, scene_rng(0, spec, index, 10), dims)
            recs = D.prediction_records(preds, scene.image_id, spec.K,
                                        [run.closed_vocabulary.index(p.category) for p in preds], [None] * len(preds))
            bodies.append({"K": np.round(spec.K, 6).tolist(), "height": spec.height, "image_id": scene.image_id,
                           "instances": [{k: r[k] for k in sorted(r)} for r in recs], "width": spec.width})
    plain, fast = io.BytesIO(), io.BytesIO()
    torch.save(json.loads(_dumps(bodies)), plain)  # what the build wrote before the shortcuts
    torch.save(_canonical(bodies), fast)
    assert plain.getvalue() == fast.getvalue()
    assert torch.load(io.BytesIO(fast.getvalue()), weights_only=False)[0]["width"] == DATASETS[0].width


# ------------------------------------------------------------------------------------------------ pool
def test_process_pool_build_equals_serial_build(tmp_path):
    serial = build_demo(tmp_path / "serial", images=12, seed=2, annotations_only=True, workers=1)
    pooled = build_demo(tmp_path / "pooled", images=12, seed=2, annotations_only=True, workers=2)
    assert serial["sha256"] == pooled["sha256"] and serial["counts"] == pooled["counts"]
    for crops in (tmp_path / "serial" / "runs").glob("*.crops.json"):
        assert crops.read_bytes() == (tmp_path / "pooled" / "runs" / crops.name).read_bytes()
