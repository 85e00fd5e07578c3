"""Issue 11 through the command line: argument errors before any work, one line naming the command line (never
``<input>``); a bad file among several fails before any geometry; the cases a user meets first (a ``.pth`` without its
category list, a category list that is not UTF-8, a GT file without annotations) say what happened."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from ov3d_core.cli import main
from tests.io.factories import (
    make_annotation,
    make_gt_json,
    make_image,
    make_pred,
    make_pred_from_annotation,
    make_pred_json,
)


@pytest.fixture()
def files(tmp_path):
    anns = [make_annotation(1, 1, category="chair", center=(0.0, 0.3, 4.0), dims=(0.6, 0.9, 0.6)),
            make_annotation(2, 2, category="table", center=(1.5, 0.3, 6.0), dims=(1.0, 0.7, 1.6))]
    gt = make_gt_json(tmp_path, images=[make_image(1), make_image(2)], annotations=anns)
    pred = make_pred_json(tmp_path, [make_pred_from_annotation(a, score=0.9) for a in anns])
    return gt, pred, tmp_path


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


# ------------------------------------------------------------------------------------------------ argument errors
MISSING = "no/such/bench.yaml"  # never read: the options are refused first
EMBED = ["--benchmark", MISSING, "--dataset", "d", "--run", "r"]


@pytest.mark.parametrize("argv, option", [
    (["evaluate", "--gt", "g.json", "--pred", "p.json", "--min-score", "nan"], "--min-score"),
    (["evaluate", "--gt", "g.json", "--pred", "p.json", "--min-score=-inf"], "--min-score"),
    (["evaluate", "--gt", "g.json", "--pred", "p.json", "--categories", " , "], "--categories"),
    (["evaluate", "--gt", "g.json", "--pred", "p.json", "--run-name", "a", "--run-name", "b"], "--run-name"),
    (["evaluate", "--pred", "p.json"], "--gt/--pred"),
    (["report", "--config", MISSING, "--out", "rep", "--min-score", "nan"], "--min-score"),
    (["report", "--config", MISSING, "--out", "rep", "--encoder", "proxy", "--theta", "inf"], "--theta"),
    (["report", "--config", MISSING, "--out", "rep", "--engine", "ray"], "--engine"),
    (["report", "--config", MISSING, "--out", "rep", "--encoder", "foo"], "--encoder"),
    (["report", "--config", MISSING, "--out", "rep", "--encoder", "proxy", "--theta", "5"], "--theta"),
    (["demo", "build", "--seed", "-1", "--out", "d"], "--seed"),
    (["demo", "build", "--images", "0", "--out", "d"], "--images"),
    (["embed", *EMBED, "--chunk-size", "0"], "--chunk-size"),
    (["embed", *EMBED, "--batch-size", "-3"], "--batch-size"),
    (["embed", *EMBED, "--workers", "2"], "--workers"),
    (["remap", *EMBED, "--out", "o.json", "--chunk-size", "0"], "--chunk-size"),
    (["remap", *EMBED, "--out", "o.json", "--batch-size", "-3"], "--batch-size"),
    (["remap", *EMBED, "--out", "o.json", "--pad", "nan"], "--pad"),
    (["remap", *EMBED, "--out", "o.json", "--theta", "nan"], "--theta"),
    (["remap", *EMBED, "--out", "o.json", "--theta", "2"], "--theta"),
    (["remap", *EMBED, "--out", "o.json", "--encoder", "foo"], "--encoder"),
])
def test_argument_errors_name_the_command_line_and_come_first(tmp_path, monkeypatch, capsys, argv, option):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    line = _one_error_line(capsys)
    assert line.startswith("error: command line: ") and f"`{option}`" in line, line
    assert "<input>" not in line and MISSING not in line and "g.json" not in line
    assert list(tmp_path.iterdir()) == []  # nothing written, nothing read (the files named do not exist)


# ------------------------------------------------------------------------------------------------ files
def test_a_bad_file_among_several_fails_before_any_geometry(files, capsys):
    gt, pred, tmp = files
    bad = tmp / "bad.json"
    bad.write_text(json.dumps([make_pred(1), make_pred(7)]))  # image 7 is not in the GT
    out = tmp / "out.json"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--pred", str(bad), "--json", str(out),
                 "--cache-dir", str(tmp / "cache")]) == 2
    line = _one_error_line(capsys)
    assert str(bad) in line and "[1] (image_id 7)" in line and "`image_id`" in line
    assert not out.exists() and not (tmp / "cache" / "pairs").exists()  # the good run was not scored first


def test_a_pth_without_its_category_list(files, capsys):
    gt, _, tmp = files
    pth = tmp / "instances_predictions.pth"
    torch.save([{"image_id": 1, "K": np.eye(3), "width": 640, "height": 480,
                 "instances": [make_pred(1, category_id=0)]}], pth)
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pth), "--cache-dir", str(tmp / "c")]) == 2
    line = _one_error_line(capsys)
    assert str(pth) in line and "--category-list" in line and "category_list: [...]" in line
    names = tmp / "names.txt"
    names.write_bytes(b"chair\ntable\n")
    out = tmp / "o.json"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pth), "--category-list", str(names), "--json", str(out),
                 "--cache-dir", str(tmp / "c")]) == 0
    block = next(iter(json.loads(out.read_text())["datasets"].values()))
    assert block["per_category"]["chair"]["n_pred"] == 1 and block["per_category"]["table"]["n_pred"] == 0


@pytest.mark.parametrize("content, words", [(b"chair\nt\xe9ble\n", "UTF-8"), (b"\n \n", "an empty file")])
def test_a_category_list_that_is_not_utf8_or_empty(files, capsys, content, words):
    gt, pred, tmp = files
    names = tmp / "names.txt"
    names.write_bytes(content)
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--category-list", str(names),
                 "--cache-dir", str(tmp / "c")]) == 2
    line = _one_error_line(capsys)
    assert str(names) in line and words in line
    assert names.read_bytes() == content


def test_a_gt_file_without_annotations_scores_null_and_says_so(tmp_path, capsys):
    gt = make_gt_json(tmp_path, images=[make_image(1)], annotations=[], categories=[{"id": 18, "name": "chair"}])
    pred = make_pred_json(tmp_path, [make_pred(1, category_id=18)])
    out = tmp_path / "o.json"
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--json", str(out),
                 "--cache-dir", str(tmp_path / "c")]) == 0
    captured = capsys.readouterr()
    assert "has no ground-truth annotations: every AP is NaN" in captured.err
    block = next(iter(json.loads(out.read_text())["datasets"].values()))
    assert block["AP3D"] is None and block["per_category"]["chair"] == {"AP3D": None, "n_gt": 0, "n_pred": 1}


def test_report_lists_predictions_outside_the_vocabulary(files, capsys):
    gt, pred, tmp = files
    recs = json.loads(pred.read_text())
    oov = [dict(recs[0], category_id=5, score=0.5), dict(recs[1], category_id=5, score=0.4),
           dict(recs[1], category_id=None, category_name="lamp", score=0.3)]  # truck, truck, lamp
    (tmp / "other.json").write_text(json.dumps(recs + oov))
    cfg = tmp / "bench.yaml"
    cfg.write_text(f"datasets:\n  - name: mini\n    gt: {gt.name}\nruns:\n"
                   f"  - {{name: clean, dataset: mini, predictions: {pred.name}}}\n"
                   "  - {name: other, dataset: mini, predictions: other.json}\n"
                   f"cache_dir: {tmp / 'cache'}\n")
    assert main(["report", "--config", str(cfg), "--out", str(tmp / "rep"), "--splits", "3", "--subset-size", "1"]) == 0
    out = capsys.readouterr().out
    assert "Predictions outside the evaluated vocabulary (not scored, listed in out_of_vocabulary): other on mini: 3." \
        in out
    table = pd.read_csv(tmp / "rep" / "csv" / "out_of_vocabulary.csv")
    assert sorted(zip(table["run"], table["category"], table["n_pred"])) == [("other", "lamp", 1), ("other", "truck", 2)]
    lb = pd.read_csv(tmp / "rep" / "csv" / "leaderboard.csv").set_index("run")
    assert lb.loc["other", "n_out_of_vocabulary"] == 3 and lb.loc["clean", "n_out_of_vocabulary"] == 0
    assert lb.loc["other", "AP3D"] == lb.loc["clean", "AP3D"]


# ------------------------------------------------------------------------------------------------ output files
def test_output_files_that_cannot_be_written_are_refused_before_the_work(files, capsys):
    """`--json` or `remap --out` naming a folder was a traceback after the whole evaluation."""
    gt, pred, tmp = files
    folder = tmp / "taken"
    folder.mkdir()
    assert main(["evaluate", "--gt", str(gt), "--pred", str(pred), "--json", str(folder),
                 "--cache-dir", str(tmp / "cache")]) == 2
    line = _one_error_line(capsys)
    assert str(folder) in line and "`--json`" in line and "not a folder" in line
    assert not (tmp / "cache").exists()
    assert main(["remap", "--benchmark", MISSING, "--dataset", "d", "--run", "r", "--out", str(folder)]) == 2
    line = _one_error_line(capsys)
    assert str(folder) in line and "`--out`" in line and MISSING not in line


def test_check_output_file_rules(tmp_path):
    from ov3d_core.commands._common import check_output_file
    from ov3d_core.errors import InputError
    from tests.io.test_loud_inputs import _unprivileged

    assert check_output_file(tmp_path / "a.json", "--json") == tmp_path / "a.json"
    assert check_output_file(tmp_path / "new" / "deeper" / "a.json", "--out", folder_must_exist=False)
    with pytest.raises(InputError, match="existing folder"):
        check_output_file(tmp_path / "new" / "a.json", "--json")
    (tmp_path / "f").write_text("x")
    with pytest.raises(InputError, match="folders can be created"):
        check_output_file(tmp_path / "f" / "sub" / "a.json", "--out", folder_must_exist=False)
    with _unprivileged(), pytest.raises(InputError, match="permission denied"):  # a folder nobody may enter
        check_output_file(tmp_path / "a.json", "--json")
    folder = Path(tempfile.mkdtemp(prefix="ov3d_out_"))
    try:
        folder.chmod(0o755)  # others may enter, not write
        with _unprivileged(), pytest.raises(InputError, match="permission denied"):
            check_output_file(folder / "a.json", "--json")
        check_output_file(folder / "a.json", "--json")  # its owner may
    finally:
        folder.rmdir()


def test_report_reads_every_file_before_scoring(files, capsys):
    gt, pred, tmp = files
    bad = tmp / "bad.json"
    bad.write_text(json.dumps([make_pred(1), make_pred(7)]))
    cfg = tmp / "bench.yaml"
    cfg.write_text(f"datasets:\n  - name: mini\n    gt: {gt.name}\nruns:\n"
                   f"  - {{name: good, dataset: mini, predictions: {pred.name}}}\n"
                   "  - {name: bad, dataset: mini, predictions: bad.json}\n"
                   f"cache_dir: {tmp / 'cache'}\n")
    assert main(["report", "--config", str(cfg), "--out", str(tmp / "rep"), "--splits", "3"]) == 2
    line = _one_error_line(capsys)
    assert str(bad) in line and "(image_id 7)" in line
    assert not (tmp / "rep").exists() and not (tmp / "cache" / "pairs").exists()  # nothing scored, nothing written
