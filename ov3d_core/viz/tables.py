"""Display helpers for result tables (pandas only, no streamlit): what a table looks like on screen, never what it
holds. Exports (CSV / LaTeX, ``ov3d_core.tables``) take the frames themselves."""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

__all__ = ["MISSING", "dash_missing"]

#: How a missing value (None, NaN, <NA>) is shown.
MISSING = "—"


def dash_missing(df: pd.DataFrame, *, percent: Sequence[str] = (), fraction: Sequence[str] = (),
                 formats: Mapping[str, str] | None = None, precision: int = 3):
    """A ``Styler`` of ``df`` that shows missing values as :data:`MISSING` instead of "None" / "nan" / "<NA>", AP
    columns (``percent``) with one decimal, ``fraction`` columns and other floats with ``precision`` decimals and
    ``formats`` (column -> format string) as given; the values (and so sorting, selection and exports) are
    unchanged."""
    fmt: dict[str, str] = {}
    for c in df.columns:
        if pd.api.types.is_float_dtype(df[c].dtype):
            fmt[c] = f"{{:.{precision}f}}"
    fmt.update({c: "{:.1f}" for c in percent if c in df.columns})
    fmt.update({c: f"{{:.{precision}f}}" for c in fraction if c in df.columns})
    fmt.update({c: f for c, f in (formats or {}).items() if c in df.columns})
    return df.style.format(na_rep=MISSING).format(fmt, na_rep=MISSING)
