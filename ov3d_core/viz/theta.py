"""The prompt lab's θ strip: where the top-1 values of a remapped run lie (a histogram over the θ slider's range)
and how many boxes each θ keeps (a line), with the current θ marked. Drawn from ``Analysis.theta_profile``."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

__all__ = ["theta_strip"]


def theta_strip(profile: pd.DataFrame, theta: float, *, value_name: str = "top-1 cosine similarity",
                height: int = 190) -> go.Figure:
    """Bars: boxes per θ bin (``profile["n_at"]``); line (right axis): boxes kept at each θ (``n_kept``); a dashed
    marker at ``theta``. The x range is the profile's θ grid, the slider's range."""
    x = profile["theta"].to_numpy(np.float64)
    step = float(x[1] - x[0]) if len(x) > 1 else 0.01
    fig = go.Figure()
    fig.add_trace(go.Bar(x=x + step / 2, y=profile["n_at"].to_numpy(np.int64), width=step, name="boxes at this value",
                         marker=dict(color="#9ecae1", line=dict(width=0)),
                         hovertemplate=f"{value_name} in [%{{customdata:.2f}}, +{step:g}): %{{y}} boxes<extra></extra>",
                         customdata=x))
    fig.add_trace(go.Scatter(x=x, y=profile["n_kept"].to_numpy(np.int64), mode="lines", name="boxes kept at θ",
                             line=dict(color="#08519c", width=2), yaxis="y2",
                             hovertemplate="θ = %{x:.2f}: %{y} boxes kept<extra></extra>"))
    fig.add_vline(x=float(theta), line=dict(color="#d62728", width=2, dash="dash"))
    lo, hi = (float(x[0]), float(x[-1]) + step) if len(x) else (0.0, 1.0)
    fig.update_layout(height=height, margin=dict(l=10, r=10, t=26, b=30), bargap=0, showlegend=True,
                      legend=dict(orientation="h", x=0, y=1.18, font=dict(size=11)),
                      xaxis=dict(range=[lo, hi], title=dict(text=value_name, font=dict(size=11))),
                      yaxis=dict(title=dict(text="boxes", font=dict(size=11)), rangemode="tozero"),
                      yaxis2=dict(overlaying="y", side="right", rangemode="tozero", showgrid=False,
                                  title=dict(text="kept", font=dict(size=11))))
    return fig
