"""Object view (the paper's Fig. 1): one GT object against every run. Per run, its best-overlapping prediction (3D
IoU, any class, any status; ``Analysis.object_view``) drawn with the GT on a crop of the image, the table of IoU,
class, score and status, and the one sentence that sums it up ("5 of 5 runs localise this chair, none names it");
a 3D view draws every run's box around the object in the point cloud.

Its own page (not a section of the mining page) because four pages lead here (confusion cells, the oracle's removed
false positives, mining lists, and through them the leaderboard) and because one object is a slide of its own: the
GT row is in the URL (``gt=``), so the view can be pinned and shared."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ov3d_app import cache, drawing, navigate, ui
from ov3d_app import tags as T
from ov3d_app.drawing import MISSING
from ov3d_app.rerun_button import rerun_button
from ov3d_core.viz.scene3d import scene_figure

ui.page_header("Object view", "One ground-truth object, every run: each run's best-overlapping box (any class) "
               "drawn in its status colour beside the GT (yellow), with 3D IoU, predicted class and score. "
               "'Localised': 3D IoU ≥ 0.15 (class-agnostic recall); status with respect to this object, at the "
               "sidebar's IoU (TP only when the evaluator matched the box to this object).")
ctx, _ = ui.per_box(ui.need_context())  # a GT row of the whole dataset (the subset's notice is above)
PER_ROW = 6
#: Streamlit's named colours nearest to ``viz.image_overlay.STATUS_COLORS`` (the crops' box colours).
STATUS_MD_COLOR = {"TP": "green", "FP": "red", "mislabelled": "violet", "ignored": "gray", "not evaluated": "gray"}
#: Points of the 3D view: the scene inspector's default budget for this browser's WebGL renderer (the full cloud on
#: a GPU, once the inspector's probe reported it).
BUDGET_3D = drawing.session_budget()


def _open_scene(image_id: int, highlight: str, run: str | None):
    """The scene inspector on the object's image (a callback: this page does not run again first, ``navigate``)."""
    navigate.go_to("scene", image_id=int(image_id), highlight=highlight, focus_run=run or ui.get("focus_run"),
                   f_classes=[], f_errors=[], f_run="", f_min_score=0.0)


def _pick_image(key: str, rows_of: dict):
    image_id = st.session_state.get(key)
    if image_id in rows_of:
        ui.set_state(gt_row=int(rows_of[image_id][0]))


with ui.guard("The object view"):
    runs = list(ctx.runs)
    if not runs:
        st.stop()
    ds = cache.benchmark(ctx.cfg_key).dataset(ctx.dataset)
    gt_img = np.asarray(ds.gt.image_id, np.int64)
    if not len(gt_img):
        st.info(f"Dataset **{ui.md(ctx.dataset)}** has no GT boxes.")
        st.stop()
    g = ui.get("gt_row")
    if g is None or not 0 <= int(g) < len(gt_img):
        ok = np.flatnonzero(~np.asarray(ds.gt.ignore, bool))
        g = int(ok[0] if len(ok) else 0)
        st.session_state["gt_row"] = g
    g = int(g)
    rows_of = {int(i): np.flatnonzero(gt_img == i).tolist() for i in dict.fromkeys(gt_img.tolist())}
    image_id = int(gt_img[g])

    c1, c2, c3 = st.columns([1.4, 2.4, 1.6])
    images = list(rows_of)
    ikey = f"obj_image:{g}"
    c1.selectbox("Image", images, index=images.index(image_id), key=ikey, format_func=lambda i: f"image {i}",
                 on_change=_pick_image, args=(ikey, rows_of))
    cat, ign = np.asarray(ds.gt.category, dtype=object), np.asarray(ds.gt.ignore, bool)
    c2.selectbox("GT object", rows_of[image_id], format_func=lambda r: f"GT {r} · {cat[r]}"
                 + (" (ignored)" if ign[r] else ""), **ui.bind("gt_row", ":obj"))
    A = cache.analysis(ctx.cfg_key)
    with st.spinner("Matching every run"):
        ov = A.object_view(ctx.view(), g, runs=tuple(runs))
    table = ov.to_frame()
    c3.button("Open in the scene inspector", icon=":material/view_in_ar:", key="obj_scene", width="stretch",
              on_click=_open_scene, args=(ov.image_id, f"gt||{g}", None))
    with c3:  # the object's image, every run, as a Rerun recording (built on click)
        rerun_button(ctx, [ov.image_id], name=f"object_{ctx.dataset}_{g}", key="obj_rrd")

    st.subheader(ui.md(ov.sentence()))
    s = ov.summary
    st.caption(f"GT {g} · **{ui.md(ov.gt_class)}** on image {ov.image_id} · depth {ov.depth:.2f} m"
               + (" · ignored by the evaluator" if ov.ignored else "")
               + f" · matched by the evaluator in {s['n_matched']} of {s['n_runs']} runs")

    for start in range(0, len(table), PER_ROW):
        cols = st.columns(PER_ROW)
        for col, rec in zip(cols, table.iloc[start:start + PER_ROW].itertuples(index=False)):
            with col:
                p = None if pd.isna(rec.pred_row) else int(rec.pred_row)
                st.markdown(f"**{ui.md(rec.run)}**")
                st.image(drawing.object_crop(ctx.cfg_key, ctx.dataset, ov.image_id, g, rec.run, p, rec.status),
                         width="stretch")
                if p is None:
                    st.caption("no box near this object (no prediction overlaps it in 3D)")
                else:
                    # rec.status is the box's status with respect to THIS object (mining.object_view), rec.reason why
                    colour = STATUS_MD_COLOR.get(rec.status or "", "gray")
                    overlap = f"3D IoU {rec.iou3d:.2f}" if rec.iou3d >= 0.005 else "3D IoU < 0.01"
                    here = (f"{rec.status} on this object" if rec.status == "TP"
                            else f"{rec.status} on this object: {rec.reason}")
                    st.markdown(f":{colour}[■] {ui.md(rec.pred_class or 'no class')} {rec.score:.2f} · {overlap} · "
                                f"{ui.md(here)}")
                    st.button("Open", key=f"obj_open_{rec.run}", icon=":material/open_in_new:", width="stretch",
                              on_click=_open_scene, args=(ov.image_id, f"pred|{rec.run}|{p}", rec.run))
    if st.toggle("3D view (every run's box around the object, one colour per run)", key="obj_3d"):
        with ui.guard("The 3D view"):
            meta = cache.image_meta(ctx.cfg_key, ctx.dataset, ov.image_id)
            pc = cache.point_cloud(ctx.cfg_key, ctx.dataset, ov.image_id, BUDGET_3D)
            fig = scene_figure(None if pc is None else pc.points, drawing.object_layers(ctx.cfg_key, ctx.dataset, g,
                                                                                       table),
                               K=meta["K"], width=meta["width"], height=meta["height"],
                               colors=None if pc is None else pc.colors, budget=BUDGET_3D, fig_height=520)
            ui.plot(fig, "obj_3d_fig", export_name=f"object3d_{ctx.dataset}_{g}", config={"plotGlPixelRatio": 1})
    st.dataframe(table, hide_index=True, key="obj_table", placeholder=MISSING,
                 column_config=ui.fmt_table(table, fraction=("iou3d", "iou2d", "score")))
    ui.export_table(T.with_tags(ctx.cfg_key, ctx.dataset, table, kind="pred", row="pred_row", image_id=ov.image_id),
                    f"object_{ctx.dataset}_{g}", "obj_x", caption=ov.sentence())
