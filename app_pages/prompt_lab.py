"""Prompt lab: remap a frozen run's boxes onto the dataset vocabulary under each prompt template (OV3D-Bench,
training-free VLM remapping), score every template, and show prompt sensitivity (mAP3D per template and prompt
type, CV, label flips), prompt consistency (PCR / PLC), the rank of the correct label and the vocabulary-size curve
(FG-OVD), calibrated acceptance, and per-crop similarities. Every number is an ``Analysis`` call. Under the
template table, the sections are lazy tabs: only the open one is computed and drawn (a θ step re-runs the page)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ov3d_app.drawing import MISSING
from ov3d_app import cache, selection, ui
from ov3d_core.analysis import RemapSpec
from ov3d_core.errors import InputError
from ov3d_core.viz import bars
from ov3d_core.viz.curves import line_chart
from ov3d_core.viz.heatmap import confusion_heatmap
from ov3d_core.viz.theta import theta_strip

ui.page_header("Prompt lab", "Localisation is held fixed: each predicted box is cropped, embedded once, and relabelled "
               "with its most similar dataset class under a template, if the similarity reaches θ. Every template "
               "re-scores the same boxes. CV = σ/μ of mAP3D over templates (lower = more prompt-robust).")
ctx = ui.need_context()
A = cache.analysis(ctx.cfg_key)
#: The sections under the template table, one tab each (lazy: only the open one runs).
SECTIONS = ("One template in detail", "Consistency and ranking", "Vocabulary size and calibrated acceptance",
            "Per-crop similarities")


def _open_gt(table: pd.DataFrame, run: str):
    rows = selection.dataframe_rows(st.session_state.get("pl_worst"))
    if rows:
        rec = table.iloc[rows[0]]
        ui.set_state(image_id=int(rec["image_id"]), highlight=f"gt||{int(rec['gt'])}", focus_run=run,
                     f_classes=[], f_errors=[])
        st.session_state["_goto_scene"] = True


with ui.guard("The prompt lab"):
    import ov3d_core.remap.templates as tpl_mod

    all_templates = tpl_mod.load_templates()
    spec = cache.encoder_spec()
    cache.check_encoder(spec)  # a checkpoint that is not on disk: a message at once, no download attempt
    if spec == "proxy":
        st.warning("Encoder: **demo stand-in** (sentence embeddings of the demo's crop captions, not SigLIP). It "
                   "exercises the pipeline on the synthetic demo; its numbers say nothing about a real VLM. Set "
                   "`OV3D_ENCODER=hf:google/siglip2-base-patch16-224` (or a local checkpoint) for real crops.",
                   icon=":material/science:")
    else:
        st.caption(f"Encoder: `{spec[3:]}`")
    runs = [r for r in A.remappable_runs(ctx.dataset, spec) if r in ctx.all_runs]
    if not runs:
        st.info(f"No run on {ui.md(ctx.dataset)} can be remapped with this encoder: the demo stand-in needs a run with a "
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
    custom = (ui.get("custom_template") or "").strip()
    if custom:
        try:
            tpl_mod.validate_text(custom, record="your template")
        except InputError as exc:  # the error sits beside the input; the presets are still scored
            c3.error(str(exc).split(": ", 1)[-1], icon=":material/error:")
            custom = ""
    run = ui.get("focus_run")

    with st.spinner("Embedding the run's crops (first use only; cached on disk)…"):
        rm = A.remapper(ctx.dataset, run, spec)
    calibrated = bool(getattr(rm.encoder, "has_calibrated_bias", False))
    lo, hi = (0.0, 1.0) if calibrated else (-0.2, 1.0)
    default = A.theta(ctx.view(run, remap=RemapSpec(encoder=spec)))
    theta = ui.get("theta")
    if theta is None or not lo <= theta <= hi:
        st.session_state["theta"] = default
    theta = float(ui.get("theta"))  # the slider's value (bound to the session state) before it is drawn
    view = ctx.view(run, remap=RemapSpec(encoder=spec, theta=theta))
    value_name = "top-1 " + ("probability" if calibrated else "cosine similarity")
    prof = A.theta_profile(view, lo=lo, hi=hi)
    info = prof.attrs
    ui.plot(theta_strip(prof, theta, value_name=value_name), "pl_theta", export_name=f"theta_profile_{run}")
    st.slider(f"θ: keep a box when its {value_name} reaches", lo, hi, step=0.01,
              help="The strip above: how many boxes have each top-1 value (bars) and how many each θ keeps (line).",
              **ui.bind("theta"))
    if info["n_with_crop"]:
        st.caption(f"θ = {theta:.2f} keeps **{info['n_kept_at_theta']}** of {info['n_with_crop']} boxes with a crop "
                   f"({info['share_kept_at_theta']:.1%}). Their {value_name} lies in "
                   f"[{info['top1_min']:.2f}, {info['top1_max']:.2f}] (median {info['top1_median']:.2f}): a θ below "
                   f"{info['top1_min']:.2f} keeps every box, so θ changes nothing there.")

    chosen = list(ui.get("templates") or ids) + ([custom] if custom else [])
    with st.spinner("Scoring templates…"):
        table = A.template_scores(view, chosen)
        sens = A.prompt_sensitivity(view, chosen)
    m = st.columns(4)
    m[0].metric("Mean mAP3D over templates", f"{sens.mean:.2f}")
    m[1].metric("CV (σ/μ)", f"{sens.cv:.3f}" if np.isfinite(sens.cv) else "—",
                help="A ratio, as in the report's prompt_sensitivity.csv (cv).")
    m[2].metric("Best prompt type", sens.best_group or "—")
    drop = sens.drop_standard_to_overdetailed
    m[3].metric("Drop, standard → overdetailed", f"{drop:+.2f}" if np.isfinite(drop) else "—",
                help="mean mAP3D of the standard templates − mean mAP3D of the overdetailed ones, in AP points: "
                     "positive when overdetailed prompts score lower. The report's drop_standard_to_overdetailed.")

    left, right = st.columns([3, 2])
    with left:
        fig = bars.grouped_bars(table, "template", "AP3D", "group",
                                title=f"mAP3D per template · {run}* · θ={theta:.2f}")
        ui.plot(fig, "pl_bars", export_name=f"prompt_templates_{run}")
    with right:
        st.markdown("**Per prompt type**")
        st.dataframe(sens.group_frame(), hide_index=True, placeholder=MISSING,
                     column_config=ui.fmt_table(sens.group_frame(), percent=("mean_ap", "min_ap", "max_ap")))
        st.dataframe(table, hide_index=True, placeholder=MISSING,
                     column_config=ui.fmt_table(table, percent=("AP3D", "AP3D@25")))
        ui.export_table(table, f"prompt_templates_{run}", "pl_table")

    names = table["template"].tolist()
    ui.ensure_valid("template", names)
    text_of = dict(zip(table["template"], table["text"]))
    st.selectbox("Template of the sections below", names,
                 format_func=lambda i: i if i == text_of.get(i) else f"{i} · {text_of.get(i)}", **ui.bind("template"))
    tsel = ui.get("template")
    tview = view.with_(remap=RemapSpec(encoder=spec, theta=theta, template=tsel))
    # Lazy tabs: only the open section is computed and drawn, so a θ step or a page switch builds the top of the
    # page and one section, not four.
    t_detail, t_cons, t_vocab, t_crops = st.tabs(SECTIONS, key="pl_section", on_change="rerun")

    if t_detail.open:
        with t_detail:
            detail = A.summary(tview)
            row = table.set_index("template").loc[tsel]
            d = st.columns(3)
            d[0].metric(f"mAP3D with {ui.md(tsel)}", f"{detail.get('AP3D', np.nan):.2f}")
            d[1].metric("Boxes kept", f"{int(row['n_kept'])}")
            d[2].metric("Recall3D@15", f"{detail.get('recall3D@15', np.nan):.3f}")
            pc = A.per_category(tview).assign(run=f"{run}* {tsel}")
            ui.plot(bars.category_bars(pc, "AP3D", height=360), "pl_cat", export_name=f"prompt_{tsel}_per_category")

            flips = A.label_flips(view, tsel, chosen)
            st.markdown(f"**Label flips relative to {ui.md(tsel)}** (a kept box whose top-1 class changes under "
                        "another template)")
            pcf = flips.per_class()
            st.dataframe(pcf, hide_index=True, placeholder=MISSING)
            ui.export_table(pcf, f"label_flips_{run}_{tsel}", "pl_flips")

    if t_cons.open:
        with t_cons:
            k1, k2 = st.columns(2)
            with k1:
                cons = A.consistency(view, chosen)
                s = cons.summary()
                st.markdown("**Prompt consistency** (Pro-Bench): a GT counts for PCR when every template recovers "
                            "it (same class, 3D IoU ≥ 0.5); PLC is the agreement of the boxes that do (1 with "
                            "remapping: the boxes are shared).")
                c = st.columns(3)
                c[0].metric("PCR", f"{s['PCR']:.3f}" if np.isfinite(s["PCR"]) else "—")
                c[1].metric("PLC", f"{s['PLC']:.3f}" if np.isfinite(s["PLC"]) else "—")
                c[2].metric("Recall under any template",
                            f"{s['recall_any']:.3f}" if np.isfinite(s["recall_any"]) else "—")
                if cons.per_class is not None:
                    st.dataframe(cons.per_class, hide_index=True, placeholder=MISSING, column_config=ui.fmt_table(
                        cons.per_class, fraction=("pcr", "plc", "recall_any")))
                    ui.export_table(cons.per_class, f"prompt_consistency_{run}", "pl_cons")
            with k2:
                from ov3d_core.diagnostics.fgovd import median_rank

                ranks = A.label_ranks(tview)
                mr = median_rank(ranks["rank"].to_numpy())
                st.markdown(f"**Rank of the correct label** (FG-OVD) under {ui.md(tsel)}: 1 = the GT class scores "
                            "highest for the box covering it (3D IoU > 0.5); the worst rank when no box covers it.")
                c = st.columns(3)
                c[0].metric("Median rank", f"{mr['median']:.1f}" if np.isfinite(mr["median"]) else "—")
                c[1].metric("FG-OVD median", f"{mr['median_fgovd']:.0f}" if np.isfinite(mr["median_fgovd"]) else "—",
                            help="FG-OVD's convention: sorted(ranks)[len // 2 + 1].")
                c[2].metric("GT ranked", f"{mr['n']}")
                per_cls = ranks.groupby("category", sort=False)["rank"].agg(["count", "median", "mean"]).reset_index()
                st.dataframe(per_cls, hide_index=True, placeholder=MISSING)
                worst = ranks.sort_values(["rank", "gt"], ascending=[False, True], kind="stable").head(
                    100).reset_index(drop=True)
                st.caption("Worst-ranked GT (select a row to open it in the scene inspector):")
                st.dataframe(worst, hide_index=True, placeholder=MISSING, on_select=lambda: _open_gt(worst, run),
                             selection_mode="single-row", key="pl_worst")
                ui.export_table(ranks, f"label_ranks_{run}_{tsel}", "pl_ranks")

    if st.session_state.pop("_goto_scene", False):
        st.switch_page("app_pages/scene.py")

    if t_vocab.open:
        with t_vocab:
            v1, v2 = st.columns(2)
            with v1:
                curve = A.vocabulary_curve(tview)
                st.caption("FG-OVD's hard-negative curve: every box covering a GT chooses among its GT class and the "
                           "k classes most similar to it (text embeddings); k = 0 is a classification oracle.")
                ui.plot(line_chart(curve, "vocabulary_size", "AP3D", title=f"mAP3D vs vocabulary size · {tsel}",
                                   x_title="classes to choose from (GT + k hard negatives)", y_title="mAP3D (%)"),
                        "pl_vocab", export_name=f"vocabulary_curve_{run}")
                ui.export_table(curve, f"vocabulary_curve_{run}_{tsel}", "pl_vocab_t")
            with v2:
                st.caption("Instead of one θ: a logistic model of P(TP) from top-1 similarity, margin, detector score "
                           "and box size, fitted on 70% of the images, scored on the other 30%.")
                try:
                    cal = A.calibration(tview)
                except ValueError as exc:  # e.g. the train images hold no TP
                    st.info(f"Calibration cannot be fitted here: {exc}")
                else:
                    st.dataframe(cal.table, hide_index=True, placeholder=MISSING,
                                 column_config=ui.fmt_table(cal.table, percent=("AP3D",)))
                    rel = cal.reliability()
                    if len(rel):
                        ui.plot(line_chart(rel, "mean_p", "observed_tp", title="Reliability on held-out images",
                                           x_title="predicted P(TP)", y_title="observed TP fraction", diagonal=True,
                                           x_range=[0, 1], y_range=[0, 1]), "pl_calib",
                                export_name=f"calibration_{run}")
                    ui.export_table(cal.table, f"calibration_{run}_{tsel}", "pl_cal")

    if t_crops.open:
        with t_crops:
            b = A.benchmark
            pred = b.run(run, ctx.dataset).pred
            valid = np.flatnonzero(np.asarray(rm.valid, bool))
            if not len(valid):
                st.info("No prediction of this run has a crop embedding.")
                st.stop()
            order = valid[np.argsort(-pred.score[valid], kind="stable")][:500]
            crop = st.selectbox("Prediction", order.tolist(),
                                format_func=lambda r: f"image {int(pred.image_id[r])} · {pred.category[r]} "
                                                      f"{pred.score[r]:.2f} · row {r}", key="pl_crop")
            vocab = list(rm.class_names)
            sims = np.stack([rm.similarities(t)[crop] for t in chosen])
            fig = confusion_heatmap(sims, chosen, vocab, row_title="template", col_title="class",
                                    show_text=len(vocab) <= 20)
            cc1, cc2 = st.columns([1, 4])
            with cc1:
                path = b.image_path(ctx.dataset, int(pred.image_id[crop]))
                box = pred.box2d[crop]
                if path is not None and path.exists() and box[2] > box[0]:
                    st.image(cache.thumbnail(str(path), tuple(float(v) for v in box), size=220))
                top = [vocab[int(np.argmax(s))] for s in sims]
                st.dataframe(pd.DataFrame({"template": chosen, "top-1": top, "value": sims.max(axis=1)}),
                             hide_index=True, placeholder=MISSING)
            with cc2:
                ui.plot(fig, "pl_sims", export_name=f"crop_similarities_{run}_{crop}")
