"""A 3D view in the camera frame: a point cloud downsampled to a budget, boxes as one ``Scatter3d(mode="lines")``
per group (12 edges per box, ``None`` between segments), a heading cross on each box's front face, labels, and
the camera frustum from the intrinsics and image size.

Plotly returns no selection events for 3D traces (plotly.js#3511), so this view is display-only; selection happens
in the linked image view. The camera frame is Omni3D's (x right, y down, z forward), so the default camera looks
along +z from behind and above the camera with -y up.

Speed: point colours go to the browser as one byte per point (an adaptive 256-colour palette as the colour scale)
instead of an ``rgb(...)`` string per point, points are square markers (far fewer triangles than circles), and the
camera presets are ``relayout`` buttons inside the figure, so switching the view never runs Python.

Camera framing follows plotly.js's gl3d camera: the scene is normalised so that axis ``i`` spans
``[-aspect_i / 2, aspect_i / 2]`` around its mid-range, the camera is a look-at (eye, centre, up in those units) with
a perspective projection of vertical field of view 45 degrees over the scene's viewport. :func:`frame_camera` places
the eye of a preset so that every box corner falls inside the viewport.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from ov3d_core.geometry.boxes import BOX_EDGES
from ov3d_core.viz.image_overlay import HEADING_EDGES, BoxLayer

#: Default number of points sent to the browser (plotly's WebGL 3D traces stall well above ~150k).
POINT_BUDGET = 60_000

#: Camera presets for the Omni3D camera frame (x right, y down, z forward): behind and above the camera, from above,
#: and from the right.
CAMERA_PRESETS = ("ego", "top-down", "side")
#: Per preset: the viewing direction and the screen's up vector, in the camera frame (y down: "up" is -y).
PRESET_DIRECTIONS = {
    "ego": ((0.0, 0.45, 1.0), (0.0, -1.0, 0.0)),       # forward and a little down, from behind the camera
    "top-down": ((0.0, 1.0, 0.02), (0.0, 0.0, 1.0)),   # straight down, forward at the top of the screen
    "side": ((-1.0, 0.25, 0.0), (0.0, -1.0, 0.0)),     # from the right, looking left
}
#: plotly.js gl3d's vertical field of view (radians).
PLOTLY_FOVY = np.pi / 4


def normalize_scene(points: np.ndarray, lo: np.ndarray, hi: np.ndarray, aspect: np.ndarray) -> np.ndarray:
    """Data points ``(N, 3)`` in plotly's normalised scene units: ``aspect * ((p - lo) / (hi - lo) - 1/2)``."""
    lo, hi, aspect = (np.asarray(v, np.float64) for v in (lo, hi, aspect))
    return aspect * ((np.asarray(points, np.float64).reshape(-1, 3) - lo) / (hi - lo) - 0.5)


def frame_camera(preset: str, corners: np.ndarray | None, lo: np.ndarray, hi: np.ndarray, aspect: np.ndarray, *,
                 viewport_aspect: float = 1.6, margin: float = 0.1) -> dict:
    """A plotly scene camera for ``preset`` looking at the centre of ``corners`` (``(..., 3)`` data points, e.g. every
    box corner; None or empty: the whole scene) from the nearest distance at which all of them lie inside the
    viewport with ``margin`` (a fraction of the half-size) to spare.

    ``viewport_aspect`` (width / height) is the narrowest viewport the figure is expected in; wider ones only add
    room at the sides. Closed form: a point at offset ``q`` from the centre is inside when its depth along the view
    ``d + q·f`` is at least ``|q·u| / tan(fovy/2)`` and ``|q·r| / (tan(fovy/2) · aspect)``."""
    if preset not in PRESET_DIRECTIONS:
        raise ValueError(f"preset: expected one of {CAMERA_PRESETS}, got {preset!r}")
    fwd, up = (np.asarray(v, np.float64) for v in PRESET_DIRECTIONS[preset])
    fwd = fwd / np.linalg.norm(fwd)
    up = up - (up @ fwd) * fwd
    up = up / np.linalg.norm(up)
    right = np.cross(fwd, up)
    pts = None if corners is None else np.asarray(corners, np.float64).reshape(-1, 3)
    if pts is None or not len(pts):
        pts = np.array(np.meshgrid(*zip(lo, hi))).reshape(3, -1).T  # the scene box's corners
    q = normalize_scene(pts, lo, hi, aspect)
    c = 0.5 * (q.min(axis=0) + q.max(axis=0))
    q = q - c
    t = np.tan(PLOTLY_FOVY / 2) * (1.0 - margin)
    need = np.maximum(np.abs(q @ up) / t, np.abs(q @ right) / (t * viewport_aspect)) - q @ fwd
    d = max(float(need.max()), 0.05 + float(np.max(-(q @ fwd))), 0.1)
    eye = c - d * fwd

    def xyz(v):
        return dict(x=float(v[0]), y=float(v[1]), z=float(v[2]))

    return dict(eye=xyz(eye), center=xyz(c), up=xyz(up), projection=dict(type="perspective"))


