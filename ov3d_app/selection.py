"""Pure selection logic: what a click or a filter means in terms of records.

Streamlit hands back selections as plain dicts (``st.plotly_chart(on_select=...)`` points with ``customdata``,
``st.dataframe`` rows / cells); these functions turn them into state changes and record ids, and build the
filtered image list of the scene inspector. No streamlit import, so everything here is unit-tested.
"""

from __future__ import annotations

from collections import Counter
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


def box_keys(rows: pd.DataFrame) -> list[str]:
    """The ``"kind|run|row"`` key (a highlight's, ``parse_highlight``) of every box-table row, in order."""
    return (rows["kind"].astype(str) + "|" + rows["run"].astype(str) + "|" + rows["row"].astype(str)).tolist()


def labels_with_keys(rows: pd.DataFrame, keys: set[str] | frozenset[str]) -> tuple:
    """The index labels of the ``rows`` whose :func:`box_keys` key is in the set ``keys``, in order."""
    return tuple(label for label, k in zip(rows.index.tolist(), box_keys(rows)) if k in keys)


def rows_by_image(boxes: pd.DataFrame, image_ids: Iterable[int]) -> dict[int, pd.DataFrame]:
    """The box-table rows of each of ``image_ids`` (an empty frame for an image without boxes), index labels kept:
    one pass over the table for a page of thumbnails, not one filter of the whole table per thumbnail."""
    ids = [int(i) for i in image_ids]
    groups = dict(tuple(boxes[boxes["image_id"].isin(ids)].groupby("image_id", sort=False)))
    return {i: groups.get(i, boxes.iloc[:0]) for i in ids}


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
            "image_id": gt["image_id"].to_numpy(np.int64), "kind": object_column("gt", len(gt)),
            "run": object_column(name, len(gt)),
            "row": gt["row"].to_numpy(np.int64) if "row" in gt else np.arange(len(gt)),
            "category": object_column(gt["category"]), "score": 1.0,
            "status": object_column(status), "matched": -1, "iou": np.nan, "gt_category": object_column(None, len(gt))}))
    gt_cat = gt["category"].to_numpy(object)
    for name, df in runs.items():
        df = df.reset_index(drop=True)
        matched = df["matched"].fillna(-1).to_numpy(np.int64) if "matched" in df else np.full(len(df), -1)
        ok = (matched >= 0) & (matched < len(gt_cat))
        gcat = np.full(len(df), None, dtype=object)
        gcat[ok] = gt_cat[matched[ok]]
        parts.append(pd.DataFrame({
            "image_id": df["image_id"].to_numpy(np.int64), "kind": object_column("pred", len(df)),
            "run": object_column(name, len(df)),
            "row": df["row"].to_numpy(np.int64) if "row" in df else np.arange(len(df)),
            "category": object_column(df["category"]), "score": df["score"].to_numpy(np.float64),
            "status": object_column(df["status"]), "matched": matched,
            "iou": df["iou"].to_numpy(np.float64) if "iou" in df else np.nan, "gt_category": object_column(gcat)}))
    return pd.concat(parts, ignore_index=True)[BOX_COLUMNS]


def object_column(values, n: int | None = None) -> pd.Series:
    """An object column of ``values`` (a Series or array; ``n`` copies of one value when ``n`` is given) for the
    box tables: pandas 3 would infer its Arrow string dtype and copy every string (2.7 of the 3.8 s of a 2.2M-box
    table), and the pages only compare and filter."""
    if n is not None:
        arr = np.empty(n, dtype=object)
        arr[:] = values
    else:
        arr = values.to_numpy(object) if isinstance(values, pd.Series) else np.asarray(values, dtype=object)
    return pd.Series(arr, dtype=object, copy=False)


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


# ------------------------------------------------------------------------------------------------ inspector layout
def panels_per_row(n: int, aspect: float = 4 / 3) -> int:
    """Panels per row of the scene inspector: one or two runs side by side, three per row beyond; wide images
    (``aspect`` = width / height >= 2, e.g. KITTI) one above the other up to two runs, two per row beyond."""
    if aspect >= 2.0:
        return 1 if n <= 2 else 2
    return 1 if n <= 1 else 2 if n == 2 else 3


def default_panels(runs: Sequence[str], focus: str | None = None, n: int = 2) -> list[str]:
    """The runs the inspector opens on: the focus run first (when it is one of ``runs``), then the next runs in
    order, at most ``n``."""
    runs = list(runs)
    first = [focus] if focus in runs else []
    return (first + [r for r in runs if r not in first])[:n]


