"""Per-template prediction files of a prompt-conditioned run (benchmark YAML ``per_template``): parsing, errors that
name the file and field, and Benchmark.run / pairs / run_templates loading each template's own file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from ov3d_core.benchmark import Benchmark
from ov3d_core.errors import InputError
from ov3d_core.io.config import load_config
from tests.io.factories import make_annotation, make_gt_json, make_image, make_pred_from_annotation, make_pred_json


def _write(tmp_path, runs, **ds) -> Path:
    p = tmp_path / "bench.yaml"
    p.write_text(yaml.safe_dump({"datasets": [{"name": "D", "gt": "gt.json", **ds}], "runs": runs}, sort_keys=False))
    return p


@pytest.fixture
def bench_dir(tmp_path):
    anns = [make_annotation(1, 1, center=(0.0, 0.0, 5.0)), make_annotation(2, 2, center=(1.0, 0.0, 6.0))]
    make_gt_json(tmp_path, images=[make_image(1), make_image(2)], annotations=anns)
    # S1: both objects found; PB-state: only the first, with a lower score and a shifted box
    make_pred_json(tmp_path, [make_pred_from_annotation(a, 0.9) for a in anns], name="s1.json")
    shifted = make_pred_from_annotation(anns[0], 0.4)
    shifted["center_cam"] = [0.3, 0.0, 5.0]
    shifted["bbox3D"] = (np.asarray(anns[0]["bbox3D_cam"]) + [0.3, 0.0, 0.0]).tolist()
    make_pred_json(tmp_path, [shifted], name="state.json")
    make_pred_json(tmp_path, [make_pred_from_annotation(anns[1], 0.7)], name="plain.json")
    return tmp_path


def test_per_template_without_predictions_defaults_to_the_first_listed(bench_dir):
    cfg = load_config(_write(bench_dir, [{"name": "ov", "dataset": "D",
                                          "per_template": {"S1": "s1.json", "PB-state": "state.json"}}]))
    spec = cfg.runs[("ov", "D")]
    assert spec.predictions == bench_dir / "s1.json"
    assert list(spec.per_template) == ["S1", "PB-state"]
    assert spec.per_template["PB-state"] == bench_dir / "state.json"
    assert spec.default_template == "S1"


def test_default_template_picks_the_default_file(bench_dir):
    cfg = load_config(_write(bench_dir, [{"name": "ov", "dataset": "D", "default_template": "PB-state",
                                          "per_template": {"S1": "s1.json", "PB-state": "state.json"}}]))
    assert cfg.runs[("ov", "D")].predictions == bench_dir / "state.json"


def test_predictions_beside_per_template_stays_the_default(bench_dir):
    b = Benchmark.from_yaml(_write(bench_dir, [{"name": "ov", "dataset": "D", "predictions": "plain.json",
                                                "per_template": {"S1": "s1.json"}}]))
    assert len(b.run("ov", "D").pred) == 1 and len(b.run("ov", "D", "S1").pred) == 2
    assert b.default_template("ov", "D") is None


@pytest.mark.parametrize("runs, record, field, expected", [
    ([{"name": "a", "dataset": "D", "predictions": "s1.json"},
      {"name": "b", "dataset": "D", "per_template": {"S1": "s1.json"}},
      {"name": "c", "dataset": "D", "per_template": {"S1": "s1.json", "S9": "x.json"}}],
     "runs[2]", "per_template.S9", "a template id"),
    ([{"name": "a", "dataset": "D", "per_template": {"PB-stat": "x.json"}}], "runs[0]", "per_template.PB-stat",
     "did you mean `PB-state`"),
    ([{"name": "a", "dataset": "D"}], "runs[0]", "predictions", "(required)"),
    ([{"name": "a", "dataset": "D", "per_template": {}}], "runs[0]", "per_template", "non-empty mapping"),
    ([{"name": "a", "dataset": "D", "per_template": {"S1": 3}}], "runs[0]", "per_template.S1", "a path"),
    ([{"name": "a", "dataset": "D", "default_template": "S2", "per_template": {"S1": "s1.json"}}], "runs[0]",
     "default_template", "per_template"),
])
def test_bad_per_template_is_one_line_naming_file_record_and_field(bench_dir, runs, record, field, expected):
    p = _write(bench_dir, runs)
    with pytest.raises(InputError) as e:
        load_config(p)
    err = e.value
    assert (err.file, err.record, err.field) == (str(p), record, field), str(err)
    assert expected in err.expected and "\n" not in str(err)


def test_a_missing_template_file_names_the_config_and_field(bench_dir):
    p = _write(bench_dir, [{"name": "a", "dataset": "D", "predictions": "s1.json"},
                           {"name": "ov", "dataset": "D", "per_template": {"S1": "s1.json", "PB-state": "gone.json"}}])
    b = Benchmark.from_yaml(p)
    with pytest.raises(InputError) as e:
        b.run("ov", "D", "PB-state")
    assert (e.value.file, e.value.record, e.value.field) == (str(p), "runs[1]", "per_template.PB-state")
    with pytest.raises(InputError) as e:
        b.run("ov", "D", "S2")  # a template the run has no file for: the error lists the ones it has
    assert "['S1', 'PB-state']" in str(e.value)


def test_each_template_loads_its_own_file_and_geometry(bench_dir):
    b = Benchmark.from_yaml(_write(bench_dir, [
        {"name": "ov", "dataset": "D", "per_template": {"S1": "s1.json", "PB-state": "state.json"}},
        {"name": "plain", "dataset": "D", "predictions": "plain.json"}]))
    assert b.run_templates("ov") == ("S1", "PB-state") and b.run_templates("ov", "D") == ("S1", "PB-state")
    assert b.run_templates("plain") == ()
    assert b.default_template("ov", "D") == "S1"
    s1, state = b.run("ov", "D", "S1"), b.run("ov", "D", "PB-state")
    assert len(s1.pred) == 2 and len(state.pred) == 1
    np.testing.assert_array_equal(np.sort(s1.pred.score), [0.9, 0.9])
    assert state.pred.score.tolist() == [0.4]
    assert b.run("ov", "D", "S1") is s1 and b.run("ov", "D").pred.score.tolist() == [0.9, 0.9]  # default: S1's file
    # geometry per template: the S1 box of image 1 is exact (IoU 1), PB-state's is shifted by 0.3 m along x
    # on a 1 m cube: IoU = 0.7 / 1.3
    p1, p2 = b.pairs("ov", "D", template="S1"), b.pairs("ov", "D", template="PB-state")
    assert p1 is not p2 and b.pairs("ov", "D", template="PB-state") is p2
    assert np.max(p2.iou3d) == pytest.approx(0.7 / 1.3, abs=1e-9)
    assert np.max(p1.iou3d) == pytest.approx(1.0, abs=1e-9)
    assert bench_dir / "state.json" in b.input_files()


def test_existing_calls_are_unchanged_for_a_run_with_one_file(bench_dir):
    b = Benchmark.from_yaml(_write(bench_dir, [{"name": "plain", "dataset": "D", "predictions": "plain.json"}]))
    r = b.run("plain", "D")
    assert b.run("plain", "D") is r and len(r.pred) == 1
    assert b.pairs("plain", "D") is b.pairs("plain", "D")
    with pytest.raises(InputError):
        b.run("plain", "D", "S1")
