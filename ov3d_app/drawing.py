"""Box layers of one image for the scene inspector, the oracle, the confusion gallery and the sample grid: box-table
rows -> ``viz`` ``BoxLayer`` groups (by status or by class), with the box corners fetched from the cached benchmark;
and the memoised figures built from them (the 3D view, grid thumbnails)."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import streamlit as st

from ov3d_app import cache, selection
from ov3d_core.geometry.boxes import corners_from_pose, rotation_y
from ov3d_core.viz.image_overlay import (STATUS_COLORS, BoxLayer, class_colors, class_layers, project_segments,
                                         status_layers)
from ov3d_core.viz.scene3d import scene_figure
from ov3d_core.viz.style import from_dict
from ov3d_core.viz.thumbnails import thumbnail_with_boxes

HIGHLIGHT_COLOR = "#ffd400"
#: Point budgets of the 3D views (the last: every depth pixel of the demo's 640 x 480 maps). The default follows the
#: renderer the browser reports (``budget_for_renderer``): a browser without a GPU (software WebGL) redraws a
#: 10k-point scene in about half a second, 20k in about 0.8 s (``bench/RESULTS.md``, "The 3D view drawn first"), so it
#: gets the first; with a GPU every budget here draws in milliseconds, so it gets the full cloud (the last).
POINT_BUDGETS = (10_000, 20_000, 60_000, 150_000, 310_000)
#: Substrings (lower case) of the WebGL renderer names of software rasterisers: Chromium's SwiftShader (``--disable-gpu``,
#: no GPU, blocklisted drivers), Mesa's llvmpipe / softpipe / lavapipe, Windows' basic render driver.
SOFTWARE_RENDERERS = ("swiftshader", "llvmpipe", "softpipe", "lavapipe", "software", "basic render driver",
                      "microsoft basic render")
#: Session-state key of the WebGL renderer the browser reported (``ov3d_app.gl_scene``'s one-time probe): the
#: unmasked renderer string, "" when the browser has no WebGL or would not say; absent until the probe came back.
RENDERER_KEY = "_gl_renderer"


def software_renderer(renderer: str | None) -> bool:
    """Whether a WebGL renderer name (``WEBGL_debug_renderer_info``'s ``UNMASKED_RENDERER_WEBGL``) is a software
    rasteriser, or unknown (None or empty: not probed yet, no WebGL, or hidden by the browser)."""
    name = (renderer or "").strip().lower()
    return not name or any(s in name for s in SOFTWARE_RENDERERS)


def budget_for_renderer(renderer: str | None) -> int:
    """The 3D views' default point budget for a browser whose WebGL renderer is ``renderer``: the first budget for
    software WebGL or an unknown renderer (about half a second per redraw of 10k points), the full cloud (the last
    budget) on a GPU."""
    return POINT_BUDGETS[0] if software_renderer(renderer) else POINT_BUDGETS[-1]


def session_budget() -> int:
    """The default point budget of this session's browser (``budget_for_renderer`` of the renderer it reported)."""
    return budget_for_renderer(st.session_state.get(RENDERER_KEY))
#: How the app's tables show a missing value (``st.dataframe(placeholder=...)``) instead of "None".
MISSING = "—"


def _corners(cfg_key: str, dataset: str, rows: pd.DataFrame) -> np.ndarray:
    out = np.zeros((len(rows), 8, 3))
    kinds = rows["kind"].to_numpy(object)
    runs = rows["run"].to_numpy(object)
    idx = rows["row"].to_numpy(np.int64)
    for kind, run in dict.fromkeys(zip(kinds, runs)):
        m = (kinds == kind) & (runs == run)
        out[m] = cache.corners_of(cfg_key, dataset, kind, run, idx[m])
    return out


def image_layers(cfg_key: str, dataset: str, rows: pd.DataFrame, *, color_by: str = "status",
                 vocabulary: list[str] | None = None, removed: set[int] | None = None, prefix: str = "",
                 highlight: str | None = None) -> list[BoxLayer]:
    """Layers for the box-table ``rows`` of one image (GT rows and prediction rows of one or more runs).

    Args:
        rows: rows of ``selection.box_table``.
        color_by: "status" (TP / FP / FN / mislabelled ...) or "class".
        vocabulary: class order for stable class colours.
        removed: prediction rows removed by the oracle (drawn faded and struck through).
        prefix: legend prefix.
        highlight: ``"kind|run|row"`` of a box drawn on top in yellow.
    """
    layers: list[BoxLayer] = []
    if rows.empty:
        return layers
    rows = rows.reset_index(drop=True)
    corners = _corners(cfg_key, dataset, rows)
    labels = selection.box_labels(rows)
    custom = np.stack([rows["kind"].to_numpy(object), rows["run"].to_numpy(object),
                       rows["row"].to_numpy(np.int64).astype(object)], axis=1)
    colors = class_colors(list(vocabulary or []) + rows["category"].astype(str).tolist())
    for kind in ("gt", "pred"):
        m = (rows["kind"] == kind).to_numpy()
        if not m.any():
            continue
        status = rows.loc[m, "status"].to_numpy(object)
        is_removed = np.zeros(int(m.sum()), bool)
        if kind == "pred" and removed:
            is_removed = np.isin(rows.loc[m, "row"].to_numpy(np.int64), np.fromiter(removed, np.int64))
            status = np.where(is_removed, "removed", status)
        lab = [labels[i] for i in np.flatnonzero(m)]
        if color_by == "class":
            layers += class_layers(corners[m], rows.loc[m, "category"].to_numpy(object), kind=kind, labels=lab,
                                   customdata=custom[m], prefix=prefix, colors=colors, struck=is_removed)
        else:
            layers += status_layers(corners[m], status, kind=kind, labels=lab, customdata=custom[m], prefix=prefix)
    hl = selection.parse_highlight(highlight)
    if hl is not None:
        kind, run, row = hl
        m = ((rows["kind"] == kind) & (rows["row"] == row) & ((rows["run"] == run) | (kind == "gt"))).to_numpy()
        if m.any():
            layers.append(BoxLayer(name="selected", corners=corners[m], color=HIGHLIGHT_COLOR,
                                   labels=[labels[i] for i in np.flatnonzero(m)], customdata=custom[m], width=4.0,
                                   group="selected"))
    return layers


@st.cache_data(show_spinner=False, max_entries=16)
def _scene3d_spec(cfg_key: str, dataset: str, image_id: int, rows: pd.DataFrame, _points, meta: dict, *,
                  color_by: str, vocabulary: list[str], highlight: str | None, budget: int) -> dict:
    layers = image_layers(cfg_key, dataset, rows, color_by=color_by, vocabulary=vocabulary, highlight=highlight)
    pts = None if _points is None else _points.points
    cols = None if _points is None else _points.colors
    fig = scene_figure(pts, layers, K=meta["K"], width=meta["width"], height=meta["height"], colors=cols,
                       budget=budget, fig_height=600)
    # the browser keeps a camera the user moved while this image is shown (budget, highlight, run); a new image opens
    # on its own framing
    fig.update_layout(uirevision=f"{dataset}:{image_id}")
    return fig.to_dict()


def scene3d_figure(cfg_key: str, dataset: str, image_id: int, rows: pd.DataFrame, points, meta: dict, *,
                   color_by: str, vocabulary: list[str], highlight: str | None, budget: int):
    """The 3D view's figure (``viz.scene3d.scene_figure``), memoised per image, boxes, colouring, highlight and point
    budget as its validated dict: toggling the view back on or re-running the page rebuilds it without plotly's
    validation (``viz.style.from_dict``). ``points`` (the image's ``ScenePoints``) is keyed by ``image_id`` and
    ``budget``."""
    return from_dict(_scene3d_spec(cfg_key, dataset, image_id, rows, points, meta, color_by=color_by,
                                   vocabulary=vocabulary, highlight=highlight, budget=budget))


@st.cache_data(show_spinner=False, max_entries=16)
def scene3d_json(cfg_key: str, dataset: str, image_id: int, rows: pd.DataFrame, _points, meta: dict, *,
                 color_by: str, vocabulary: list[str], highlight: str | None, budget: int,
                 presenting: bool = False) -> tuple[str, str]:
    """The 3D view's figure as plotly JSON for the page's WebGL scene (``ov3d_app.gl_scene``) and its digest (the
    browser redraws only when it changes), shown as ``ui.plot`` shows figures: enlarged when ``presenting``
    (``ui.presented``), names that could carry markup inert (``ui.inert_figure``)."""
    import xxhash

    from ov3d_app.ui import inert_figure, presented

    fig = scene3d_figure(cfg_key, dataset, image_id, rows, _points, meta, color_by=color_by, vocabulary=vocabulary,
                         highlight=highlight, budget=budget)
    text = inert_figure(presented(fig, presenting, fresh=True)).to_json()  # fresh: a new figure from the memo
    return text, xxhash.xxh3_64_hexdigest(text.encode())


@functools.lru_cache(maxsize=1)
def scene3d_standin() -> str:
    """Plotly JSON of a 3D view with a frustum and one labelled box, no points: what a hidden scene draws once before
    its first figure, so that the figure's draw finds the shaders compiled and the axis text laid out."""
    corners = corners_from_pose(np.array([[0.0, 0.5, 4.0]]), np.ones((1, 3)), rotation_y(np.array([0.3])))
    layer = BoxLayer(name="box", corners=corners, color="#1f77b4", labels=["box"])
    fig = scene_figure(np.zeros((2, 3)), [layer], K=np.array([[500.0, 0, 320], [0, 500, 240], [0, 0, 1]]), width=640,
                       height=480, fig_height=600)
    return fig.to_json()


@st.cache_data(show_spinner=False, max_entries=1024)
def grid_thumbnail(cfg_key: str, view, runs: tuple[str, ...], image_id: int, rows: tuple[int, ...],
                   strong: tuple[int, ...], *, color_by: str, vocabulary: list[str], size: int = 360) -> bytes:
    """A JPEG thumbnail of one image of ``view.dataset`` with boxes drawn: ``rows``, index labels of the box table
    ``cache.boxes(cfg_key, view, runs)``; those of them in ``strong`` (the grid filter's matches) drawn last and
    thicker, the others thin. The rows are named by their table and labels, not passed as a frame, so that the cache
    key is a few integers (hashing a frame per thumbnail was ~40% of the sample grid's script run: 0.19 s a run
    before, 0.115 s after, bench/RESULTS.md 2026-12-07)."""
    rows = cache.boxes(cfg_key, view, tuple(runs)).loc[list(rows)]
    meta = cache.image_meta(cfg_key, view.dataset, image_id)
    hit = rows.index.isin(strong)
    layers = [BoxLayer(name=l.name, corners=l.corners, color=l.color, width=width)
              for part, width in ((rows[~hit], 1.0), (rows[hit], 3.0))  # the strong ones drawn last
              for l in image_layers(cfg_key, view.dataset, part, color_by=color_by, vocabulary=vocabulary)]
    return thumbnail_with_boxes(meta["path"], meta["K"], layers, width=meta["width"], height=meta["height"],
                                size=size)


def with_error_bars(fig, lo_hi: dict, *, labels: bool = True):
    """A copy of a bar figure of ``viz.bars`` with asymmetric error bars: ``lo_hi[(trace name, x)] = (lo, hi)``
    (trace name "" for a single-trace chart); bars without an interval get none. The value labels move inside the
    bars so that the whiskers stay readable (``labels=False``: no labels, for charts of many thin bars; the hover
    still shows the value)."""
    import plotly.graph_objects as go

    fig = go.Figure(fig)
    for tr in fig.data:
        if tr.type != "bar":
            continue
        ys = np.asarray(tr.y, np.float64)
        bounds = [lo_hi.get((tr.name or "", str(x)), (np.nan, np.nan)) for x in tr.x]
        lo = np.array([b[0] for b in bounds], np.float64)
        hi = np.array([b[1] for b in bounds], np.float64)
        tr.error_y = {"type": "data", "symmetric": False, "array": np.nan_to_num(hi - ys, nan=0.0).clip(0),
                      "arrayminus": np.nan_to_num(ys - lo, nan=0.0).clip(0), "visible": True, "thickness": 1.3,
                      "width": 3, "color": "#333333"}
        if labels:
            tr.textposition = "inside"
            tr.insidetextanchor = "end"
        else:
            tr.text = None
    return fig


#: Colour of the GT box in the object view (its crops and its 3D view): the app's highlight colour.
OBJECT_GT_COLOR = HIGHLIGHT_COLOR


def object_layers(cfg_key: str, dataset: str, gt_row: int, table: pd.DataFrame) -> list[BoxLayer]:
    """The object view's boxes for the 3D view: the GT object, then each run's best-overlapping prediction
    (``ObjectView.to_frame()`` rows; runs without one are skipped) in that run's colour, labelled with its class,
    score and status."""
    runs = table["run"].astype(str).tolist()
    colors = class_colors(runs)
    layers = [BoxLayer(name=f"GT {gt_row}", corners=cache.corners_of(cfg_key, dataset, "gt", "", [gt_row]),
                       color=OBJECT_GT_COLOR, labels=[f"GT {gt_row}"], width=5.0)]
    for rec in table.itertuples(index=False):
        if pd.isna(rec.pred_row):
            continue
        text = f"{rec.run}: {rec.pred_class} {rec.score:.2f} · IoU {rec.iou3d:.2f} · {rec.status}"
        layers.append(BoxLayer(name=text, corners=cache.corners_of(cfg_key, dataset, "pred", rec.run,
                                                                   [int(rec.pred_row)]),
                               color=colors[str(rec.run)], labels=[text], width=3.0))
    return layers


@st.cache_data(show_spinner=False, max_entries=512)
def object_crop(cfg_key: str, dataset: str, image_id: int, gt_row: int, run: str | None, pred_row: int | None,
                status: str | None, size: int = 320, pad: float = 0.35) -> bytes:
    """A JPEG crop of one image around a GT box and (optionally) one run's prediction, both drawn projected through
    K (``viz.thumbnails``): the GT white and thick, the prediction in its status colour. The crop is the union of
    the two boxes' projected extents, padded by ``pad`` of its size, inside the image."""
    import io

    from PIL import Image

    meta = cache.image_meta(cfg_key, dataset, image_id)
    w, h = meta["width"], meta["height"]
    layers = [BoxLayer(name="GT", corners=cache.corners_of(cfg_key, dataset, "gt", "", [gt_row]),
                       color=OBJECT_GT_COLOR, width=3.0)]
    if run and pred_row is not None:
        layers.append(BoxLayer(name=status or "pred", corners=cache.corners_of(cfg_key, dataset, "pred", run,
                                                                                [pred_row]),
                               color=STATUS_COLORS.get(status or "pred", STATUS_COLORS["pred"]), width=3.0))
    segs = [project_segments(lay.corners, meta["K"]) for lay in layers]
    uv = np.concatenate([seg[vis].reshape(-1, 2) for seg, vis in segs])
    uv = uv[np.isfinite(uv).all(1)]
    full = Image.open(io.BytesIO(thumbnail_with_boxes(meta["path"], meta["K"], layers, width=w, height=h,
                                                      size=max(w, h), quality=92)))
    if len(uv):
        (x1, y1), (x2, y2) = uv.min(0), uv.max(0)
        side = max(x2 - x1, y2 - y1, 64.0) * (1 + 2 * pad)
        cx, cy = (x1 + x2) / 2, (y1 + y2) / 2
        x1, x2 = np.clip([cx - side / 2, cx + side / 2], 0, w)
        y1, y2 = np.clip([cy - side / 2, cy + side / 2], 0, h)
        sx, sy = full.width / max(w, 1), full.height / max(h, 1)
        if x2 - x1 >= 2 and y2 - y1 >= 2:
            full = full.crop((int(x1 * sx), int(y1 * sy), int(np.ceil(x2 * sx)), int(np.ceil(y2 * sy))))
    k = size / max(full.size)  # one square size for every crop of a row (small objects are scaled up)
    full = full.resize((max(1, round(full.width * k)), max(1, round(full.height * k))), Image.BILINEAR)
    canvas = Image.new("RGB", (size, size), (30, 30, 30))
    canvas.paste(full, ((size - full.width) // 2, (size - full.height) // 2))
    full = canvas
    buf = io.BytesIO()
    full.save(buf, format="JPEG", quality=88)
    return buf.getvalue()
