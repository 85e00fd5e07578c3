"""KITTI label_2 import (reference §6): conversion checked against the devkit's own box, filter, errors."""

from __future__ import annotations

import numpy as np
import pytest

from ov3d_core.errors import InputError
from ov3d_core.io import load_kitti_gt, load_kitti_predictions
from ov3d_core.io.kitti import kitti_to_omni3d, parse_label_file

# KITTI training image 000000: its calib P2 and its one label line.
P2_LINE = ("P2: 7.215377e+02 0.000000e+00 6.095593e+02 4.485728e+01 0.000000e+00 7.215377e+02 1.728540e+02 "
           "2.163791e-01 0.000000e+00 0.000000e+00 1.000000e+00 2.745884e-03")
P2 = np.array([float(v) for v in P2_LINE.split()[1:]]).reshape(3, 4)
PED = "Pedestrian 0.00 0 -0.20 712.40 143.00 810.73 307.92 1.89 0.48 1.20 1.84 1.47 8.41 0.01"
CAR = "Car 0.12 1 1.85 387.63 181.54 423.81 203.12 1.67 1.87 3.69 -16.53 2.39 58.49 1.57"

LABELS = {
    "000000": [PED],
    "000003": [CAR, "Person_sitting 0.00 0 0.5 100.0 150.0 140.0 260.0 1.2 0.6 0.8 -2.0 1.6 9.0 0.3",
               "Misc 0.00 0 0.1 500.0 170.0 560.0 230.0 1.5 1.0 2.0 3.0 1.7 20.0 0.2",
               "DontCare -1 -1 -10 800.0 160.0 840.0 180.0 -1 -1 -1 -1000 -1000 -1000 -10",
               "Van 0.50 2 0.2 0.0 150.0 120.0 250.0 2.0 1.9 4.5 -8.0 1.7 10.0 0.2"],
}


def write_kitti(tmp_path, labels=LABELS, image_size=(1224, 370)):
    """label_2/, calib/ and image_2/ folders (tiny PNGs of the given size) for ``labels``."""
    from PIL import Image

    label_dir, calib_dir, image_dir = tmp_path / "label_2", tmp_path / "calib", tmp_path / "image_2"
    for d in (label_dir, calib_dir, image_dir):
        d.mkdir(exist_ok=True)
    for stem, lines in labels.items():
        (label_dir / f"{stem}.txt").write_text("\n".join(lines) + "\n")
        (calib_dir / f"{stem}.txt").write_text(
            "P0: 1 0 0 0 0 1 0 0 0 0 1 0\n" + P2_LINE + "\nR0_rect: 1 0 0 0 1 0 0 0 1\n")
        Image.new("RGB", image_size).save(image_dir / f"{stem}.png")
    return label_dir, calib_dir, image_dir


def devkit_corners(h, w, l, loc, ry):
    """The KITTI devkit's corners (computeBox3D): local y from 0 up to -h, R_y written out here on purpose."""
    x = [l / 2, l / 2, -l / 2, -l / 2, l / 2, l / 2, -l / 2, -l / 2]
    y = [0, 0, 0, 0, -h, -h, -h, -h]
    z = [w / 2, -w / 2, -w / 2, w / 2, w / 2, -w / 2, -w / 2, w / 2]
    c, s = np.cos(ry), np.sin(ry)
    Ry = np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])
    return (Ry @ np.array([x, y, z])).T + np.asarray(loc)


def _one_line_error(call, *parts):
    with pytest.raises(InputError) as e:
        call()
    msg = str(e.value)
    assert "\n" not in msg and "Traceback" not in msg
    for part in parts:
        assert part in msg, (part, msg)
    return msg


def sorted_rows(a):
    a = np.round(np.asarray(a), 9)
    return a[np.lexsort(a.T[::-1])]


