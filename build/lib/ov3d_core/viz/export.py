"""Export figures (PNG / SVG through kaleido, HTML without a browser) and tables (CSV / LaTeX) as bytes.

Kaleido 1.x renders with a system Chrome/Chromium. It finds one on the usual paths; ``BROWSER_PATH`` points it at
another, and ``ensure_browser()`` sets that variable to a Chromium it can see when none is configured.
"""

from __future__ import annotations

import os
import shutil

import plotly.graph_objects as go

FIGURE_FORMATS = ("png", "svg", "html")
TABLE_FORMATS = ("csv", "tex")
MIME = {"png": "image/png", "svg": "image/svg+xml", "html": "text/html", "csv": "text/csv",
        "tex": "application/x-tex"}

_BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


def ensure_browser() -> str | None:
    """The Chrome/Chromium kaleido will use: ``BROWSER_PATH`` if set, else the first one on PATH (then exported as
    ``BROWSER_PATH``). None when there is none (PNG/SVG export is then unavailable; HTML still works)."""
    path = os.environ.get("BROWSER_PATH")
    if path and os.path.exists(path):
        return path
    for name in _BROWSERS:
        found = shutil.which(name)
        if found:
            os.environ["BROWSER_PATH"] = found
            return found
    return None


def figure_bytes(fig: go.Figure, fmt: str, *, width: int | None = None, height: int | None = None,
                 scale: float = 2.0) -> bytes:
    """The figure as ``fmt`` ("png", "svg" or "html") bytes. HTML embeds plotly.js, so it opens offline.

    Raises:
        ValueError: unknown format.
        RuntimeError: PNG/SVG requested but no Chrome/Chromium is installed.
    """
    fmt = fmt.lower()
    if fmt not in FIGURE_FORMATS:
        raise ValueError(f"Expected `fmt` to be one of {FIGURE_FORMATS}, got {fmt!r}")
    if fmt == "html":
        return fig.to_html(include_plotlyjs=True, full_html=True,
                           config={"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}
                           ).encode("utf-8")
    if ensure_browser() is None:
        raise RuntimeError("PNG/SVG export needs Chrome or Chromium (apt-get install chromium); HTML export works "
                           "without it")
    w = width or fig.layout.width or 1100
    h = height or fig.layout.height or 600
    return fig.to_image(format=fmt, width=int(w), height=int(h), scale=scale if fmt == "png" else 1)
