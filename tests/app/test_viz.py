"""ov3d_core.viz builders: traces, segment counts, projection, frustum, clickable matrix, bars, export."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest

from ov3d_core.geometry.boxes import BOX_EDGES, corners_from_pose, project_points, rotation_y
from ov3d_core.viz import bars, export
from ov3d_core.viz.heatmap import confusion_heatmap, confusion_scatter
from ov3d_core.viz.image_overlay import (FRONT_FACE, HEADING_EDGES, BoxLayer, class_layers, clip_segments_near,
                                         image_overlay, project_segments, status_layers)
from ov3d_core.viz.scene3d import box_lines_3d, downsample_points, frustum_corners, frustum_lines, scene_figure

K = np.array([[600.0, 0.0, 320.0], [0.0, 600.0, 240.0], [0.0, 0.0, 1.0]])
W, H = 640, 480


def make_corners(n=2, z0=6.0):
    centers = np.array([[-1.0 + 2.0 * i, 0.5, z0 + i] for i in range(n)])
    dims = np.tile([1.0, 1.2, 2.0], (n, 1))
    return corners_from_pose(centers, dims, rotation_y(np.linspace(0.2, 1.0, n)))


def segments(xs):
    """Number of segments in a coordinate list separated by None (3D) or NaN (2D)."""
    n, run = 0, 0
    for v in list(xs) + [None]:
        if v is None or v != v:
            n += run >= 2
            run = 0
        else:
            run += 1
    return n


def test_front_face_is_the_local_plus_x_face():
    c = corners_from_pose(np.zeros((1, 3)), np.array([[1.0, 2.0, 4.0]]), np.eye(3)[None])[0]
    face = c[FRONT_FACE]
    assert np.allclose(face[:, 0], 2.0)  # +l/2 along local x
    a, b = c[HEADING_EDGES[0]], c[HEADING_EDGES[1]]
    assert np.allclose(a.mean(0), [2.0, 0, 0]) and np.allclose(b.mean(0), [2.0, 0, 0])  # diagonals cross mid-face


def test_image_overlay_draws_12_edges_per_box_at_the_projected_corners():
    corners = make_corners(3)
    layer = BoxLayer("pred TP", corners, "#00ff00", labels=["car 0.9", "van 0.5", "car 0.3"],
                     customdata=np.array([["pred", "r", 0], ["pred", "r", 1], ["pred", "r", 2]], dtype=object))
    fig = image_overlay(np.zeros((H, W, 3), np.uint8), K, [layer])
    assert isinstance(fig.data[0], go.Image)
    edges, heading = fig.data[1], fig.data[2]
    labels = next(t for t in fig.data if t.name == "pred TP labels")  # drawn last, over every edge
    assert edges.mode == "lines" and segments(edges.x) == 12 * 3
    assert segments(heading.x) == 2 * 3
    uv, _ = project_points(corners[:, BOX_EDGES.ravel()], K)  # endpoints in edge order
    xs = np.asarray(edges.x, dtype=float)
    ys = np.asarray(edges.y, dtype=float)
    assert np.isnan(xs[2::3]).all()  # a gap after every segment
    xs, ys = xs[~np.isnan(xs)], ys[~np.isnan(ys)]
    assert np.allclose(xs, uv[..., 0].ravel()) and np.allclose(ys, uv[..., 1].ravel())
    assert labels.mode == "markers+text" and list(labels.text) == ["car 0.9", "van 0.5", "car 0.3"]
    assert [list(r) for r in labels.customdata] == [["pred", "r", 0], ["pred", "r", 1], ["pred", "r", 2]]
    assert edges.legendgroup == heading.legendgroup == labels.legendgroup
    assert tuple(fig.layout.yaxis.range) == (H - 0.5, -0.5)  # image rows grow downwards


def test_image_overlay_without_image_needs_a_size():
    with pytest.raises(ValueError):
        image_overlay(None, K, [])
    fig = image_overlay(None, K, [], width=W, height=H)
    assert len(fig.data) == 0


def test_edges_behind_the_camera_are_clipped_or_dropped():
    a = np.array([[0.0, 0.0, 5.0], [0.0, 0.0, -5.0], [0.0, 0.0, -1.0]])
    b = np.array([[1.0, 0.0, -5.0], [1.0, 0.0, -4.0], [0.0, 0.0, 3.0]])
    a2, b2, keep = clip_segments_near(a, b)
    assert keep.tolist() == [True, False, True]
    assert b2[0, 2] > 0.2 and a2[2, 2] > 0.2  # the part behind the near plane is cut away
    box = corners_from_pose([[0.0, 0.0, 0.5]], [[1.0, 1.0, 3.0]], np.eye(3)[None])  # straddles the camera
    uv, vis = project_segments(box, K)
    assert 0 < vis.sum() < 12 and np.isfinite(uv[vis]).all()


def test_status_layers_style_and_struck_removed_boxes():
    corners = make_corners(4)
    layers = status_layers(corners, ["TP", "FP", "removed", "FP"], kind="pred", labels=list("abcd"))
    by = {l.name.split(" (")[0]: l for l in layers}
    assert len(by["pred FP"]) == 2 and by["pred FP"].labels == ["b", "d"]
    removed = by["pred removed by the oracle"]
    assert removed.struck
    fig = image_overlay(None, K, layers, width=W, height=H)
    struck = [t for t in fig.data if t.name.endswith("struck")]
    assert len(struck) == 1 and segments(struck[0].x) == 1
    lab = [t for t in fig.data if t.name == f"{removed.name} labels"][0]
    assert lab.text[0] == "<s>c</s>" and lab.opacity < 0.5
    gt = status_layers(corners[:2], ["FN", "TP"], kind="gt")
    assert {l.dash for l in gt} == {"solid", "dot"}  # missed GT solid, matched GT dotted


def test_class_layers_one_per_class():
    corners = make_corners(3)
    layers = class_layers(corners, ["car", "van", "car"], kind="pred", labels=["x", "y", "z"])
    assert [len(l) for l in layers] == [2, 1] and layers[0].color != layers[1].color


def test_box_layer_validates_shapes():
    with pytest.raises(ValueError):
        BoxLayer("x", np.zeros((2, 4, 3)), "red")
    with pytest.raises(ValueError):
        BoxLayer("x", np.zeros((2, 8, 3)), "red", labels=["one"])


def test_scene_boxes_are_one_lines_trace_per_group_with_none_separators():
    corners = make_corners(2)
    x, y, z = box_lines_3d(corners)
    assert len(x) == 2 * 12 * 3 and x[2] is None and segments(x) == 24
    layers = status_layers(corners, ["TP", "FP"], kind="pred", labels=["a", "b"])
    pts = np.random.default_rng(0).normal(size=(5000, 3)) + [0, 0, 8]
    fig = scene_figure(pts, layers, K=K, width=W, height=H, budget=1000)
    kinds = [(type(t).__name__, t.mode) for t in fig.data]
    assert kinds[0] == ("Scatter3d", "markers") and len(fig.data[0].x) == 1000
    lines = [t for t in fig.data if t.mode == "lines" and t.name.startswith("pred")]
    assert len(lines) == 2 and segments(lines[0].x) == 12 + 2  # edges + heading cross
    assert fig.data[-1].name == "camera" and segments(fig.data[-1].x) == 8


def test_frustum_corners_project_to_the_image_corners():
    c = frustum_corners(K, W, H, depth=3.0)
    assert np.allclose(c[:, 2], 3.0)
    uv, front = project_points(c, K)
    assert front.all() and np.allclose(uv, [[0, 0], [W, 0], [W, H], [0, H]])
    x, _, _ = frustum_lines(K, W, H, 3.0)
    assert segments(x) == 8


def test_downsample_is_deterministic_and_capped():
    pts = np.arange(300).reshape(100, 3).astype(float)
    a, ca = downsample_points(pts, 10, colors=pts, seed=1)
    b, _ = downsample_points(pts, 10, seed=1)
    assert len(a) == 10 and np.array_equal(a, b) and np.array_equal(a, ca)
    same, _ = downsample_points(pts, 1000)
    assert same is pts


def test_confusion_scatter_cells_carry_indices_and_counts():
    m = np.array([[5, 1, 0], [0, 3, 2], [0, 0, 0]])
    names = ["chair", "table", "sofa"]
    fig = confusion_scatter(m, names)
    cells = fig.data[0]
    assert cells.marker.symbol == "square" and isinstance(cells, go.Scatter)
    got = {(int(i), int(j)): int(c) for i, j, c in cells.customdata}
    assert got == {(0, 0): 5, (0, 1): 1, (1, 1): 3, (1, 2): 2}
    assert list(cells.x) == [names[int(j)] for _, j, _ in cells.customdata]
    assert list(cells.y) == [names[int(i)] for i, _, _ in cells.customdata]
    hidden = confusion_scatter(m, names, hide_diagonal=True, log_color=True)
    assert {(int(i), int(j)) for i, j, _ in hidden.data[0].customdata} == {(0, 1), (1, 2)}
    assert hidden.data[0].marker.colorbar.tickvals is not None


def test_confusion_scatter_with_missed_column_and_selection():
    m = np.array([[5, 1, 2], [0, 3, 0]])
    fig = confusion_scatter(m, ["a", "b"], ["a", "b", "missed"], selected=(0, 2), hide_diagonal=True)
    assert {(int(i), int(j)) for i, j, _ in fig.data[0].customdata} == {(0, 1), (0, 2)}
    assert fig.data[1].name == "selected" and fig.data[1].x == ("missed",)
    with pytest.raises(ValueError):
        confusion_scatter(m, ["a", "b", "c"])


def test_confusion_heatmap_is_static_and_masks_the_diagonal():
    fig = confusion_heatmap(np.array([[0.8, 0.2], [0.1, 0.9]]), ["a", "b"], hide_diagonal=True)
    assert isinstance(fig.data[0], go.Heatmap)
    z = np.array(fig.data[0].z, dtype=float)
    assert np.isnan(z[0, 0]) and z[0, 1] == pytest.approx(0.2)


def test_category_bars_group_per_run_with_customdata_and_nan_gaps():
    df = pd.DataFrame({"run": ["r1", "r1", "r2", "r2"], "category": ["a", "b", "a", "b"], "AP3D": [10, 30, np.nan, 5]})
    fig = bars.category_bars(df, "AP3D", highlight="b")
    assert [t.name for t in fig.data] == ["r1", "r2"]
    assert list(fig.data[0].x) == ["b", "a"]  # sorted by mean AP
    assert [list(c) for c in fig.data[1].customdata] == [["r2", "b"], ["r2", "a"]]
    assert np.isnan(fig.data[1].y[1])
    assert list(fig.data[0].marker.line.width) == [3, 0]


def test_three_axis_chart_marks_missing_axes():
    t = pd.DataFrame({"run": ["r1", "r2"], "geometric": [0.5, 0.6], "semantic": [10.0, 12.0],
                      "cross_domain_ratio": [np.nan, np.nan]})
    fig = bars.three_axis_chart(t, {"geometric": "Geometry", "semantic": "Semantics", "cross_domain_ratio": "Domain"})
    titles = [a.text for a in fig.layout.annotations]
    assert titles == ["Geometry", "Semantics", "Domain (not computed)"]
    assert len(fig.data) == 3


def test_delta_bars_and_histogram():
    t = pd.DataFrame({"class": ["car", "van", "truck"], "dl": [50.0, 10.0, 20.0], "ta": [50.0, 15.0, 30.0]})
    fig = bars.delta_bars(t, "dl", "ta", category="class")
    assert list(fig.data[0].x) == ["truck", "van", "car"] and list(fig.data[0].y) == [10.0, 5.0, 0.0]
    h = bars.histogram_with_bounds(np.array([1.0, 2.0, np.nan]), {"adverse": 1.0, "favourable": 2.0})
    assert len(h.layout.shapes) == 2 and len(h.data[0].x) == 2


def test_table_exports():
    from ov3d_core.tables import to_csv, to_latex

    df = pd.DataFrame({"run": ["cube_rcnn", "a&b"], "AP3D": [12.345, np.nan], "n": [3, 4],
                       "n_removed_cross_class": [1, 2]})
    csv = to_csv(df, 4)
    assert csv.splitlines()[0] == "run,AP3D,n,n_removed_cross_class" and "12.345" in csv
    tex = to_latex(df, caption="AP 100%", label="tab:x", bold_max=("AP3D",))
    assert r"cube\_rcnn" in tex and r"a\&b" in tex and "--" in tex and r"\textbf{12.35}" in tex
    assert r"\begin{tabular}{lrrr}" in tex and r"AP 100\%" in tex and r"\label{tab:x}" in tex
    assert r"\# removed cross class" in tex  # headers read as words, not snake_case


def test_figure_html_export_needs_no_browser():
    fig = go.Figure(go.Bar(x=["a"], y=[1]))
    html = export.figure_bytes(fig, "html")
    assert b"<html>" in html[:100] and b"plotly" in html
    with pytest.raises(ValueError):
        export.figure_bytes(fig, "eps")


def test_figure_png_and_svg_export_with_kaleido():
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]))
    png = export.figure_bytes(fig, "png", width=300, height=200, scale=1)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    svg = export.figure_bytes(fig, "svg", width=300, height=200)
    assert b"<svg" in svg[:500]


def test_image_overlay_accepts_a_pre_encoded_image():
    from ov3d_core.viz.image_overlay import encode_image

    img = np.zeros((2000, 1000, 3), np.uint8)
    uri, w, h, scale = encode_image(img, max_side=800)
    assert (w, h) == (1000, 2000) and scale == pytest.approx(2.5) and uri.startswith("data:image/jpeg;base64,")
    fig = image_overlay(uri, K, [], width=w, height=h, image_scale=scale)
    assert fig.data[0].source == uri and fig.data[0].dx == pytest.approx(2.5)
    assert tuple(fig.layout.xaxis.range) == (-0.5, w - 0.5)