@pytest.mark.parametrize("line", [PED, CAR])
def test_conversion_matches_devkit(tmp_path, line):
    f = tmp_path / "x.txt"
    f.write_text(line + "\n")
    types, vals, _ = parse_label_file(f, with_score=False)
    conv = kitti_to_omni3d(vals, P2)
    h, w, l = vals[0, 7:10]
    loc, ry = vals[0, 10:13], vals[0, 13]
    K = P2[:, :3]
    t = np.linalg.solve(K, P2[:, 3])
    assert 0.05 < t[0] < 0.07  # the cam0 -> cam2 baseline
    np.testing.assert_allclose(conv["dims"][0], [w, h, l])
    np.testing.assert_allclose(conv["center"][0], loc + [0, -h / 2, 0] + t)
    # The corner set is the devkit's, shifted by t.
    np.testing.assert_allclose(sorted_rows(conv["corners"][0]), sorted_rows(devkit_corners(h, w, l, loc, ry) + t),
                               atol=1e-9)
    # The projected bottom-face centre with the 3x3 K equals P2 applied to the KITTI location.
    bottom = conv["corners"][0][[2, 3, 6, 7]].mean(axis=0)  # local y = +h/2 (down) face
    uv_k = K @ bottom
    uv_p2 = P2 @ np.append(loc, 1.0)
    np.testing.assert_allclose(uv_k[:2] / uv_k[2], uv_p2[:2] / uv_p2[2], atol=1e-9)
    np.testing.assert_allclose(conv["bbox2D_tight"][0], vals[0, 3:7])


def test_load_kitti_gt(tmp_path):
    label_dir, calib_dir, image_dir = write_kitti(tmp_path)
    ds = load_kitti_gt(label_dir, calib_dir, image_dir=image_dir)
    assert ds.name == "KITTI" and ds.environment == "outdoor" and not ds.proximity
    assert ds.images["image_id"].tolist() == [0, 3]
    assert ds.images["width"].tolist() == [1224, 1224] and ds.images["height"].tolist() == [370, 370]
    assert ds.images["file_path"].tolist() == ["000000.png", "000003.png"] and ds.root == str(image_dir)
    np.testing.assert_allclose(ds.K[0], P2[:, :3])
    np.testing.assert_allclose(ds.images["p2"].iloc[1], P2)
    assert "misc" not in ds.vocabulary and "dontcare" not in ds.vocabulary and "person" in ds.vocabulary
    gt = ds.gt
    # DontCare dropped (ignore name); Misc kept but flagged; Person_sitting -> person.
    assert gt.category.tolist() == ["pedestrian", "car", "person", "misc", "van"]
    assert gt.record.tolist() == [1, 30001, 30002, 30003, 30005]
    assert gt.data["category_id"].tolist() == [0, 1, 7, -1, 4]
    reasons = dict(zip(gt.category.tolist(), gt.data["ignore_reason"].tolist()))
    assert reasons["misc"] == "misc" and reasons["pedestrian"] == "" and reasons["person"] == ""
    assert reasons["van"] == "truncation"  # KITTI truncated 0.50 >= 1/3
    assert reasons["car"] == "min_height"  # 58 m away: projected height < 0.0625 * 370
    np.testing.assert_allclose(gt.data["bbox2D_tight"][0], [712.40, 143.00, 810.73, 307.92])
    np.testing.assert_allclose(gt.data["truncation"], [0.0, 0.12, 0.0, 0.0, 0.5])
    assert (gt.data["visibility"] == -1).all() and gt.data["valid3D"].all()
    assert (gt.data["lidar_pts"] == -1).all() and (gt.data["depth_error"] == -1).all()
    # The evaluation box is the truncated projection, as for Omni3D files.
    assert gt.box2d[0].tolist() == gt.data["bbox2D_trunc"][0].tolist()
    np.testing.assert_allclose(gt.depth, gt.center[:, 2])


def test_default_image_size_and_subset(tmp_path):
    label_dir, calib_dir, _ = write_kitti(tmp_path)
    ds = load_kitti_gt(label_dir, calib_dir, image_ids=[3], name="KITTI_val", categories=["car", "van"])
    assert ds.name == "KITTI_val" and ds.images["image_id"].tolist() == [3]
    assert ds.images["width"].tolist() == [1242] and ds.images["height"].tolist() == [375]
    assert ds.vocabulary == ("car", "van")
    assert ds.gt.category.tolist() == ["car", "misc", "van"]
    with pytest.raises(InputError, match="`image_ids`.*got 5"):
        load_kitti_gt(label_dir, calib_dir, image_ids=[5])


