"""Bar charts and distributions over finished result tables: per-category AP, leaderboard metrics, the three-axis
breakdown (geometry / semantics / domain), per-class deltas between protocols and subset distributions.

Bar traces carry ``customdata`` (group, x) so that Streamlit's ``st.plotly_chart(on_select=...)`` can map a click
back to a run and category.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ov3d_core.viz.image_overlay import class_colors


#: Smallest value-label size (px) drawn on a bar; plotly hides a label rather than shrink it below this.
BAR_TEXT_PX = 11
#: Width (px) of the plot area the bar labels are laid out for (the wide layout's main column).
PLOT_PX = 1100


def _bar_text(fig: go.Figure, n_slots: int) -> None:
    """Readable value labels: 12 px, vertical when the bars are too narrow for them lying down, and hidden (hover
    still shows the value) when even that does not fit: never shrunk to a few pixels."""
    bar_px = PLOT_PX * 0.8 / max(n_slots, 1)
    fig.update_traces(textfont=dict(size=12), textangle=-90 if bar_px < 40 else 0, constraintext="none",
                      selector=dict(type="bar"))
    fig.update_layout(uniformtext=dict(minsize=BAR_TEXT_PX, mode="hide"))
    if bar_px < 14:  # a 12 px label standing up needs ~14 px of bar: narrower, labels outside would overlap
        fig.update_traces(text=None, selector=dict(type="bar"))  # (uniformtext only hides labels inside bars)


def _layout(fig: go.Figure, title: str | None, height: int) -> go.Figure:
    fig.update_xaxes(automargin=True, title_standoff=10)
    fig.update_yaxes(automargin=True, title_standoff=10)
    # a click selects (Streamlit reads it) but must not leave the other bars faded once handled
    fig.update_traces(cliponaxis=False, selected=dict(marker=dict(opacity=1.0)),
                      unselected=dict(marker=dict(opacity=1.0)), selector=dict(type="bar"))
    fig.update_layout(title=dict(text=title, y=0.98, yanchor="top") if title else None, height=height,
                      margin=dict(l=60, r=20, t=70 if title else 30, b=40),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0), clickmode="event+select",
                      bargap=0.2)
    return fig


def grouped_bars(df: pd.DataFrame, x: str, y: str, group: str | None = None, *, order: Sequence[str] | None = None,
                 title: str | None = None, y_title: str | None = None, height: int = 380,
                 colors: Mapping[str, str] | None = None, highlight: str | None = None,
                 text_fmt: str = "{:.1f}", horizontal: bool = False) -> go.Figure:
    """One bar per row of ``df``: ``x`` categories, ``y`` values, one trace per ``group`` value.

    Each bar's ``customdata`` is ``[group value or "", x value]``. NaN values are drawn as missing bars (no GT).
    ``highlight`` outlines the bars of that ``x`` value."""
    fig = go.Figure()
    xs = list(order) if order is not None else list(dict.fromkeys(df[x].tolist()))
    groups = [None] if group is None else list(dict.fromkeys(df[group].tolist()))
    colors = dict(colors or (class_colors([str(g) for g in groups]) if group else {}))
    for g in groups:
        sub = df if g is None else df[df[group] == g]
        sub = sub.set_index(x).reindex(xs)
        vals = sub[y].to_numpy(dtype=np.float64)
        custom = [[("" if g is None else str(g)), str(c)] for c in xs]
        line_w = [3 if highlight is not None and c == highlight else 0 for c in xs]
        bar_kw = dict(name="" if g is None else str(g), customdata=custom,
                      text=["" if np.isnan(v) else text_fmt.format(v) for v in vals], textposition="outside",
                      marker=dict(color=colors.get(str(g)) if g is not None else "#4575b4",
                                  line=dict(width=line_w, color="#d62728")),
                      hovertemplate=f"%{{customdata[1]}}<br>{y}: %{{{'x' if horizontal else 'y'}:.2f}}"
                                    + ("<br>%{customdata[0]}" if g is not None else "") + "<extra></extra>")
        if horizontal:
            fig.add_trace(go.Bar(y=xs, x=vals, orientation="h", **bar_kw))
        else:
            fig.add_trace(go.Bar(x=xs, y=vals, **bar_kw))
    if horizontal:
        fig.update_yaxes(type="category", autorange="reversed")
        fig.update_xaxes(title=y_title or y)
    else:
        fig.update_xaxes(type="category", tickangle=-45 if len(xs) > 8 else 0)
        fig.update_yaxes(title=y_title or y)
    # one bar per x (each x belongs to a single group, e.g. templates coloured by prompt type): no side-by-side gaps
    single = group is not None and bool((df.groupby(x)[group].nunique() <= 1).all())
    fig.update_layout(barmode="relative" if single else "group", showlegend=group is not None)
    _bar_text(fig, len(xs) * (1 if single or horizontal else len(groups)))
    if horizontal:
        fig.update_traces(textangle=0, selector=dict(type="bar"))
    return _layout(fig, title, height)


def category_bars(per_category: pd.DataFrame, value: str = "AP3D", *, run: str | None = "run",
                  category: str = "category", sort: bool = True, title: str | None = None,
                  highlight: str | None = None, height: int = 380) -> go.Figure:
    """Per-category AP bars (one trace per run when ``run`` is a column), categories sorted by mean value."""
    df = per_category
    group = run if run is not None and run in df.columns else None
    order = None
    if sort:
        order = (df.groupby(category, sort=False)[value].mean().sort_values(ascending=False, na_position="last")
                 .index.tolist())
    return grouped_bars(df, category, value, group, order=order, title=title, y_title=value, height=height,
                        highlight=highlight)


def leaderboard_bars(board: pd.DataFrame, metrics: Sequence[str], *, run: str = "run", title: str | None = None,
                     height: int = 360) -> go.Figure:
    """Leaderboard metrics side by side: x = metric, one trace per run (``customdata = [run, metric]``)."""
    long = board.melt(id_vars=[run], value_vars=[m for m in metrics if m in board.columns], var_name="metric",
                      value_name="value")
    return grouped_bars(long, "metric", "value", run, order=[m for m in metrics if m in board.columns],
                        title=title, y_title="", height=height)


def three_axis_chart(table: pd.DataFrame, axes: Mapping[str, str], *, run: str = "run",
                     title: str | None = None, height: int = 340) -> go.Figure:
    """The paper's three-axis breakdown: one panel per axis (``axes``: column -> panel title), one bar per run.

    Columns missing from ``table`` or all-NaN get an empty panel titled "(not computed)"."""
    cols = list(axes)
    names = [axes[c] if c in table.columns and table[c].notna().any() else f"{axes[c]} (not computed)"
             for c in cols]
    fig = make_subplots(rows=1, cols=len(cols), subplot_titles=names, horizontal_spacing=0.08)
    runs = list(dict.fromkeys(table[run].tolist()))
    colors = class_colors([str(r) for r in runs])
    for k, c in enumerate(cols, start=1):
        if c not in table.columns:
            continue
        vals = table.set_index(run).reindex(runs)[c].to_numpy(dtype=np.float64)
        fig.add_trace(go.Bar(x=[str(r) for r in runs], y=vals, marker_color=[colors[str(r)] for r in runs],
                             customdata=[[str(r), c] for r in runs], showlegend=False, name=axes[c],
                             text=["" if np.isnan(v) else f"{v:.2f}" for v in vals], textposition="outside",
                             hovertemplate="%{x}<br>" + axes[c] + ": %{y:.3f}<extra></extra>"), row=1, col=k)
    _bar_text(fig, len(runs) * len(cols))
    return _layout(fig, title, height)


def delta_bars(table: pd.DataFrame, before: str, after: str, *, category: str = "category",
               title: str | None = None, label_before: str | None = None, label_after: str | None = None,
               height: int = 380) -> go.Figure:
    """Per-category change ``after - before`` as bars (red: inflated by ``after``), sorted by the change; hover shows
    both values. ``customdata = ["", category]``."""
    df = table[[category, before, after]].copy()
    df["delta"] = df[after] - df[before]
    df = df.sort_values("delta", ascending=False, na_position="last")
    vals = df["delta"].to_numpy(dtype=np.float64)
    lb, la = label_before or before, label_after or after
    fig = go.Figure(go.Bar(
        x=df[category].astype(str).tolist(), y=vals,
        marker_color=["#d73027" if v > 0 else "#4575b4" for v in np.nan_to_num(vals)],
        customdata=[["", str(c), float(b), float(a)] for c, b, a in zip(df[category], df[before], df[after])],
        text=["" if np.isnan(v) else f"{v:+.1f}" for v in vals], textposition="outside",
        hovertemplate=(f"%{{customdata[1]}}<br>{lb}: %{{customdata[2]:.2f}}<br>{la}: %{{customdata[3]:.2f}}"
                       "<br>change: %{y:+.2f}<extra></extra>")))
    fig.update_xaxes(type="category", tickangle=-45 if len(df) > 8 else 0)
    fig.update_yaxes(title=f"{la} − {lb}", zeroline=True)
    _bar_text(fig, len(df))
    return _layout(fig, title, height)


def histogram_with_bounds(values: np.ndarray, bounds: Mapping[str, float] | None = None, *, bins: int = 40,
                          title: str | None = None, x_title: str = "mAP3D of the subset",
                          height: int = 340) -> go.Figure:
    """Histogram of ``values`` (e.g. AP over random class subsets) with labelled vertical lines at ``bounds``
    (e.g. adverse / favourable bound, full-vocabulary value)."""
    vals = np.asarray(values, dtype=np.float64)
    vals = vals[np.isfinite(vals)]
    fig = go.Figure(go.Histogram(x=vals, nbinsx=bins, marker_color="#9ecae1", name="subsets",
                                 hovertemplate="%{x}<br>%{y} subsets<extra></extra>"))
    palette = ["#d73027", "#1a9850", "#252525", "#7b3294", "#fc8d59"]
    for k, (name, v) in enumerate((bounds or {}).items()):
        if v is None or not np.isfinite(v):
            continue
        fig.add_vline(x=float(v), line=dict(color=palette[k % len(palette)], width=2, dash="dash"),
                      annotation_text=f"{name}: {v:.1f}", annotation_position="top",
                      annotation_font=dict(color=palette[k % len(palette)]))
    fig.update_xaxes(title=x_title)
    fig.update_yaxes(title="subsets")
    return _layout(fig, title, height)
