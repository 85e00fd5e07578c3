"""Overview: the leaderboard of every (dataset, run), per-category AP bars and the three-axis breakdown.

Selecting a leaderboard row makes its dataset and run active; clicking a category bar selects that category; both
lead to the scene inspector filtered to the matching detections.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import streamlit as st

from ov3d_app import cache, selection, ui
from ov3d_core.errors import InputError
from ov3d_core.eval.constants import AP_KEYS, SUMMARY_KEYS
from ov3d_core.viz import bars
from ov3d_app.drawing import MISSING

ui.page_header("Overview", "mAP3D (Omni3D protocol: mean AP over 3D IoU 0.05:0.05:0.50) per dataset and run, with "
               "AP at 3D IoU 0.15/0.25/0.50, near/medium/far and 3D class-agnostic recall at IoU 0.15. AP in percent.")
ctx = ui.need_context()
A = cache.analysis(ctx.cfg_key)

AP_COLS = AP_KEYS
#: The leaderboard columns shown (the rest of ``Analysis.leaderboard_row`` is in the export).
SHOWN = ["dataset", "run", *SUMMARY_KEYS, "n_out_of_vocabulary", "in_domain"]


def _on_row(board):
    rows = selection.dataframe_rows(st.session_state.get("lb_table"))
    if rows:
        change = selection.leaderboard_row_to_state(board, rows[0])
        ui.set_state(**change, category=None)


def _on_bar():
    pts = selection.selection_points(st.session_state.get("cat_bars"))
    if pts:
        change = selection.bar_point_to_state(pts[0])
        if change:
            ui.set_state(**change)


def _open_scene(category: str | None, run: str | None, errors: list[str]):
    ui.set_state(f_classes=[category] if category else [], f_errors=errors, f_run=run or "", image_id=None,
                 highlight=None)


def _metrics(rec) -> None:
    st.markdown(f"**{ui.md(rec['run'])}** on **{ui.md(rec['dataset'])}** · {ctx.protocol} protocol")
    cols = st.columns(5)
    cols[0].metric("mAP3D", f"{rec['AP3D']:.2f}")
    cols[1].metric("AP3D@15", f"{rec['AP3D@15']:.2f}")
    cols[2].metric("AP3D@25", f"{rec['AP3D@25']:.2f}")
    cols[3].metric("AP3D@50", f"{rec['AP3D@50']:.2f}")
    cols[4].metric("Class-agnostic recall@15", f"{rec['recall3D@15']:.3f}",
                   help="Fraction of GT matched by some prediction at 3D IoU ≥ 0.15, whatever its label.")


with ui.guard("The leaderboard"):
    st.subheader("Leaderboard")
    everywhere = st.toggle("All datasets", key="lb_all", help="Score every run on every dataset of the benchmark "
                           "(otherwise only the active dataset).")
    focus = ui.get("focus_run") if ui.get("focus_run") in ctx.all_runs else (ctx.runs[0] if ctx.runs else None)
    if focus is not None:  # the active run first: it is what the page opens on
        _metrics(A.leaderboard_row(ctx.view(focus)))
    st.caption("Select a row to make its dataset and run active. Under the target-aware protocol each image is "
               "prompted only with its GT classes, which hides cross-class false positives (see the Oracle page).")
    slot = st.empty()
    rows = []
    failed = []
    started = time.perf_counter()
    for ds, run in cache.leaderboard_pairs(ctx.cfg_key, None if everywhere else (ctx.dataset,)):
        try:
            rows.append(A.leaderboard_row(ctx.view(run, dataset=ds)))
        except InputError as exc:  # one broken run file: the others still load
            failed.append((ds, run, ui.error_text(exc)))
            continue
        if len(rows) % 5 == 1 and time.perf_counter() - started > 0.5:  # rows appear while the others are scored
            slot.dataframe(pd.DataFrame(rows, columns=SHOWN), hide_index=True)
    for ds, run, msg in failed:
        st.error(f"Run **{ui.md(run)}** on {ui.md(ds)} could not be loaded: {ui.md(msg)}", icon=":material/error:")
    board = pd.DataFrame(rows)[SHOWN] if rows else pd.DataFrame(columns=SHOWN)
    shown = board.drop(columns=["in_domain"]) if board["in_domain"].isna().all() else board
    if not shown["n_out_of_vocabulary"].any():
        shown = shown.drop(columns=["n_out_of_vocabulary"])
    slot.dataframe(shown, hide_index=True, on_select=lambda: _on_row(board), selection_mode="single-row",
                   key="lb_table", column_config=ui.fmt_table(shown, percent=AP_COLS, fraction=("recall3D@15",)),
                   placeholder=MISSING)
    ui.export_table(shown, f"leaderboard_{ctx.protocol}", "lb", caption=f"mAP3D ({ctx.protocol} protocol)")
    about = cache.catalog(ctx.cfg_key)["descriptions"]
    notes = [(r, about.get(f"{r}@{ctx.dataset}", "")) for r in ctx.all_runs]
    if any(d for _, d in notes):
        with st.expander("About the runs"):
            st.markdown("\n".join(f"- **{ui.md(r)}**: {ui.md(d)}" for r, d in notes if d))

with ui.guard("Per-category AP"):
    if ctx.runs:
        st.subheader(f"Per-category AP3D on {ui.md(ctx.dataset)}")
        pc = cache.per_category_runs(ctx.cfg_key, ctx.view(), ctx.runs)
        cat = ui.get("category")
        fig = cache.shared(("category_bars", ctx.cfg_key, ctx.view(), ctx.runs, cat),  # one figure per server
                           lambda: bars.category_bars(pc, "AP3D", highlight=cat, height=420))
        st.caption("Click a bar to select that category and run. Missing bars: no ground truth of that class.")
        ui.plot(fig, "cat_bars", on_select=_on_bar, export_name=f"per_category_{ctx.dataset}")
        if cat:
            run = ui.get("focus_run") if ui.get("focus_run") in ctx.runs else ctx.runs[0]
            row = pc[(pc["category"] == cat) & (pc["run"] == run)]
            n_gt = int(row["n_gt"].iloc[0]) if len(row) and "n_gt" in row else None
            ap = float(row["AP3D"].iloc[0]) if len(row) else np.nan
            st.markdown(f"**{ui.md(cat)}** · {ui.md(run)}: AP3D {ap:.1f}" + (f" · {n_gt} GT" if n_gt is not None else ""))
            c1, c2, c3 = st.columns(3)
            if c1.button(f"All {ui.md(cat)} boxes", key="go_all", icon=":material/view_in_ar:"):
                _open_scene(cat, run, [])
                st.switch_page("app_pages/scene.py")
            if c2.button(f"False positives of {ui.md(cat)}", key="go_fp", icon=":material/error:"):
                _open_scene(cat, run, ["FP", "mislabelled"])
                st.switch_page("app_pages/scene.py")
            if c3.button(f"Missed {ui.md(cat)}", key="go_fn", icon=":material/search_off:"):
                _open_scene(cat, run, ["FN"])
                st.switch_page("app_pages/scene.py")
        with st.expander("Per-category table"):
            st.dataframe(pc, hide_index=True, column_config=ui.fmt_table(pc, percent=AP_COLS + ("AR",)),
                         placeholder=MISSING)
            ui.export_table(pc, f"per_category_{ctx.dataset}", "pc")

with ui.guard("The three-axis breakdown"):
    st.subheader("Three axes: geometry, semantics, domain, prompts")
    spec = cache.encoder_spec()
    enc_name = "the demo stand-in encoder" if spec == "proxy" else spec
    with_prompts = st.toggle("Prompt robustness", key="axes_prompts",
                             help=f"Remap every run that can be remapped ({enc_name}) under the 15 preset templates "
                                  "on every dataset: 1 − mean CV of mAP3D. The same numbers `ov3d report --encoder` "
                                  "writes.")
    if with_prompts:
        cache.check_encoder(spec)  # a checkpoint that is not on disk: a message at once, no download attempt
    cv = A.prompt_cv(ctx.view(), spec) if with_prompts else None
    tr = A.transfer(ctx.view(), prompt_cv=cv)
    st.caption("Geometry: mean 3D class-agnostic recall; semantics: mean mAP3D; domain: out-of-domain / in-domain "
               "mAP3D ratio within one environment (needs `trained_on` in the config); prompt robustness: 1 − the "
               "mean CV of mAP3D over the 15 preset templates (toggle it on; runs that cannot be remapped show —). "
               "No axis predicts another.")
    axes = {"geometric": "Geometry: recall3D@15", "semantic": "Semantics: mAP3D",
            "cross_domain_ratio": "Domain: out / in mAP3D"}
    if with_prompts:
        axes["prompt_robustness"] = "Prompts: 1 − CV"
    fig = cache.shared(("three_axis", ctx.cfg_key, ctx.view(), spec if with_prompts else None),
                       lambda: bars.three_axis_chart(tr["three_axis"], axes))
    ui.plot(fig, "three_axis", export_name="three_axis")
    st.dataframe(tr["three_axis"], hide_index=True, placeholder=MISSING,
                 column_config=ui.fmt_table(tr["three_axis"], percent=("semantic", "semantic_in_domain",
                                                                 "semantic_out_of_domain"),
                                            fraction=("geometric", "prompt_robustness", "cross_domain_ratio",
                                                      "recall_cross_domain_ratio")))