def gt_and_results_dir(tmp_path):
    """The LABELS dataset loaded, and an empty results folder."""
    label_dir, calib_dir, _ = write_kitti(tmp_path)
    res = tmp_path / "results"
    res.mkdir()
    return calib_dir, load_kitti_gt(label_dir, calib_dir), res


def test_kitti_predictions(tmp_path):
    calib_dir, ds, res = gt_and_results_dir(tmp_path)
    (res / "000000.txt").write_text(PED + " 0.9\n")
    (res / "000003.txt").write_text(CAR + " 0.8\nTram 0 0 0 1 2 30 40 3.0 2.5 12.0 2.0 1.5 30.0 0.1 0.4\n")
    (res / "000004.txt").write_text("")
    with pytest.raises(InputError, match=r"000004.txt.*`image_id`.*got 4"):
        load_kitti_predictions(res, ds)
    (res / "000004.txt").unlink()
    run = load_kitti_predictions(res, ds, name="m3d")
    p = run.pred
    assert run.name == "m3d" and run.meta["format"] == "kitti"
    assert p.image_id.tolist() == [0, 3, 3] and p.record.tolist() == [0, 1, 2]
    assert p.category.tolist() == ["pedestrian", "car", "tram"]
    assert p.score.tolist() == [0.9, 0.8, 0.4]
    assert p.data["in_vocab"].tolist() == [True, True, True]
    np.testing.assert_allclose(p.depth, p.center[:, 2])
    np.testing.assert_allclose(p.box2d[0], [712.40, 143.00, 810.73, 307.92])
    # Same conversion as the GT (the offset t comes from the dataset's p2), so a perfect prediction matches.
    np.testing.assert_allclose(p.corners[0], ds.gt.corners[0])
    np.testing.assert_allclose(load_kitti_predictions(res, ds, calib_dir=calib_dir).pred.corners, p.corners)


@pytest.mark.parametrize("line, part", [
    ("Bus 0 0 0 1 2 3 4 1 1 1 0 0 5 0", "`type`"),
    ("Car 0 0 0 1 2 3 4 1 1 1 0 0 5", "15 values"),
    ("Car 0 0 0 1 2 3 4 1 x 1 0 0 5 0", "`width`"),
    ("Car 0 0 0 1 2 3 4 1 1 1 0 0 nan 0", "`z`"),
    ("Car 0 0 0 1 2 3 4 1 1 1 0 0 inf 0", "`z`"),
    ("Car 5 0 0 1 2 3 4 1 1 1 0 0 5 0", "`truncated`"),
    ("Car 0 7 0 1 2 3 4 1 1 1 0 0 5 0", "`occluded`"),
    ("Car 0 1.5 0 1 2 3 4 1 1 1 0 0 5 0", "`occluded`"),
    ("Car 0 0 0 30 2 3 4 1 1 1 0 0 5 0", "`bbox`"),
    ("Car 0 0 0 1 20 3 4 1 1 1 0 0 5 0", "`bbox`"),
    ("Car 0 0 0 1 2 3 4 1 1_0 1 0 0 5 0", "`width`"),  # Python's float() takes these three; KITTI has none
    ("Car 0 0 0 1 2 3 4 1 \u0663 1 0 0 5 0", "`width`"),
    ("Car 0 0 0 1 2 3 4 1 0x1 1 0 0 5 0", "`width`"),
])
def test_bad_label_line(tmp_path, line, part):
    label_dir, calib_dir, _ = write_kitti(tmp_path, labels={"000007": [PED, line]})
    _one_line_error(lambda: load_kitti_gt(label_dir, calib_dir), "000007.txt", "line 2", part)


def test_prediction_line_needs_score(tmp_path):
    label_dir, calib_dir, _ = write_kitti(tmp_path)
    ds = load_kitti_gt(label_dir, calib_dir)
    with pytest.raises(InputError, match=r"000000.txt: line 1.*16 values"):
        load_kitti_predictions(label_dir, ds)