def scene_camera(preset: str, aspect: np.ndarray) -> dict:
    """A plotly scene camera for a preset framing the whole normalised scene (``[-a/2, a/2]`` per axis)."""
    a = np.asarray(aspect, np.float64)
    return frame_camera(preset, None, -a / 2, a / 2, a)


def camera_menu(cameras: dict[str, dict], active: str) -> list[dict]:
    """Plotly ``updatemenus``: one button per camera preset, each a ``relayout`` of ``scene.camera`` (switching the
    view happens in the browser, no round trip)."""
    names = list(cameras)
    return [dict(type="buttons", direction="right", showactive=True, active=names.index(active) if active in names
                 else 0, x=0.0, y=1.0, xanchor="left", yanchor="top", pad=dict(l=4, t=4), bgcolor="#f5f5f5",
                 bordercolor="#cccccc", font=dict(size=12),
                 buttons=[dict(label=n, method="relayout", args=[{"scene.camera": cam}]) for n, cam in cameras.items()])]


def palette_colors(colors: np.ndarray, n: int = 256) -> tuple[np.ndarray, list]:
    """Per-point RGB ``(N, 3)`` (in [0, 1] or [0, 255]) as palette indices ``(N,)`` uint8 and a plotly colour scale of
    the adaptive palette (PIL fast octree), so the browser gets one byte per point and no colour strings. Marker
    ``cmin=0, cmax=len(scale)-1`` maps index ``k`` exactly to palette entry ``k``."""
    from PIL import Image

    c = np.asarray(colors, np.float64)
    if c.size and c.max() <= 1.0:
        c = c * 255.0
    rgb = np.clip(np.rint(c), 0, 255).astype(np.uint8).reshape(-1, 1, 3)
    if not len(rgb):
        return np.zeros(0, np.uint8), [[0.0, "rgb(0,0,0)"], [1.0, "rgb(0,0,0)"]]
    q = Image.fromarray(rgb, "RGB").quantize(colors=n, method=Image.Quantize.FASTOCTREE)
    idx = np.asarray(q, np.uint8).reshape(-1)
    pal = np.asarray(q.getpalette()[: 3 * n], np.int64).reshape(-1, 3)
    k = max(int(idx.max()) + 1, 2)
    scale = [[i / (k - 1), f"#{r:02x}{g:02x}{b:02x}"] for i, (r, g, b) in enumerate(pal[:k])]  # hex: fast to validate
    return idx, scale


