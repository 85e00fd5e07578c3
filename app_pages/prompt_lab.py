"""Prompt lab: remap a frozen run's boxes onto the dataset vocabulary under each prompt template (OV3D-Bench,
training-free VLM remapping), score every template, and show prompt sensitivity: mAP3D per template and per
prompt type, coefficient of variation, label flips, the threshold θ, and per-crop similarities."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ov3d_app import cache, ui
from ov3d_core.viz import bars
from ov3d_core.viz.heatmap import confusion_heatmap

ui.page_header("Prompt lab", "Localisation is held fixed: each predicted box is cropped, embedded once, and relabelled "
               "with its most similar dataset class under a template, if the similarity reaches θ. Every template "
               "re-scores the same boxes. CV = σ/μ of mAP3D over templates (lower = more prompt-robust).")
ctx = ui.need_context()


def _templates():
    import ov3d_core.remap.templates as tpl
    return tpl, tpl.load_templates()


with ui.guard("The prompt lab"):
    import ov3d_core.diagnostics.prompts as prompts
    tpl_mod, all_templates = _templates()
    spec = cache.encoder_spec()
    if spec == "proxy":
        st.warning("Encoder: **demo stand-in** (sentence embeddings of the demo's crop captions, not SigLIP). It "
                   "exercises the pipeline on the synthetic demo; its numbers say nothing about a real VLM. Set "
                   "`OV3D_ENCODER=hf:google/siglip2-base-patch16-224` (or a local checkpoint) for real crops.",
                   icon=":material/science:")
    else:
        st.caption(f"Encoder: `{spec[3:]}`")
    runs = [r for r in cache.remappable_runs(ctx.cfg_key, ctx.dataset, spec) if r in ctx.all_runs]
    if not runs:
        st.info(f"No run on {ctx.dataset} can be remapped with this encoder: the demo stand-in needs a run with a "
                "`crops:` file in the benchmark config; a real encoder (OV3D_ENCODER) crops the images itself.")
        st.stop()

    c1, c2, c3 = st.columns([1.5, 3, 1.5])
    if ui.get("focus_run") not in runs:
        st.session_state["focus_run"] = runs[0]
    c1.selectbox("Run to remap", runs, **ui.bind("focus_run", ":pl"))
    ids = [t.id for t in all_templates]
    by_id = {t.id: t for t in all_templates}
    ui.ensure_subset("templates", ids)
    c2.multiselect("Templates", ids, placeholder="all 15 templates",
                   format_func=lambda i: f"{i} · {by_id[i].text}", **ui.bind("templates"))
    c3.text_input("Your template", placeholder="a photo of a {} on the road.",
                  help="Exactly one {} for the class name.", **ui.bind("custom_template"))
    run = ui.get("focus_run")

    with st.spinner("Embedding the run's crops (first use only; cached on disk)…"):
        rm = cache.remapper(ctx.cfg_key, ctx.dataset, run, spec)
    calibrated = bool(getattr(rm.encoder, "has_calibrated_bias", False))
    lo, hi, default = (0.0, 1.0, 0.5) if calibrated else (-0.2, 1.0, 0.0)
    theta = ui.get("theta")
    if theta is None or not lo <= theta <= hi:
        st.session_state["theta"] = default
    st.slider("θ: keep a box when its top-1 " + ("probability" if calibrated else "cosine similarity") + " reaches",
              lo, hi, step=0.01, **ui.bind("theta"))
    theta = float(ui.get("theta"))

    chosen = [by_id[i] for i in (ui.get("templates") or ids)]
    custom = (ui.get("custom_template") or "").strip()
    if custom:
        chosen.append(tpl_mod.custom_template(custom))  # InputError (shown) when it lacks exactly one {}
    rows, top1 = [], {}
    bar = st.progress(0.0, text="Scoring templates…")
    for k, t in enumerate(chosen):
        key = t.text if t.group == "custom" else t.id
        res = cache.template_score(ctx.cfg_key, ctx.dataset, run, spec, key, theta, ctx.protocol)
        rows.append({"template": t.id, "group": t.group, "text": t.text, "AP3D": res["summary"].get("AP3D", np.nan),
                     "AP3D@25": res["summary"].get("AP3D@25", np.nan), "kept": res["n_kept"]})
        top1[t.id] = res["label"]
        bar.progress((k + 1) / len(chosen), text=f"Scoring templates… {t.id}")
    bar.empty()
    table = pd.DataFrame(rows)
    sens = prompts.prompt_sensitivity(dict(zip(table["template"], table["AP3D"])),
                                      dict(zip(table["template"], table["group"])))
    if not ui.get("templates") and not custom:  # the 15 presets: comparable across runs, feeds the Overview
        st.session_state["prompt_cv"] = {**(ui.get("prompt_cv") or {}), f"{ctx.dataset}/{run}": float(sens.cv)}
    m = st.columns(4)
    m[0].metric("Mean mAP3D over templates", f"{sens.mean:.2f}")
    m[1].metric("CV (σ/μ)", f"{sens.cv:.1%}" if np.isfinite(sens.cv) else "n/a")
    m[2].metric("Best prompt type", sens.best_group or "n/a")
    m[3].metric("Standard → overdetailed", f"{-sens.drop_standard_to_overdetailed:+.2f}"
                if np.isfinite(sens.drop_standard_to_overdetailed) else "n/a", help="Change of the group mean.")

    left, right = st.columns([3, 2])
    with left:
        fig = bars.grouped_bars(table, "template", "AP3D", "group",
                                title=f"mAP3D per template · {run}* · θ={theta:.2f}")
        ui.plot(fig, "pl_bars", export_name=f"prompt_templates_{run}")
    with right:
        st.markdown("**Per prompt type**")
        st.dataframe(sens.group_frame(), hide_index=True,
                     column_config=ui.fmt_table(sens.group_frame(), percent=("mean_ap", "min_ap", "max_ap")))
        st.dataframe(table, hide_index=True, column_config=ui.fmt_table(table, percent=("AP3D", "AP3D@25")))
        ui.export_table(table, f"prompt_templates_{run}", "pl_table")

    st.subheader("One template in detail")
    names = table["template"].tolist()
    ui.ensure_valid("template", names)
    st.selectbox("Template", names, format_func=lambda i: f"{i} · {table.set_index('template').loc[i, 'text']}",
                 **ui.bind("template"))
    tsel = ui.get("template")
    tkey = next((t.text if t.group == "custom" else t.id) for t in chosen if t.id == tsel)
    detail = cache.template_score(ctx.cfg_key, ctx.dataset, run, spec, tkey, theta, ctx.protocol)
    d = st.columns(3)
    d[0].metric(f"mAP3D with {tsel}", f"{detail['summary'].get('AP3D', np.nan):.2f}")
    d[1].metric("Boxes kept", f"{detail['n_kept']}")
    d[2].metric("Recall3D@15", f"{detail['summary'].get('recall3D@15', np.nan):.3f}")
    pc = detail["per_category"].assign(run=f"{run}* {tsel}")
    ui.plot(bars.category_bars(pc, "AP3D", height=360), "pl_cat", export_name=f"prompt_{tsel}_per_category")

    vocab = list(rm.class_names)
    flips = prompts.label_flips(top1, tsel, vocab)
    st.markdown(f"**Label flips relative to {tsel}** (a kept box whose top-1 class changes under another template)")
    pcf = flips.per_class()
    st.dataframe(pcf, hide_index=True)
    ui.export_table(pcf, f"label_flips_{run}_{tsel}", "pl_flips")

    st.subheader("Per-crop similarities")
    b = cache.benchmark(ctx.cfg_key)
    pred = b.run(run, ctx.dataset).pred
    valid = np.flatnonzero(np.asarray(rm.valid, bool))
    if not len(valid):
        st.info("No prediction of this run has a crop embedding.")
        st.stop()
    order = valid[np.argsort(-pred.score[valid], kind="stable")][:500]
    crop = st.selectbox("Prediction", order.tolist(),
                        format_func=lambda r: f"image {int(pred.image_id[r])} · {pred.category[r]} "
                                              f"{pred.score[r]:.2f} · row {r}", key="pl_crop")
    sims = np.stack([rm.similarities(t.text if t.group == "custom" else t.id)[crop] for t in chosen])
    fig = confusion_heatmap(sims, [t.id for t in chosen], vocab, row_title="template", col_title="class",
                            show_text=len(vocab) <= 20)
    cc1, cc2 = st.columns([1, 4])
    with cc1:
        path = b.image_path(ctx.dataset, int(pred.image_id[crop]))
        box = pred.box2d[crop]
        if path is not None and path.exists() and box[2] > box[0]:
            st.image(cache.thumbnail(str(path), tuple(float(v) for v in box), size=220))
        top = [vocab[int(np.argmax(s))] for s in sims]
        st.dataframe(pd.DataFrame({"template": [t.id for t in chosen], "top-1": top,
                                   "value": sims.max(axis=1)}), hide_index=True)
    with cc2:
        ui.plot(fig, "pl_sims", export_name=f"crop_similarities_{run}_{crop}")
