"""`python -m ov3d_core evaluate`: the JSON shape, numbers that match the library, and bad input -> exit 2."""

import json
import subprocess
import sys

import numpy as np
import pytest

from ov3d_core.cli import main
from tests.io.factories import make_annotation, make_gt_json, make_image, make_pred_from_annotation, make_pred_json


@pytest.fixture()
def files(tmp_path):
    anns = [make_annotation(1, 1, category="chair", center=(0.0, 0.3, 4.0), dims=(0.6, 0.9, 0.6)),
            make_annotation(2, 1, category="table", center=(1.5, 0.3, 6.0), dims=(1.0, 0.7, 1.6)),
            make_annotation(3, 2, category="chair", center=(-1.0, 0.3, 12.0), dims=(0.6, 0.9, 0.6))]
    gt = make_gt_json(tmp_path, images=[make_image(1), make_image(2)], annotations=anns)
    preds = [make_pred_from_annotation(anns[0], score=0.9),  # TP chair (near)
             make_pred_from_annotation(anns[1], score=0.8, category_id=18),  # table labelled chair: FP chair
             make_pred_from_annotation(anns[2], score=0.7)]  # TP chair (medium)
    pred = make_pred_json(tmp_path, preds)
    return gt, pred, tmp_path


def test_evaluate_json_shape_and_hand_numbers(files, capsys):
    gt, pred, tmp = files
    out = tmp / "out.json"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--run-name", "r",
                 "--json", str(out), "--cache-dir", str(tmp / "cache")]) == 0
    res = json.loads(out.read_text())
    (name, block), = res["datasets"].items()
    info = json.loads(gt.read_text()).get("info") or {}
    assert name == info.get("name", gt.stem)  # the GT file's info.name, else its stem
    for key in ("AP3D", "AP3D@15", "AP3D@25", "AP3D@50", "AP3D-N", "AP3D-M", "AP3D-F", "recall3D@15"):
        assert key in block
    # chair: dets by score: TP (0.9), FP (0.8, the table), TP (0.7); 2 GT. Precision envelope: recall 0.5 at p=1,
    # recall 1.0 at p=2/3 -> 101-point AP = (51*1 + 50*2/3)/101 at every IoU threshold (perfect boxes).
    chair = (51 + 50 * 2 / 3) / 101 * 100
    assert block["per_category"]["chair"]["AP3D"] == pytest.approx(chair, abs=1e-9)
    # table: one GT, no table prediction -> AP 0 (not NaN: it has GT)
    assert block["per_category"]["table"]["AP3D"] == pytest.approx(0.0)
    assert block["AP3D"] == pytest.approx((chair + 0.0) / 2, abs=1e-9)
    # class-agnostic recall: all 3 GT localised (the mislabelled table too)
    assert block["recall3D@15"] == pytest.approx(1.0)
    # near: chair GT 1 at 4 m (det TP), the FP chair at 6 m is in near too -> same as chair AP over near only GT 1:
    # dets in near: 0.9 TP, 0.8 FP; det at 12 m is out of the near range and unmatched there -> ignored. 1 GT.
    assert block["AP3D-N"] == pytest.approx(np.mean([100.0, 0.0]), abs=1e-9)  # chair 100, table 0 (GT at 6 m)
    assert res["pooled"]["AP3D"] == pytest.approx(block["AP3D"])
    assert "chair" in capsys.readouterr().out


def test_evaluate_target_aware_removes_absent_class_fp(files, tmp_path):
    gt, pred, tmp = files
    out = tmp / "ta.json"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--protocol", "target-aware",
                 "--json", str(out), "--cache-dir", str(tmp / "cache")]) == 0
    block = next(iter(json.loads(out.read_text())["datasets"].values()))
    # chair is present in image 1, so the mislabelled "chair" on the table survives the oracle: same AP.
    assert block["per_category"]["chair"]["AP3D"] == pytest.approx((51 + 50 * 2 / 3) / 101 * 100, abs=1e-9)


