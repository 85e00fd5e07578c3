"""Confusion: fine and super-category matrices (OV3D-Bench: one-to-one Hungarian matching at 3D IoU >= 0.5, rows
normalised by matched GT per class). Click a cell for a gallery of its examples; each opens in the scene inspector.
"""

from __future__ import annotations

import numpy as np
import streamlit as st

from ov3d_app import cache, selection, ui
from ov3d_app import state as S
from ov3d_core.taxonomy import super_category
from ov3d_core.viz.heatmap import confusion_heatmap, confusion_scatter
from ov3d_app.drawing import MISSING

ui.page_header("Confusion", "Rows: ground-truth class; columns: the label of the prediction it was matched to "
               "(one-to-one Hungarian assignment at 3D IoU ≥ 0.5; unmatched boxes are left out). Fractions are "
               "normalised per GT class over its matched boxes. Under the target-aware protocol, predictions of "
               "classes absent from the image are removed first, which hides exactly these confusions.")
ctx = ui.need_context()
MISSED = "∅ missed (no match)"
GALLERY = 24
#: Examples per gallery row: wide enough for the "Open" and "Runs" buttons side by side under each thumbnail.
GALLERY_COLUMNS = 4
THUMB = 240  # px: every thumbnail is this square (the crop centred on it), so the rows line up


def _on_cell(rows: list[str], cols: list[str]):
    cell = selection.cell_from_event(st.session_state.get("cm_plot"))
    names = selection.cell_names(cell, rows, cols)
    if names is not None:
        ui.set_state(conf_cell=names)


def _on_top(top):
    sel = selection.dataframe_rows(st.session_state.get("cm_top"))
    if sel:
        rec = top.iloc[sel[0]]
        ui.set_state(conf_cell=(str(rec["gt_class"]), str(rec["pred_class"])))


def _open(image_id: int, run: str, pred_row: int | None, gt_row: int | None):
    hl = f"pred|{run}|{pred_row}" if pred_row is not None else f"gt||{gt_row}"
    ui.set_state(image_id=int(image_id), highlight=hl, focus_run=run, f_classes=[], f_errors=[])


def _gallery(ctx, run: str, cm, cell: tuple[str, str], level: str, matched_gt: np.ndarray):
    gt_name, pred_name = cell
    b = cache.benchmark(ctx.cfg_key)
    ds, pred = b.dataset(ctx.dataset), b.run(run, ctx.dataset).pred
    if pred_name == MISSED:
        vocab = cache.dataset_info(ctx.cfg_key, ctx.dataset)["vocabulary"]
        classes = [c for c in vocab if c == gt_name or (level == "super" and super_category(c) == gt_name)]
        gt_rows = selection.missed_gt_rows(ds.gt.category, ds.gt.ignore, matched_gt, classes)
        examples = [(int(ds.gt.image_id[g]), int(g), None, np.nan) for g in gt_rows[:GALLERY]]
        total = len(gt_rows)
    else:
        pairs = cm.cell_pairs(gt_name, pred_name)
        total = len(pairs)
        examples = [(int(r.image_id), int(r.gt_row), int(r.pred_row), float(r.iou))
                    for r in pairs.head(GALLERY).itertuples()]
    st.subheader(f"{ui.md(gt_name)} → {ui.md(pred_name)}: {total} example{'s' if total != 1 else ''}")
    if not examples:
        st.info("No examples in this cell.")
        return
    for k, (image_id, g, p, iou) in enumerate(examples):
        if k % GALLERY_COLUMNS == 0:  # one row of columns per row of examples: each row starts level
            cols = st.columns(GALLERY_COLUMNS)
        with cols[k % GALLERY_COLUMNS].container(key=f"cm_example_{k}"):
            path = cache.readable(b.image_path(ctx.dataset, image_id))
            box = ds.gt.box2d[g] if p is None else pred.box2d[p]
            if path is not None and np.all(np.isfinite(box)) and box[2] > box[0]:
                st.image(cache.thumbnail(path, tuple(float(v) for v in box), size=THUMB, square=True),
                         width="stretch")
            else:
                st.image(cache.thumbnail_placeholder(THUMB), width="stretch")
            b1, b2 = st.columns(2)
            if b1.button("Open", key=f"open_{k}", icon=":material/open_in_new:", width="stretch",
                         help="This image in the scene inspector, the box highlighted."):
                _open(image_id, run, p, g)
                st.switch_page("app_pages/scene.py")
            if b2.button("Runs", key=f"object_{k}", icon=":material/center_focus_strong:", width="stretch",
                         help="The object view: every run's box and label on this GT object."):
                ui.set_state(gt_row=int(g))
                st.switch_page("app_pages/object.py")
            cap = f"GT **{ui.md(ds.gt.category[g])}**"
            cap += f" → **{ui.md(pred.category[p])}** {pred.score[p]:.2f} · IoU {iou:.2f}" if p is not None else " · missed"
            st.caption(f"image {image_id} · {cap}")
    if total > GALLERY:
        st.caption(f"Showing the {GALLERY} best-overlapping of {total}.")


