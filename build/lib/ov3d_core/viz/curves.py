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
            hovertemplate=f"{x}: %{{x:.3g}}<br>{y}: %{{y:.3g}}" + ("<br>%{customdata[0]}" if g is not None else "")
                          + "<extra></extra>"))
    if diagonal:
        fig.add_trace(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfectly calibrated",
                                 line=dict(color="#999999", dash="dot", width=1), hoverinfo="skip"))
    for label, (mx, my) in (marks or {}).items():
        fig.add_trace(go.Scatter(x=[mx], y=[my], mode="markers+text", text=[label], textposition="top right",
                                 marker=dict(size=11, symbol="diamond", color="#d62728"), name=label,
                                 showlegend=False, hovertemplate=f"{label}<extra></extra>"))
    fig.update_xaxes(title=x_title or x, automargin=True, range=x_range)
    fig.update_yaxes(title=y_title or y, automargin=True, range=y_range)
    fig.update_layout(title=dict(text=title, y=0.98, yanchor="top") if title else None, height=height,
                      margin=dict(l=60, r=20, t=70 if title else 30, b=50),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0), showlegend=group is not None)
    return fig
