"""Pure pieces of the views: label placement, the shared legend, palette colours, presentation scaling, grid
thumbnails, the sample filters and image orders, the inspector layout helpers and the pinned-view title."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from ov3d_app import selection
from ov3d_core.geometry.boxes import corners_from_pose
from ov3d_core.viz.image_overlay import (BoxLayer, image_overlay, label_size_px, legend_html, legend_items,
                                         place_labels, status_layers)

K = np.array([[500.0, 0, 320], [0, 500.0, 240], [0, 0, 1]])


def _overlap(r):
    ow = np.minimum(r[:, None, 2], r[None, :, 2]) - np.maximum(r[:, None, 0], r[None, :, 0])
    oh = np.minimum(r[:, None, 3], r[None, :, 3]) - np.maximum(r[:, None, 1], r[None, :, 1])
    a = np.clip(ow, 0, None) * np.clip(oh, 0, None)
    np.fill_diagonal(a, 0)
    return a


def test_labels_of_crowded_boxes_are_placed_apart():
    # six boxes whose top-left corners nearly coincide: the labels at the corners would all overlap
    bounds = np.array([[100 + 3 * k, 100 + 2 * k, 300, 300] for k in range(6)], float)
    sizes = label_size_px([f"chair 0.{k}9" for k in range(6)])
    naive = np.c_[bounds[:, 0], bounds[:, 1] - sizes[:, 1], bounds[:, 0] + sizes[:, 0], bounds[:, 1]]
    assert (_overlap(naive) > 0).any()
    xy, rects = place_labels(bounds, sizes, px_per_unit=1.0, width=640, height=480)
    assert not (_overlap(rects) > 0).any()
    assert ((rects[:, 0] >= 0) & (rects[:, 2] <= 640) & (rects[:, 1] >= 0) & (rects[:, 3] <= 480)).all()
    np.testing.assert_allclose(xy[:, 0], rects[:, 0])  # the marker sits at the label's left end


def test_label_placement_keeps_the_first_label_at_its_corner_and_skips_hidden_boxes():
    bounds = np.array([[50, 80, 120, 200], [np.nan] * 4], float)
    xy, rects = place_labels(bounds, label_size_px(["a", "b"]), 2.0, 640, 480)
    assert xy[0, 0] == 50 and rects[0, 3] == pytest.approx(80)  # just above the top-left corner
    assert np.isnan(xy[1]).all()


def test_overlay_labels_are_drawn_last_on_a_background_and_matched_gt_is_quiet():
    c = corners_from_pose(np.array([[0, 0, 5.0], [0.05, 0, 5.0], [1, 0, 6.0]]), np.ones((3, 3)),
                          np.repeat(np.eye(3)[None], 3, 0))
    layers = status_layers(c[:2], ["TP", "FN"], kind="gt", labels=["chair", "table"])
    layers += status_layers(c, ["TP", "FP", "mislabelled"], kind="pred", labels=["chair 0.9", "sofa 0.8", "x"])
    fig = image_overlay(None, K, layers, width=640, height=480, display_width=500, show_legend=False)
    names = [t.name for t in fig.data]
    first_label = min(i for i, t in enumerate(fig.data) if t.meta == "label")
    assert all(t.mode == "lines" for t in fig.data[:first_label] if t.name != "label backgrounds")
    assert names.index("label backgrounds") == first_label - 1
    quiet = next(t for t in fig.data if t.name.startswith("GT TP") and t.meta == "label")
    assert quiet.mode == "markers" and list(quiet.hovertext) == ["chair"]  # hover only: the prediction says it
    assert next(t for t in fig.data if t.name.startswith("GT FN") and t.meta == "label").mode == "markers+text"
    assert fig.layout.showlegend is False and not any(t.showlegend for t in fig.data)


def test_one_legend_for_several_panels():
    c = corners_from_pose(np.array([[0, 0, 5.0]]), np.ones((1, 3)), np.eye(3)[None])
    a = status_layers(c, ["TP"], kind="pred", labels=["x"])
    b = status_layers(np.concatenate([c, c]), ["TP", "FP"], kind="pred", labels=["x", "y"])
    items = legend_items(a + b)
    assert [i[0] for i in items] == ["pred TP", "pred FP"]  # counts dropped, duplicates merged
    html = legend_html(items)
    assert html.count("<svg") == 2 and "pred FP" in html and "ov3d-legend" in html


def test_palette_colours_are_one_byte_per_point():
    from ov3d_core.viz.scene3d import palette_colors, scene_figure

    rng = np.random.default_rng(0)
    cols = np.repeat(rng.uniform(0, 1, (40, 3)), 50, axis=0)  # 40 distinct colours
    idx, scale = palette_colors(cols)
    assert idx.dtype == np.uint8 and len(idx) == len(cols)
    pal = np.array([[int(h[i:i + 2], 16) for i in (1, 3, 5)] for _, h in scale], float)
    assert np.abs(pal[idx] - cols * 255).max() <= 2.0  # few colours: exact up to rounding
    fig = scene_figure(rng.normal(size=(len(cols), 3)) + [0, 0, 5], [], colors=cols)
    m = fig.data[0].marker
    assert np.asarray(m.color).dtype == np.uint8 and m.cmin == 0 and m.cmax == len(m.colorscale) - 1


def test_presentation_scales_height_and_every_font():
    from ov3d_core.viz.bars import grouped_bars
    from ov3d_core.viz.style import PRESENTATION_SCALE, presentation

    fig = grouped_bars(pd.DataFrame({"x": list("abc"), "y": [1.0, 2.0, 3.0]}), "x", "y", title="t", height=300)
    presentation(fig)
    k = PRESENTATION_SCALE
    assert fig.layout.height == int(300 * k) and fig.layout.font.size == pytest.approx(12 * k, abs=0.1)
    assert fig.layout.xaxis.tickfont.size == pytest.approx(12 * k, abs=0.1)
    assert fig.data[0].textfont.size == pytest.approx(12 * k, abs=0.1)


def test_thumbnail_draws_the_boxes(tmp_path):
    from ov3d_core.viz.thumbnails import thumbnail_with_boxes

    c = corners_from_pose(np.array([[0, 0, 5.0]]), np.ones((1, 3)), np.eye(3)[None])
    jpg = thumbnail_with_boxes(None, K, [BoxLayer("x", c, "#ff0000", width=3)], width=640, height=480, size=320)
    im = np.asarray(Image.open(io.BytesIO(jpg)).convert("RGB")).astype(int)
    assert im.shape == (240, 320, 3)
    red = (im[..., 0] > 150) & (im[..., 1] < 90)
    ys, xs = np.nonzero(red)
    # the front face spans u in [270, 370] at depth 4.5 (z - 0.5): half that in the thumbnail
    assert red.sum() > 100 and 130 <= xs.min() <= 140 and 180 <= xs.max() <= 190


def test_sample_filters_and_orders():
    s = pd.DataFrame({"image_id": [1, 1, 2, 3, 3], "kind": ["gt", "pred", "pred", "gt", "pred"],
                      "row": [0, 0, 1, 1, 2], "category": ["chair", "chair", "sofa", "sofa", "chair"],
                      "status": ["FN", "FP", "TP", "TP", "FP"], "score": [np.nan, 0.9, 0.4, np.nan, 0.2],
                      "depth": [3.0, 3.1, 8.0, 5.0, 5.2], "truncation": [0.0, np.nan, np.nan, 0.5, np.nan],
                      "visibility": [1.0, np.nan, np.nan, 0.3, np.nan], "volume": [1.0] * 5,
                      "center_dist": [np.nan, 0.4, 0.1, np.nan, 2.0], "abs_depth_err": np.nan,
                      "size_err": np.nan, "yaw_err": np.nan})
    assert selection.filter_samples(s, classes=["sofa"])["image_id"].tolist() == [2, 3]
    assert selection.filter_samples(s, statuses=["FP"])["row"].tolist() == [0, 2]
    # a range on a GT attribute keeps GT boxes only (predictions have no visibility)
    assert selection.filter_samples(s, ranges={"visibility": (0.0, 0.5)})["image_id"].tolist() == [3]
    assert selection.filter_samples(s, images=[1])["row"].tolist() == [0, 0]
    o = selection.order_images(s, "highest score")
    assert o["image_id"].tolist() == [1, 2, 3] and o["value"].tolist() == [0.9, 0.4, 0.2]
    o = selection.order_images(s, "largest error (centre distance)")
    assert o["image_id"].tolist() == [3, 1, 2]
    o = selection.order_images(s[s["kind"] == "gt"], "highest score")  # no scores: NaN last, by image id
    assert o["image_id"].tolist() == [1, 3] and o["value"].isna().all()
    assert selection.order_images(s, "most matching boxes")["n"].tolist() == [2, 2, 1]


def test_inspector_layout_helpers():
    assert selection.default_panels(["a", "b", "c"]) == ["a", "b"]
    assert selection.default_panels(["a", "b", "c"], focus="c") == ["c", "a"]
    assert selection.default_panels(["a"], focus="zz") == ["a"]
    assert [selection.panels_per_row(n) for n in (1, 2, 3, 5)] == [1, 2, 3, 3]
    assert [selection.panels_per_row(n, aspect=3.3) for n in (1, 2, 3)] == [1, 1, 2]  # wide images stack


def test_pinned_title_names_run_protocol_and_level():
    t = selection.pinned_title({"ds": "demo_indoor", "run": "ovmono_like", "proto": "target-aware", "lvl": "super"},
                               "Confusion")
    assert t == "Confusion · demo_indoor · ovmono_like · target-aware · super-categories"
    t = selection.pinned_title({"ds": "demo_outdoor", "img": "7", "thr": "0.3", "iou": "0.5"}, "Scene inspector")
    assert t == "Scene inspector · demo_outdoor · all runs · dataset-level · image 7 · score ≥ 0.3 · IoU 0.5"
    assert "fine classes" in selection.pinned_title({}, "Confusion")