def test_evaluate_bad_input_exits_2_without_traceback(tmp_path):
    gt = tmp_path / "gt.json"
    gt.write_text("{not json")
    pred = tmp_path / "p.json"
    pred.write_text("[]")
    proc = subprocess.run([sys.executable, "-m", "ov3d_core", "evaluate", "--gt", str(gt), "--pred", str(pred),
                           "--cache-dir", str(tmp_path / "c")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "gt.json" in proc.stderr


def test_evaluate_benchmark_subsets_and_pooled_presets(files):
    gt, pred, tmp = files
    cfg = tmp / "bench.yaml"
    cfg.write_text(f"""
datasets:
  - name: mini
    gt: {gt.name}
    subsets: {{chairs: [chair], both: [chair, table], unknown: [chair, sofa]}}
runs:
  - name: r
    dataset: mini
    predictions: {pred.name}
""")
    out = tmp / "b.json"
    assert main(["evaluate", "--benchmark", str(cfg), "--json", str(out)]) == 0
    res = json.loads(out.read_text())
    block = res["datasets"]["mini"]
    chair = (51 + 50 * 2 / 3) / 101 * 100
    assert block["subsets"]["chairs"] == pytest.approx(chair, abs=1e-9)
    assert block["subsets"]["both"] == pytest.approx(chair / 2, abs=1e-9)
    assert block["subsets"]["unknown"] is None  # sofa is not evaluated: NaN, as Omni3D's subsets
    # pooled Omni3D / In / Out need all their categories evaluated: null here
    assert res["pooled"]["subsets"] == {"omni3d": None, "omni3d_in": None, "omni3d_out": None}


# ------------------------------------------------------------------------------------------------ argument errors
@pytest.mark.parametrize("extra, field", [
    (["--min-score", "nan"], "--min-score"),
    (["--categories", ","], "--categories"),
    (["--json", "no/such/folder/out.json"], "--json"),
    (["--run-name", "a", "--run-name", "a"], "--run-name"),
])
def test_bad_arguments_exit_2_before_any_work(files, capsys, extra, field):
    gt, pred, tmp = files
    rc = main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--pred", str(pred), "--cache-dir",
               str(tmp / "cache"), *extra])
    err = capsys.readouterr().err
    assert rc == 2 and field in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp / "cache").exists()  # nothing was evaluated


def test_two_prediction_files_with_one_default_name_are_refused(files, tmp_path, capsys):
    gt, pred, tmp = files
    other = tmp_path / "b" / pred.name
    other.parent.mkdir()
    other.write_bytes(pred.read_bytes())
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--pred", str(other),
                 "--cache-dir", str(tmp / "cache")]) == 2
    assert "--run-name" in capsys.readouterr().err
    out = tmp / "two.json"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--pred", str(other), "--run-name", "x",
                 "--run-name", "y", "--json", str(out), "--cache-dir", str(tmp / "cache")]) == 0
    assert set(json.loads(out.read_text())["runs"]) == {"x", "y"}


def test_out_of_vocabulary_predictions_are_counted_not_dropped(files, capsys):
    gt, pred, tmp = files
    out = tmp / "oov.json"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--categories", "table", "--json", str(out),
                 "--cache-dir", str(tmp / "cache")]) == 0
    block = next(iter(json.loads(out.read_text())["datasets"].values()))
    assert block["out_of_vocabulary"] == {"chair": 3}  # all three predictions are chairs, not evaluated
    assert "not evaluated (outside the vocabulary): 3 predictions: chair 3" in capsys.readouterr().out


def test_empty_prediction_file_is_a_valid_run_with_ap_0(files, capsys):
    gt, pred, tmp = files
    empty = tmp / "empty.json"
    empty.write_text("[]")
    out = tmp / "e.json"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(empty), "--json", str(out),
                 "--cache-dir", str(tmp / "cache")]) == 0
    block = next(iter(json.loads(out.read_text())["datasets"].values()))
    assert block["AP3D"] == 0.0 and block["recall3D@15"] == 0.0
    assert "no predictions" in capsys.readouterr().err


@pytest.mark.parametrize("args, field", [(["--seed", "-1"], "--seed"), (["--out", "FILE"], "--out")])
def test_demo_build_argument_errors(tmp_path, capsys, args, field):
    f = tmp_path / "taken"
    f.write_text("x")
    args = [str(f) if a == "FILE" else a for a in args]
    assert main(["demo", "build", "--images", "1", "--no-progress", "--annotations-only", *args,
                 *([] if "--out" in args else ["--out", str(tmp_path / "d")])]) == 2
    err = capsys.readouterr().err
    assert field in err and "Traceback" not in err and f.read_text() == "x"