with ui.guard("The confusion matrix"):
    runs = list(ctx.runs)
    if not runs:
        st.stop()
    c1, c2, c3, c4, c5 = st.columns([2, 1.6, 1.2, 1.2, 1.2])
    ui.ensure_valid("focus_run", runs)
    c1.selectbox("Run", runs, **ui.bind("focus_run", ":cm"))
    c2.radio("Level", list(S.CONF_LEVELS), horizontal=True,
             format_func={"fine": "fine classes", "super": "super-categories"}.get, **ui.bind("conf_level"))
    c3.toggle("Hide diagonal", **ui.bind("hide_diag"))
    c4.toggle("Log colour", **ui.bind("log_color"))
    c5.toggle("Fractions", help="Row-normalised (else counts, with a 'missed' column).", **ui.bind("conf_norm"))
    run = ui.get("focus_run")
    level = ui.get("conf_level")
    A = cache.analysis(ctx.cfg_key)
    res = A.confusion(ctx.view(run), level=level)
    cm = res if level == "fine" else res.matrix
    extra = {} if level == "fine" else {"cross_super_share_of_confusions": res.cross_super_share_of_confusions,
                                        "mean_off_diagonal": res.mean_off_diagonal}
    matched_gt = cm.match_gt
    cm = cm.compact()  # classes (or super-categories) with no GT, match or miss in this dataset are left out
    names = list(cm.class_names)
    ui.ensure_subset("conf_classes", names)
    st.multiselect("Classes shown", names, placeholder="all classes with a match or a miss",
                   **ui.bind("conf_classes"))
    subset = ui.get("conf_classes") or names
    if subset != names:
        cm = cm.project(list(cm.class_names), names=subset, drop=[n for n in names if n not in subset])
    rows = list(cm.class_names)
    if not rows:
        st.info("No matched box at 3D IoU ≥ 0.5 for this run and protocol: the matrix is empty.")
        st.stop()

    norm = bool(ui.get("conf_norm"))
    values = cm.normalized() if norm else cm.counts.astype(float)
    counts = cm.counts.astype(float)
    cols = rows
    if not norm and cm.missed is not None:
        values = np.concatenate([values, cm.missed[:, None].astype(float)], axis=1)
        counts = np.concatenate([counts, cm.missed[:, None].astype(float)], axis=1)
        cols = rows + [MISSED]
    values = np.nan_to_num(values)
    sel_idx = selection.cell_index(ui.get("conf_cell"), rows, cols)
    fig = confusion_scatter(values, rows, cols, counts=counts, log_color=ui.get("log_color"),
                            hide_diagonal=ui.get("hide_diag"), selected=sel_idx)
    static = confusion_heatmap(values, rows, cols, log_color=ui.get("log_color"), hide_diagonal=ui.get("hide_diag"))

    st.caption(f"{cm.n_matched} matched pairs · label accuracy {cm.accuracy:.1%}. Click a cell to see its examples.")
    ui.plot(fig, "cm_plot", on_select=lambda: _on_cell(rows, cols), export_name=f"confusion_{run}_{level}",
            static_fig=static, width="content")
    left, right = st.columns([3, 2])
    with left:
        top = cm.top_confusions(15)
        st.markdown("**Largest confusions** (select a row)")
        st.dataframe(top, hide_index=True, on_select=lambda: _on_top(top), selection_mode="single-row",
                     key="cm_top", column_config=ui.fmt_table(top, fraction=("fraction",)), placeholder=MISSING)
        table = cm.to_frame(normalize=norm).reset_index()
        ui.export_table(table, f"confusion_{run}_{level}", "cm_table")
    with right:
        if level == "super" and extra:
            st.metric("Confusions crossing super-categories", f"{extra['cross_super_share_of_confusions']:.0%}",
                      help="Among matched pairs with different fine labels, the share whose super-categories differ.")
            st.metric("Mean off-diagonal", f"{extra['mean_off_diagonal']:.2f}",
                      help="1 − mean of the row-normalised diagonal over super-categories.")

        sem = A.semantic_confusion(ctx.view(run))
        o = sem.overall
        st.metric("Semantic cost per confusion", f"{o['weighted_error']:.2f}" if o["weighted_error"] == o[
            "weighted_error"] else "—", help="Mean cost of a confusion under the super-category tree: 0.5 within a "
                                            "super-category (sofa → chair), 1 across (toilet → chair). Lower: the "
                                            "errors are semantically closer.")
        st.metric("Semantic cost per matched GT", f"{o['cost_per_match']:.3f}" if o["cost_per_match"] == o[
            "cost_per_match"] else "—", help="Confusion rate and cost combined: Σ cost / matched GT.")

    cell = ui.get("conf_cell")
    if cell is not None and selection.cell_index(cell, rows, cols) is not None:
        _gallery(ctx, run, cm, cell, level, matched_gt)
    else:
        st.info("Click a cell (or a row of the largest confusions) to see its examples.")

    with st.expander("Semantic-distance-weighted confusion per class"):
        st.caption("OV3D-Bench treats all confusions alike; weighting by semantic distance separates adjacent "
                   "errors (sofa → chair) from distant ones (toilet → chair). Cost: the super-category tree.")
        table = sem.per_class[sem.per_class["n_matched"] > 0].reset_index(drop=True)
        st.dataframe(table, hide_index=True, placeholder=MISSING, column_config=ui.fmt_table(
            table, fraction=("off_diagonal_share", "weighted_error", "cost_per_match", "top_confusion_cost")))
        ui.export_table(table, f"semantic_confusion_{run}", "cm_sem")
