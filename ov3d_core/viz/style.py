"""Figure-wide styles applied after a builder: presentation mode (everything larger for a projector)."""

from __future__ import annotations

import plotly.graph_objects as go

__all__ = ["presentation", "PRESENTATION_SCALE", "from_dict"]

#: How much larger presentation mode draws charts and their text.
PRESENTATION_SCALE = 1.35
_BASE_FONT = 12.0  # plotly's default font size


def _scaled(size, k: float, default: float) -> float:
    return round((size if size is not None else default) * k, 1)


def presentation(fig: go.Figure, scale: float = PRESENTATION_SCALE) -> go.Figure:
    """``fig`` enlarged in place for a talk: its height (and a fixed width) by ``scale``, and every font it sets
    (layout, title, axes, legend, annotations, colour bars, trace text) by ``scale``, markers too. Returns ``fig``."""
    k = float(scale)
    lay = fig.layout
    base = lay.font.size or _BASE_FONT
    fig.update_layout(font=dict(size=_scaled(base, k, _BASE_FONT)))
    if lay.height:
        fig.update_layout(height=int(lay.height * k))
    if lay.width:
        fig.update_layout(width=int(lay.width * k))
    if lay.title and lay.title.text:
        fig.update_layout(title_font_size=_scaled(lay.title.font.size, k, base * 1.4))
    if lay.legend:
        fig.update_layout(legend_font_size=_scaled(lay.legend.font.size, k, base))
    for ax in [a for a in fig.layout if a.startswith(("xaxis", "yaxis"))]:
        obj = fig.layout[ax]
        obj.tickfont.size = _scaled(obj.tickfont.size, k, base)
        obj.title.font.size = _scaled(obj.title.font.size, k, base)
    for ann in fig.layout.annotations or ():
        ann.font.size = _scaled(ann.font.size, k, base)
    for tr in fig.data:
        if getattr(tr, "textfont", None) is not None and "textfont" in tr:
            size = tr.textfont.size
            if size is None or isinstance(size, (int, float)):
                tr.textfont.size = _scaled(size, k, base)
        marker = getattr(tr, "marker", None)
        if marker is not None and isinstance(getattr(marker, "size", None), (int, float)):
            marker.size = marker.size * k
        # only a colour bar the figure has: touching ``marker.colorbar`` of a bar trace creates one (an empty scale
        # beside every bar chart in presentation mode)
        if marker is not None and (marker.to_plotly_json() or {}).get("colorbar"):
            marker.colorbar.tickfont.size = _scaled(marker.colorbar.tickfont.size, k, base)
    if lay.margin:
        m = lay.margin
        fig.update_layout(margin=dict(l=None if m.l is None else int(m.l * k), r=None if m.r is None else int(m.r * k),
                                      t=None if m.t is None else int(m.t * k), b=None if m.b is None else int(m.b * k)))
    return fig


def from_dict(spec: dict) -> go.Figure:
    """A figure from ``fig.to_dict()`` of a figure that was validated when it was built, without validating it again
    (plotly's validators cost ~1 s on a 60k-point 3D scene; the dict is what a memo keeps)."""
    return go.Figure(spec, _validate=False)