def test_calib_errors(tmp_path):
    label_dir, calib_dir, _ = write_kitti(tmp_path)
    (calib_dir / "000003.txt").write_text("P0: 1 0 0 0 0 1 0 0 0 0 1 0\n")
    with pytest.raises(InputError, match=r"calib/000003.txt.*`P2`"):
        load_kitti_gt(label_dir, calib_dir)
    (calib_dir / "000003.txt").write_text("P2: 1 2 3\n")
    with pytest.raises(InputError, match=r"calib/000003.txt: line 1.*`P2`.*12 finite numbers"):
        load_kitti_gt(label_dir, calib_dir)
    (calib_dir / "000003.txt").unlink()
    with pytest.raises(InputError, match=r"calib/000003.txt.*no such file"):
        load_kitti_gt(label_dir, calib_dir)


def test_folder_errors(tmp_path):
    label_dir, calib_dir, _ = write_kitti(tmp_path)
    with pytest.raises(InputError, match="existing folder"):
        load_kitti_gt(tmp_path / "nope", calib_dir)
    (label_dir / "readme.txt").write_text("x")
    with pytest.raises(InputError, match="readme.txt.*integer image id"):
        load_kitti_gt(label_dir, calib_dir)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="KITTI label files"):
        load_kitti_gt(empty, calib_dir)


def test_camera2_offset_is_the_whole_p2_column(tmp_path):
    """Frame 000000 by hand: t solves K t = P2[:, 3] by back-substitution (K upper triangular):
    t_z = 2.745884e-03, t_y = (2.163791e-01 - 172.854 t_z) / 721.5377, t_x = (44.85728 - 609.5593 t_z) / 721.5377."""
    tz = 2.745884e-03
    ty = (2.163791e-01 - 1.728540e+02 * tz) / 7.215377e+02
    tx = (4.485728e+01 - 6.095593e+02 * tz) / 7.215377e+02
    assert (tx, ty, tz) == pytest.approx((0.0598492648, -0.0003579272, 0.002745884), abs=1e-10)
    f = tmp_path / "x.txt"
    f.write_text(PED + "\n")
    conv = kitti_to_omni3d(parse_label_file(f, with_score=False)[1], P2)
    np.testing.assert_allclose(conv["t"], [tx, ty, tz], rtol=0, atol=1e-15)
    # location (1.84, 1.47, 8.41), h = 1.89: the centre is half a height up, then shifted by t
    np.testing.assert_allclose(conv["center"][0], [1.84 + tx, 1.47 - 1.89 / 2 + ty, 8.41 + tz], rtol=0, atol=1e-12)
    # K (X + t) is P2 [X; 1] exactly; mmdetection3d's x-only offset P2[0, 3] / P2[0, 0] is 2-3 mm and 0.25 px away
    X = np.array([1.84, 1.47 - 1.89 / 2, 8.41])
    ref = P2 @ np.append(X, 1.0)
    ours = P2[:, :3] @ conv["center"][0]
    np.testing.assert_allclose(ours[:2] / ours[2], ref[:2] / ref[2], rtol=0, atol=1e-9)
    mmdet = P2[:, :3] @ (X + [4.485728e+01 / 7.215377e+02, 0.0, 0.0])
    assert 4.485728e+01 / 7.215377e+02 - tx == pytest.approx(0.00232, abs=1e-5)
    assert tz == pytest.approx(0.00275, abs=1e-5)
    assert abs(mmdet[0] / mmdet[2] - ref[0] / ref[2]) == pytest.approx(0.252, abs=1e-3)


def test_two_files_for_one_image_id(tmp_path):
    label_dir, calib_dir, _ = write_kitti(tmp_path, labels={"000001": [PED], "01": [CAR]})
    msg = _one_line_error(lambda: load_kitti_gt(label_dir, calib_dir), "01.txt", "000001.txt", "same id 1")
    assert msg.count(".txt") == 2


@pytest.mark.parametrize("stem", ["³", "٣", "1e3", "-1", "+7"])
def test_file_names_need_ascii_digits(tmp_path, stem):
    label_dir, calib_dir, _ = write_kitti(tmp_path, labels={"000001": [PED]})
    (label_dir / f"{stem}.txt").write_text(PED + "\n")
    _one_line_error(lambda: load_kitti_gt(label_dir, calib_dir), f"{stem}.txt", "ASCII digits")


def test_image_id_beyond_annotation_id_range(tmp_path):
    label_dir, calib_dir, _ = write_kitti(tmp_path, labels={"9" * 19: [PED]})
    _one_line_error(lambda: load_kitti_gt(label_dir, calib_dir), "9" * 19 + ".txt", "`image_id`", "at most")


