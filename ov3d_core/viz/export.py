"""Export figures (PNG / SVG through kaleido, HTML without a browser) and tables (CSV / LaTeX) as bytes.

Kaleido 1.x renders with a system Chrome/Chromium. It finds one on the usual paths; ``BROWSER_PATH`` points it at
another, and ``ensure_browser()`` sets that variable to a Chromium it can see when none is configured.
"""

from __future__ import annotations

import os
import shutil

import pandas as pd
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


def table_csv(df: pd.DataFrame, float_digits: int = 4) -> bytes:
    """The table as UTF-8 CSV (floats rounded to ``float_digits``; NaN written empty)."""
    return df.round(float_digits).to_csv(index=False).encode("utf-8")


_TEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}


def tex_escape(text: str) -> str:
    """Escape LaTeX special characters in a cell or header."""
    return "".join(_TEX_ESCAPES.get(ch, ch) for ch in str(text))


def table_latex(df: pd.DataFrame, *, float_fmt: str = "{:.2f}", caption: str | None = None,
                label: str | None = None, bold_max: tuple[str, ...] = ()) -> str:
    """A booktabs ``tabular`` of the table (numbers right-aligned, NaN as "--"), wrapped in a ``table`` float when a
    caption or label is given. Columns in ``bold_max`` get their best value in bold."""
    cols = list(df.columns)
    numeric = [pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]) for c in cols]
    best = {c: df[c].max() for c in bold_max if c in df.columns}
    lines = [r"\begin{tabular}{" + "".join("r" if n else "l" for n in numeric) + "}", r"\toprule",
             " & ".join(tex_escape(c) for c in cols) + r" \\", r"\midrule"]
    for _, row in df.iterrows():
        cells = []
        for c, n in zip(cols, numeric):
            v = row[c]
            if n:
                if pd.isna(v):
                    s = "--"
                elif float(v).is_integer() and pd.api.types.is_integer_dtype(df[c]):
                    s = str(int(v))
                else:
                    s = float_fmt.format(float(v))
                if c in best and not pd.isna(v) and v == best[c]:
                    s = r"\textbf{" + s + "}"
            else:
                s = tex_escape("" if pd.isna(v) else v)
            cells.append(s)
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    body = "\n".join(lines)
    if caption is None and label is None:
        return body + "\n"
    out = [r"\begin{table}[t]", r"\centering"]
    if caption:
        out.append(r"\caption{" + tex_escape(caption) + "}")
    if label:
        out.append(r"\label{" + label + "}")
    out += [body, r"\end{table}"]
    return "\n".join(out) + "\n"