def run_counts(boxes: pd.DataFrame, runs: Sequence[str]) -> dict[str, str]:
    """Per run (and "" for the ground truth): "TP 3 · FP 2 · mislabelled 1 · missed 1" over the box-table rows of
    one image (what the run panels and the run picker show). One pass over the image's rows (tens), not a frame
    filter per run."""
    kind, run_of, status = (boxes[c].to_numpy(object) for c in ("kind", "run", "status"))
    n = Counter(zip(kind, run_of, status))
    out = {run: (f"TP {n['pred', run, 'TP']} · FP {n['pred', run, 'FP']} · mislabelled "
                 f"{n['pred', run, 'mislabelled']} · missed {n['gt', run, 'FN']}") for run in runs}
    out[""] = f"{len(set(boxes['row'].to_numpy()[kind == 'gt'].tolist()))} GT boxes"
    return out


def image_details(details: Mapping[str, pd.DataFrame], image_id: int, kind: str) -> pd.DataFrame:
    """The rows of one image from per-run detail tables (``Analysis.pred_details`` for ``kind="pred"``,
    ``Analysis.gt_details`` for ``kind="gt"``): ``run`` first, the row index as ``row``, the image id dropped (the
    scene page adds the boxes' tags and notes with ``ov3d_core.tags.join_tags``)."""
    col = "pred" if kind == "pred" else "gt"
    parts = []
    for run, df in details.items():
        sub = df[df["image_id"].to_numpy(np.int64) == int(image_id)].rename(columns={col: "row"})
        sub = sub.drop(columns=["image_id"])
        sub.insert(0, "run", run)
        parts.append(sub)
    if not parts:
        return pd.DataFrame(columns=["run", "row"])
    return pd.concat(parts, ignore_index=True)


# ------------------------------------------------------------------------------------------------ sample grid
#: Box attributes the grid filters and sorts by: column -> (label, kind of box it is defined for).
SAMPLE_ATTRIBUTES = {
    "score": ("score", "pred"),
    "depth": ("depth (m)", "any"),
    "truncation": ("truncation", "gt"),
    "visibility": ("visibility", "gt"),
    "volume": ("box size (m³)", "any"),
    "center_dist": ("centre distance to GT (m)", "pred"),
    "abs_depth_err": ("|depth error| (m)", "pred"),
    "size_err": ("size error (1 − aligned IoU)", "pred"),
    "yaw_err": ("yaw error (°)", "pred"),
}
SAMPLE_COLUMNS = ["image_id", "kind", "row", "category", "status", *SAMPLE_ATTRIBUTES]


def sample_boxes(gt: pd.DataFrame, pred: pd.DataFrame | None) -> pd.DataFrame:
    """One row per box of a (dataset, run) with the attributes of :data:`SAMPLE_ATTRIBUTES` (NaN where a box kind
    has none): GT rows from ``Analysis.gt_details``, prediction rows from ``Analysis.pred_details``."""
    g = pd.DataFrame({"image_id": gt["image_id"].to_numpy(np.int64), "kind": "gt", "row": gt["gt"].to_numpy(np.int64),
                      "category": gt["category"].astype(object).to_numpy(), "status": gt["status"].to_numpy(object),
                      "score": np.nan, "depth": gt["depth"].to_numpy(np.float64),
                      "truncation": gt["truncation"].to_numpy(np.float64),
                      "visibility": gt["visibility"].to_numpy(np.float64),
                      "volume": gt["volume"].to_numpy(np.float64), "center_dist": np.nan, "abs_depth_err": np.nan,
                      "size_err": np.nan, "yaw_err": np.nan})
    if pred is None or not len(pred):
        return g[SAMPLE_COLUMNS]
    p = pd.DataFrame({"image_id": pred["image_id"].to_numpy(np.int64), "kind": "pred",
                      "row": pred["pred"].to_numpy(np.int64), "category": pred["category"].astype(object).to_numpy(),
                      "status": pred["status"].to_numpy(object), "score": pred["score"].to_numpy(np.float64),
                      "depth": pred["depth"].to_numpy(np.float64), "truncation": np.nan, "visibility": np.nan,
                      "volume": pred["volume"].to_numpy(np.float64),
                      "center_dist": pred["center_dist"].to_numpy(np.float64),
                      "abs_depth_err": np.abs(pred["depth_err"].to_numpy(np.float64)),
                      "size_err": pred["size_err"].to_numpy(np.float64),
                      "yaw_err": pred["yaw_err"].to_numpy(np.float64)})
    return pd.concat([g, p], ignore_index=True)[SAMPLE_COLUMNS]


def filter_samples(samples: pd.DataFrame, *, classes: Iterable[str] = (), statuses: Iterable[str] = (),
                   ranges: Mapping[str, tuple[float, float]] | None = None,
                   images: Iterable[int] | None = None) -> pd.DataFrame:
    """Boxes passing every filter: class, status (GT statuses TP / FN / ignored and prediction statuses TP / FP /
    mislabelled / ...; "TP" keeps both kinds), ``ranges`` (column -> inclusive (lo, hi); a box with no value for a
    filtered column fails it) and an image subset (e.g. the tagged images)."""
    keep = np.ones(len(samples), bool)
    classes, statuses = list(classes), list(statuses)
    if classes:
        keep &= samples["category"].isin(classes).to_numpy()
    if statuses:
        keep &= samples["status"].isin(statuses).to_numpy()
    for col, (lo, hi) in (ranges or {}).items():
        v = samples[col].to_numpy(np.float64)
        with np.errstate(invalid="ignore"):
            keep &= (v >= lo) & (v <= hi)
    if images is not None:
        keep &= samples["image_id"].isin(list(images)).to_numpy()
    return samples[keep]


