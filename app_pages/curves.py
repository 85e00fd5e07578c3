"""Precision-recall curves per class and per run at the sidebar's 3D IoU, with the operating point of the score
threshold marked on each: Omni3D's interpolated curves (101 recall points, the ones AP averages) of the predictions
without the threshold; the diamond is where keeping only scores at or above the threshold puts each run."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ov3d_app import cache, ui
from ov3d_core.eval.curves import ALL_CLASSES
from ov3d_core.viz.curves import pr_figure, pr_grid
from ov3d_app.drawing import MISSING

ui.page_header("PR curves", "Interpolated precision-recall curves (Omni3D: 101 recall points, the envelope AP "
               "averages) at the sidebar's 3D IoU, computed without the score threshold; the diamond marks each run's "
               "operating point at the threshold (the detections scoring at or above it). '(all classes)' is the "
               "mean over classes with GT, whose mean over recall is AP at that IoU.")
ctx = ui.need_context()

with ui.guard("The precision-recall curves"):
    runs = list(ctx.runs)
    if not runs:
        st.stop()
    A = cache.analysis(ctx.cfg_key)
    curves, ops = [], []
    for run in runs:
        v = ctx.view(run)
        c = A.pr_curves(v)
        c.insert(0, "run", run)
        curves.append(c)
        o = A.operating_points(v)
        o.insert(0, "run", run)
        ops.append(o)
    curves = pd.concat(curves, ignore_index=True)
    ops = pd.concat(ops, ignore_index=True)
    classes = [ALL_CLASSES] + [c for c in dict.fromkeys(curves["category"]) if c != ALL_CLASSES]
    c1, c2 = st.columns([2, 3])
    cat = c1.selectbox("Class", classes, key="pr_class")
    c2.markdown(f"3D IoU **{ctx.iou:g}** · score threshold **{ctx.min_score:g}** · {ctx.protocol} protocol")
    sel = curves[curves["category"] == cat]
    fig = cache.shared(("pr_figure", ctx.cfg_key, ctx.view(), tuple(runs), cat),  # one figure per server
                       lambda: pr_figure(sel, ops[ops["category"] == cat], title=f"{cat} at 3D IoU {ctx.iou:g}",
                                         height=460))
    ui.plot(fig, "pr_main", export_name=f"pr_{ctx.dataset}_{cat}")

    st.subheader("Every class")
    cats = [c for c in classes if c != ALL_CLASSES]
    grid = cache.shared(("pr_grid", ctx.cfg_key, ctx.view(), tuple(runs)), lambda: pr_grid(curves, ops, cats))
    ui.plot(grid, "pr_grid", export_name=f"pr_grid_{ctx.dataset}")

    st.subheader(f"Operating points at score ≥ {ctx.min_score:g}")
    st.caption("Per run and class: detections kept by the threshold, TP and FP among them at the IoU, recall and "
               "precision (— where no detection is kept). The same table `ov3d report` writes (operating_points).")
    table = ops.copy()
    st.dataframe(table, hide_index=True, key="pr_ops", placeholder=MISSING,
                 column_config=ui.fmt_table(table, fraction=("min_score", "recall", "precision")))
    ui.export_table(table, f"operating_points_{ctx.dataset}", "pr_ops_x")
