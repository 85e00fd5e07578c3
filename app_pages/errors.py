"""Error breakdown: why AP is low. Centre-distance AP with true-positive errors (translation, orientation,
scale) and the Open Detection Score, from ``ov3d_core.eval.distance``; the TIDE-style 3D error bins (each error
type scored as the AP gained by fixing only it) appear here once ``ov3d_core.eval.errors`` exists."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ov3d_app import cache, ui
from ov3d_core.viz import bars

ui.page_header("Error breakdown", "How much of the gap is localisation (translation, orientation, scale) and how much "
               "is the label. Centre-distance matching (WildDet3D / 3D-MOOD: a detection matches a same-class GT "
               "whose centre lies within t × its radius, t = 0.50…1.00) is tolerant of the depth errors that sink "
               "3D IoU for monocular detectors.")
ctx = ui.need_context()

if not cache.error_bins_available():
    st.info("TIDE-style 3D error bins are not built yet (issue: error taxonomy). They will attribute every false "
            "positive and missed box to one of: depth-off but correct in 2D, size-off, yaw-off, class confusion "
            "within / across super-category, duplicate, background, missed; each bin with the ΔAP3D of fixing only "
            "it, and a click-through to its samples. Until then this page shows the centre-distance metrics below.",
            icon=":material/construction:")

with ui.guard("Centre-distance metrics"):
    runs = list(ctx.runs)
    if not runs:
        st.stop()
    mode = st.radio("Matching", ["3dmood", "nuscenes"], horizontal=True, key="err_mode",
                    format_func={"3dmood": "radius-relative centre distance (ODS)",
                                 "nuscenes": "nuScenes BEV distance (0.5–4 m)"}.get)
    rows = []
    per_cat = []
    for run in runs:
        res = cache.distance_scores(ctx.cfg_key, ctx.dataset, run, ctx.protocol, ctx.min_score, mode)
        rows.append({"run": run, **res["summary"]})
        if res["per_category"] is not None:
            per_cat.append(res["per_category"].assign(run=run))
    table = pd.DataFrame(rows)
    st.subheader(f"Summary on {ctx.dataset} · {ctx.protocol}")
    st.caption("AP and ODS in percent; mATE / mAOE / mASE are mean true-positive errors in [0, 1] (lower is "
               "better). ODS = (3·AP + (1 − mATE) + (1 − mAOE) + (1 − mASE)) / 6.")
    pct = tuple(c for c in table.columns if c.startswith(("AP", "ODS", "mAP", "NDS")))
    st.dataframe(table, hide_index=True, column_config=ui.fmt_table(
        table, percent=pct, fraction=tuple(c for c in table.columns if c.startswith(("mATE", "mAOE", "mASE")))))
    ui.export_table(table, f"distance_{mode}_{ctx.dataset}", "err_table")
    err_cols = [c for c in ("mATE", "mAOE", "mASE") if c in table.columns]
    if err_cols:
        ui.plot(bars.leaderboard_bars(table, err_cols, title="Mean true-positive errors (lower is better)"),
                "err_bars", export_name=f"tp_errors_{ctx.dataset}")
    if per_cat:
        pc = pd.concat(per_cat, ignore_index=True)
        value = "ODS" if "ODS" in pc.columns else "AP"
        ui.plot(bars.category_bars(pc, value, title=f"Per-category {value}"), "err_cat",
                export_name=f"per_category_{value}_{ctx.dataset}")