def scene_bounds(parts: Sequence[np.ndarray], points: np.ndarray | None = None, pad: float = 0.05
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Axis ranges ``(lo (3,), hi (3,))`` covering the given ``(N, 3)`` arrays and the 1st-99th percentile of
    ``points`` (so that a few far returns do not shrink the scene), padded by ``pad`` of the extent."""
    arrs = [np.asarray(p, np.float64).reshape(-1, 3) for p in parts if p is not None and len(p)]
    if points is not None and len(points):
        pts = np.asarray(points, np.float64)
        arrs.append(np.percentile(pts, [1, 99], axis=0))
    if not arrs:
        return np.array([-1.0, -1.0, 0.0]), np.array([1.0, 1.0, 2.0])
    allp = np.concatenate(arrs)
    lo, hi = allp.min(axis=0), allp.max(axis=0)
    ext = np.maximum(hi - lo, 1e-3)
    return lo - pad * ext, hi + pad * ext


def downsample_points(points: np.ndarray, budget: int = POINT_BUDGET, colors: np.ndarray | None = None,
                      seed: int = 0) -> tuple[np.ndarray, np.ndarray | None]:
    """A uniform random subset of at most ``budget`` points ``(N, 3)`` (and their colours ``(N, 3)``), order kept.

    Deterministic for a given ``seed``. Voxel downsampling (``ov3d_core.io.pointcloud``) is the better first step
    for dense clouds; this is the final cap on what is drawn."""
    points = np.asarray(points)
    if len(points) <= budget:
        return points, colors
    idx = np.sort(np.random.default_rng(seed).choice(len(points), size=budget, replace=False))
    return points[idx], (None if colors is None else np.asarray(colors)[idx])


def frustum_corners(K: np.ndarray, width: float, height: float, depth: float) -> np.ndarray:
    """The four image corners (0, 0), (W, 0), (W, H), (0, H) back-projected to depth ``depth`` (metres):
    ``(4, 3)`` points in the camera frame, in that order."""
    uv1 = np.array([[0.0, 0.0, 1.0], [width, 0.0, 1.0], [width, height, 1.0], [0.0, height, 1.0]])
    rays = uv1 @ np.linalg.inv(np.asarray(K, dtype=np.float64)).T
    return rays / rays[:, 2:3] * depth


def frustum_lines(K: np.ndarray, width: float, height: float, depth: float) -> tuple[list, list, list]:
    """Coordinate lists (x, y, z) of the frustum wireframe: 4 rays from the optical centre and the far rectangle,
    segments separated by ``None``."""
    c = frustum_corners(K, width, height, depth)
    o = np.zeros(3)
    segs = [(o, c[i]) for i in range(4)] + [(c[i], c[(i + 1) % 4]) for i in range(4)]
    xs, ys, zs = [], [], []
    for a, b in segs:
        xs += [a[0], b[0], None]
        ys += [a[1], b[1], None]
        zs += [a[2], b[2], None]
    return xs, ys, zs


def box_lines_3d(corners: np.ndarray, edges: np.ndarray = BOX_EDGES) -> tuple[list, list, list]:
    """Coordinate lists (x, y, z) with every edge of every box ``(N, 8, 3)`` and ``None`` after each segment."""
    corners = np.asarray(corners, dtype=np.float64).reshape(-1, 8, 3)
    a = corners[:, edges[:, 0]].reshape(-1, 3)
    b = corners[:, edges[:, 1]].reshape(-1, 3)
    out = []
    for k in range(3):
        col = np.empty((len(a), 3), dtype=object)
        col[:, 0] = a[:, k]
        col[:, 1] = b[:, k]
        col[:, 2] = None
        out.append(col.ravel().tolist())
    return tuple(out)


def box_traces_3d(layer: BoxLayer, show_labels: bool = True, label_text: bool = False) -> list[go.Scatter3d]:
    """Edges (+ heading cross) of one layer as one lines trace, and its labels at the box tops: hover text on small
    markers, or with ``label_text`` written in the scene (plotly tessellates every 3D text glyph: about 60 ms a
    label to draw in a browser without a GPU)."""
    group = layer.group or layer.name
    opacity = min(layer.opacity, 0.45) if layer.struck else layer.opacity
    edges = np.concatenate([BOX_EDGES, HEADING_EDGES]) if layer.heading else BOX_EDGES
    x, y, z = box_lines_3d(layer.corners, edges)
    traces = [go.Scatter3d(x=x, y=y, z=z, mode="lines", name=layer.name, legendgroup=group, opacity=opacity,
                           line=dict(color=layer.color, width=max(layer.width * 2, 2),
                                     dash="dash" if layer.struck else layer.dash), hoverinfo="skip")]
    if show_labels and layer.labels is not None and len(layer):
        top = layer.corners.mean(axis=1)
        top[:, 1] = layer.corners[:, :, 1].min(axis=1)  # y down: the top is the smallest y
        common = dict(x=top[:, 0], y=top[:, 1], z=top[:, 2], name=f"{layer.name} labels", legendgroup=group,
                      showlegend=False, hovertext=list(layer.labels), hoverinfo="text", opacity=opacity)
        if label_text:
            traces.append(go.Scatter3d(mode="text", text=list(layer.labels),
                                       textfont=dict(color=layer.color, size=11), **common))
        else:
            traces.append(go.Scatter3d(mode="markers", marker=dict(size=4, color=layer.color, symbol="square"),
                                       **common))
    return traces


def scene_figure(points: np.ndarray | None, layers: Sequence[BoxLayer], *, K: np.ndarray | None = None,
                 width: float | None = None, height: float | None = None, colors: np.ndarray | None = None,
                 budget: int = POINT_BUDGET, point_size: float = 1.5, frustum_depth: float | None = None,
                 camera: str = "ego", show_labels: bool = True, fig_height: int = 560,
                 title: str | None = None, viewport_aspect: float = 1.6, label_text: bool = False) -> go.Figure:
    """Point cloud + boxes + camera frustum, with camera-preset buttons; the camera starts framed on the boxes.

    Args:
        points: ``(N, 3)`` camera-frame points in metres, or None.
        layers: box groups (the same ``BoxLayer`` objects the image overlay draws).
        K, width, height: intrinsics and image size for the frustum (omit any to skip it).
        colors: ``(N, 3)`` RGB in [0, 1] or [0, 255]; None colours by depth.
        budget: most points drawn (random subset beyond it).
        point_size: marker size in px.
        frustum_depth: far-plane depth of the frustum (default: 10 % of the scene's depth extent, at least 1 m).
        camera: the preset shown first (one of ``CAMERA_PRESETS``; the others are a button away).
        viewport_aspect: narrowest width / height of the plot area the framing must fit.
        show_labels, label_text: box labels at the box tops, as hover text (default) or written in the scene.
    """
    fig = go.Figure()
    pts = cols = None
    if points is not None and len(points):
        pts, cols = downsample_points(np.asarray(points), budget, colors)
        pts = pts.astype(np.float32)
        # square markers: plotly tessellates a circle marker into many more triangles (2-3x slower to draw)
        if cols is not None:
            idx, scale = palette_colors(cols)
            marker = dict(size=point_size, symbol="square", color=idx, colorscale=scale, cmin=0,
                          cmax=len(scale) - 1, showscale=False, line=dict(width=0))
        else:
            marker = dict(size=point_size, symbol="square", color=pts[:, 2], colorscale="Viridis", showscale=False,
                          line=dict(width=0))
        fig.add_trace(go.Scatter3d(x=pts[:, 0], y=pts[:, 1], z=pts[:, 2], mode="markers", marker=marker,
                                   name=f"points ({len(pts):,})", hoverinfo="skip"))
    for layer in layers:
        for tr in box_traces_3d(layer, show_labels=show_labels, label_text=label_text):
            fig.add_trace(tr)
    corners = [layer.corners.reshape(-1, 3) for layer in layers if len(layer)]
    frustum = None
    if K is not None and width and height:
        zmax = max([float(c[:, 2].max()) for c in corners] + ([float(np.percentile(pts[:, 2], 95))]
                                                               if pts is not None else []) + [5.0])
        depth = frustum_depth or max(1.0, 0.1 * zmax)
        x, y, z = frustum_lines(K, width, height, depth)
        fig.add_trace(go.Scatter3d(x=x, y=y, z=z, mode="lines", name="camera", hoverinfo="skip",
                                   line=dict(color="#444444", width=3)))
        frustum = np.vstack([np.zeros((1, 3)), frustum_corners(K, width, height, depth)])
    lo, hi = scene_bounds(corners + ([frustum] if frustum is not None else []), pts)
    aspect = np.maximum((hi - lo) / (hi - lo).max(), 0.04)
    target = np.concatenate(corners) if corners else None
    cams = {name: frame_camera(name, target, lo, hi, aspect, viewport_aspect=viewport_aspect)
            for name in CAMERA_PRESETS}
    camera = camera if camera in cams else CAMERA_PRESETS[0]
    axis = dict(showbackground=False, gridcolor="#dddddd", zerolinecolor="#bbbbbb")
    fig.update_layout(
        height=fig_height, margin=dict(l=0, r=0, t=30 if title else 0, b=0), title=title, uirevision="keep",
        legend=dict(orientation="h", yanchor="top", y=0.0, x=0, font=dict(size=11)),
        updatemenus=camera_menu(cams, camera),
        # orbit: plotly's default turntable drag replaces any camera `up` but +z by (0, 0, 1) on the first draw
        scene=dict(aspectmode="manual", aspectratio=dict(x=aspect[0], y=aspect[1], z=aspect[2]),
                   camera=cams[camera], dragmode="orbit",
                   xaxis=dict(title="x (m)", range=[lo[0], hi[0]], **axis),
                   yaxis=dict(title="y (m, down)", range=[lo[1], hi[1]], **axis),
                   zaxis=dict(title="z (m, forward)", range=[lo[2], hi[2]], **axis)))
    return fig
