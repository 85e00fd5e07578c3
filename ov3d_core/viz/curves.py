"""Line charts over finished result tables: precision-recall curves, the vocabulary-size curve, reliability
curves. One trace per group; points carry ``customdata`` (group, x) for click-through."""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ov3d_core.viz.image_overlay import class_colors


def line_chart(df: pd.DataFrame, x: str, y: str, group: str | None = None, *, title: str | None = None,
               x_title: str | None = None, y_title: str | None = None, height: int = 380,
               markers: bool = True, marks: Mapping[str, tuple[float, float]] | None = None,
               diagonal: bool = False, x_range=None, y_range=None) -> go.Figure:
    """One line per ``group`` value through (``x``, ``y``) in row order. ``marks``: labelled points (e.g. the
    operating point of a score threshold); ``diagonal``: the y = x reference (reliability curves)."""
    fig = go.Figure()
    groups = [None] if group is None else list(dict.fromkeys(df[group].tolist()))
    colors = class_colors([str(g) for g in groups]) if group else {}
    for g in groups:
        sub = df if g is None else df[df[group] == g]
        fig.add_trace(go.Scatter(
            x=sub[x].to_numpy(np.float64), y=sub[y].to_numpy(np.float64), name="" if g is None else str(g),
            mode="lines+markers" if markers else "lines",
            line=dict(color=colors.get(str(g), "#4575b4"), width=2),
            customdata=[[("" if g is None else str(g)), float(v)] for v in sub[x]],
            selected=dict(marker=dict(opacity=1.0)), unselected=dict(marker=dict(opacity=1.0)),
            hovertemplate=f"{x}: %{{x:.3g}}<br>{y}: %{{y:.3g}}" + ("<br>%{customdata[0]}" if g is not None else "")
                          + "<extra></extra>"))
    if diagonal:
        fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfectly calibrated",
                                 line=dict(color="#999999", dash="dot", width=1), hoverinfo="skip"))
    for label, (mx, my) in (marks or {}).items():
        fig.add_trace(go.Scatter(x=[mx], y=[my], mode="markers+text", text=[label], textposition="top right",
                                 marker=dict(size=11, symbol="diamond", color="#d62728"), name=label,
                                 showlegend=False, hovertemplate=f"{label}<extra></extra>"))
    fig.update_xaxes(title=x_title or x, automargin=True, range=x_range, title_standoff=10)
    fig.update_yaxes(title=y_title or y, automargin=True, range=y_range, title_standoff=10)
    fig.update_layout(title=dict(text=title, y=0.98, yanchor="top") if title else None, height=height,
                      margin=dict(l=60, r=20, t=70 if title else 30, b=50),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0), showlegend=group is not None)
    return fig