#: Image orders of the grid: name -> (column aggregated over the image's matching boxes, aggregate, descending).
SAMPLE_SORTS = {
    "image id": (None, None, False),
    "most matching boxes": ("row", "count", True),
    "highest score": ("score", "max", True),
    "lowest score": ("score", "min", False),
    "largest error (centre distance)": ("center_dist", "max", True),
    "largest |depth error|": ("abs_depth_err", "max", True),
    "largest yaw error": ("yaw_err", "max", True),
    "largest size error": ("size_err", "max", True),
    "nearest box": ("depth", "min", False),
    "farthest box": ("depth", "max", True),
    "lowest visibility": ("visibility", "min", False),
    "most truncated": ("truncation", "max", True),
    "largest box": ("volume", "max", True),
}


def order_images(matching: pd.DataFrame, sort: str) -> pd.DataFrame:
    """The images that have matching boxes, ordered by ``sort`` (:data:`SAMPLE_SORTS`): ``image_id``, ``n`` (matching
    boxes) and ``value`` (the aggregate the order is by; NaN last, ties by image id)."""
    if sort not in SAMPLE_SORTS:
        raise ValueError(f"sort: expected one of {list(SAMPLE_SORTS)}, got {sort!r}")
    col, agg, desc = SAMPLE_SORTS[sort]
    g = matching.groupby("image_id", sort=True)
    out = pd.DataFrame({"image_id": np.asarray(list(g.groups), np.int64)})
    out["n"] = g.size().to_numpy(np.int64)
    if col is None:
        out["value"] = out["image_id"].astype(np.float64)
    elif agg == "count":
        out["value"] = out["n"].astype(np.float64)
    else:
        out["value"] = getattr(g[col], agg)().to_numpy(np.float64)
    key = out["value"].to_numpy(np.float64)
    missing = np.isnan(key)
    key = np.where(missing, 0.0, -key if desc else key)
    order = np.lexsort((out["image_id"].to_numpy(), key, missing))
    return out.iloc[order].reset_index(drop=True)


# ------------------------------------------------------------------------------------------------ pinned views
def pinned_title(params: Mapping[str, str], page_title: str, page: str | None = None) -> str:
    """The plain title of a pinned view for the presentation bar: page, dataset, run, protocol and the page's level
    (confusion: fine classes / super-categories), then what else makes the view (image, cell, class, score
    threshold, IoU) when it differs from the defaults. ``params`` are the view's URL query parameters
    (``ov3d_app.state.state_to_query``): "Confusion · demo_indoor · ovmono_like · target-aware · super-categories".

    ``page`` (the page's URL path, as ``ui.current_view`` records it) limits the page-specific parts to the keys that
    page shows (``state.PAGE_VIEW_KEYS``): the image last opened in the inspector is not part of a Confusion view.
    Without it every part that differs from its default is named."""
    from ov3d_app import state as S

    st = S.query_to_state(params)
    own = S.PAGE_VIEW_KEYS.get(page) if page is not None else None

    def shows(key: str) -> bool:
        return own is None or key in own

    runs = st.get("runs") or []
    run = st.get("focus_run") or (", ".join(runs) if runs else "all runs")
    bits = [page_title, st.get("dataset") or "first dataset", run, st.get("protocol")]
    if page == "confusion" or (page is None and page_title.lower().startswith("confusion")):
        bits.append("super-categories" if st.get("conf_level") == "super" else "fine classes")
    if shows("image_id") and st.get("image_id") is not None:
        bits.append(f"image {st['image_id']}")
    if shows("gt_row") and st.get("gt_row") is not None:
        bits.append(f"GT {st['gt_row']}")
    if shows("conf_cell") and st.get("conf_cell") is not None:
        bits.append(f"{st['conf_cell'][0]} → {st['conf_cell'][1]}")
    if shows("category") and st.get("category"):
        bits.append(str(st["category"]))
    if own is not None and "template" in own and st.get("template"):
        bits.append(f"template {st['template']}")
    if own is not None and "mine_kind" in own and st.get("mine_kind"):
        bits.append(str(st["mine_kind"]))
    if st.get("min_score"):
        bits.append(f"score ≥ {st['min_score']:g}")
    if st.get("iou") != S.BY_NAME["iou"].default:
        bits.append(f"IoU {st['iou']:g}")
    return " · ".join(str(b) for b in bits if b)
