"""Oracle: the same predictions under the dataset-level protocol and the target-aware oracle (each image prompted
only with its GT classes). Per-class AP change, and the predictions the oracle removes, listed and drawn struck
through on their image."""

from __future__ import annotations

import streamlit as st

from ov3d_app import cache, drawing, selection, ui
from ov3d_app import state as S
from ov3d_app.drawing import MISSING
from ov3d_core.viz import bars
from ov3d_core.viz.image_overlay import image_overlay

ui.page_header("Oracle: dataset-level vs target-aware", "The target-aware protocol keeps a prediction only if its "
               "class is annotated in the image. It silently deletes the cross-class false positives (a car called "
               "a van where no van is annotated) that a deployed detector would make. Both columns score the same "
               "boxes; only the kept set differs.")
ctx = ui.need_context()


def _on_removed(removed):
    sel = selection.dataframe_rows(st.session_state.get("or_removed"))
    if sel:
        rec = removed.iloc[sel[0]]
        ui.set_state(image_id=int(rec["image_id"]), highlight=f"pred|{ui.get('focus_run')}|{int(rec['pred_row'])}")


with ui.guard("The protocol comparison"):
    runs = list(ctx.runs)
    if not runs:
        st.stop()
    c1, c2 = st.columns([2, 3])
    ui.ensure_valid("focus_run", runs)
    c1.selectbox("Run", runs, **ui.bind("focus_run", ":or"))
    # Local to this page: how the image below is drawn. The sidebar's protocol is not changed.
    draw_as = c2.radio("Draw the image as scored under", list(S.PROTOCOLS), horizontal=True, key="or_draw")
    run = ui.get("focus_run")
    cmp_ = cache.analysis(ctx.cfg_key).protocol_comparison(ctx.view(run))
    s = cmp_.summary()
    m = st.columns(4)
    m[0].metric("mAP3D dataset-level", f"{s['map_dataset_level']:.2f}")
    m[1].metric("mAP3D target-aware", f"{s['map_target_aware']:.2f}", delta=f"{s['delta_abs']:+.2f}",
                delta_color="inverse")
    m[2].metric("Inflation", f"×{s['ratio']:.2f}" if s["ratio"] == s["ratio"] else "n/a")
    m[3].metric("Predictions removed", f"{s['n_removed']}",
                help=f"{s['n_removed_cross_class']} of them overlap a GT of another class (cross-class FPs).")

    per_class = cmp_.to_frame()
    fig = bars.delta_bars(per_class, "ap_dataset_level", "ap_target_aware", category="class",
                          label_before="dataset-level", label_after="target-aware",
                          title="Per-class AP3D change under the oracle")
    ui.plot(fig, "or_delta", export_name=f"oracle_delta_{run}")
    with st.expander("Per-class table"):
        st.dataframe(per_class, hide_index=True, placeholder=MISSING,
                     column_config=ui.fmt_table(per_class, percent=("ap_dataset_level", "ap_target_aware",
                                                                    "delta_abs"), fraction=("delta_rel",)))
        ui.export_table(per_class, f"oracle_{ctx.dataset}_{run}", "or_table",
                        caption=f"{run} on {ctx.dataset}: dataset-level vs target-aware AP3D")

    removed = cmp_.removed
    st.subheader(f"Removed by the oracle ({len(removed)})")
    if removed.empty:
        st.info("The oracle removes no prediction of this run: every predicted class is annotated in its image.")
        st.stop()
    st.caption("Highest score first; cross_class: it overlaps a GT of another class at 3D IoU ≥ the threshold "
               "(a well-localised box with the wrong label). Select a row to draw its image.")
    st.dataframe(removed, hide_index=True, placeholder=MISSING, on_select=lambda: _on_removed(removed),
                 selection_mode="single-row", key="or_removed",
                 column_config=ui.fmt_table(removed, fraction=("score", "max_iou_other")))
    ui.export_table(removed, f"oracle_removed_{run}", "or_rm")
    hl = selection.parse_highlight(ui.get("highlight"))
    picked = removed[removed["pred_row"] == hl[2]] if hl and hl[0] == "pred" and hl[1] == run else removed.iloc[:0]
    with_gt = (picked if len(picked) else removed).dropna(subset=["other_gt_row"])
    if len(with_gt):
        rec = with_gt.iloc[0]
        if st.button(f"Every run on the GT it overlaps (prediction {int(rec['pred_row'])} → GT "
                     f"{int(rec['other_gt_row'])}, {ui.md(rec['other_class'])})", key="or_object",
                     icon=":material/center_focus_strong:",
                     help="The object view: each run's best-overlapping box and label for that GT object (the "
                          "selected row, else the first removed prediction that overlaps a GT)."):
            ui.set_state(gt_row=int(rec["other_gt_row"]))
            st.switch_page("app_pages/object.py")

    images = list(dict.fromkeys(removed["image_id"].astype(int).tolist()))
    if ui.get("image_id") not in images:
        st.session_state["image_id"] = images[0]
    st.selectbox("Image with removed predictions", images, format_func=lambda i: f"image {i}",
                 **ui.bind("image_id", ":or"))
    image_id = int(ui.get("image_id"))
    boxes = cache.boxes(ctx.cfg_key, ctx.view(protocol="dataset-level"), (run,))
    rows = boxes[boxes["image_id"] == image_id]
    gone = set(removed.loc[removed["image_id"] == image_id, "pred_row"].astype(int).tolist())
    oracle_on = draw_as == "target-aware"
    layers = drawing.image_layers(ctx.cfg_key, ctx.dataset, rows, removed=gone if oracle_on else None,
                                  highlight=ui.get("highlight"))
    meta = cache.image_meta(ctx.cfg_key, ctx.dataset, image_id)
    title = (f"image {image_id} · target-aware: {len(gone)} prediction(s) struck out" if oracle_on else
             f"image {image_id} · dataset-level: every prediction scored ({len(gone)} would vanish under the oracle)")
    uri, scale = cache.image_uri(meta["path"])[::3] if meta["path"] else (None, 1.0)
    fig = image_overlay(uri, meta["K"], layers, width=meta["width"], height=meta["height"], title=title,
                        fig_height=560, image_scale=scale)
    ui.plot(fig, "or_image", export_name=f"oracle_{ctx.dataset}_{image_id}")
    if st.button("Open in the scene inspector", icon=":material/view_in_ar:"):
        ui.set_state(f_classes=[], f_errors=[])
        st.switch_page("app_pages/scene.py")