def pr_figure(curves: pd.DataFrame, ops: pd.DataFrame | None = None, *, group: str = "run", title: str | None = None,
              height: int = 420, colors: Mapping[str, str] | None = None) -> go.Figure:
    """Interpolated precision-recall curves, one line per ``group`` value (``curves``: group, recall, precision), with
    each group's operating point (``ops``: group, recall, precision, min_score, tp, fp) as a diamond of the same
    colour. Axes fixed to [0, 1]."""
    fig = go.Figure()
    groups = list(dict.fromkeys(curves[group].astype(str).tolist()))
    colors = dict(colors or class_colors(groups))
    for g in groups:
        sub = curves[curves[group].astype(str) == g]
        fig.add_trace(go.Scatter(x=sub["recall"].to_numpy(np.float64), y=sub["precision"].to_numpy(np.float64),
                                 mode="lines", name=g, legendgroup=g, line=dict(color=colors.get(g), width=2),
                                 line_shape="hv",
                                 hovertemplate=f"{g}<br>recall %{{x:.2f}}<br>precision %{{y:.3f}}<extra></extra>"))
    if ops is not None and len(ops):
        for rec in ops.to_dict(orient="records"):
            g = str(rec[group])
            if g not in colors or not np.isfinite(rec["recall"]):
                continue
            p = rec["precision"] if np.isfinite(rec["precision"]) else 0.0
            fig.add_trace(go.Scatter(
                x=[rec["recall"]], y=[p], mode="markers", name=f"{g} at score ≥ {rec['min_score']:g}",
                legendgroup=g, showlegend=False,
                marker=dict(symbol="diamond", size=12, color=colors[g], line=dict(color="#222222", width=1.5)),
                hovertemplate=(f"{g}: score ≥ {rec['min_score']:g}<br>recall %{{x:.3f}}<br>precision %{{y:.3f}}"
                               f"<br>TP {int(rec['tp'])} · FP {int(rec['fp'])}<extra></extra>")))
    fig.update_xaxes(title="recall", range=[0, 1.02], automargin=True, title_standoff=8)
    fig.update_yaxes(title="precision", range=[0, 1.05], automargin=True, title_standoff=8)
    fig.update_layout(title=dict(text=title, y=0.98, yanchor="top") if title else None, height=height,
                      margin=dict(l=60, r=20, t=70 if title else 30, b=50),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
    return fig


def pr_grid(curves: pd.DataFrame, ops: pd.DataFrame | None, categories: list[str], *, group: str = "run",
            cols: int = 6, panel_height: int = 190, colors: Mapping[str, str] | None = None) -> go.Figure:
    """Small multiples: one precision-recall panel per category (``curves``/``ops`` with a ``category`` column), one
    line and operating point per ``group`` value in each, one shared legend."""
    from plotly.subplots import make_subplots

    rows = max(1, int(np.ceil(len(categories) / cols)))
    fig = make_subplots(rows=rows, cols=cols, subplot_titles=[str(c) for c in categories], shared_xaxes=True,
                        shared_yaxes=True, horizontal_spacing=0.02, vertical_spacing=0.5 / rows / 1.2 + 0.02)
    groups = list(dict.fromkeys(curves[group].astype(str).tolist()))
    colors = dict(colors or class_colors(groups))
    for k, cat in enumerate(categories):
        r, c = k // cols + 1, k % cols + 1
        sub = curves[curves["category"] == cat]
        for g in groups:
            s = sub[sub[group].astype(str) == g]
            if not len(s):
                continue
            fig.add_trace(go.Scatter(x=s["recall"].to_numpy(np.float64), y=s["precision"].to_numpy(np.float64),
                                     mode="lines", line_shape="hv", name=g, legendgroup=g, showlegend=k == 0,
                                     line=dict(color=colors.get(g), width=1.5),
                                     hovertemplate=f"{cat} · {g}<br>recall %{{x:.2f}}<br>precision %{{y:.3f}}"
                                                   "<extra></extra>"), row=r, col=c)
        if ops is not None and len(ops):
            o = ops[(ops["category"] == cat)]
            for rec in o.to_dict(orient="records"):
                g = str(rec[group])
                if g not in colors or not np.isfinite(rec["recall"]):
                    continue
                p = rec["precision"] if np.isfinite(rec["precision"]) else 0.0
                fig.add_trace(go.Scatter(x=[rec["recall"]], y=[p], mode="markers", legendgroup=g, showlegend=False,
                                         name=g, marker=dict(symbol="diamond", size=8, color=colors[g],
                                                             line=dict(color="#222222", width=1)),
                                         hovertemplate=f"{cat} · {g}: score ≥ {rec['min_score']:g}<br>recall "
                                                       "%{x:.3f}<br>precision %{y:.3f}<extra></extra>"),
                              row=r, col=c)
    fig.update_xaxes(range=[0, 1.02], showticklabels=True, tickfont=dict(size=10), dtick=0.5)
    fig.update_yaxes(range=[0, 1.05], tickfont=dict(size=10), dtick=0.5)
    fig.update_annotations(font=dict(size=12))
    fig.update_layout(height=int(panel_height * rows + 80), margin=dict(l=40, r=10, t=60, b=30),
                      legend=dict(orientation="h", yanchor="bottom", y=1.0 + 30 / (panel_height * rows), x=0))
    return fig


#: Line style per IoU kind of :func:`ap_vs_iou_figure`.
IOU_DASH = {"3d": "solid", "2d": "dash"}


def ap_vs_iou_figure(curves: pd.DataFrame, *, group: str = "run", title: str | None = None, height: int = 420,
                     colors: Mapping[str, str] | None = None) -> go.Figure:
    """AP against the IoU threshold (Pro-Bench Fig. 3): one line per (``group`` value, IoU kind) through
    (``iou_thr``, ``mAP``) of ``curves`` (rows of ``IoUCurve.to_frame()`` with a ``group`` column: ``iou`` is "3d"
    or "2d"), a colour per group, solid for 3D IoU and dashed for 2D IoU. Points carry ``customdata``
    [group, iou kind, threshold]. Thresholds without a finite mAP are left out of their line."""
    fig = go.Figure()
    groups = list(dict.fromkeys(curves[group].astype(str).tolist()))
    colors = dict(colors or class_colors(groups))
    for g in groups:
        for kind in ("3d", "2d"):
            sub = curves[(curves[group].astype(str) == g) & (curves["iou"] == kind)]
            if not len(sub):
                continue
            x, y = sub["iou_thr"].to_numpy(np.float64), sub["mAP"].to_numpy(np.float64)
            ok = np.isfinite(y)
            label = f"{g} · {kind.upper()} IoU"
            fig.add_trace(go.Scatter(
                x=x[ok], y=y[ok], mode="lines+markers", name=label, legendgroup=g,
                line=dict(color=colors.get(g), width=2, dash=IOU_DASH.get(kind, "solid")), marker=dict(size=5),
                customdata=[[g, kind, float(t)] for t in x[ok]],
                hovertemplate=f"{label}<br>IoU ≥ %{{x:.2f}}<br>mAP %{{y:.1f}}<extra></extra>"))
    fig.update_xaxes(title="IoU threshold", range=[0, 1], automargin=True, title_standoff=8)
    fig.update_yaxes(title="mAP (%)", rangemode="tozero", automargin=True, title_standoff=8)
    fig.update_layout(title=dict(text=title, y=0.98, yanchor="top") if title else None, height=height,
                      margin=dict(l=60, r=20, t=70 if title else 30, b=50),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
    return fig
