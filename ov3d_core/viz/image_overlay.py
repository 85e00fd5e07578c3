"""An image with 3D boxes projected through the intrinsics: edges, a heading cross and a class/score label per box.

Boxes come in ``BoxLayer`` groups (one per run x status, or per class); each group is one legend entry made of
three traces sharing a ``legendgroup``: the 12 edges of every box as one ``go.Scatter(mode="lines")`` with NaN
separators (numeric arrays: fast to validate and to send), the heading marker (the two diagonals of the front face,
the face on the local +x / length axis) and a marker+text trace at each box's label anchor. The label trace carries
``customdata`` and the hover text, so that clicking a box in Streamlit (``st.plotly_chart(on_select=...)``, which
ignores line-only traces) maps back to a record.

Boxes "removed by the oracle" (``BoxLayer.struck``) are drawn faded and dashed, with a strike line across their 2D
bounds and the label struck through.
"""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from ov3d_core.geometry.boxes import BOX_EDGES, BOX_FACES, NEAR_CLIP, project_points, projected_box2d

#: The face whose corners sit at local x = +l/2 (the heading direction); checked in tests against corners_from_pose.
FRONT_FACE = BOX_FACES[4]
#: The front face's two diagonals: the heading cross.
HEADING_EDGES = np.array([[FRONT_FACE[0], FRONT_FACE[2]], [FRONT_FACE[1], FRONT_FACE[3]]])

#: Colour per evaluation status (shared by the image, the 3D scene and the legend of every page).
STATUS_COLORS = {
    "TP": "#1a9850",
    "FP": "#d73027",
    "FN": "#fc8d59",
    "mislabelled": "#7b3294",
    "ignored": "#999999",
    "not evaluated": "#bdbdbd",
    "removed": "#737373",
    "GT": "#4575b4",
    "pred": "#e6ab02",
}

#: Display names used in legends.
STATUS_LABELS = {
    "TP": "TP",
    "FP": "FP",
    "FN": "FN (missed GT)",
    "mislabelled": "mislabelled, well localised",
    "ignored": "ignored",
    "not evaluated": "not evaluated",
    "removed": "removed by the oracle",
}


@dataclass(frozen=True)
class BoxLayer:
    """One legend group of boxes.

    Attributes:
        name: legend text.
        corners: ``(N, 8, 3)`` float64 corners in the camera frame, metres, Omni3D corner order.
        color: CSS colour of edges, heading cross and label.
        labels: ``N`` label strings (e.g. "chair 0.81"); None: no labels.
        customdata: ``(N, k)`` values attached to each box's label marker.
        dash: plotly line dash ("solid", "dash", "dot", ...).
        width: line width in px.
        opacity: trace opacity.
        struck: removed by the oracle: faded, dashed, struck through.
        heading: draw the heading cross.
        group: legend group id (default: ``name``).
        show_text: write the labels on the image (else they are hover text on the label markers only: e.g. matched
            or ignored GT, whose class the matched prediction's label already says).
    """

    name: str
    corners: np.ndarray
    color: str
    labels: Sequence[str] | None = None
    customdata: np.ndarray | None = None
    dash: str = "solid"
    width: float = 2.0
    opacity: float = 1.0
    struck: bool = False
    heading: bool = True
    group: str | None = None
    show_text: bool = True

    def __post_init__(self):
        c = np.asarray(self.corners, dtype=np.float64)
        if c.ndim != 3 or c.shape[1:] != (8, 3):
            raise ValueError(f"BoxLayer.corners: expected shape (N, 8, 3), got {c.shape}")
        object.__setattr__(self, "corners", c)
        if self.labels is not None and len(self.labels) != len(c):
            raise ValueError(f"BoxLayer.labels: expected {len(c)} labels, got {len(self.labels)}")
        if self.customdata is not None and len(self.customdata) != len(c):
            raise ValueError(f"BoxLayer.customdata: expected {len(c)} rows, got {len(self.customdata)}")

    def __len__(self) -> int:
        return len(self.corners)


