"""Writing result tables for people: Markdown, LaTeX (booktabs) and CSV. The one owner of table formatting; the
report and the app's export buttons both use it.

Conventions: NaN is written ``--`` (Markdown/LaTeX) or an empty cell (CSV); booleans as yes/no; numbers with 2
decimals, fraction-like columns (recall, shares, ratios, fractions) with 3 in Markdown.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd

__all__ = ["to_markdown", "to_latex", "to_csv", "tex_escape", "header_words", "json_scalar", "FRACTION_COLUMNS"]

#: Column names holding fractions (0-1) rather than percent.
FRACTION_COLUMNS = re.compile(r"recall|share|ratio|fraction|diag|geometric|robustness|accuracy|delta_rel|PCR|PLC|"
                              r"mATE|mAOE|mASE|p_value|p_adjusted|iou")

_TEX_ESCAPES = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}"}
_WORDS = {"n": "#", "gt": "GT", "ap": "AP", "iou": "IoU", "map": "mAP", "map3d": "mAP3D", "ods": "ODS",
          "cv": "CV", "id": "id", "pcr": "PCR", "plc": "PLC"}


def json_scalar(v):
    """A table cell as a JSON value: numpy scalars as Python numbers, None / pd.NA as None, NaN kept as a float
    (callers that write strict JSON turn it into None). TypeError for anything else but a string."""
    if v is None or v is pd.NA:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    if isinstance(v, str):
        return v
    raise TypeError(f"not a plain value: {type(v).__name__}")


def tex_escape(text) -> str:
    """Escape LaTeX special characters in a cell or header."""
    return "".join(_TEX_ESCAPES.get(ch, ch) for ch in str(text))


def header_words(name: str) -> str:
    """A column name as words for a paper table: ``n_removed_cross_class`` -> ``# removed cross class``,
    ``map_target_aware`` -> ``mAP target aware``; names with capitals (``AP3D@25``) stay as they are."""
    if any(ch.isupper() for ch in name) or "_" not in name:
        return name
    return " ".join(_WORDS.get(w, w) for w in name.split("_") if w)


def _is_na(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, (float, np.floating)) and math.isnan(v))


def _cell(v, decimals: int, na: str) -> str:
    if _is_na(v):
        return na
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (float, np.floating)):
        return f"{v:.{decimals}f}"
    return str(v)


def _numeric(df: pd.DataFrame, c) -> bool:
    return pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c])


def to_markdown(df: pd.DataFrame, *, decimals: int = 2, fraction_decimals: int = 3, na: str = "--") -> str:
    """A GitHub pipe table (numbers right-aligned)."""
    if not len(df.columns):
        return "_(empty)_\n"
    cols = [str(c) for c in df.columns]
    dec = [fraction_decimals if FRACTION_COLUMNS.search(c) and not c.startswith("rank_") else decimals for c in cols]
    num = [_numeric(df, c) for c in df.columns]

    def esc(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(esc(c) for c in cols) + " |",
             "|" + "|".join("---:" if n else "---" for n in num) + "|"]
    for row in df.itertuples(index=False, name=None):
        lines.append("| " + " | ".join(esc(_cell(v, d, na)) for v, d in zip(row, dec)) + " |")
    if not len(df):
        lines.append("\n_(no rows)_")
    return "\n".join(lines) + "\n"


def to_latex(df: pd.DataFrame, *, decimals: int = 2, caption: str | None = None, label: str | None = None,
             bold_max: tuple[str, ...] = (), words: bool = True) -> str:
    """A booktabs ``tabular`` (numbers right-aligned, NaN as ``--``, text escaped), in a ``table`` float when a
    caption or label is given. ``words``: headers as words (:func:`header_words`); ``bold_max``: columns whose best
    value is set in bold."""
    cols = list(df.columns)
    numeric = [_numeric(df, c) for c in cols]
    best = {c: df[c].max() for c in bold_max if c in df.columns}
    head = [header_words(str(c)) if words else str(c) for c in cols]
    lines = [r"\begin{tabular}{" + ("".join("r" if n else "l" for n in numeric) or "l") + "}", r"\toprule",
             " & ".join(tex_escape(c) for c in head) + r" \\", r"\midrule"]
    for row in df.itertuples(index=False, name=None):
        cells = []
        for c, n, v in zip(cols, numeric, row):
            if n and not _is_na(v):
                s = str(int(v)) if pd.api.types.is_integer_dtype(df[c]) else f"{float(v):.{decimals}f}"
                if c in best and v == best[c]:
                    s = r"\textbf{" + s + "}"
            else:
                s = tex_escape(_cell(v, decimals, "--"))
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


def to_csv(df: pd.DataFrame, float_digits: int | None = None) -> str:
    """CSV text (NaN empty); floats rounded to ``float_digits`` when given (full precision otherwise)."""
    return (df if float_digits is None else df.round(float_digits)).to_csv(index=False)
