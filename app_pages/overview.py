"""Overview: the leaderboard of every (dataset, run), per-category AP bars and the three-axis breakdown.

Selecting a leaderboard row makes its dataset and run active; clicking a category bar selects that category; both
lead to the scene inspector filtered to the matching detections.

Statistics (off by default: a bootstrap takes seconds): the "Intervals" toggle adds image-bootstrap intervals
(``Analysis.bootstrap``, seed ``SEED``) to the leaderboard, its AP chart and the per-category table and bars, with
the significance tiers of the active dataset (``Analysis.leaderboard_tiers``); the "Paired comparison" toggle tests
run A against run B, or one run under both protocols (``Analysis.paired``).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import streamlit as st

from ov3d_app import cache, selection, ui
from ov3d_core.analysis import RemapSpec
from ov3d_core.errors import InputError
from ov3d_core.eval.constants import AP_KEYS, SUMMARY_KEYS
from ov3d_core.viz import bars
from ov3d_core.viz.runtime import accuracy_latency_figure
from ov3d_app.drawing import MISSING, with_error_bars

ui.page_header("Overview", "mAP3D (Omni3D protocol: mean AP over 3D IoU 0.05:0.05:0.50) per dataset and run, with "
               "AP at 3D IoU 0.15/0.25/0.50, near/medium/far and 3D class-agnostic recall at IoU 0.15. AP in percent.")
ctx = ui.need_context()
A = cache.analysis(ctx.cfg_key)

AP_COLS = AP_KEYS
#: Bootstrap settings offered (resamples, interval level) and the one seed, ``Analysis.bootstrap``'s default: the
#: intervals, tiers and paired tests of a dataset share one set of image resamples, the same a notebook or the CLI
#: draws with the default seed.
RESAMPLES = (200, 1000, 2000)
LEVELS = (0.90, 0.95, 0.99)
SEED = 0
CORRECTIONS = {"holm": "Holm (family-wise error)", "bh": "Benjamini-Hochberg (false discovery rate)"}
#: The leaderboard's AP chart (with error bars when intervals are on).
CHART_METRICS = ("AP3D", "AP3D@15", "AP3D@25", "AP3D@50")
#: The leaderboard columns shown (n_images: the images scored, fewer under the sidebar's image subset; the rest of
#: ``Analysis.leaderboard_row`` is in the export).
SHOWN = ["dataset", "run", "n_images", *SUMMARY_KEYS, "n_out_of_vocabulary", "in_domain"]


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


def _fmt_interval(metric: str, lo: float, hi: float) -> str:
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return MISSING
    d = 3 if metric == "recall3D@15" else 1
    return f"[{lo:.{d}f}, {hi:.{d}f}]"


def _ci_name(metric: str) -> str:
    return f"{metric} {LEVEL:.0%} CI"


def _bootstrap(view):
    return A.bootstrap(view, n_resamples=B, seed=SEED, level=LEVEL)


def _with_intervals(shown: pd.DataFrame, frames: dict) -> pd.DataFrame:
    """The leaderboard with a "[lo, hi]" column after each headline column (``frames``: (dataset, run) ->
    ``BootstrapResult.to_frame()``)."""
    out = shown.copy()
    for m in [c for c in SUMMARY_KEYS if c in out.columns][::-1]:
        col = []
        for ds, run in zip(out["dataset"], out["run"]):
            f = frames.get((ds, run))
            rec = None if f is None else f.set_index("metric").loc[m]
            col.append(MISSING if rec is None else _fmt_interval(m, rec["lo"], rec["hi"]))
        out.insert(out.columns.get_loc(m) + 1, _ci_name(m), col)
    return out


def _open_mining(run: str):
    ui.set_state(focus_run=run)
    st.switch_page("app_pages/mining.py")


s1, s2, s3 = st.columns([1.3, 2, 2])
INTERVALS = s1.toggle("Intervals", key="ci_on", help="Image-bootstrap confidence intervals (BCa) on the leaderboard, "
                      "its AP chart and the per-category numbers, and the significance tiers. Takes seconds.")
B = int(s2.select_slider("Bootstrap resamples", RESAMPLES, value=1000, key="ci_B",
                         help="Resamples of the images (with replacement); also used by the paired comparison."))
LEVEL = float(s3.select_slider("Interval level", LEVELS, value=0.95, key="ci_level", format_func="{:.0%}".format))

with ui.guard("The leaderboard"):
    st.subheader("Leaderboard")
    with st.spinner("Reading the input files (their content keys the saved scores)"):  # seconds for GBs, once
        A.digest_inputs()
    everywhere = st.toggle("All datasets", key="lb_all", help="Score every run on every dataset of the benchmark "
                           "(otherwise only the active dataset).")
    focus = ui.get("focus_run") if ui.get("focus_run") in ctx.all_runs else (ctx.runs[0] if ctx.runs else None)
    if focus is not None:  # the active run first: it is what the page opens on
        _metrics(A.leaderboard_row(ctx.view(focus)))
        if st.button(f"Failure mining of {ui.md(focus)}", key="lb_mine", icon=":material/manage_search:",
                     help="The images where this run fails, ranked (cross-class false positives first)."):
            _open_mining(focus)
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
    frames: dict = {}
    if INTERVALS and len(shown):
        slot.dataframe(shown, hide_index=True, placeholder=MISSING,  # the numbers stay visible meanwhile
                       column_config=ui.fmt_table(shown, percent=AP_COLS, fraction=("recall3D@15",)))
        bar = st.progress(0.0, text=f"Bootstrapping the leaderboard ({B} resamples per run)")
        for k, (ds, run) in enumerate(zip(shown["dataset"], shown["run"])):
            frames[(ds, run)] = _bootstrap(ctx.view(run, dataset=ds)).to_frame()
            bar.progress((k + 1) / len(shown), text=f"Bootstrapping the leaderboard: {k + 1} / {len(shown)} runs")
        bar.empty()
        shown = _with_intervals(shown, frames)
    slot.dataframe(shown, hide_index=True, on_select=lambda: _on_row(board), selection_mode="single-row",
                   key="lb_table", column_config=ui.fmt_table(shown, percent=AP_COLS, fraction=("recall3D@15",)),
                   placeholder=MISSING)
    ui.export_table(shown, f"leaderboard_{ctx.protocol}", "lb", caption=f"mAP3D ({ctx.protocol} protocol)")
    if frames:
        st.caption(f"{LEVEL:.0%} intervals: BCa over {B} image resamples (seed {SEED}; the image is the unit, its "
                   "boxes are not independent). Intervals of rare classes and AP3D@50 on small sets are optimistic.")
        long = pd.concat([f.assign(dataset=ds, run=run)[["dataset", "run", *f.columns]]
                          for (ds, run), f in frames.items()], ignore_index=True)
        here = board[board["dataset"] == ctx.dataset]
        chart = bars.leaderboard_bars(here, list(CHART_METRICS), title=f"AP on {ctx.dataset} ({LEVEL:.0%} intervals)")
        whiskers = {(run, rec.metric): (rec.lo, rec.hi) for (ds, run), f in frames.items() if ds == ctx.dataset
                    for rec in f.itertuples()}
        ui.plot(with_error_bars(chart, whiskers), "lb_chart", export_name=f"leaderboard_ci_{ctx.dataset}")
        with st.expander("Intervals (every headline number)"):
            st.dataframe(long, hide_index=True, placeholder=MISSING, key="lb_ci",
                         column_config=ui.fmt_table(long, fraction=("value", "lo", "hi", "se")))
            ui.export_table(long, f"leaderboard_intervals_{ctx.protocol}", "lb_ci_x")
    about = cache.catalog(ctx.cfg_key)["descriptions"]
    notes = [(r, about.get(f"{r}@{ctx.dataset}", "")) for r in ctx.all_runs]
    if any(d for _, d in notes):
        with st.expander("About the runs"):
            st.markdown("\n".join(f"- **{ui.md(r)}**: {ui.md(d)}" for r, d in notes if d))

if INTERVALS and ctx.all_runs:
    with ui.guard("The significance tiers"):
        st.subheader(f"Which gaps are real? Significance tiers on {ui.md(ctx.dataset)}")
        t1, t2 = st.columns([1, 2])
        metric = t1.selectbox("Rank by", list(SUMMARY_KEYS), key="tier_metric")
        corr = t2.radio("Correction over the gaps", list(CORRECTIONS), format_func=CORRECTIONS.get, horizontal=True,
                        key="tier_corr")
        with st.spinner(f"Paired bootstrap of every neighbouring pair ({B} resamples)"):
            tiers = A.leaderboard_tiers(ctx.view(), metric=metric, n_resamples=B, seed=SEED, level=LEVEL,
                                        correction=corr)
        n_sig = int(tiers["significant"].sum())
        st.caption(f"Runs ranked by {metric}; each gap to the next run is a paired image bootstrap (the same {B} "
                   f"resamples for every run, percentile interval of the difference), its p-value adjusted by "
                   f"{CORRECTIONS[corr]} over the {max(len(tiers) - 1, 0)} gaps and called significant below "
                   f"{1 - LEVEL:.2f}. Runs joined by a non-significant gap share a tier: {n_sig} of "
                   f"{max(len(tiers) - 1, 0)} gaps are significant.")
        st.dataframe(tiers, hide_index=True, key="lb_tiers", placeholder=MISSING, column_config=ui.fmt_table(
            tiers, fraction=("value", "lo", "hi", "gap", "gap_lo", "gap_hi", "p_value", "p_adjusted")))
        ui.export_table(tiers, f"tiers_{ctx.dataset}_{metric}", "lb_tiers_x")

with ui.guard("Per-category AP"):
    if ctx.runs:
        st.subheader(f"Per-category AP3D on {ui.md(ctx.dataset)}")
        pc = cache.per_category_runs(ctx.cfg_key, ctx.view(), ctx.runs)
        cat = ui.get("category")
        fig = cache.shared(("category_bars", ctx.cfg_key, ctx.view(), ctx.runs, cat),  # one figure per server
                           lambda: bars.category_bars(pc, "AP3D", highlight=cat, height=420))
        if INTERVALS:
            with st.spinner("Bootstrapping per-category AP"):
                ci = pd.concat([_bootstrap(ctx.view(r)).per_category_frame().assign(run=r) for r in ctx.runs],
                               ignore_index=True)
            pc = pc.merge(ci[["run", "category", "lo", "hi"]].rename(columns={"lo": "AP3D_lo", "hi": "AP3D_hi"}),
                          on=["run", "category"], how="left")
            pc.insert(pc.columns.get_loc("AP3D") + 1, "AP3D_lo", pc.pop("AP3D_lo"))
            pc.insert(pc.columns.get_loc("AP3D_lo") + 1, "AP3D_hi", pc.pop("AP3D_hi"))
            fig = with_error_bars(fig, {(r, c): (lo, hi) for r, c, lo, hi in
                                        pc[["run", "category", "AP3D_lo", "AP3D_hi"]].itertuples(index=False)},
                                  labels=False)
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
            st.dataframe(pc, hide_index=True, column_config=ui.fmt_table(
                pc, percent=AP_COLS + ("AR", "AP3D_lo", "AP3D_hi")), placeholder=MISSING, key="pc_table")
            if INTERVALS:
                st.caption(f"AP3D_lo, AP3D_hi: the {LEVEL:.0%} BCa interval of each category's AP3D ({B} image "
                           "resamples); empty where the category has no GT.")
            ui.export_table(pc, f"per_category_{ctx.dataset}", "pc")

with ui.guard("The paired comparison"):
    st.subheader("Is the difference real? Paired comparison")
    if st.toggle("Paired comparison", key="paired_on", help="A paired image bootstrap of A − B: both sides are "
                 "scored on the same resampled image sets, so the noise they share cancels."):
        runs = list(ctx.runs) or list(ctx.all_runs)
        p1, p2, p3, p4 = st.columns([1.6, 1.4, 1.4, 2.2])
        mode = p1.radio("Compare", ["two runs", "two protocols"], key="pair_mode",
                        format_func={"two runs": "run A vs run B", "two protocols": "one run, two protocols"}.get)
        if mode == "two runs":
            ra = p2.selectbox("Run A", runs, key="pair_a")
            rb = p3.selectbox("Run B", [r for r in runs if r != ra] or runs, key="pair_b")
            va, vb = ctx.view(ra), ctx.view(rb)
        else:
            ra = p2.selectbox("Run", runs, key="pair_run")
            p3.caption("A: dataset-level\n\nB: target-aware")
            va, vb = ctx.view(ra, protocol="dataset-level"), ctx.view(ra, protocol="target-aware")
        corr = p4.radio("Per-category correction", list(CORRECTIONS), format_func=CORRECTIONS.get, key="pair_corr")
        if va == vb:
            st.info("Pick two different runs.")
        else:
            with st.spinner(f"Paired bootstrap ({B} resamples)"):
                cmp_ = A.paired(va, vb, n_resamples=B, seed=SEED, level=LEVEL, correction=corr)
                table, per_cat = cmp_.to_frame(), cmp_.per_category_frame()
            st.markdown(f"**A** = {ui.md(cmp_.name_a)}, **B** = {ui.md(cmp_.name_b)} on {ui.md(ctx.dataset)}: "
                        f"A − B with its {LEVEL:.0%} interval (percentile, {B} paired resamples, seed {SEED}) and "
                        "the two-sided p-value; significant: the interval excludes 0 (one test per row).")
            st.dataframe(table, hide_index=True, key="pair_table", placeholder=MISSING, column_config=ui.fmt_table(
                table, fraction=(cmp_.name_a, cmp_.name_b, "diff", "lo", "hi", "p_value")))
            ui.export_table(table, "paired", "pair_x")
            st.markdown(f"**Per-category differences** (AP3D): p-values adjusted by **{CORRECTIONS[corr]}** over the "
                        f"{int(per_cat['p_value'].notna().sum())} categories with a p-value; significant: adjusted "
                        f"p < {1 - LEVEL:.2f}.")
            shown_cat = per_cat[per_cat["n_valid"] > 0].reset_index(drop=True)
            fig = bars.grouped_bars(shown_cat.assign(series="A − B"), "category", "diff", "series",
                                    y_title=f"AP3D: {cmp_.name_a} − {cmp_.name_b}", height=360)
            fig = with_error_bars(fig, {("A − B", c): (lo, hi) for c, lo, hi in
                                        shown_cat[["category", "lo", "hi"]].itertuples(index=False)},
                                  labels=len(shown_cat) <= 12)
            ui.plot(fig, "pair_bars", export_name="paired_per_category")
            st.dataframe(per_cat, hide_index=True, key="pair_cat", placeholder=MISSING, column_config=ui.fmt_table(
                per_cat, fraction=(cmp_.name_a, cmp_.name_b, "diff", "lo", "hi", "p_value", "p_adjusted")))
            ui.export_table(per_cat, "paired_per_category", "pair_cat_x")

with ui.guard("The three-axis breakdown"):
    st.subheader("Three axes: geometry, semantics, domain, prompts")
    spec = cache.encoder_spec()
    enc_name = "the demo stand-in encoder" if spec == "proxy" else spec
    with_prompts = st.toggle("Prompt robustness", key="axes_prompts",
                             help=f"1 − mean CV of mAP3D under the 15 preset templates on every dataset: "
                                  f"prompt-conditioned runs from their per-template files, closed-vocabulary runs "
                                  f"remapped ({enc_name}) as X*. The same numbers `ov3d report --encoder` writes.")
    with_star = ui.remapped_runs_toggle(spec, key="axes_star")
    if with_prompts or with_star:
        cache.check_encoder(spec)  # a checkpoint that is not on disk: a message at once, no download attempt
    star = RemapSpec(encoder=spec) if with_star else None
    cv = A.prompt_cv(ctx.view(), star) if with_prompts else None  # X* measured only where it is listed
    tr = A.transfer(ctx.view(), prompt_cv=cv, remap=star)
    st.caption("Geometry: mean 3D class-agnostic recall; semantics: mean mAP3D; domain: out-of-domain / in-domain "
               "mAP3D ratio within one environment (needs `trained_on` in the config); prompt robustness: 1 − the "
               "mean CV of mAP3D over the 15 preset templates (toggle it on): a prompt-conditioned run's own "
               "per-template files, a closed-vocabulary run remapped (X*); other runs show —. "
               "No axis predicts another.")
    axes = {"geometric": "Geometry: recall3D@15", "semantic": "Semantics: mAP3D",
            "cross_domain_ratio": "Domain: out / in mAP3D"}
    if with_prompts:
        axes["prompt_robustness"] = "Prompts: 1 − CV"
    fig = cache.shared(("three_axis", ctx.cfg_key, ctx.view(), spec if with_prompts else None, star),
                       lambda: bars.three_axis_chart(tr["three_axis"], axes))
    ui.plot(fig, "three_axis", export_name="three_axis")
    st.dataframe(tr["three_axis"], hide_index=True, placeholder=MISSING,
                 column_config=ui.fmt_table(tr["three_axis"], percent=("semantic", "semantic_in_domain",
                                                                 "semantic_out_of_domain"),
                                            fraction=("geometric", "prompt_robustness", "cross_domain_ratio",
                                                      "recall_cross_domain_ratio")))

with ui.guard("The runtime table"):
    st.subheader(f"Runtime (Table 10) on {ui.md(ctx.dataset)}")
    rt_spec = cache.encoder_spec()
    rt_star_on = ui.remapped_runs_toggle(rt_spec, key="rt_star")
    if rt_star_on:
        cache.check_encoder(rt_spec)
    rt_star = RemapSpec(encoder=rt_spec) if rt_star_on else None
    # the scatter first: its leaderboard remaps X*, whose crop embedding is what times X*'s semantic stage
    points = A.accuracy_latency(ctx.view(), remap=rt_star)
    runtime = A.runtime(ctx.dataset, remap=rt_star)
    how = set(runtime["how"])
    cpu = [r for r, d in zip(runtime["run"], runtime["device"]) if "CPU numbers" in str(d)]
    st.caption("Milliseconds per image by stage: semantic (2D grounding, or the crop encoder of a remapped run X*) "
               "and geometry (the 3D detector), and their total. "
               + ("Declared: the runs' `runtime:` entries in the benchmark config (the authors' numbers, not "
                  "re-measured here; `source` says where they come from, `images` on how many images). "
                  if how & {"declared", "declared + measured"} else "")
               + ("Measured: X*'s semantic stage as `ov3d embed` timed it on this server (reading, cropping and "
                  "encoding the crops, per image), added to X's declared geometry stage. "
                  if how & {"measured", "declared + measured"} else "")
               + (f"{', '.join(ui.md(r) for r in cpu)}: measured on the CPU (CPU numbers), not comparable with "
                  "GPU timings. " if cpu else ""))
    st.dataframe(runtime, hide_index=True, key="rt_table", placeholder=MISSING,
                 column_config=ui.fmt_table(runtime, percent=("semantic_ms", "geometry_ms", "total_ms")))
    ui.export_table(runtime, f"runtime_{ctx.dataset}", "rt_table_x", caption="Runtime (ms per image)")
    where = f"{ctx.dataset}" + (f", images: {ctx.subset}" if ctx.subset else "")
    st.caption(f"Accuracy against latency: mAP3D on {ui.md(where)} ({ctx.protocol} protocol) against the total ms "
               "per image above; circles declared, squares measured, diamonds declared + measured.")
    ui.plot(accuracy_latency_figure(points, metric="mAP3D", title=f"Accuracy against latency · {where}"),
            "rt_scatter", export_name=f"accuracy_latency_{ctx.dataset}")
