"""Point clouds: open3d file reading, depth back-projection, voxel downsampling to a budget."""

from __future__ import annotations

import numpy as np
import pytest

from ov3d_core.errors import InputError
from ov3d_core.geometry.boxes import project_points
from ov3d_core.io import depth_to_points, load_point_cloud, voxel_downsample

K = np.array([[500.0, 0.0, 32.0], [0.0, 400.0, 24.0], [0.0, 0.0, 1.0]])


def write_ply(path, pts, cols=None):
    lines = ["ply", "format ascii 1.0", f"element vertex {len(pts)}", "property float x", "property float y",
             "property float z"]
    if cols is not None:
        lines += ["property uchar red", "property uchar green", "property uchar blue"]
    lines.append("end_header")
    for i, p in enumerate(pts):
        row = " ".join(f"{v:.6f}" for v in p)
        if cols is not None:
            row += " " + " ".join(str(int(c)) for c in cols[i])
        lines.append(row)
    path.write_text("\n".join(lines) + "\n")
    return path


def test_load_ply_with_colours(tmp_path):
    pts = np.array([[0.0, 1.0, 2.0], [1.5, -2.0, 3.25], [0.5, 0.5, 0.5]])
    cols = np.array([[255, 0, 0], [0, 255, 0], [0, 0, 255]])
    p, c = load_point_cloud(write_ply(tmp_path / "a.ply", pts, cols))
    assert p.dtype == np.float64 and p.shape == (3, 3)
    np.testing.assert_allclose(p, pts, atol=1e-6)
    np.testing.assert_allclose(c, cols / 255.0, atol=1e-6)


def test_load_ply_without_colours(tmp_path):
    p, c = load_point_cloud(write_ply(tmp_path / "a.ply", np.ones((4, 3))))
    assert p.shape == (4, 3) and c is None


def test_point_cloud_errors(tmp_path):
    with pytest.raises(InputError, match="nope.ply.*no such file"):
        load_point_cloud(tmp_path / "nope.ply")
    (tmp_path / "a.obj").write_text("v 0 0 0\n")
    with pytest.raises(InputError, match="a.obj.*point cloud file"):
        load_point_cloud(tmp_path / "a.obj")
    (tmp_path / "bad.ply").write_text("not a ply file\n")
    with pytest.raises(InputError, match="bad.ply.*at least one point"):
        load_point_cloud(tmp_path / "bad.ply")


def test_depth_to_points_inverts_projection():
    rng = np.random.default_rng(1)
    depth = rng.uniform(1.0, 10.0, size=(48, 64))
    depth[0, 0] = 0.0
    depth[5, 7] = np.nan
    depth[9, 9] = -1.0
    pts = depth_to_points(depth, K)
    assert pts.shape == (48 * 64 - 3, 3)
    uv, front = project_points(pts, K)
    assert front.all()
    v, u = np.nonzero(np.isfinite(depth) & (depth > 0))
    np.testing.assert_allclose(uv, np.stack([u, v], axis=1), atol=1e-9)
    np.testing.assert_allclose(pts[:, 2], depth[v, u])


def test_depth_to_points_colours_and_errors():
    depth = np.full((2, 3), 2.0)
    img = np.arange(18, dtype=np.uint8).reshape(2, 3, 3)
    pts, cols = depth_to_points(depth, K, colors=img)
    assert pts.shape == (6, 3) and cols.shape == (6, 3)
    np.testing.assert_allclose(cols[1], img[0, 1] / 255.0)
    with pytest.raises(InputError, match="`depth`"):
        depth_to_points(np.ones(5), K)
    with pytest.raises(InputError, match="`K`"):
        depth_to_points(depth, np.eye(2))
    with pytest.raises(InputError, match="`K`"):
        depth_to_points(depth, np.full((3, 3), np.nan))


def test_voxel_downsample_budget():
    rng = np.random.default_rng(2)
    pts = rng.uniform(-5, 5, size=(20000, 3))
    cols = rng.uniform(0, 1, size=(20000, 3))
    p, c = voxel_downsample(pts, cols, budget=1000)
    assert 0 < len(p) <= 1000 and c.shape == p.shape
    assert p.min() >= -5 and p.max() <= 5
    p2, c2 = voxel_downsample(pts, None, budget=50000)
    assert p2.shape == pts.shape and c2 is None


def test_voxel_downsample_errors():
    with pytest.raises(InputError, match="`budget`"):
        voxel_downsample(np.zeros((3, 3)), None, budget=0)
    with pytest.raises(InputError, match="`points`"):
        voxel_downsample(np.zeros((3, 2)), None, budget=10)
    with pytest.raises(InputError, match="`colors`"):
        voxel_downsample(np.zeros((3, 3)), np.zeros((2, 3)), budget=10)


def test_load_depth_formats_and_errors(tmp_path):
    import numpy as np
    import pytest
    from PIL import Image

    from ov3d_core.errors import InputError
    from ov3d_core.io import load_depth

    mm = np.array([[1000, 2500], [0, 65535]], np.uint16)
    Image.fromarray(mm).save(tmp_path / "d.png")
    assert np.allclose(load_depth(tmp_path / "d.png"), mm / 1000.0)
    np.savez_compressed(tmp_path / "d.npz", depth=np.full((2, 3), 4.5, np.float16))
    assert load_depth(tmp_path / "d.npz").shape == (2, 3)
    np.save(tmp_path / "d.npy", np.ones(5))
    with pytest.raises(InputError, match="d.npy.*2-D"):
        load_depth(tmp_path / "d.npy")
    (tmp_path / "d.txt").write_text("1 2")
    with pytest.raises(InputError, match="d.txt"):
        load_depth(tmp_path / "d.txt")
    (tmp_path / "bad.png").write_bytes(b"not a png")
    with pytest.raises(InputError, match="bad.png.*readable"):
        load_depth(tmp_path / "bad.png")
