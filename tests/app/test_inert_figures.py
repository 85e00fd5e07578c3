"""``ui.inert_figure`` on figures rebuilt from their dict (the 3D view's memo, ``viz.style.from_dict``): numeric
arrays then arrive as Plotly typed arrays (``{"dtype", "bdata"}``), which hold no names, while names in trace
texts and category axes are still shown as text."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ov3d_app.ui import inert_figure
from ov3d_core.viz.style import from_dict

LINK = '<a href="http://127.0.0.1:9/x">chair</a>'


def test_a_typed_array_figure_passes_unchanged():
    fig = from_dict(go.Figure(go.Scatter3d(x=np.arange(50.0), y=np.arange(50.0), z=np.arange(50.0),
                                           name="points")).to_dict())
    assert isinstance(fig.data[0]["x"], dict)  # what the 3D view's memo hands the page
    assert inert_figure(fig) is fig


def test_names_beside_typed_arrays_are_still_made_inert():
    fig = from_dict(go.Figure([go.Scatter3d(x=np.arange(5.0), y=np.arange(5.0), z=np.arange(5.0), name=LINK,
                                            text=[LINK] * 5),
                               go.Bar(x=[LINK, "table"], y=np.array([1.0, 2.0]))]).to_dict())
    out = inert_figure(fig)
    assert out is not fig
    assert "<a" not in out.data[0].name and "&lt;a" in out.data[0].name
    assert all("<a" not in t for t in out.data[0].text)
    assert list(out.layout.xaxis.ticktext) == ["&lt;a href=\"http://127.0.0.1:9/x\">chair&lt;/a>", "table"]
    assert list(out.data[1].x) == [LINK, "table"]  # the data (what a selection returns) is unchanged
