"""Box layers of one image for the scene inspector, the oracle and the confusion gallery: box-table rows ->
``viz`` ``BoxLayer`` groups (by status or by class), with the box corners fetched from the cached benchmark."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ov3d_app import cache, selection
from ov3d_core.viz.image_overlay import BoxLayer, class_colors, class_layers, status_layers

HIGHLIGHT_COLOR = "#ffd400"


def _corners(cfg_key: str, dataset: str, rows: pd.DataFrame) -> np.ndarray:
    out = np.zeros((len(rows), 8, 3))
    kinds = rows["kind"].to_numpy(object)
    runs = rows["run"].to_numpy(object)
    idx = rows["row"].to_numpy(np.int64)
    for kind, run in dict.fromkeys(zip(kinds, runs)):
        m = (kinds == kind) & (runs == run)
        out[m] = cache.corners_of(cfg_key, dataset, kind, run, idx[m])
    return out


def image_layers(cfg_key: str, dataset: str, rows: pd.DataFrame, *, color_by: str = "status",
                 vocabulary: list[str] | None = None, removed: set[int] | None = None, prefix: str = "",
                 highlight: str | None = None) -> list[BoxLayer]:
    """Layers for the box-table ``rows`` of one image (GT rows and prediction rows of one or more runs).

    Args:
        rows: rows of ``selection.box_table``.
        color_by: "status" (TP / FP / FN / mislabelled ...) or "class".
        vocabulary: class order for stable class colours.
        removed: prediction rows removed by the oracle (drawn faded and struck through).
        prefix: legend prefix.
        highlight: ``"kind|run|row"`` of a box drawn on top in yellow.
    """
    layers: list[BoxLayer] = []
    if rows.empty:
        return layers
    rows = rows.reset_index(drop=True)
    corners = _corners(cfg_key, dataset, rows)
    labels = selection.box_labels(rows)
    custom = np.stack([rows["kind"].to_numpy(object), rows["run"].to_numpy(object),
                       rows["row"].to_numpy(np.int64).astype(object)], axis=1)
    colors = class_colors(list(vocabulary or []) + rows["category"].astype(str).tolist())
    for kind in ("gt", "pred"):
        m = (rows["kind"] == kind).to_numpy()
        if not m.any():
            continue
        status = rows.loc[m, "status"].to_numpy(object)
        is_removed = np.zeros(int(m.sum()), bool)
        if kind == "pred" and removed:
            is_removed = np.isin(rows.loc[m, "row"].to_numpy(np.int64), np.fromiter(removed, np.int64))
            status = np.where(is_removed, "removed", status)
        lab = [labels[i] for i in np.flatnonzero(m)]
        if color_by == "class":
            layers += class_layers(corners[m], rows.loc[m, "category"].to_numpy(object), kind=kind, labels=lab,
                                   customdata=custom[m], prefix=prefix, colors=colors, struck=is_removed)
        else:
            layers += status_layers(corners[m], status, kind=kind, labels=lab, customdata=custom[m], prefix=prefix)
    hl = selection.parse_highlight(highlight)
    if hl is not None:
        kind, run, row = hl
        m = ((rows["kind"] == kind) & (rows["row"] == row) & ((rows["run"] == run) | (kind == "gt"))).to_numpy()
        if m.any():
            layers.append(BoxLayer(name="selected", corners=corners[m], color=HIGHLIGHT_COLOR,
                                   labels=[labels[i] for i in np.flatnonzero(m)], customdata=custom[m], width=4.0,
                                   group="selected"))
    return layers
