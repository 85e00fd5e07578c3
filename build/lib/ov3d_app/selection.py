"""Pure selection logic: what a click or a filter means in terms of records.

Streamlit hands back selections as plain dicts (``st.plotly_chart(on_select=...)`` points with ``customdata``,
``st.dataframe`` rows / cells); these functions turn them into state changes and record ids, and build the
filtered image list of the scene inspector. No streamlit import, so everything here is unit-tested.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

#: Columns of the box table (one row per GT box and per prediction of every shown run, on every image).
BOX_COLUMNS = ["image_id", "kind", "run", "row", "category", "score", "status", "matched", "iou", "gt_category"]


# ------------------------------------------------------------------------------------------------ plotly clicks
def selection_points(event: Any) -> list[dict]:
    """The selected points of a ``st.plotly_chart`` event (a ``PlotlyState`` or its dict form); [] if none."""
    if event is None:
        return []
    sel = event.get("selection") if isinstance(event, Mapping) else getattr(event, "selection", None)
    if sel is None:
        return []
    pts = sel.get("points") if isinstance(sel, Mapping) else getattr(sel, "points", None)
    return [p for p in (pts or []) if isinstance(p, Mapping)]


def customdata(point: Mapping) -> list | None:
    """The ``customdata`` of a selected point as a list (the browser may send a typed array as an
    index-keyed object ``{"0": ..., "1": ...}``); None when absent."""
    cd = point.get("customdata") if isinstance(point, Mapping) else None
    if isinstance(cd, Mapping):
        try:
            return [cd[k] for k in sorted(cd, key=lambda k: int(k))]
        except (TypeError, ValueError):
            return None
    if cd is None or isinstance(cd, (str, bytes)):
        return None
    try:
        return list(cd)
    except TypeError:
        return None


def cell_from_point(point: Mapping) -> tuple[int, int] | None:
    """(row, column) of a confusion cell from a selected point of ``viz.heatmap.confusion_scatter``
    (``customdata = [i, j, count]``); None when the point is not a cell."""
    cd = customdata(point)
    if cd is None or len(cd) < 2:
        return None
    try:
        return int(cd[0]), int(cd[1])
    except (TypeError, ValueError):
        return None


def cell_from_event(event: Any) -> tuple[int, int] | None:
    """The first selected confusion cell of a chart event, or None."""
    for p in selection_points(event):
        cell = cell_from_point(p)
        if cell is not None:
            return cell
    return None


def cell_names(cell: tuple[int, int] | None, row_names: Sequence[str],
               col_names: Sequence[str] | None = None) -> tuple[str, str] | None:
    """Class names of a cell given by indices (None when out of range)."""
    if cell is None:
        return None
    col_names = row_names if col_names is None else col_names
    i, j = cell
    if not (0 <= i < len(row_names) and 0 <= j < len(col_names)):
        return None
    return str(row_names[i]), str(col_names[j])


def cell_index(names: tuple[str, str] | None, row_names: Sequence[str],
               col_names: Sequence[str] | None = None) -> tuple[int, int] | None:
    """Indices of a cell given by class names (None when a name is not in the matrix)."""
    if names is None:
        return None
    col_names = list(row_names if col_names is None else col_names)
    row_names = list(row_names)
    if names[0] not in row_names or names[1] not in col_names:
        return None
    return row_names.index(names[0]), col_names.index(names[1])


def missed_gt_rows(gt_category: Sequence[str], gt_ignore: Sequence[bool], matched_gt: Sequence[int],
                   classes: Iterable[str]) -> np.ndarray:
    """GT rows of ``classes`` that are not ignored and not among ``matched_gt`` (the "missed" column of a confusion
    matrix), in row order."""
    cat = np.asarray(gt_category, dtype=object)
    m = np.isin(cat, list(classes)) & ~np.asarray(gt_ignore, bool)
    m[np.asarray(matched_gt, np.int64)] = False
    return np.flatnonzero(m)


def bar_point_to_state(point: Mapping) -> dict:
    """State change for a clicked bar of ``viz.bars`` (``customdata = [run or "", category]``)."""
    cd = customdata(point)
    if cd is None or len(cd) < 2:
        return {}
    out: dict = {"category": str(cd[1])}
    if cd[0]:
        out["focus_run"] = str(cd[0])
    return out


def box_from_point(point: Mapping) -> str | None:
    """Highlight key of a clicked box label in the image overlay (customdata ``[kind, run, row, ...]``):
    ``"pred|<run>|<row>"`` or ``"gt||<row>"``."""
    cd = customdata(point)
    if cd is None or len(cd) < 3:
        return None
    kind, run, row = cd[0], cd[1], cd[2]
    if kind not in ("gt", "pred"):
        return None
    try:
        return f"{kind}|{run or ''}|{int(row)}"
    except (TypeError, ValueError):
        return None


def parse_highlight(key: str | None) -> tuple[str, str, int] | None:
    """``"pred|run|12"`` -> ("pred", "run", 12); None when malformed."""
    if not key:
        return None
    parts = key.split("|")
    if len(parts) != 3 or parts[0] not in ("gt", "pred"):
        return None
    try:
        return parts[0], parts[1], int(parts[2])
    except ValueError:
        return None


# ------------------------------------------------------------------------------------------------ tables
def leaderboard_row_to_state(board: pd.DataFrame, row: int) -> dict:
    """State change for a selected leaderboard row (positional): its dataset and run become active."""
    if not 0 <= row < len(board):
        return {}
    rec = board.iloc[row]
    out = {}
    if "dataset" in board.columns:
        out["dataset"] = str(rec["dataset"])
    if "run" in board.columns:
        out["focus_run"] = str(rec["run"])
    return out


def dataframe_rows(event: Any) -> list[int]:
    """Selected row positions of a ``st.dataframe`` selection event."""
    sel = event.get("selection") if isinstance(event, Mapping) else getattr(event, "selection", None)
    if sel is None:
        return []
    rows = sel.get("rows") if isinstance(sel, Mapping) else getattr(sel, "rows", None)
    return [int(r) for r in (rows or [])]


def dataframe_cell(event: Any) -> tuple[int, str] | None:
    """The first selected (row position, column name) of a ``st.dataframe`` cell-selection event."""
    sel = event.get("selection") if isinstance(event, Mapping) else getattr(event, "selection", None)
    if sel is None:
        return None
    cells = sel.get("cells") if isinstance(sel, Mapping) else getattr(sel, "cells", None)
    for c in cells or []:
        try:
            return int(c[0]), str(c[1])
        except (TypeError, ValueError, IndexError):
            continue
    return None


# ------------------------------------------------------------------------------------------------ box table
def box_table(gt_frame: pd.DataFrame, runs: Mapping[str, pd.DataFrame],
              gt_status: Mapping[str, Sequence[str]] | None = None) -> pd.DataFrame:
    """One table of every box to show: GT rows and each run's prediction rows with their statuses.

    Args:
        gt_frame: one row per GT box: ``image_id, category`` and ``status`` (and optionally ``row``; default:
            position).
        runs: run name -> one row per prediction: ``image_id, category, score, status`` and optionally
            ``matched`` (GT row or -1), ``iou``, ``row``.
        gt_status: run name -> the GT statuses under that run (TP / FN depend on the run). When given, the GT rows
            appear once per run with ``run`` set; otherwise once with ``run = ""`` and ``gt_frame["status"]``.

    Returns:
        DataFrame with ``BOX_COLUMNS``; ``gt_category`` is the matched GT's class for predictions (None if none).
    """
    parts = []
    gt = gt_frame.reset_index(drop=True)
    per_run = dict(gt_status) if gt_status else {"": gt["status"].to_numpy()}
    for name, status in per_run.items():
        parts.append(pd.DataFrame({
            "image_id": gt["image_id"].to_numpy(np.int64), "kind": "gt", "run": name,
            "row": gt["row"].to_numpy(np.int64) if "row" in gt else np.arange(len(gt)),
            "category": gt["category"].astype(object).to_numpy(), "score": 1.0,
            "status": np.asarray(status, dtype=object), "matched": -1, "iou": np.nan, "gt_category": None}))
    gt_cat = gt["category"].astype(object).to_numpy()
    for name, df in runs.items():
        df = df.reset_index(drop=True)
        matched = df["matched"].fillna(-1).to_numpy(np.int64) if "matched" in df else np.full(len(df), -1)
        ok = (matched >= 0) & (matched < len(gt_cat))
        gcat = np.full(len(df), None, dtype=object)
        gcat[ok] = gt_cat[matched[ok]]
        parts.append(pd.DataFrame({
            "image_id": df["image_id"].to_numpy(np.int64), "kind": "pred", "run": name,
            "row": df["row"].to_numpy(np.int64) if "row" in df else np.arange(len(df)),
            "category": df["category"].astype(object).to_numpy(), "score": df["score"].to_numpy(np.float64),
            "status": df["status"].astype(object).to_numpy(), "matched": matched,
            "iou": df["iou"].to_numpy(np.float64) if "iou" in df else np.nan, "gt_category": gcat}))
    out = pd.concat(parts, ignore_index=True)[BOX_COLUMNS]
    gc = out["gt_category"].astype(object)
    out["gt_category"] = gc.where(gc.notna(), None)
    return out


def filter_boxes(boxes: pd.DataFrame, *, classes: Iterable[str] = (), runs: Iterable[str] | None = None,
                 min_score: float = 0.0) -> pd.DataFrame:
    """Boxes passing the class filter (GT class or predicted class; a mislabelled prediction also passes on its
    matched GT's class), restricted to ``runs`` (GT rows of no particular run are always kept) and to predictions
    scoring at least ``min_score``."""
    keep = np.ones(len(boxes), bool)
    is_pred = (boxes["kind"] == "pred").to_numpy()
    if runs is not None:
        keep &= (boxes["run"] == "").to_numpy() | boxes["run"].isin(list(runs)).to_numpy()
    if min_score > 0:
        keep &= ~is_pred | (boxes["score"].to_numpy(np.float64) >= min_score)
    classes = list(classes)
    if classes:
        keep &= (boxes["category"].isin(classes) | boxes["gt_category"].isin(classes)).to_numpy()
    return boxes[keep]


def filtered_images(boxes: pd.DataFrame, all_images: Sequence[int], *, classes: Iterable[str] = (),
                    errors: Iterable[str] = (), runs: Iterable[str] | None = None,
                    min_score: float = 0.0) -> list[int]:
    """Image ids (in ``all_images`` order) that have at least one box passing the filters.

    With no class and no error filter every image is listed. ``errors`` are statuses ("FP", "FN",
    "mislabelled", "TP"): an image passes if one of its filtered boxes has one of them (FN is a GT status, the
    others prediction statuses)."""
    classes, errors = list(classes), list(errors)
    if not classes and not errors:
        return [int(i) for i in all_images]
    sel = filter_boxes(boxes, classes=classes, runs=runs, min_score=min_score)
    if errors:
        st = sel["status"].to_numpy(object)
        is_gt = (sel["kind"] == "gt").to_numpy()
        want_gt = [e for e in errors if e == "FN"]
        want_pred = [e for e in errors if e != "FN"]
        m = (is_gt & np.isin(st, want_gt)) | (~is_gt & np.isin(st, want_pred))
        sel = sel[m]
    have = set(sel["image_id"].astype(np.int64).tolist())
    return [int(i) for i in all_images if int(i) in have]


def step_image(images: Sequence[int], current: int | None, step: int) -> int | None:
    """The image ``step`` positions from ``current`` in ``images`` (wrapping); the first image when ``current`` is
    not in the list; None when the list is empty."""
    if not len(images):
        return None
    images = list(images)
    if current not in images:
        return images[0] if step >= 0 else images[-1]
    return images[(images.index(current) + step) % len(images)]


def status_counts(boxes: pd.DataFrame) -> pd.DataFrame:
    """Counts per (kind, run, status): the legend numbers of the scene inspector."""
    if boxes.empty:
        return pd.DataFrame(columns=["kind", "run", "status", "n"])
    return boxes.groupby(["kind", "run", "status"], sort=False).size().rename("n").reset_index()


def box_labels(boxes: pd.DataFrame, with_score: bool = True) -> list[str]:
    """Label text per box: "chair 0.81" for predictions (plus "≠ table" when mislabelled), the class for GT."""
    out = []
    for kind, cat, score, status, gcat in zip(boxes["kind"], boxes["category"], boxes["score"], boxes["status"],
                                               boxes["gt_category"]):
        if kind == "gt":
            out.append(f"{cat}")
            continue
        text = f"{cat} {score:.2f}" if with_score else f"{cat}"
        if status == "mislabelled" and isinstance(gcat, str) and gcat != cat:
            text += f" ≠ {gcat}"
        out.append(text)
    return out


def removed_status(status: Sequence[str], removed_rows: Iterable[int]) -> np.ndarray:
    """Statuses with the given prediction rows (e.g. removed by the target-aware oracle) set to "removed"."""
    out = np.asarray(status, dtype=object).copy()
    rows = np.asarray(list(removed_rows), dtype=np.int64)
    rows = rows[(rows >= 0) & (rows < len(out))]
    out[rows] = "removed"
    return out
