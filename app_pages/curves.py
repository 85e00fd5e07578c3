"""Precision-recall curves per class and per run at the sidebar's 3D IoU, with the operating point of the score
threshold marked on each: Omni3D's interpolated curves (101 recall points, the ones AP averages) of the predictions
without the threshold; the diamond is where keeping only scores at or above the threshold puts each run.

Below them (issue 23): AP against the IoU threshold in 3D and 2D (Pro-Bench Fig. 3, ``Analysis.ap_vs_iou`` and
``Analysis.iou_summary``) and AP by object size (FG-OVD's small / medium / large, ``Analysis.ap_by_size``)."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ov3d_app import cache, ui
from ov3d_core.eval.curves import ALL_CLASSES
from ov3d_core.viz import bars
from ov3d_core.viz.curves import ap_vs_iou_figure, pr_figure, pr_grid
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


def _runs_of_section(key: str) -> list[str]:
    """The focus run (the sidebar's selection, else the first shown run) or every shown run."""
    focus = ui.get("focus_run") if ui.get("focus_run") in runs else runs[0]
    which = st.radio("Runs", ["focus", "all"], horizontal=True, key=key,
                     format_func={"focus": f"focus run ({ui.md(focus)})", "all": f"all shown runs ({len(runs)})"}.get)
    return [focus] if which == "focus" else runs


with ui.guard("AP against the IoU threshold"):
    st.subheader("AP against the IoU threshold")
    st.caption("Pro-Bench Fig. 3: mAP over every class with GT at each IoU threshold from 0.05 to 0.95, with 3D IoU "
               "(solid) and with the IoU of the projected 2D boxes (dashed), at the sidebar's score threshold and "
               "protocol. A curve that falls early says the boxes are found but poorly localised. The table: mAP at "
               "0.5, 0.75, averaged over 0.5:0.95 (COCO) and 0.05:0.5, and retained = mAP@.75 / mAP@.5.")
    shown = _runs_of_section("iou_runs")
    views = [ctx.view(r) for r in shown]
    frames = [pd.concat([A.ap_vs_iou(v, iou=k).to_frame() for k in ("3d", "2d")], ignore_index=True).assign(run=r)
              for r, v in zip(shown, views)]
    iou_curves = pd.concat(frames, ignore_index=True)
    fig = cache.shared(("ap_vs_iou", ctx.cfg_key, ctx.view(), tuple(shown)),
                       lambda: ap_vs_iou_figure(iou_curves, title=f"AP against the IoU threshold · {ctx.dataset}"))
    ui.plot(fig, "iou_curve", export_name=f"ap_vs_iou_{ctx.dataset}")
    summary = A.iou_summary(views)
    st.dataframe(summary, hide_index=True, key="iou_summary", placeholder=MISSING, column_config=ui.fmt_table(
        summary, percent=("mAP@.5", "mAP@.75", "mAP@.5:.95", "mAP@.05:.5"), fraction=("retained",)))
    ui.export_table(summary, f"iou_summary_{ctx.dataset}", "iou_summary_x", caption="mAP against the IoU threshold")

with ui.guard("AP by object size"):
    st.subheader("AP by object size")
    st.caption("FG-OVD: AP in COCO's size bins of the projected 2D box's area (small ≤ 32², medium 32²–96², large "
               "≥ 96² pixels²), with 3D IoU (AP3D: Omni3D's 0.05:0.50, as mAP3D) and with 2D IoU (AP2D: COCO's "
               "0.5:0.95); n_gt: GT per bin. — where a bin has no GT.")
    shown = _runs_of_section("size_runs")
    rows, per_cat = [], []
    for r in shown:
        v = ctx.view(r)
        s3, s2 = A.ap_by_size(v, iou="3d"), A.ap_by_size(v, iou="2d")
        n_gt = dict(zip(s3.table["size"], s3.table["n_gt"]))
        rows.append({"run": r, **s3.summary(), **s2.summary(), **{f"n_gt-{b}": n_gt[b] for b in n_gt}})
        per_cat.append(s3.per_category.assign(run=r, iou="3D"))
        per_cat.append(s2.per_category.assign(run=r, iou="2D"))
    sizes = pd.DataFrame(rows)
    ap_cols = tuple(c for c in sizes.columns if c.startswith("AP"))
    st.dataframe(sizes, hide_index=True, key="size_table", placeholder=MISSING,
                 column_config=ui.fmt_table(sizes, percent=ap_cols))
    ui.export_table(sizes, f"ap_by_size_{ctx.dataset}", "size_table_x", caption="AP by object size")
    long = sizes.melt(id_vars=["run"], value_vars=[c for c in ap_cols if "-" in c], var_name="metric",
                      value_name="AP")
    ui.plot(bars.grouped_bars(long, "metric", "AP", "run", y_title="AP (%)",
                              title=f"AP by object size · {ctx.dataset}"), "size_bars",
            export_name=f"ap_by_size_{ctx.dataset}")
    with st.expander("Per category"):
        pc = pd.concat(per_cat, ignore_index=True)
        pc = pc[["run", "iou", *[c for c in pc.columns if c not in ("run", "iou")]]]
        st.dataframe(pc, hide_index=True, key="size_per_category", placeholder=MISSING,
                     column_config=ui.fmt_table(pc, percent=tuple(c for c in pc.columns if c.startswith("AP"))))
        ui.export_table(pc, f"ap_by_size_per_category_{ctx.dataset}", "size_pc_x")
