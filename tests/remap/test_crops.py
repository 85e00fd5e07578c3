import numpy as np
import pytest
from PIL import Image

from ov3d_core.errors import InputError
from ov3d_core.geometry.boxes import corners_from_pose, projected_box2d
from ov3d_core.remap.crops import FLAG_BEHIND, FLAG_INVALID, FLAG_OUTSIDE, crop_boxes, load_crops

K = np.array([[100.0, 0, 50], [0, 100.0, 40], [0, 0, 1]])
W, H = 100, 80


def box(x, y, z, w=1.0, h=1.0, l=1.0):
    return corners_from_pose(np.array([[x, y, z]]), np.array([[w, h, l]]), np.eye(3)[None])[0]


def test_centre_box_matches_projection_and_border_boxes_are_clipped():
    corners = np.stack([box(0, 0, 10), box(-2.5, 0, 5), box(0, 0, 10, w=0.01, h=0.01, l=0.01)])
    boxes, flags = crop_boxes(corners, K, W, H, min_size=0)
    assert flags.tolist() == [0, 0, 0]
    proj, _ = projected_box2d(corners[:1], K)
    np.testing.assert_allclose(boxes[0], proj[0])
    # half off the left border: clipped at x = 0, right edge unchanged
    assert boxes[1, 0] == 0.0 and 0 < boxes[1, 2] < W
    assert (boxes[:, [0, 2]] >= 0).all() and (boxes[:, [0, 2]] <= W).all()
    assert (boxes[:, [1, 3]] >= 0).all() and (boxes[:, [1, 3]] <= H).all()


def test_behind_outside_and_invalid_are_flagged():
    bad = box(0, 0, 5)
    bad[0, 0] = np.nan
    corners = np.stack([box(0, 0, -5), box(0, 0, 0.1, w=0.1, h=0.1, l=0.1), box(40, 0, 5), bad])
    boxes, flags = crop_boxes(corners, K, W, H)
    assert flags.tolist() == [FLAG_BEHIND, FLAG_BEHIND, FLAG_OUTSIDE, FLAG_INVALID]
    assert (boxes == -1).all()


def test_box_crossing_the_near_plane_is_cut_there_not_blown_up():
    # a long box from z = -2 to z = 4 straight ahead: the visible part starts at the near plane
    corners = corners_from_pose(np.array([[0.0, 0.5, 1.0]]), np.array([[6.0, 1.0, 1.0]]), np.eye(3)[None])[0]
    assert corners[:, 2].min() < 0 < 0.2 < corners[:, 2].max()
    (b,), (f,) = crop_boxes(corners[None], K, W, H)
    assert f == 0
    assert np.isfinite(b).all() and b[0] == 0 and b[2] == W  # fills the width (very close), clipped


def test_min_size_pad_and_per_box_intrinsics():
    tiny = box(0, 0, 50, w=0.02, h=0.02, l=0.02)  # ~0.04 px
    corner_tiny = box(-24.9, -19.9, 50, w=0.02, h=0.02, l=0.02)  # u, v ~ 0.2 px  # near the top-left image corner
    boxes, flags = crop_boxes(np.stack([tiny, corner_tiny]), K, W, H, min_size=8)
    assert flags.tolist() == [0, 0]
    np.testing.assert_allclose(boxes[0, 2:] - boxes[0, :2], [8, 8])
    np.testing.assert_allclose(0.5 * (boxes[0, :2] + boxes[0, 2:]), [50, 40], atol=1e-9)
    assert boxes[1, 0] == 0 and boxes[1, 1] == 0 and (boxes[1, 2:] - boxes[1, :2] < 8).all()  # still clipped

    ref, _ = crop_boxes(box(0, 0, 10)[None], K, W, H)
    padded, _ = crop_boxes(box(0, 0, 10)[None], K, W, H, pad=0.5)
    w0 = ref[0, 2] - ref[0, 0]
    np.testing.assert_allclose(padded[0, 2] - padded[0, 0], 2 * w0)
    K2 = np.stack([K, K * np.array([[2.0], [2.0], [1.0]])])
    b2, _ = crop_boxes(np.stack([box(0, 0, 10), box(0, 0, 10)]), K2, [W, 2 * W], [H, 2 * H])
    np.testing.assert_allclose(b2[1], 2 * b2[0])


def test_load_crops_opens_each_image_once(tmp_path, monkeypatch):
    arr = np.zeros((80, 100, 3), np.uint8)
    arr[:, 50:] = 255
    for name in ("a.png", "b.png"):
        Image.fromarray(arr).save(tmp_path / name)
    opened = []
    real_open = Image.open
    monkeypatch.setattr(Image, "open", lambda p, *a, **k: opened.append(str(p)) or real_open(p, *a, **k))
    paths = [tmp_path / "a.png", tmp_path / "b.png", tmp_path / "a.png", tmp_path / "a.png", None]
    boxes = np.array([[0, 0, 10, 10], [55, 5, 65.5, 15], [-1, -1, -1, -1], [10, 10, 30, 20], [0, 0, 5, 5]])
    crops = load_crops(paths, boxes, valid=np.array([1, 1, 1, 1, 1], bool))
    assert sorted(opened) == sorted({str(tmp_path / "a.png"), str(tmp_path / "b.png")})
    assert crops[2] is None and crops[4] is None
    assert crops[0].size == (10, 10) and np.asarray(crops[0]).max() == 0
    assert crops[1].size == (11, 10) and np.asarray(crops[1]).min() == 255
    assert crops[3].size == (20, 10)
    resized = load_crops(paths[:1], boxes[:1], size=16)
    assert resized[0].size == (16, 16) and resized[0].mode == "RGB"
    with pytest.raises(InputError, match="missing.png"):
        load_crops([tmp_path / "missing.png"], boxes[:1])
