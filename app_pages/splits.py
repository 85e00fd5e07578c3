"""Class splits and domain transfer: how much a reported AP depends on which classes are scored (random class
subsets with adverse / favourable bounds), and in-domain vs out-of-domain mAP3D and recall."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ov3d_app.drawing import MISSING
from ov3d_app import cache, ui
from ov3d_core.analysis import RemapSpec
from ov3d_core.viz import bars

ui.page_header("Class splits and domain transfer", "Base/novel protocols report AP on a chosen handful of classes. "
               "Re-scoring the same predictions on many random class subsets shows how much that choice alone moves "
               "the number. Domain transfer compares runs on datasets they were and were not trained on, within "
               "one environment (indoor ↔ indoor, outdoor ↔ outdoor).")
ctx = ui.need_context()


with ui.guard("Class-split sensitivity"):
    runs = list(ctx.runs)
    if runs:
        st.subheader("Sensitivity to the class split")
        c1, c2, c3 = st.columns([2, 1, 1])
        ui.ensure_valid("focus_run", runs)
        c1.selectbox("Run", runs, **ui.bind("focus_run", ":sp"))
        n_cls = len(cache.dataset_info(ctx.cfg_key, ctx.dataset)["vocabulary"])
        if int(ui.get("split_k")) > max(n_cls - 1, 1):
            st.session_state["split_k"] = max(1, min(10, n_cls // 2))
        c2.number_input("Classes per subset", 1, max(n_cls - 1, 1), step=1, **ui.bind("split_k"))
        c3.number_input("Subsets", 100, 20000, step=500, **ui.bind("split_n"))
        run = ui.get("focus_run")
        res = cache.analysis(ctx.cfg_key).class_splits(ctx.view(run), subset_size=int(ui.get("split_k")),
                                                        n_subsets=int(ui.get("split_n")))
        s = res.to_dict()
        m = st.columns(4)
        m[0].metric("Subset mAP3D", f"{s['mean']:.1f} ± {s['std']:.1f}" if s["mean"] == s["mean"] else "n/a")
        m[1].metric("Adverse bound", f"{s['adverse']:.1f}" if s["adverse"] == s["adverse"] else "n/a",
                    help="Mean AP of the lowest-AP classes.")
        m[2].metric("Favourable bound", f"{s['favourable']:.1f}" if s["favourable"] == s["favourable"] else "n/a",
                    help="Mean AP of the highest-AP classes.")
        m[3].metric("All classes", f"{s['full']:.1f}" if s["full"] == s["full"] else "n/a")
        if len(res.subset_means):
            fig = bars.histogram_with_bounds(np.asarray(res.subset_means), {"adverse": s["adverse"], "all classes": s["full"],
                                                                   "favourable": s["favourable"]},
                                             title=f"mAP3D over {s['n_subsets']} random {s['subset_size']}-class "
                                                   f"subsets · {run}")
            ui.plot(fig, "split_hist", export_name=f"class_split_{run}")
            st.caption(f"Adverse classes: {ui.md(', '.join(s['bottom_classes']))}. "
                       f"Favourable classes: {ui.md(', '.join(s['top_classes']))}.")
        else:
            st.info(f"Only {s['n_classes']} classes have ground truth here; a {s['subset_size']}-class subset needs "
                    "more. Lower 'Classes per subset'.")

with ui.guard("Domain transfer"):
    st.subheader("Domain transfer")
    A = cache.analysis(ctx.cfg_key)
    spec = cache.encoder_spec()
    star = RemapSpec(encoder=spec) if ui.remapped_runs_toggle(spec, key="transfer_star") else None
    if star is not None:
        cache.check_encoder(spec)  # a checkpoint that is not on disk: a message at once, no download attempt
    tr = A.transfer(ctx.view(), remap=star)
    if not any(A.trained_on().values()):
        st.info("No run in this benchmark config says which datasets it was trained on (`trained_on:`), so every "
                "run counts as out-of-domain and no in/out comparison exists. The table lists what was scored.")
    st.markdown("**mAP3D by run and dataset** (in-domain: the run was trained on the dataset)")
    table = tr["transfer"]
    st.dataframe(table, hide_index=True, placeholder=MISSING, column_config=ui.fmt_table(table, percent=("map3d",),
                                                                     fraction=("recall",)))
    ui.export_table(table, "domain_transfer", "tr_table", caption="In- and out-of-domain mAP3D")
    if len(tr["transfer_per_run"]):
        st.markdown("**Per run and environment**: mean out-of-domain / mean in-domain")
        st.dataframe(tr["transfer_per_run"], hide_index=True, placeholder=MISSING, column_config=ui.fmt_table(
            tr["transfer_per_run"], percent=("map3d_in", "map3d_out"),
            fraction=("map3d_ratio", "recall_in", "recall_out", "recall_ratio")))
    if len(tr["transfer_pairs"]):
        st.markdown("**Per dataset**: each in-domain run against each out-of-domain run of the same environment")
        st.dataframe(tr["transfer_pairs"], hide_index=True, placeholder=MISSING)