# --------------------------------------------------------------------------------------------------- geometry
def clip_segments_near(a: np.ndarray, b: np.ndarray, near: float = NEAR_CLIP) -> tuple[np.ndarray, np.ndarray,
                                                                                            np.ndarray]:
    """Clip 3D segments ``a -> b`` (``(M, 3)`` each, camera frame) to the half-space z > ``near``.

    Returns the clipped endpoints and a mask of segments with any part in front of the camera."""
    a = np.asarray(a, dtype=np.float64).reshape(-1, 3)
    b = np.asarray(b, dtype=np.float64).reshape(-1, 3)
    za, zb = a[:, 2], b[:, 2]
    fa, fb = za > near, zb > near
    keep = fa | fb
    eps = 1e-6
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (near + eps - za) / (zb - za)
    t = np.clip(np.nan_to_num(t), 0.0, 1.0)[:, None]
    cut = a + t * (b - a)
    a2 = np.where((~fa & fb)[:, None], cut, a)
    b2 = np.where((fa & ~fb)[:, None], cut, b)
    return a2, b2, keep


def project_segments(corners: np.ndarray, K: np.ndarray, edges: np.ndarray = BOX_EDGES) -> tuple[np.ndarray,
                                                                                                  np.ndarray]:
    """Project the ``edges`` of boxes ``(N, 8, 3)`` through ``K (3, 3)``, clipping at the near plane.

    Returns ``(uv (N, E, 2, 2), visible (N, E))``: pixel endpoints of each edge and whether it is drawn."""
    corners = np.asarray(corners, dtype=np.float64).reshape(-1, 8, 3)
    n, e = len(corners), len(edges)
    a = corners[:, edges[:, 0]].reshape(-1, 3)
    b = corners[:, edges[:, 1]].reshape(-1, 3)
    a, b, keep = clip_segments_near(a, b)
    ua, _ = project_points(a, K)
    ub, _ = project_points(b, K)
    uv = np.stack([ua, ub], axis=1).reshape(n, e, 2, 2)
    return uv, keep.reshape(n, e)


def segments_to_xy(uv: np.ndarray, visible: np.ndarray) -> tuple[np.ndarray, ...]:
    """Flatten segments ``(N, E, 2, D)`` into one float array per coordinate with a NaN after every segment (plotly
    draws NaN as a gap; numeric arrays are validated and sent to the browser far faster than lists)."""
    n, e, _, d = uv.shape
    seg = uv.reshape(n * e, 2, d)[np.asarray(visible, bool).ravel()]
    out = np.full((len(seg), 3, d), np.nan)
    out[:, :2] = seg
    return tuple(out[:, :, k].ravel() for k in range(d))


def label_anchors(corners: np.ndarray, K: np.ndarray, width: float | None = None,
                  height: float | None = None) -> np.ndarray:
    """Label anchor per box: the top-left of its projected 2D bounds (clipped to the image when the size is given);
    NaN rows for boxes not visible. Returns ``(N, 2)`` pixels."""
    proj, trunc = projected_box2d(corners, K, width, height)
    box = trunc if width is not None and height is not None else proj
    out = box[:, :2].copy()
    invisible = (box == -1).all(axis=1)
    out[invisible] = np.nan
    return out


#: Label text size (px) and the width of one character as a fraction of it (plotly's default sans-serif).
LABEL_FONT_PX = 12
#: Fill behind placed labels: light, so that every status colour reads on any image.
LABEL_BACKGROUND = "rgba(255,255,255,0.78)"
CHAR_WIDTH = 0.6
_MARKER_PX = 10.0  # the square marker left of the text, and its gap


def label_size_px(texts: Sequence[str], font_px: float = LABEL_FONT_PX) -> np.ndarray:
    """Approximate screen size ``(N, 2)`` (width, height) in px of each label: marker, gap and text on one line
    (HTML tags such as ``<s>`` are not counted)."""
    import re

    n = np.array([len(re.sub(r"<[^>]+>", "", str(t))) for t in texts], np.float64)
    return np.stack([_MARKER_PX + CHAR_WIDTH * font_px * n, np.full(len(n), 1.3 * font_px)], axis=1)


