"""``ov3d export-rerun`` on the tiny demo: status 0 and a recording that reads back (ids from ``--images`` or from a
failure-mining CSV / a plain list), and status 2 with one line on stderr, writing nothing, for an unknown image id,
an unknown dataset or run, an unwritable ``--out``, bad options, and a missing rerun-sdk."""

from __future__ import annotations

import subprocess
import sys

import pandas as pd
import pytest

from ov3d_core.cli import main
from tests.export.rrd import by_step, read_rrd

DS = "demo_indoor"


@pytest.fixture(scope="module")
def bench(tiny_demo):
    return tiny_demo / "benchmark.yaml"


@pytest.fixture(scope="module")
def ids(bench):
    from ov3d_core.analysis import Analysis

    return Analysis.from_yaml(bench).benchmark.dataset(DS).images["image_id"].astype(int).tolist()


def _cli(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def test_images_give_a_recording_with_one_step_each(bench, ids, tmp_path, capsys):
    out = tmp_path / "scene.rrd"
    code, stdout, err = _cli(capsys, "export-rerun", "--benchmark", bench, "--dataset", DS, "--images",
                             f"{ids[2]},{ids[0]}", "--out", out, "--runs", "ovmono_like,detany_like",
                             "--protocol", "target-aware", "--iou", "0.5")
    assert code == 0, err
    assert stdout.startswith(f"wrote {out}: 2 image(s) of {DS}, 2 run(s) (ovmono_like, detany_like)")
    rec = read_rrd(out)
    steps = by_step(rec["world/camera"])
    assert [steps[s]["image_id"] for s in (0, 1)] == [ids[2], ids[0]]
    assert {p for p in rec if p.startswith("world/runs/")} == {
        f"world/runs/{r}/{w}" for r in ("ovmono_like", "detany_like") for w in ("boxes", "missed")}
    assert "target-aware · statuses at 3D IoU 0.5" in rec["info"][0]["TextDocument:text"][0]


def test_a_failure_mining_csv_gives_its_images_in_order(bench, ids, tmp_path, capsys):
    csv = tmp_path / "mining_fp.csv"
    pd.DataFrame({"rank": [1, 2, 3], "image_id": [ids[3], ids[1], ids[3]], "n_boxes": [4, 2, 1]}).to_csv(csv,
                                                                                                      index=False)
    out = tmp_path / "list.rrd"
    code, stdout, err = _cli(capsys, "export-rerun", "--benchmark", bench, "--dataset", DS, "--images-file", csv,
                             "--out", out)
    assert code == 0, err
    steps = by_step(read_rrd(out)["world/gt/boxes"])
    assert [steps[s]["image_id"] for s in sorted(steps)] == [ids[3], ids[1]]  # a repeated image once
    plain = tmp_path / "ids.txt"
    plain.write_text(f"{ids[0]}\n\n{ids[1]}\n")
    code, _, err = _cli(capsys, "export-rerun", "--benchmark", bench, "--dataset", DS, "--images-file", plain,
                        "--out", out)
    assert code == 0, err
    assert [r["image_id"] for r in read_rrd(out)["world/gt/boxes"]] == [ids[0], ids[1]]


@pytest.mark.parametrize("case", ["unknown image", "unknown dataset", "unknown run", "no folder", "a folder",
                                  "no images", "both images", "bad id", "bad iou", "bad file row"])
def test_bad_input_is_one_line_and_status_2(case, bench, ids, tmp_path, capsys):
    out = tmp_path / "x.rrd"
    bad_csv = tmp_path / "bad.csv"
    bad_csv.write_text(f"rank,image_id\n1,{ids[0]}\n2,chair\n")
    args = {"--benchmark": bench, "--dataset": DS, "--images": str(ids[0]), "--out": out}
    want = {"unknown image": "got 999", "unknown dataset": "dataset named 'nope'", "unknown run": "got 'nope'",
            "no folder": "a file in an existing folder", "a folder": "not a folder", "no images": "--images",
            "both images": "--images", "bad id": "integer image ids", "bad iou": "--iou",
            "bad file row": "bad.csv: line 3"}[case]
    if case == "unknown image":
        args["--images"] = f"{ids[0]},999"
    elif case == "unknown dataset":
        args["--dataset"] = "nope"
    elif case == "unknown run":
        args["--runs"] = "ovmono_like,nope"
    elif case == "no folder":
        args["--out"] = tmp_path / "missing" / "x.rrd"
    elif case == "a folder":
        args["--out"] = tmp_path
    elif case == "no images":
        del args["--images"]
    elif case == "both images":
        args["--images-file"] = bad_csv
    elif case == "bad id":
        args["--images"] = f"{ids[0]},abc"
    elif case == "bad iou":
        args["--iou"] = "0"
    elif case == "bad file row":
        del args["--images"]
        args["--images-file"] = bad_csv
    before = sorted(p.name for p in tmp_path.iterdir())
    code, stdout, err = _cli(capsys, "export-rerun", *[x for kv in args.items() for x in kv])
    assert code == 2 and stdout == ""
    assert want in _one_error_line(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written, not even a partial file


def test_without_rerun_sdk_one_line_names_the_extra(bench, ids, tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "rerun", None)  # what `import rerun` meets when rerun-sdk is not installed
    code, stdout, err = _cli(capsys, "export-rerun", "--benchmark", bench, "--dataset", DS, "--images", ids[0],
                             "--out", tmp_path / "x.rrd")
    assert code == 2 and stdout == ""
    assert 'pip install "ov3d-explorer[rerun]"' in _one_error_line(err)
    assert list(tmp_path.iterdir()) == []


def test_the_process_entry_exits_0_and_2(bench, ids, tmp_path):
    out = tmp_path / "e.rrd"
    ok = subprocess.run([sys.executable, "-m", "ov3d_core", "export-rerun", "--benchmark", str(bench), "--dataset",
                         DS, "--images", str(ids[0]), "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert len(read_rrd(out)["world/gt/boxes"]) == 1
    bad = subprocess.run([sys.executable, "-m", "ov3d_core", "export-rerun", "--benchmark", str(bench), "--dataset",
                          DS, "--images", "999", "--out", str(tmp_path / "f.rrd")], capture_output=True, text=True,
                         timeout=300)
    assert bad.returncode == 2 and "image_id" in _one_error_line(bad.stderr)
    assert not (tmp_path / "f.rrd").exists()
