"""Statistics of confusion matrices: the per-class table of a fine matrix, and the super-category matrix and summary
pooled over several (run, dataset) matrices (OV3D-Bench Fig. 4: "only 15% of confusions cross super-category
boundaries", the diagonal per super-category).

Pooling sums counts: the pooled matrix is the sum of every input's super-category counts (aligned by name onto the
ontology's super-categories), and its cross-boundary share is ``sum(super off-diagonal) / sum(fine off-diagonal)``
over all of them, so a (run, dataset) weighs by its matches, as one matrix over all boxes would.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

__all__ = ["class_confusion_table", "confusion_summary_row", "pooled_super_confusion", "align_counts"]


def align_counts(counts: np.ndarray, names: Sequence[str], order: Sequence[str]) -> np.ndarray:
    """A square count matrix over ``names`` placed onto the rows and columns of ``order`` (zeros elsewhere)."""
    order = list(order)
    idx = [order.index(n) for n in names]
    out = np.zeros((len(order), len(order)), np.int64)
    out[np.ix_(idx, idx)] = counts
    return out


def _align_vector(v, names: Sequence[str], order: Sequence[str]) -> np.ndarray:
    order = list(order)
    out = np.zeros(len(order), np.int64)
    if v is not None:
        out[[order.index(n) for n in names]] = v
    return out


def class_confusion_table(cm) -> pd.DataFrame:
    """Per GT class of a fine ``ConfusionMatrix`` with matches or misses: ``class, n_matched, n_correct, missed,
    diagonal`` (row-normalised), ``most_confused_with`` (the largest off-diagonal cell, None when there is none) and
    ``most_confused_fraction`` (that cell over the class's matches)."""
    counts = cm.counts
    matched = counts.sum(axis=1)
    correct = np.diag(counts)
    off = counts.copy()
    np.fill_diagonal(off, 0)
    top = off.argmax(axis=1) if off.size else np.zeros(0, np.int64)
    top_n = off.max(axis=1) if off.size else np.zeros(0, np.int64)
    names = np.asarray(cm.class_names, dtype=object)
    with np.errstate(invalid="ignore", divide="ignore"):
        top_frac = np.where(matched > 0, top_n / np.maximum(matched, 1), np.nan)
    df = pd.DataFrame({
        "class": list(cm.class_names), "n_matched": matched, "n_correct": correct,
        "missed": cm.missed if cm.missed is not None else np.zeros(len(names), np.int64),
        "diagonal": cm.diagonal().to_numpy(),
        "most_confused_with": np.where(top_n > 0, names[top] if len(names) else names, None),
        "most_confused_fraction": np.where(top_n > 0, top_frac, np.nan)})
    used = (df["n_matched"] > 0) | (df["missed"] > 0)
    return df[used].reset_index(drop=True)


def confusion_summary_row(cm, sup, supers: Sequence[str]) -> dict:
    """One (run, dataset)'s summary: matches, fine confusions, label accuracy, the cross-super shares, 1 - the mean
    super diagonal and the diagonal of every super-category (NaN where it has no match)."""
    diag = sup.diagonal()
    return {"n_matched": cm.n_matched, "n_fine_confusions": int(cm.n_matched - np.trace(cm.counts)),
            "accuracy": cm.accuracy, "cross_super_share_of_confusions": sup.cross_super_share_of_confusions,
            "cross_super_share_of_matches": sup.cross_super_share_of_matches,
            "mean_off_diagonal": sup.mean_off_diagonal,
            **{f"diag_{n}": float(diag.get(n, np.nan)) for n in supers}}


def pooled_super_confusion(parts: Sequence[tuple], supers: Sequence[str]) -> tuple[dict, pd.DataFrame]:
    """Pool ``(fine ConfusionMatrix, SuperCategoryConfusion)`` pairs: the pooled summary row (the columns of
    :func:`confusion_summary_row`) and the row-normalised pooled matrix (``gt``, one column per super-category,
    ``n_matched``, ``missed``)."""
    supers = list(supers)
    pooled = np.zeros((len(supers), len(supers)), np.int64)
    pooled_missed = np.zeros(len(supers), np.int64)
    n_fine_conf = 0
    for cm, sup in parts:
        pooled += align_counts(sup.matrix.counts, sup.matrix.class_names, supers)
        pooled_missed += _align_vector(sup.matrix.missed, sup.matrix.class_names, supers)
        n_fine_conf += int(cm.n_matched - np.trace(cm.counts))
    rows = pooled.sum(axis=1).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        norm = np.where(rows[:, None] > 0, pooled / np.where(rows == 0, 1, rows)[:, None], np.nan)
    n_all = int(pooled.sum())
    n_cross = int(n_all - np.trace(pooled))
    diag = np.diag(norm)
    summary = {"n_matched": n_all, "n_fine_confusions": n_fine_conf,
               "accuracy": (n_all - n_fine_conf) / n_all if n_all else np.nan,
               "cross_super_share_of_confusions": n_cross / n_fine_conf if n_fine_conf else np.nan,
               "cross_super_share_of_matches": n_cross / n_all if n_all else np.nan,
               "mean_off_diagonal": float(1.0 - np.nanmean(diag)) if np.isfinite(diag).any() else np.nan,
               **{f"diag_{n}": float(d) for n, d in zip(supers, diag)}}
    matrix = pd.DataFrame(norm, columns=supers)
    matrix.insert(0, "gt", supers)
    matrix["n_matched"] = pooled.sum(axis=1)
    matrix["missed"] = pooled_missed
    return summary, matrix