def _overlap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Overlap areas of rectangle ``a`` (x1, y1, x2, y2) with every row of ``b`` ``(M, 4)``."""
    w = np.minimum(a[2], b[:, 2]) - np.maximum(a[0], b[:, 0])
    h = np.minimum(a[3], b[:, 3]) - np.maximum(a[1], b[:, 1])
    return np.clip(w, 0, None) * np.clip(h, 0, None)


def place_labels(bounds: np.ndarray, sizes_px: np.ndarray, px_per_unit: float, width: float,
                 height: float) -> tuple[np.ndarray, np.ndarray]:
    """Label positions that avoid each other: for each box in order, the first candidate spot whose label rectangle
    overlaps no label placed before it (else the spot of least overlap), kept inside the image.

    Args:
        bounds: ``(N, 4)`` x1, y1, x2, y2 of each box's projected bounds in image pixels (NaN rows: not drawn).
        sizes_px: ``(N, 2)`` label width and height in screen px (:func:`label_size_px`).
        px_per_unit: screen px per image pixel (how large the image is drawn).
        width, height: image size in pixels.

    Returns:
        ``(xy (N, 2), rects (N, 4))``: the marker point of each label (its left end, vertically centred: the text
        runs to its right) and the label rectangle, in image pixels; NaN rows for boxes not drawn. Candidates, in
        order: above the top-left corner, just inside it, above the top-right corner, below the bottom-left corner,
        inside the bottom-right corner, then higher and higher above the top-left corner.
    """
    b = np.asarray(bounds, np.float64).reshape(-1, 4)
    sz = np.asarray(sizes_px, np.float64).reshape(-1, 2) / max(float(px_per_unit), 1e-9)
    xy = np.full((len(b), 2), np.nan)
    rects = np.full((len(b), 4), np.nan)
    placed: list[np.ndarray] = []
    for i in range(len(b)):
        if np.isnan(b[i]).any():
            continue
        x1, y1, x2, y2 = b[i]
        w, h = sz[i]
        cands = [(x1, y1 - h / 2), (x1, y1 + h / 2), (x2 - w, y1 - h / 2), (x1, y2 + h / 2), (x2 - w, y2 - h / 2)]
        cands += [(x1, y1 - h / 2 - k * h) for k in range(1, 5)]
        best, best_cost = None, np.inf
        done = np.array(placed) if placed else np.zeros((0, 4))
        for cx, cy in cands:
            cx = float(np.clip(cx, 0.0, max(width - w, 0.0)))
            cy = float(np.clip(cy, h / 2, max(height - h / 2, h / 2)))
            r = np.array([cx, cy - h / 2, cx + w, cy + h / 2])
            cost = float(_overlap(r, done).sum()) if len(done) else 0.0
            if cost < best_cost - 1e-9:
                best, best_cost = (cx, cy, r), cost
            if cost <= 0.0:
                break
        xy[i] = best[:2]
        rects[i] = best[2]
        placed.append(best[2])
    return xy, rects


# --------------------------------------------------------------------------------------------------- traces
def box_traces_2d(layer: BoxLayer, K: np.ndarray, width: float | None = None, height: float | None = None,
                  show_labels: bool = True, label_xy: np.ndarray | None = None,
                  show_legend: bool = True) -> list[go.Scatter]:
    """The traces of one layer: edges, heading cross, (strike lines), label markers (at ``label_xy`` ``(N, 2)`` when
    given, e.g. from :func:`place_labels`, with a thin leader line to the box corner when a label had to move; else
    at each box's top-left corner)."""
    group = layer.group or layer.name
    dash = "dash" if layer.struck else layer.dash
    opacity = min(layer.opacity, 0.45) if layer.struck else layer.opacity
    labels = list(layer.labels) if layer.labels is not None else None
    traces: list[go.Scatter] = []
    uv, vis = project_segments(layer.corners, K)
    x, y = segments_to_xy(uv, vis)
    traces.append(go.Scatter(x=x, y=y, mode="lines", name=layer.name, legendgroup=group, showlegend=show_legend,
                             opacity=opacity, line=dict(color=layer.color, width=layer.width, dash=dash),
                             hoverinfo="skip"))
    if layer.heading and len(layer):
        uv, vis = project_segments(layer.corners, K, HEADING_EDGES)
        x, y = segments_to_xy(uv, vis)
        traces.append(go.Scatter(x=x, y=y, mode="lines", name=f"{layer.name} heading", legendgroup=group,
                                 showlegend=False, opacity=opacity, hoverinfo="skip",
                                 line=dict(color=layer.color, width=max(layer.width * 0.6, 1.0), dash=dash)))
    if layer.struck and len(layer):
        proj, trunc = projected_box2d(layer.corners, K, width, height)
        box = trunc if width is not None and height is not None else proj
        ok = ~(box == -1).all(axis=1)
        seg = np.stack([box[:, [0, 1]], box[:, [2, 3]]], axis=1)[:, None]  # (N, 1, 2, 2)
        x, y = segments_to_xy(seg, ok[:, None])
        traces.append(go.Scatter(x=x, y=y, mode="lines", name=f"{layer.name} struck", legendgroup=group,
                                 showlegend=False, opacity=opacity, hoverinfo="skip",
                                 line=dict(color=layer.color, width=layer.width)))
    anchors = label_anchors(layer.corners, K, width, height)
    ok = ~np.isnan(anchors).any(axis=1)
    placed = label_xy is not None
    at = np.asarray(label_xy, np.float64).reshape(-1, 2) if placed else anchors
    ok &= ~np.isnan(at).any(axis=1)
    if ok.any():
        names = labels if labels is not None else [""] * len(layer)
        text = [(f"<s>{t}</s>" if layer.struck else t) for t, keep in zip(names, ok) if keep]
        cdata = None
        if layer.customdata is not None:
            cdata = np.asarray(layer.customdata, dtype=object).reshape(len(layer), -1)[ok].tolist()
        traces.append(go.Scatter(
            meta="label", x=at[ok, 0], y=at[ok, 1], mode="markers+text" if show_labels and layer.labels is not None
            and layer.show_text else "markers", name=f"{layer.name} labels", legendgroup=group, showlegend=False, opacity=opacity,
            marker=dict(color=layer.color, size=7, symbol="square"), text=text,
            textposition="middle right" if placed else "top right",
            textfont=dict(color=layer.color, size=LABEL_FONT_PX), customdata=cdata,
            hovertext=[t for t, keep in zip(names, ok) if keep], hoverinfo="text",
            selected=dict(marker=dict(opacity=1.0)), unselected=dict(marker=dict(opacity=1.0))))
        if placed:
            moved = ok & (np.hypot(*(at - anchors).T) > 1.0)
            if moved.any():
                seg = np.stack([anchors[moved], at[moved]], axis=1)[:, None]  # (M, 1, 2, 2)
                x, y = segments_to_xy(seg, np.ones((int(moved.sum()), 1), bool))
                traces.append(go.Scatter(x=x, y=y, mode="lines", name=f"{layer.name} leaders", legendgroup=group,
                                         showlegend=False, opacity=opacity, hoverinfo="skip",
                                         line=dict(color=layer.color, width=0.8, dash="dot")))
    return traces


# --------------------------------------------------------------------------------------------------- image
def encode_image(image, max_side: int = 1600, fmt: str = "JPEG", quality: int = 85) -> tuple[str, int, int, float]:
    """Encode an image (``(H, W[, 3])`` array, a PIL image or a path) as a data URI, downscaled so that its longer
    side is at most ``max_side``. Returns ``(uri, width, height, scale)`` with the original size and the pixel
    scale of the encoded image (original pixels per encoded pixel)."""
    from PIL import Image

    if isinstance(image, (str, bytes)) or hasattr(image, "__fspath__"):
        img = Image.open(image)
    elif isinstance(image, np.ndarray):
        arr = image
        if arr.dtype != np.uint8:
            arr = np.clip(arr * (255.0 if arr.max() <= 1.0 else 1.0), 0, 255).astype(np.uint8)
        img = Image.fromarray(arr)
    else:
        img = image
    img = img.convert("RGB")
    w, h = img.size
    scale = 1.0
    if max(w, h) > max_side:
        scale = max(w, h) / max_side
        img = img.resize((max(1, round(w / scale)), max(1, round(h / scale))), Image.BILINEAR)
        scale = w / img.size[0]
    buf = io.BytesIO()
    img.save(buf, format=fmt, quality=quality)
    mime = "jpeg" if fmt.upper() == "JPEG" else fmt.lower()
    return f"data:image/{mime};base64,{base64.b64encode(buf.getvalue()).decode()}", w, h, scale


def image_overlay(image, K: np.ndarray, layers: Sequence[BoxLayer], *, width: int | None = None,
                  height: int | None = None, title: str | None = None, show_labels: bool = True,
                  fig_height: int = 520, max_side: int = 1600, image_scale: float = 1.0,
                  display_width: float | None = None, show_legend: bool = True,
                  avoid_overlap: bool = True) -> go.Figure:
    """An image (array, PIL image, path, or None for a blank canvas of ``width`` x ``height``) with the projected
    boxes of every layer. Pixel coordinates follow the projection: pixel (u, v) is centred at integer (u, v).

    Args:
        image: the image, or None; or a ``data:`` URI from :func:`encode_image` (then give ``width``, ``height``
            and ``image_scale``).
        K: ``(3, 3)`` intrinsics of the image.
        layers: box groups, drawn in order (later on top).
        width, height: image size in pixels (required when ``image`` is None; read from the image otherwise).
        title: figure title.
        show_labels: draw the label texts (the label markers stay, for selection).
        fig_height: figure height in px.
        display_width: the width in px the figure is shown at (default: as wide as ``fig_height`` allows); with
            ``avoid_overlap`` it sets how large labels are relative to the image.
        show_legend: draw the figure's own legend (off when the page shows one legend for several panels).
        avoid_overlap: place labels with :func:`place_labels` over all layers (else at each box's corner).
    """
    fig = go.Figure()
    if isinstance(image, str) and image.startswith("data:"):
        fig.add_trace(go.Image(source=image, x0=0, y0=0, dx=image_scale, dy=image_scale, hoverinfo="skip",
                               name="image"))
    elif image is not None:
        uri, w, h, scale = encode_image(image, max_side=max_side)
        width, height = width or w, height or h
        fig.add_trace(go.Image(source=uri, x0=0, y0=0, dx=scale, dy=scale, hoverinfo="skip", name="image"))
    if width is None or height is None:
        raise ValueError("image_overlay: give the image or its width and height")
    positions: list = [None] * len(layers)
    rects = np.zeros((0, 4))
    if avoid_overlap and show_labels and any(layer.labels is not None and layer.show_text and len(layer)
                                             for layer in layers):
        top = (fig_height - (30 if title else 0)) / max(height, 1)
        scale = min(top, (display_width or np.inf) / max(width, 1))
        bounds, sizes, owner = [], [], []
        for k, layer in enumerate(layers):
            if layer.labels is None or not layer.show_text or not len(layer):
                continue
            proj, trunc = projected_box2d(layer.corners, K, width, height)
            bb = np.where((trunc == -1).all(axis=1, keepdims=True), np.nan, trunc)
            bounds.append(bb)
            sizes.append(label_size_px([f"{t}" for t in layer.labels]))
            owner += [(k, i) for i in range(len(layer))]
        xy, rects = place_labels(np.concatenate(bounds), np.concatenate(sizes), scale, width, height)
        for k, layer in enumerate(layers):
            if layer.labels is not None and layer.show_text and len(layer):
                positions[k] = np.full((len(layer), 2), np.nan)
        for (k, i), p in zip(owner, xy):
            positions[k][i] = p
    labels = []
    for layer, pos in zip(layers, positions):
        for tr in box_traces_2d(layer, K, width, height, show_labels=show_labels, label_xy=pos,
                                show_legend=show_legend):
            if tr.meta == "label":
                labels.append(tr)  # drawn after every box, on a light background, so no edge crosses a label
            else:
                fig.add_trace(tr)
    r = rects[~np.isnan(rects).any(axis=1)] if len(rects) else rects
    if len(r):
        xs = np.stack([r[:, 0] - 1, r[:, 2] + 2, r[:, 2] + 2, r[:, 0] - 1, r[:, 0] - 1, np.full(len(r), np.nan)], 1)
        ys = np.stack([r[:, 1], r[:, 1], r[:, 3], r[:, 3], r[:, 1], np.full(len(r), np.nan)], 1)
        fig.add_trace(go.Scatter(x=xs.ravel(), y=ys.ravel(), mode="lines", fill="toself", name="label backgrounds",
                                 fillcolor=LABEL_BACKGROUND, line=dict(width=0), hoverinfo="skip", showlegend=False))
    for tr in labels:
        fig.add_trace(tr)
    fig.update_xaxes(range=[-0.5, width - 0.5], visible=False, constrain="domain")
    fig.update_yaxes(range=[height - 0.5, -0.5], visible=False, scaleanchor="x", scaleratio=1, constrain="domain")
    fig.update_layout(
        title=dict(text=title) if title else None, height=fig_height, margin=dict(l=0, r=0, t=30 if title else 0, b=0),
        legend=dict(orientation="h", yanchor="top", y=-0.01, xanchor="left", x=0, font=dict(size=11)),
        showlegend=show_legend, plot_bgcolor="#202020", clickmode="event+select", dragmode="pan", uirevision="keep")
    return fig


#: GT statuses whose labels are hover text only in the status colouring (the matched prediction names the class).
QUIET_GT = ("TP", "ignored", "not evaluated")


def status_layers(corners: np.ndarray, status: Sequence[str], *, kind: str, labels: Sequence[str] | None = None,
                  customdata: np.ndarray | None = None, prefix: str = "", order: Sequence[str] | None = None,
                  colors: dict | None = None, quiet_gt: bool = True) -> list[BoxLayer]:
    """Split boxes into one ``BoxLayer`` per status with the shared style: predictions solid, ground truth dotted
    (missed GT solid and thick), "removed" (by the oracle) struck through.

    Args:
        corners: ``(N, 8, 3)`` corners, camera frame.
        status: ``N`` status strings ("TP", "FP", "FN", "mislabelled", "ignored", "not evaluated", "removed").
        kind: "gt" or "pred".
        labels: ``N`` label strings.
        customdata: ``(N, k)`` per-box values.
        prefix: legend prefix (e.g. the run name).
        order: status drawing order (default: ignored first, TP last).
        colors: override of ``STATUS_COLORS``.
        quiet_gt: GT boxes of :data:`QUIET_GT` statuses keep their label as hover text only.
    """
    colors = {**STATUS_COLORS, **(colors or {})}
    status = np.asarray(status, dtype=object)
    corners = np.asarray(corners, dtype=np.float64).reshape(-1, 8, 3)
    order = list(order or ["not evaluated", "ignored", "removed", "TP", "mislabelled", "FP", "FN"])
    order += [s for s in dict.fromkeys(status.tolist()) if s not in order]
    out = []
    for s in order:
        m = status == s
        if not m.any():
            continue
        who = "GT" if kind == "gt" else "pred"
        name = f"{prefix}{who} {STATUS_LABELS.get(s, s)} ({int(m.sum())})"
        if kind == "gt":
            dash, width = ("solid", 3.0) if s == "FN" else ("dot", 1.5)
        else:
            dash, width = ("dash", 1.5) if s in ("ignored", "not evaluated") else ("solid", 2.0)
        out.append(BoxLayer(
            name=name, corners=corners[m], color=colors.get(s, "#17becf"),
            labels=None if labels is None else [labels[i] for i in np.flatnonzero(m)],
            customdata=None if customdata is None else np.asarray(customdata, dtype=object)[m],
            dash=dash, width=width, struck=(s == "removed"), heading=True,
            opacity=0.6 if s in ("ignored", "not evaluated") else 1.0, group=f"{prefix}{kind}:{s}",
            show_text=not (quiet_gt and kind == "gt" and s in QUIET_GT)))
    return out


def class_colors(names: Sequence[str]) -> dict[str, str]:
    """A stable colour per class name (plotly's Dark24 then Light24 palettes, by first appearance)."""
    import plotly.colors as pc

    palette = list(pc.qualitative.Dark24) + list(pc.qualitative.Light24)
    return {n: palette[i % len(palette)] for i, n in enumerate(dict.fromkeys(names))}


def class_layers(corners: np.ndarray, categories: Sequence[str], *, kind: str, labels: Sequence[str] | None = None,
                 customdata: np.ndarray | None = None, prefix: str = "", colors: dict | None = None,
                 struck: np.ndarray | None = None) -> list[BoxLayer]:
    """Split boxes into one ``BoxLayer`` per class (colour from ``colors`` or ``class_colors``); ground truth dotted,
    predictions solid. ``struck`` ``(N,)`` marks boxes drawn struck through (their own layer per class)."""
    cats = np.asarray(categories, dtype=object)
    corners = np.asarray(corners, dtype=np.float64).reshape(-1, 8, 3)
    colors = colors or class_colors([str(c) for c in cats])
    struck = np.zeros(len(cats), bool) if struck is None else np.asarray(struck, bool)
    who = "GT" if kind == "gt" else "pred"
    out = []
    for cat in dict.fromkeys(cats.tolist()):
        for s in (False, True):
            m = (cats == cat) & (struck == s)
            if not m.any():
                continue
            idx = np.flatnonzero(m)
            out.append(BoxLayer(
                name=f"{prefix}{who} {cat}{' (removed)' if s else ''} ({len(idx)})", corners=corners[m],
                color=colors.get(str(cat), "#17becf"), labels=None if labels is None else [labels[i] for i in idx],
                customdata=None if customdata is None else np.asarray(customdata, dtype=object)[m],
                dash="dot" if kind == "gt" else "solid", width=1.5 if kind == "gt" else 2.0, struck=s,
                group=f"{prefix}{kind}:{cat}:{int(s)}"))
    return out


# --------------------------------------------------------------------------------------------------- shared legend
def legend_items(layers: Sequence[BoxLayer]) -> list[tuple[str, str, str, float]]:
    """One legend entry per distinct layer name without its count ("pred TP (3)" -> "pred TP"), in first-seen order:
    ``(text, colour, dash, width)``. Pass the layers of every panel of a page to get one legend for all of them."""
    import re

    out: dict[str, tuple[str, str, str, float]] = {}
    for layer in layers:
        text = re.sub(r" \(\d+\)$", "", layer.name)
        if text not in out:
            out[text] = (text, layer.color, "dash" if layer.struck else layer.dash, float(layer.width))
    return list(out.values())


def legend_html(items: Sequence[tuple[str, str, str, float]], font_px: int = 13) -> str:
    """The entries of :func:`legend_items` as one line of inline HTML: a line swatch (solid, dashed or dotted, as the
    boxes are drawn) and the text per entry."""
    import html

    dash = {"solid": "", "dash": "6,4", "dot": "2,3", "dashdot": "6,3,2,3"}
    parts = []
    for text, color, style, width in items:
        da = dash.get(style, "")
        svg = (f"<svg width='26' height='10' style='vertical-align:middle'><line x1='1' y1='5' x2='25' y2='5' "
               f"stroke='{html.escape(color)}' stroke-width='{max(width, 1.5):g}'"
               + (f" stroke-dasharray='{da}'" if da else "") + "/></svg>")
        parts.append(f"<span style='white-space:nowrap;margin-right:14px'>{svg} {html.escape(text)}</span>")
    return f"<div class='ov3d-legend' style='font-size:{font_px}px;line-height:1.8'>{''.join(parts)}</div>"