def test_bad_result_lines(tmp_path):
    _, ds, res = gt_and_results_dir(tmp_path)
    (res / "000000.txt").write_text(PED + " 0.9\nCar 0 0 0 1 2 3 4 1.5 0 4 0 0 5 0 0.3\n")
    _one_line_error(lambda: load_kitti_predictions(res, ds), "000000.txt", "line 2", "positive sizes")
    (res / "000000.txt").write_text(PED + " nan\n")
    _one_line_error(lambda: load_kitti_predictions(res, ds), "000000.txt", "line 1", "`score`", "finite")
    (res / "0.txt").write_text(PED + " 0.5\n")
    (res / "000000.txt").write_text(PED + " 0.9\n")
    _one_line_error(lambda: load_kitti_predictions(res, ds), "0.txt", "000000.txt")


def test_non_utf8_and_folder_named_txt(tmp_path):
    label_dir, calib_dir, _ = write_kitti(tmp_path, labels={"000007": [PED, CAR]})
    (label_dir / "000007.txt").write_bytes((PED + "\n").encode() + b"Car \xff\xfe 0 0\n")
    _one_line_error(lambda: load_kitti_gt(label_dir, calib_dir), "000007.txt", "line 2", "UTF-8")
    (label_dir / "000007.txt").write_text(PED + "\n")
    (calib_dir / "000007.txt").write_bytes(b"P0: 1 0 0 0 0 1 0 0 0 0 1 0\n\xe9\n")
    _one_line_error(lambda: load_kitti_gt(label_dir, calib_dir), "calib/000007.txt", "line 2", "UTF-8")
    (calib_dir / "000007.txt").unlink()
    (calib_dir / "000007.txt").mkdir()
    _one_line_error(lambda: load_kitti_gt(label_dir, calib_dir), "calib/000007.txt", "not a folder")


@pytest.mark.parametrize("calib, part", [
    ("P2: 1 0 0 0 0 1 0 0 0 0 1 0\n" + P2_LINE + "\n", "line 2: expected `P2` to be a single P2 line (another on line 1)"),
    ("P2: 700 0 600 45 0 700 170 0 0.1 0 1 0\n", "last row is 0 0 1"),
    ("P2: 700 0 600 45 0 700 170 0 0 0 1 1_0\n", "12 finite numbers"),
])
def test_bad_calib(tmp_path, calib, part):
    label_dir, calib_dir, _ = write_kitti(tmp_path)
    (calib_dir / "000003.txt").write_text(calib)
    _one_line_error(lambda: load_kitti_gt(label_dir, calib_dir), "calib/000003.txt", part)


def test_image_ids_are_integers(tmp_path):
    label_dir, calib_dir, _ = write_kitti(tmp_path)
    for bad in (True, 3.0, "³", None):
        _one_line_error(lambda bad=bad: load_kitti_gt(label_dir, calib_dir, image_ids=[bad]), "`image_ids`",
                        "integer")
    assert load_kitti_gt(label_dir, calib_dir, image_ids=["3", np.int64(0)]).images["image_id"].tolist() == [3, 0]


def test_images_missing_or_unreadable(tmp_path):
    from ov3d_core.io.kitti import MissingImageWarning

    label_dir, calib_dir, image_dir = write_kitti(tmp_path)
    (image_dir / "000003.png").unlink()
    with pytest.warns(MissingImageWarning, match=r"1 of 2 images not found \(first: image id 3\).*1242x375"):
        ds = load_kitti_gt(label_dir, calib_dir, image_dir=image_dir)
    assert ds.images["height"].tolist() == [370, 375]
    (image_dir / "000003.png").write_bytes(b"not a png")
    _one_line_error(lambda: load_kitti_gt(label_dir, calib_dir, image_dir=image_dir), "000003.png", "Pillow")


def test_too_many_objects_names_the_line(tmp_path):
    label_dir, calib_dir, _ = write_kitti(tmp_path, labels={"000001": [PED] * 10000})
    _one_line_error(lambda: load_kitti_gt(label_dir, calib_dir), "000001.txt", "line 10000", "at most 9999")
