"""Bar value labels (``viz.bars``) stay readable: shown when a standing 12 px label fits the bar's width, left to
the hover when the bars are narrower (outside labels would overlap their neighbours: 27 classes x 5 runs on the
demo's per-category chart)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ov3d_core.viz.bars import category_bars


def _per_category(n_classes: int, n_runs: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame([{"run": f"run{r}", "category": f"class{c}", "AP3D": float(rng.uniform(0, 100))}
                         for r in range(n_runs) for c in range(n_classes)])


def test_dense_bars_leave_their_values_to_the_hover():
    fig = category_bars(_per_category(27, 5))
    assert len(fig.data) == 5
    assert all(t.text is None for t in fig.data)
    assert all("AP3D: %{y:.2f}" in t.hovertemplate for t in fig.data)


def test_sparse_bars_keep_readable_labels():
    df = _per_category(6, 2)
    fig = category_bars(df)
    for t in fig.data:
        want = df[df["run"] == t.name].set_index("category").loc[list(t.x), "AP3D"]
        assert list(t.text) == [f"{v:.1f}" for v in want]
        assert t.textfont.size >= 11


def test_presentation_mode_adds_no_colour_bar_to_bar_charts():
    import plotly.graph_objects as go

    from ov3d_core.viz.style import presentation

    fig = presentation(go.Figure(category_bars(_per_category(6, 2))))
    markers = [t.to_plotly_json().get("marker", {}) for t in fig.data]
    assert all("colorbar" not in (m if m is not None else {}) for m in markers)
    scatter = go.Figure(go.Scatter(x=[0, 1], y=[0, 1], mode="markers",
                                   marker=dict(color=[0.0, 1.0], showscale=True, colorbar=dict(tickfont=dict(size=10)))))
    assert presentation(scatter).data[0].marker.colorbar.tickfont.size > 10  # a real colour bar is enlarged
