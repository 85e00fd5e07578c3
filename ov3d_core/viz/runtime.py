"""The accuracy-latency scatter (OV3D-Bench, Runtime Analysis / Table 10): a run's accuracy against its total ms
per image, one labelled point per run, drawn from ``ov3d_core.diagnostics.runtime.accuracy_latency`` rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

__all__ = ["accuracy_latency_figure"]

# marker per source of the total: the authors' numbers, this tool's measurement, or both (a remapped run)
_SYMBOLS = {"declared": "circle", "measured": "square", "declared + measured": "diamond"}


def accuracy_latency_figure(points: pd.DataFrame, *, metric: str = "AP3D", title: str | None = None,
                            height: int = 420) -> go.Figure:
    """Scatter of the ``plotted`` rows of ``points`` (``run``, ``metric``, ``total_ms``, ``device``, ``how``): x =
    total ms per image, y = ``metric``; one trace per ``how`` (the legend says which totals were declared and which
    measured). Points carry ``customdata`` [run, device] for click-through; runs not plotted are listed under the
    chart with their reason."""
    fig = go.Figure()
    shown = points[points["plotted"]] if len(points) else points
    for how in dict.fromkeys(shown["how"].tolist()):
        sub = shown[shown["how"] == how]
        fig.add_trace(go.Scatter(
            x=sub["total_ms"].to_numpy(np.float64), y=sub["metric"].to_numpy(np.float64), mode="markers+text",
            name=how or "unknown", text=sub["run"].astype(str).tolist(), textposition="top center",
            marker=dict(size=11, symbol=_SYMBOLS.get(how, "circle")),
            customdata=[[str(r), str(d)] for r, d in zip(sub["run"], sub["device"])],
            hovertemplate="%{customdata[0]}<br>total: %{x:.1f} ms/image<br>" + metric
                          + ": %{y:.2f}<br>%{customdata[1]}<extra></extra>"))
    left = points[~points["plotted"]] if len(points) else points
    if len(left):
        text = "not plotted: " + "; ".join(f"{r} ({why})" for r, why in zip(left["run"], left["reason"]))
        fig.add_annotation(text=text, xref="paper", yref="paper", x=0, y=-0.22, showarrow=False, xanchor="left",
                           font=dict(size=11, color="#666666"))
    fig.update_xaxes(title="total ms / image (lower is faster)", rangemode="tozero", automargin=True)
    fig.update_yaxes(title=metric, rangemode="tozero", automargin=True)
    fig.update_layout(title=dict(text=title, y=0.98, yanchor="top") if title else None, height=height,
                      margin=dict(l=60, r=20, t=70 if title else 30, b=90 if len(left) else 50),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0))
    return fig
