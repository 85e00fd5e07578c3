"""Prompt robustness across both kinds of prompted runs (OV3D-Bench Table 8, Pro-Bench, FG-OVD): a closed-vocabulary
run remapped under each template (``X*``) or a prompt-conditioned detector with one prediction file per template
(``per_template`` in the benchmark YAML). Per run: mAP3D per template and group, CV, PCR / PLC, Pro-Bench's
formulation deltas and eight prompt types; for a remapped run, FG-OVD's hard-negative tiers and the median rank of
the correct label with and without class-agnostic NMS. Every number is an ``Analysis`` call."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ov3d_app import cache, ui
from ov3d_app.drawing import MISSING
from ov3d_core.analysis import RemapSpec
from ov3d_core.viz import bars
from ov3d_core.viz.curves import line_chart

ui.page_header("Prompt robustness", "The runs that answer to a prompt: a closed-vocabulary run remapped under each "
               "template (X*, boxes shared) or a prompt-conditioned detector with one prediction file per template "
               "(its boxes move with the prompt). mAP3D per template, CV = σ/μ (lower = more prompt-robust), PCR: GT "
               "found under every template, PLC: how still their boxes stay; Pro-Bench's formulations and FG-OVD's "
               "hard negatives.")
ctx = ui.need_context()
A = cache.analysis(ctx.cfg_key)

with ui.guard("Prompt robustness"):
    spec = cache.encoder_spec()
    star = [f"{r}*" for r in A.remapped_runs(ctx.dataset, RemapSpec(encoder=spec))]
    own = [r for r in ctx.all_runs if A.benchmark.run_templates(r, ctx.dataset)]
    choices = star + own
    if not choices:
        st.info(f"No run on {ui.md(ctx.dataset)} answers to a prompt: give a closed-vocabulary run "
                "(`closed_vocabulary:` and `crops:` in the config) to remap, or a prompt-conditioned run's "
                "`per_template:` files.")
        st.stop()
    name = st.selectbox("Run", choices, key="rb_run",
                        help="X*: a closed-vocabulary run remapped with the app's encoder; the others have one "
                             "prediction file per template.")
    if name.endswith("*"):
        cache.check_encoder(spec)
        view = ctx.view(name[:-1], remap=RemapSpec(encoder=spec))
    else:
        view = ctx.view(name)
    if ctx.subset:
        st.caption(f"Images: the subset **{ui.md(ctx.subset)}** only (sidebar).")

    st.subheader("Table 8: mAP3D per template")
    with st.spinner("Scoring every template…"):
        t = A.template_scores(view)
        s = A.prompt_sensitivity(view)
    m = st.columns(4)
    m[0].metric("Mean mAP3D", f"{s.mean:.2f}" if np.isfinite(s.mean) else "—")
    m[1].metric("CV (σ/μ)", f"{s.cv:.3f}" if np.isfinite(s.cv) else "—")
    m[2].metric("Drop, standard → overdetailed", f"{s.drop_standard_to_overdetailed:.2f}"
                if np.isfinite(s.drop_standard_to_overdetailed) else "—",
                help="mean(standard) − mean(overdetailed), mAP3D points: positive when overdetailed prompts score "
                     "lower (the report's drop_standard_to_overdetailed).")
    m[3].metric("Templates scored", len(t))
    ui.plot(bars.grouped_bars(t, "template", "AP3D", "group", y_title="mAP3D (%)", height=320), "rb_tpl",
            export_name=f"templates_{name}")
    st.dataframe(t, hide_index=True, placeholder=MISSING, key="rb_tpl_table",
                 column_config=ui.fmt_table(t, percent=("AP3D", "AP3D@25"), fraction=("recall3D@15",)))

    st.subheader("PCR and PLC (Pro-Bench)")
    c = A.consistency(view)
    m = st.columns(4)
    m[0].metric("PCR", f"{c.pcr:.3f}" if np.isfinite(c.pcr) else "—",
                help="Share of the evaluated GT recovered (same class, 3D IoU ≥ 0.5) under every template.")
    m[1].metric("PLC", f"{c.plc:.3f}" if np.isfinite(c.plc) else "—",
                help="Mean pairwise 3D IoU of the boxes that recover a GT under the different templates (1 when the "
                     "boxes are shared, as with remapping).")
    m[2].metric("Recall under any template", f"{c.recall_any:.3f}" if np.isfinite(c.recall_any) else "—")
    m[3].metric("GT", c.n_gt)

    st.subheader("Pro-Bench formulations")
    sup = A.template_support(view, ["PB-categorical", *[f"PB-{x}" for x in
                                                         ("attributive", "relational", "affordance", "state",
                                                          "part-whole", "negative", "compositional")]])
    off = sup[~sup["supported"]]
    if len(off) == len(sup):
        st.info("None of Pro-Bench's formulations can be scored for this run: " +
                "; ".join(f"{a}: {b}" for a, b in zip(off["template"], off["reason"])))
    else:
        fs = A.formulation_sensitivity(view)
        m = st.columns(3)
        m[0].metric("Largest ΔmAP", f"{fs.max_delta:.2f}" if np.isfinite(fs.max_delta) else "—",
                    help="max − min mAP3D over the formulations scored (Pro-Bench's sensitivity).")
        m[1].metric("Best formulation", fs.best_formulation or "—")
        m[2].metric("Worst formulation", fs.worst_formulation or "—")
        types = A.prompt_types(view)
        st.dataframe(types, hide_index=True, placeholder=MISSING, key="rb_types", column_config=ui.fmt_table(
            types, percent=("categorical", "original", "wrapped", "delta_original_minus_categorical",
                            "delta_wrapped_minus_original", "max_delta")))
        if len(off):
            st.caption("Not scored: " + "; ".join(f"{ui.code(a)} ({ui.md(b)})" for a, b in
                                                  zip(off["template"], off["reason"])))
        pc = fs.per_class()
        st.markdown("**Per class**: largest ΔAP across formulations")
        st.dataframe(pc, hide_index=True, placeholder=MISSING, key="rb_per_class")

    if view.remap is not None:
        st.subheader("FG-OVD: hard negatives and the rank of the correct label")
        with st.spinner("Ranking every object against its hard negatives…"):
            tiers = A.hard_negative_tiers(view)
            r0, r1 = A.label_rank_summary(view), A.label_rank_summary(view, nms=True)
        m = st.columns(3)
        m[0].metric("Median rank", f"{r0['median']:g}" if np.isfinite(r0["median"]) else "—")
        m[1].metric("Median rank, class-agnostic NMS", f"{r1['median']:g}" if np.isfinite(r1["median"]) else "—",
                    help="Only the boxes FG-OVD's label-blind NMS (IoU 0.5) keeps may cover an object.")
        m[2].metric("Boxes NMS suppresses", A.nms_summary(view)["n_suppressed"])
        ui.plot(line_chart(tiers, "n_negatives", "AP3D", "tier", x_title="negatives per object N",
                           y_title="mAP3D (%)", height=320), "rb_tiers", export_name=f"fgovd_tiers_{name}")
        st.dataframe(tiers, hide_index=True, placeholder=MISSING, key="rb_tiers_table",
                     column_config=ui.fmt_table(tiers, percent=("AP3D",), fraction=("accuracy",)))
