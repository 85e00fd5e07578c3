"""Sample grid: thumbnails of many images at once with their boxes drawn, filtered by box attributes (class, status,
truncation, visibility, depth, box size, score, error against the reference GT) and tags, sorted by an aggregate of
the matching boxes; each thumbnail opens the image in the scene inspector. The matching boxes are drawn thick, the
others thin."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ov3d_app import cache, drawing, navigate, selection, ui
from ov3d_app import tags as T
from ov3d_app.drawing import MISSING

ui.page_header("Sample grid", "Every image of the dataset as a thumbnail with its boxes; filter the boxes by class, "
               "status and attributes, sort the images, and open one in the scene inspector. Statuses at the "
               "sidebar's IoU under its protocol and threshold.")
ctx = ui.need_context()
PER_PAGE = 24
COLS = 6
STATUSES = ("TP", "FP", "mislabelled", "FN", "ignored", "not evaluated")


def _open(image_id: int, run: str):
    """"Open" (a callback: the grid does not run again before the inspector opens)."""
    navigate.go_to("scene", image_id=int(image_id), focus_run=run or None, f_classes=[], f_errors=[], highlight=None)


def _only(images, in_subset):
    """The tag filter's images (None: any) within the image subset (None: every image)."""
    if in_subset is None:
        return images
    return in_subset if images is None else set(images) & in_subset


with ui.guard("The sample grid"):
    runs = list(ctx.runs)
    info = cache.dataset_info(ctx.cfg_key, ctx.dataset, ctx.subset)
    ctx, in_subset = ui.per_box(ctx)  # rows and statuses of the whole dataset, images of the subset
    vocab = info["vocabulary"]
    A = cache.analysis(ctx.cfg_key)

    c1, c2, c3, c4 = st.columns([1.6, 2.4, 2.2, 1.6])
    ui.ensure_valid("focus_run", runs)
    run = c1.selectbox("Run", runs, **ui.bind("focus_run", ":grid")) if runs else None
    classes = c2.multiselect("Classes", vocab, key="grid_classes", placeholder="all classes")
    statuses = c3.multiselect("Status", STATUSES, key="grid_status", placeholder="any status",
                              help="TP keeps matched GT and true-positive predictions; FN: missed GT; FP and "
                                   "mislabelled: predictions.")
    tag_filter = T.filter_widget(ctx.cfg_key, ctx.dataset, "grid_tags", c4)

    gt = A.gt_details(ctx.view(run)) if run else None
    pred = A.pred_details(ctx.view(run)) if run else None
    if gt is None:
        st.info("This dataset has no runs: there is nothing to filter by status.")
        st.stop()
    samples = selection.sample_boxes(gt, pred)

    ranges = {}
    with st.expander("Attribute ranges", icon=":material/tune:", expanded=False):
        cols = st.columns(3)
        for k, (col, (label, kind)) in enumerate(selection.SAMPLE_ATTRIBUTES.items()):
            v = samples[col].to_numpy(np.float64)
            v = v[np.isfinite(v)]
            if not len(v):
                continue
            lo, hi = float(np.floor(v.min() * 100) / 100), float(np.ceil(v.max() * 100) / 100)
            if hi <= lo:
                continue
            step = 0.01 if hi - lo <= 5 else 0.1 if hi - lo <= 50 else 1.0
            got = cols[k % 3].slider(f"{label} ({'predictions' if kind == 'pred' else 'GT' if kind == 'gt' else 'all boxes'})",
                                     lo, hi, (lo, hi), step=step, key=f"grid_rng:{col}")
            if got[0] > lo or got[1] < hi:
                ranges[col] = (float(got[0]), float(got[1]))
        st.caption("A narrowed range keeps only boxes that have the attribute (e.g. visibility: GT boxes; score and "
                   "errors: predictions).")

    matching = selection.filter_samples(samples, classes=classes, statuses=statuses, ranges=ranges,
                                        images=_only(T.tagged_images(ctx.cfg_key, ctx.dataset, tag_filter),
                                                     in_subset))
    s1, s2, s3 = st.columns([2, 1.2, 3])
    sort = s1.selectbox("Sort images by", list(selection.SAMPLE_SORTS), key="grid_sort")
    order = selection.order_images(matching, sort)
    n_pages = max(1, int(np.ceil(len(order) / PER_PAGE)))
    page = s2.number_input("Page", 1, n_pages, 1, key=f"grid_page:{n_pages}") if n_pages > 1 else 1
    s3.markdown(f"**{len(order)}** of {len(info['images'])} images · {len(matching)} matching boxes")
    if not len(order):
        st.info("No box matches these filters.")
        st.stop()

    boxes = cache.boxes(ctx.cfg_key, ctx.view(), (run,))
    wanted = set(selection.box_keys(matching[["kind", "row"]].assign(run=run)))
    shown = order.iloc[(page - 1) * PER_PAGE: page * PER_PAGE]
    # rows keep the table's index labels (grid_thumbnail reads them by label)
    by_image = selection.rows_by_image(boxes[boxes["run"] == run], shown["image_id"])
    value_label = selection.SAMPLE_SORTS[sort][0]
    grid = st.columns(COLS)
    for k, rec in enumerate(shown.itertuples()):
        with grid[k % COLS]:
            img_id = int(rec.image_id)
            rows = by_image[img_id]
            st.image(drawing.grid_thumbnail(ctx.cfg_key, ctx.view(), (run,), img_id, tuple(rows.index.tolist()),
                                            selection.labels_with_keys(rows, wanted), color_by="status",
                                            vocabulary=vocab), width="stretch")
            extra = "" if value_label in (None, "row") or not np.isfinite(rec.value) else f" · {rec.value:.2f}"
            st.caption(f"image {img_id} · {rec.n} box{'es' if rec.n != 1 else ''}{extra}")
            st.button("Open", key=f"grid_open_{img_id}", icon=":material/open_in_new:", width="stretch",
                      on_click=_open, args=(img_id, run))

    with st.expander(f"Matching boxes ({len(matching)})"):
        st.dataframe(matching, hide_index=True, placeholder=MISSING, column_config=ui.fmt_table(
            matching, fraction=tuple(selection.SAMPLE_ATTRIBUTES)))
        ui.export_table(T.with_tags(ctx.cfg_key, ctx.dataset, matching, run=run), f"grid_{ctx.dataset}_{run}",
                        "grid_tbl")
