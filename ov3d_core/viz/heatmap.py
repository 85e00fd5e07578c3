"""Confusion matrices: a clickable version drawn as a scatter of square markers, and a static heatmap for export.

Streamlit returns no selection from ``go.Heatmap`` (streamlit#8760), so the interactive matrix is a ``go.Scatter``
of squares with ``customdata = [i, j, count]`` per cell; a click gives back the (row, column) indices. Rows are
ground truth, columns predictions (axis titles say so); a background row/column, when present in the matrix, is
labelled explicitly by the caller.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import plotly.graph_objects as go

COLORSCALE = "Blues"


def _cell_px(n_rows: int, n_cols: int, target: int = 760, lo: int = 8, hi: int = 60) -> int:
    return int(np.clip(target / max(n_rows, n_cols, 1), lo, hi))


#: Gap (px) between tick labels and the axis title, set explicitly so that the title never sits on the labels.
TITLE_STANDOFF = 12


def _frame(fig: go.Figure, row_labels, col_labels, px: int, title: str | None) -> None:
    """Fixed margins sized to the tick labels and the axis titles (at :data:`TITLE_STANDOFF` from the labels), so
    that each cell is ``px`` pixels square and no title overlaps a label."""
    char = 7.0  # px per character at the 12 px tick font
    title_px = 18
    left = int(char * max((len(str(r)) for r in row_labels), default=4) + 14 + TITLE_STANDOFF + title_px)
    # x labels at -45 degrees: their vertical extent is (length + height) / sqrt(2)
    bottom = int((char * max((len(str(c)) for c in col_labels), default=4) + 12) * 0.72 + 10 + TITLE_STANDOFF
                 + title_px)
    top = 40 if title else 12
    right = 90  # colour bar
    fig.update_xaxes(automargin=False, title_standoff=TITLE_STANDOFF)
    fig.update_yaxes(automargin=False, title_standoff=TITLE_STANDOFF)
    fig.update_layout(width=int(px * len(col_labels) + left + right), height=int(px * len(row_labels) + top + bottom),
                      margin=dict(l=left, r=right, t=top, b=bottom), title=title)


def _color_values(values: np.ndarray, log: bool) -> tuple[np.ndarray, dict]:
    """Marker colour values and colourbar settings (log: log10(1 + v) with ticks at the original values)."""
    if not log:
        return values, {}
    c = np.log10(1.0 + np.clip(values, 0, None))
    vmax = float(values.max()) if len(values) else 1.0
    if vmax <= 1.0:  # fractions: log of 1 + 100 v, ticks in %
        c = np.log10(1.0 + 100.0 * np.clip(values, 0, None))
        ticks = [t for t in (0, 0.01, 0.03, 0.1, 0.3, 1.0) if t <= max(vmax, 0.01)]
        return c, dict(tickvals=[np.log10(1 + 100 * t) for t in ticks], ticktext=[f"{t:g}" for t in ticks])
    ticks = [t for t in (0, 1, 3, 10, 30, 100, 300, 1000, 3000, 10000) if t <= max(vmax, 1)]
    return c, dict(tickvals=[np.log10(1 + t) for t in ticks], ticktext=[str(t) for t in ticks])


def _fmt(v: float) -> str:
    if float(v).is_integer():
        return str(int(v))
    return f"{v:.2f}".lstrip("0") if 0 < v < 1 else f"{v:.2f}"


def confusion_scatter(matrix: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str] | None = None, *,
                      counts: np.ndarray | None = None, log_color: bool = False, hide_diagonal: bool = False,
                      show_text: bool | None = None, selected: tuple[int, int] | None = None,
                      title: str | None = None, row_title: str = "ground truth", col_title: str = "predicted",
                      diagonal: Sequence[tuple[int, int]] | None = None) -> go.Figure:
    """A clickable confusion matrix: one square marker per non-zero cell.

    Args:
        matrix: ``(R, C)`` values to colour by (counts, or row-normalised fractions).
        row_labels: ``R`` names (ground truth).
        col_labels: ``C`` names (predictions); default ``row_labels``.
        counts: ``(R, C)`` raw counts for ``customdata`` and hover (default: ``matrix``).
        log_color: log colour scale.
        hide_diagonal: leave the diagonal cells out (they swamp the colour scale).
        show_text: write each cell's value in it (default: when the matrix is at most 25 x 25).
        selected: (i, j) of a cell to outline.
        diagonal: the cells counted as the diagonal (default: where row and column names are equal).

    Returns:
        A figure whose first trace holds the cells with ``customdata[k] = [i, j, count]``.
    """
    m = np.asarray(matrix, dtype=np.float64)
    col_labels = list(row_labels if col_labels is None else col_labels)
    row_labels = list(row_labels)
    if m.shape != (len(row_labels), len(col_labels)):
        raise ValueError(f"confusion_scatter: matrix shape {m.shape} does not match "
                         f"{len(row_labels)} x {len(col_labels)} labels")
    cnt = m if counts is None else np.asarray(counts, dtype=np.float64)
    ii, jj = np.nonzero((m != 0) | (cnt != 0))
    if hide_diagonal:
        if diagonal is None:
            diag = {(i, j) for i, r in enumerate(row_labels) for j, c in enumerate(col_labels) if r == c}
        else:
            diag = set(map(tuple, diagonal))
        keep = np.array([(i, j) not in diag for i, j in zip(ii, jj)], dtype=bool)
        ii, jj = ii[keep], jj[keep]
    vals = m[ii, jj]
    cvals, cbar = _color_values(vals, log_color)
    px = _cell_px(len(row_labels), len(col_labels))
    if show_text is None:
        show_text = max(len(row_labels), len(col_labels)) <= 25
    x = [col_labels[j] for j in jj]
    y = [row_labels[i] for i in ii]
    custom = [[int(i), int(j), float(c)] for i, j, c in zip(ii, jj, cnt[ii, jj])]
    vmax = float(cvals.max()) if len(cvals) else 1.0
    txt_color = ["white" if v > 0.55 * vmax else "#222222" for v in cvals]
    fig = go.Figure(go.Scatter(
        x=x, y=y, mode="markers+text" if show_text else "markers", customdata=custom,
        marker=dict(symbol="square", size=px - 1, color=cvals, colorscale=COLORSCALE, cmin=0,
                    cmax=vmax if vmax > 0 else 1, showscale=True, line=dict(width=0),
                    colorbar=dict(title=dict(text="log" if log_color else ""), thickness=12, x=1.0, xpad=10, **cbar)),
        text=[_fmt(v) for v in vals], textfont=dict(size=max(8, min(12, px // 3)), color=txt_color),
        hovertemplate=(f"{row_title}: %{{y}}<br>{col_title}: %{{x}}<br>value: %{{text}}"
                       "<br>count: %{customdata[2]}<extra></extra>"),
        selected=dict(marker=dict(opacity=1.0)), unselected=dict(marker=dict(opacity=1.0)),  # no sticky fade
        name="cells"))
    if selected is not None and 0 <= selected[0] < len(row_labels) and 0 <= selected[1] < len(col_labels):
        fig.add_trace(go.Scatter(x=[col_labels[selected[1]]], y=[row_labels[selected[0]]], mode="markers",
                                 marker=dict(symbol="square-open", size=px + 2, color="#d62728", line=dict(width=3)),
                                 hoverinfo="skip", showlegend=False, name="selected"))
    fig.update_xaxes(type="category", categoryorder="array", categoryarray=col_labels, tickangle=-45,
                     title=col_title, side="bottom", showgrid=False, range=[-0.5, len(col_labels) - 0.5])
    fig.update_yaxes(type="category", categoryorder="array", categoryarray=row_labels, autorange=False,
                     range=[len(row_labels) - 0.5, -0.5], title=row_title, showgrid=False)
    fig.update_layout(plot_bgcolor="#f4f4f4", clickmode="event+select", dragmode=False, showlegend=False)
    _frame(fig, row_labels, col_labels, px, title)
    return fig


def confusion_heatmap(matrix: np.ndarray, row_labels: Sequence[str], col_labels: Sequence[str] | None = None, *,
                      log_color: bool = False, hide_diagonal: bool = False, show_text: bool | None = None,
                      title: str | None = None, row_title: str = "ground truth",
                      col_title: str = "predicted") -> go.Figure:
    """The same matrix as a static ``go.Heatmap`` (for PNG/SVG export and reports; not clickable in Streamlit)."""
    m = np.asarray(matrix, dtype=np.float64).copy()
    col_labels = list(row_labels if col_labels is None else col_labels)
    row_labels = list(row_labels)
    if hide_diagonal:
        for i, r in enumerate(row_labels):
            for j, c in enumerate(col_labels):
                if r == c:
                    m[i, j] = np.nan
    flat = m[~np.isnan(m)]
    z, cbar = _color_values(m, log_color) if log_color else (m, {})
    if show_text is None:
        show_text = max(len(row_labels), len(col_labels)) <= 25
    text = [["" if np.isnan(v) or v == 0 else _fmt(v) for v in row] for row in m]
    fig = go.Figure(go.Heatmap(
        z=z, x=col_labels, y=row_labels, colorscale=COLORSCALE, zmin=0,
        zmax=float(np.nanmax(z)) if flat.size and np.nanmax(z) > 0 else 1,
        text=text, texttemplate="%{text}" if show_text else None, hoverongaps=False,
        colorbar=dict(thickness=12, **cbar)))
    px = _cell_px(len(row_labels), len(col_labels))
    fig.update_yaxes(autorange="reversed", title=row_title, type="category")
    fig.update_xaxes(title=col_title, tickangle=-45, type="category")
    fig.update_layout(plot_bgcolor="#f4f4f4")
    _frame(fig, row_labels, col_labels, px, title)
    return fig

