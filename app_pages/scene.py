"""Scene inspector: one image with GT and predicted 3D boxes projected through K, coloured by TP / FP / FN /
mislabelled-but-localised under the active protocol; runs side by side; a 3D view of the point cloud with the same
boxes and the camera frustum; filters by class, run, error type and score; previous / next through the filtered
image list."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ov3d_app import cache, drawing, selection, ui
from ov3d_app import state as S
from ov3d_core.viz.image_overlay import image_overlay
from ov3d_core.viz.scene3d import CAMERA_PRESETS, scene_figure

ui.page_header("Scene inspector", "GT boxes dotted (missed GT solid orange), predictions solid: green TP, red FP, "
               "purple = well localised but mislabelled (its label reads 'pred ≠ GT'). The cross marks each box's "
               "front face (heading). Click a box label to select it.")
ctx = ui.need_context()


def _step(images: list[int], step: int):
    ui.set_state(image_id=selection.step_image(images, ui.get("image_id"), step), highlight=None)


def _on_box(key: str):
    pts = selection.selection_points(st.session_state.get(key))
    hl = next((h for h in (selection.box_from_point(p) for p in pts) if h), None)
    if hl:
        ui.set_state(highlight=hl)


@st.fragment
def view_3d(ctx, image_id: int, meta: dict, rows, vocabulary):
    st.toggle("3D view (point cloud, boxes, camera frustum)", **ui.bind("show_3d"))
    if not ui.get("show_3d"):
        return
    c1, c2, c3 = st.columns([2, 2, 1])
    run_opts = list(ctx.runs) or [""]
    run3d = c1.selectbox("Run shown in 3D", run_opts, key="run3d", format_func=lambda r: r or "GT only")
    camera = c2.radio("Camera", list(CAMERA_PRESETS), horizontal=True, key="cam3d")
    budget = c3.select_slider("Points", [20_000, 60_000, 150_000], value=60_000, key="pts3d")
    sub = rows[rows["run"] == run3d] if run3d else rows[rows["kind"] == "gt"].drop_duplicates(["row"])
    layers = drawing.image_layers(ctx.cfg_key, ctx.dataset, sub, color_by=ui.get("color_by"), vocabulary=vocabulary,
                                  highlight=ui.get("highlight"))
    with ui.guard("The 3D view"):
        pc = cache.point_cloud(ctx.cfg_key, ctx.dataset, image_id, budget)
        if pc is None:
            st.caption("No point cloud or depth map for this image (benchmark config `points:` / `depth:`); "
                       "showing boxes and the camera frustum only.")
            pts, cols = None, None
        else:
            pts, cols, src = pc
            st.caption(f"{len(pts):,} points from the {src}, voxel-downsampled to the budget.")
        fig = scene_figure(pts, layers, K=meta["K"], width=meta["width"], height=meta["height"], colors=cols,
                           budget=budget, camera=camera, fig_height=600)
        ui.plot(fig, "scene3d_fig", export_name=f"scene3d_{ctx.dataset}_{image_id}")


with ui.guard("The scene inspector"):
    info = cache.dataset_info(ctx.cfg_key, ctx.dataset)
    vocab = info["vocabulary"]
    all_images = info["images"]["image_id"].astype(int).tolist()
    runs = list(ctx.runs)

    f1, f2, f3, f4, f5 = st.columns([2.2, 2, 1.6, 1.6, 1.2])
    ui.ensure_subset("f_classes", vocab)
    f1.multiselect("Classes", vocab, placeholder="all classes", **ui.bind("f_classes"))
    f2.multiselect("Images with", list(S.ERROR_FILTERS), placeholder="any status",
                   format_func={"FP": "false positives", "FN": "missed GT", "mislabelled": "mislabelled",
                                "TP": "true positives"}.get, **ui.bind("f_errors"))
    ui.ensure_valid("f_run", [""] + runs)
    f3.selectbox("Error filter on", [""] + runs, format_func=lambda r: r or "any shown run", **ui.bind("f_run"))
    f4.slider("Hide predictions below", 0.0, 1.0, step=0.05, **ui.bind("f_min_score"))
    f5.radio("Colour", list(S.COLOR_BY), **ui.bind("color_by"))

    boxes = cache.boxes(ctx.cfg_key, ctx.view(), tuple(runs))
    filt_runs = [ui.get("f_run")] if ui.get("f_run") in runs else runs
    images = selection.filtered_images(boxes, all_images, classes=ui.get("f_classes"), errors=ui.get("f_errors"),
                                       runs=filt_runs, min_score=ui.get("f_min_score"))
    if not images:
        st.info("No image matches these filters. Clear the class or error filter, or lower the score threshold.")
        st.stop()
    if ui.get("image_id") not in images:
        st.session_state["image_id"] = images[0]

    n1, n2, n3, n4 = st.columns([1, 3, 1, 2])
    n1.button("Previous", icon=":material/arrow_back:", on_click=_step, args=(images, -1), width="stretch")
    n2.selectbox("Image", images, format_func=lambda i: f"image {i}", label_visibility="collapsed",
                 **ui.bind("image_id", on_change=lambda: ui.set_state(highlight=None)))
    n3.button("Next", icon=":material/arrow_forward:", on_click=_step, args=(images, 1), width="stretch")
    image_id = int(ui.get("image_id"))
    n4.markdown(f"**{images.index(image_id) + 1} / {len(images)}** filtered images · {len(all_images)} in "
                f"{ui.md(ctx.dataset)}")

    meta = cache.image_meta(ctx.cfg_key, ctx.dataset, image_id)
    rows = boxes[boxes["image_id"] == image_id]
    rows = selection.filter_boxes(rows, classes=ui.get("f_classes"), runs=runs, min_score=ui.get("f_min_score"))
    shown = runs or [""]
    per_row = 1 if len(shown) == 1 else 2 if len(shown) in (2, 4) else 3
    col_px = {1: 1150, 2: 560, 3: 370}[per_row]  # about the width of one column in the wide layout
    fig_h = int(np.clip(col_px * meta["height"] / max(meta["width"], 1) + 70, 260, 720))
    uri, scale = None, 1.0
    if meta["path"] is None:
        st.warning(f"Image file of image {image_id} not found; drawing on a blank canvas.")
    else:
        uri, _, _, scale = cache.image_uri(meta["path"], {1: 1600, 2: 1100, 3: 800}[per_row])

    for start in range(0, len(shown), per_row):
        cols = st.columns(per_row)
        for col, run in zip(cols, shown[start:start + per_row]):
            sub = rows[rows["run"] == run] if run else rows
            layers = drawing.image_layers(ctx.cfg_key, ctx.dataset, sub, color_by=ui.get("color_by"),
                                          vocabulary=vocab, highlight=ui.get("highlight"))
            counts = sub[sub["kind"] == "pred"]["status"].value_counts()
            n_fn = int((sub[sub["kind"] == "gt"]["status"] == "FN").sum())
            fig = image_overlay(uri, meta["K"], layers, width=meta["width"], height=meta["height"],
                                image_scale=scale, fig_height=fig_h)
            with col:
                st.markdown(f"**{ui.md(run or 'ground truth')}** · TP {counts.get('TP', 0)} · FP {counts.get('FP', 0)} · "
                            f"mislabelled {counts.get('mislabelled', 0)} · missed GT {n_fn}")
                key = f"img_{start}_{run}"
                ui.plot(fig, key, on_select=lambda k=key: _on_box(k), export_name=f"{ctx.dataset}_{image_id}_{run}")

    with st.expander(f"Boxes on image {image_id} ({len(rows)})", expanded=False):
        table = rows.drop(columns=["image_id"]).rename(columns={"matched": "matched GT row"})
        st.dataframe(table, hide_index=True, column_config=ui.fmt_table(table, fraction=("score", "iou")))
        ui.export_table(table, f"boxes_{ctx.dataset}_{image_id}", "boxes")

    view_3d(ctx, image_id, meta, rows, vocab)
