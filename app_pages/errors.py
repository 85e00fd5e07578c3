"""Error breakdown: why AP is low. 3D TIDE bins (each error type scored as the mAP3D gained by fixing only it), the
monocular oracles (GT depth / size / rotation substituted), and centre-distance AP with true-positive errors and the
Open Detection Score; class-agnostic recall under greedy and Hungarian assignment, and FG-OVD's class-agnostic NMS
(``Analysis.recall_methods``, ``Analysis.nms_summary``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ov3d_app import cache, selection, ui
from ov3d_app.drawing import MISSING
from ov3d_core.analysis.diagnostics import NMS_IOU
from ov3d_core.eval.constants import AP_KEYS, RECALL_IOU
from ov3d_core.viz import bars

ui.page_header("Error breakdown", "Where the missing mAP3D goes. TIDE bins: loc (right class, poorly localised), cls "
               "(well localised, wrong class; within or across super-category), dupe, bkg (no GT nearby), both, "
               "missed. Each bin's ΔAP is the gain from fixing only that bin; the bins do not sum.")
ctx = ui.need_context()
BIN_HELP = {"loc": "right class, 3D IoU between bg and fg with its GT", "cls": "wrong class, IoU ≥ fg with a GT",
            "dupe": "a second box on an already matched GT", "bkg": "IoU < bg with every GT",
            "both": "wrong class and poorly localised", "missed": "GT no detection points to"}


def _on_bin():
    pts = selection.selection_points(st.session_state.get("tide_bars"))
    if pts:
        change = selection.bar_point_to_state(pts[0])
        st.session_state["err_bin"] = change.get("category")
        if change.get("focus_run"):
            ui.set_state(focus_run=change["focus_run"])


def _on_example(examples: pd.DataFrame, run: str):
    rows = selection.dataframe_rows(st.session_state.get("tide_examples"))
    if rows:
        rec = examples.iloc[rows[0]]
        is_pred = "pred" in rec and pd.notna(rec.get("pred"))
        hl = f"pred|{run}|{int(rec['pred'])}" if is_pred else f"gt||{int(rec['gt'])}"
        ui.set_state(image_id=int(rec["image_id"]), highlight=hl, focus_run=run, f_classes=[], f_errors=[])
        st.session_state["_goto_scene"] = True


runs = list(ctx.runs)
if not runs:
    st.stop()
A = cache.analysis(ctx.cfg_key)

with ui.guard("3D TIDE error bins"):
    st.subheader("3D TIDE: what fixing each error type is worth")
    c1, c2 = st.columns(2)
    fg = c1.select_slider("Foreground 3D IoU (fg)", [0.15, 0.25, 0.5], value=0.25, key="tide_fg")
    bg = c2.select_slider("Background 3D IoU (bg)", [0.05, 0.1], value=0.1, key="tide_bg")
    tables, note = [], ""
    for run in runs:
        t = A.tide(ctx.view(run), fg=fg, bg=bg)
        tables.append(t.table.assign(run=run, base_ap=t.base_ap))
        note = t.note
    allt = pd.concat(tables, ignore_index=True)
    main = allt[allt["kind"] != "cls split"] if "kind" in allt else allt
    fig = bars.grouped_bars(main, "bin", "delta_ap", "run", y_title="ΔmAP3D when fixed (points)",
                            title=f"mAP3D gained by fixing one error type · {ctx.dataset} · fg={fg}, bg={bg}")
    st.caption(note)
    ui.plot(fig, "tide_bars", on_select=_on_bin, export_name=f"tide_{ctx.dataset}")
    st.dataframe(allt, hide_index=True, placeholder=MISSING, column_config=ui.fmt_table(
        allt, percent=("delta_ap", "delta_ap_raw", "ap_fixed", "base_ap")))
    ui.export_table(allt, f"tide_{ctx.dataset}", "tide_table", caption="3D TIDE error attribution")

    bins = [b for b in dict.fromkeys(allt["bin"].tolist())]
    if st.session_state.get("err_bin") not in bins:
        st.session_state["err_bin"] = bins[0] if bins else None
    b1, b2 = st.columns(2)
    ui.ensure_valid("focus_run", runs)
    run = b1.selectbox("Examples of run", runs, **ui.bind("focus_run", ":err"))
    chosen = b2.selectbox("Bin", bins, key="err_bin", format_func=lambda b: f"{b} · {BIN_HELP.get(b, '')}")
    t = A.tide(ctx.view(run), fg=fg, bg=bg)
    n_bin = int((np.asarray(t.gt_status) == "missed").sum()) if chosen == "missed" else int(
        (t.dets["cls_split" if chosen.startswith("cls_") else "bin"] == chosen).sum())
    ex = A.tide_examples(ctx.view(run), fg=fg, bg=bg, bin=chosen, n=200).drop(columns=["kind"])
    ex = ex.dropna(axis=1, how="all")
    st.caption(f"{n_bin} in bin **{chosen}** (the {len(ex)} highest-scoring shown); select a row to open it in the "
               "scene inspector.")
    st.dataframe(ex, hide_index=True, placeholder=MISSING, on_select=lambda: _on_example(ex, run),
                 selection_mode="single-row", key="tide_examples")
    if st.session_state.pop("_goto_scene", False):
        st.switch_page("app_pages/scene.py")

with ui.guard("Monocular oracles"):
    st.subheader("Monocular oracles: replace one factor by the ground truth")
    st.caption("For every prediction associated with a GT, its depth (along the camera ray), size or rotation is "
               "replaced by the GT's, and mAP3D is recomputed. A large depth gain says the detector recognises "
               "objects but places them at the wrong distance.")
    rows = []
    for run in runs:
        o = A.oracles(ctx.view(run))
        rows.append(o.table.assign(run=run, base_ap=o.base_ap))
    ot = pd.concat(rows, ignore_index=True)
    ui.plot(bars.grouped_bars(ot, "factor", "gain", "run", y_title="mAP3D gain (points)"), "oracle_bars",
            export_name=f"mono_oracles_{ctx.dataset}")
    st.dataframe(ot, hide_index=True, placeholder=MISSING, column_config=ui.fmt_table(
        ot, percent=("AP3D", "gain", "base_ap"), fraction=("mean_iou_before", "mean_iou_after")))
    ui.export_table(ot, f"mono_oracles_{ctx.dataset}", "oracle_table")

with ui.guard("Centre-distance metrics"):
    st.subheader("Centre-distance AP and true-positive errors")
    mode = st.radio("Matching", ["3dmood", "3dmood-compat", "nuscenes"], horizontal=True, key="err_mode",
                    format_func={"3dmood": "radius-relative centre distance (WildDet3D / 3D-MOOD, ODS)",
                                 "3dmood-compat": "3D-MOOD's evaluator as its code runs (quirks included)",
                                 "nuscenes": "nuScenes BEV distance (0.5–4 m)"}.get,
                    help="Every difference between the modes: docs/distance_modes.md.")
    rows, per_cat = [], []
    for run in runs:
        res = A.distance_table(ctx.view(run, distance_mode=mode))
        rows.append({"run": run, **res["summary"]})
        if res["per_category"] is not None:
            per_cat.append(res["per_category"].assign(run=run))
    table = pd.DataFrame(rows)
    st.caption("Tolerant of the depth errors that sink 3D IoU for monocular detectors. AP and ODS in percent; "
               "mATE / mAOE / mASE are mean true-positive errors in [0, 1], lower is better. "
               "ODS = (3·AP + (1 − mATE) + (1 − mAOE) + (1 − mASE)) / 6.")
    pct = tuple(c for c in table.columns if c.startswith(("AP", "ODS", "mAP", "NDS")))
    st.dataframe(table, hide_index=True, placeholder=MISSING, column_config=ui.fmt_table(
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

with ui.guard("Recall by assignment and class-agnostic NMS"):
    st.subheader("Recall by assignment, and class-agnostic NMS (FG-OVD)")
    st.caption(f"3D class-agnostic recall at IoU {RECALL_IOU:g} (whatever the label) with each GT matched to at most "
               "one prediction: greedy in score order (the paper's, Omni3D-style) or Hungarian (the assignment of "
               "maximum total IoU). A gap means the greedy order gives GT away that another prediction could have "
               "matched; mean_iou: mean IoU of the matched pairs.")
    rec = pd.concat([A.recall_methods(ctx.view(r)).assign(run=r) for r in runs], ignore_index=True)
    rec = rec[["run", *[c for c in rec.columns if c != "run"]]]
    st.dataframe(rec, hide_index=True, key="recall_methods", placeholder=MISSING,
                 column_config=ui.fmt_table(rec, fraction=("recall", "mean_iou")))
    ui.export_table(rec, f"recall_methods_{ctx.dataset}", "recall_methods_x")

    n1, n2 = st.columns(2)
    nms_mode = n1.radio("NMS overlap", ["3d", "2d"], horizontal=True, key="nms_mode",
                        format_func={"3d": "3D IoU", "2d": "2D IoU (projected boxes)"}.get)
    nms_iou = n2.select_slider("Suppress above IoU", [0.3, 0.4, 0.5, 0.6, 0.7], value=NMS_IOU, key="nms_iou")
    st.caption(f"FG-OVD's class-agnostic NMS: per image, label-blind greedy NMS in score order removes every "
               f"prediction whose {nms_mode.upper()} IoU with a higher-scoring one exceeds {nms_iou:g}, then the run "
               "is scored again. It removes duplicates across labels (the same object named twice); n_suppressed: "
               "predictions removed. Beside it, the run without NMS.")
    nms_rows = []
    for r in runs:
        v = ctx.view(r)
        before = A.summary(v)
        nms_rows.append({"run": r, "NMS": "none", **before, "n_suppressed": 0})
        nms_rows.append({"run": r, "NMS": f"class-agnostic, {nms_mode.upper()} IoU > {nms_iou:g}",
                         **A.nms_summary(v, iou_threshold=nms_iou, mode=nms_mode)})
    nms = pd.DataFrame(nms_rows)
    st.dataframe(nms, hide_index=True, key="nms_table", placeholder=MISSING,
                 column_config=ui.fmt_table(nms, percent=AP_KEYS, fraction=("recall3D@15",)))
    ui.export_table(nms, f"class_agnostic_nms_{ctx.dataset}", "nms_table_x")
