"""Scene inspector: one image with GT and predicted 3D boxes projected through K, coloured by TP / FP / FN /
mislabelled-but-localised under the active protocol. At the top, side by side: the image panels (one or two runs
large, the others a click away; panels of one size with one shared legend and labels placed to avoid each other)
and the 3D view of the point cloud with the same boxes and the camera frustum (its camera presets as buttons above
it), with the tags and notes of the image and the selected box under it; then the sortable per-box tables (pose
errors against the reference GT, ranks, ignore reasons). Filters by class, status, score and tag; previous / next
through the filtered image list."""

from __future__ import annotations

import numpy as np
import streamlit as st

from ov3d_app import cache, drawing, selection, ui
from ov3d_app.gl_scene import gl_scene
from ov3d_app.drawing import MISSING
from ov3d_app import state as S
from ov3d_app import tags as T
from ov3d_app.rerun_button import rerun_button
from ov3d_core.viz.image_overlay import image_overlay, legend_html, legend_items

ui.page_header("Scene inspector", "GT boxes dotted (missed GT solid orange), predictions solid: green TP, red FP, "
               "purple = well localised but mislabelled (its label reads 'pred ≠ GT'). The cross marks each box's "
               "front face (heading). Click a box label (or a table row) to select the box.")
ctx = ui.need_context()
#: Width in px of one panel for 1 and 2 panels per row in the image column (the left of the two at the top, beside
#: the 3D view; the image is scaled to it).
PANEL_PX = {1: 680, 2: 330}
#: Widths of the two columns at the top: the image panels, the 3D view (with the tags and notes under it).
TOP_COLUMNS = (3, 2)
#: Float columns of the per-box tables shown with three decimals.
PRED_FRACTIONS = ("score", "depth", "volume", "iou3d", "iou2d", "center_dist", "depth_err", "size_err")
GT_FRACTIONS = ("truncation", "visibility", "depth", "volume", "height2d", "matched_score", "iou3d")


def _step(images: list[int], step: int):
    ui.set_state(image_id=selection.step_image(images, ui.get("image_id"), step), highlight=None)


def _image_rows(boxes, image_id: int, box_filter: dict):
    """The box rows of one image that pass the page's filters (``selection.filter_boxes``)."""
    return selection.filter_boxes(boxes[boxes["image_id"] == image_id], **box_filter)


def _run_rows(rows, run: str):
    """The rows a panel or the 3D view of one run draws: the run's (its predictions and the GT as it scored them),
    or the GT alone when ``run`` is empty."""
    return rows[rows["run"] == run] if run else rows[rows["kind"] == "gt"].drop_duplicates(["row"])


def _on_box(key: str):
    pts = selection.selection_points(st.session_state.get(key))
    hl = next((h for h in (selection.box_from_point(p) for p in pts) if h), None)
    if hl:
        ui.set_state(highlight=hl)


def _on_row(key: str, table, kind: str):
    rows = selection.dataframe_rows(st.session_state.get(key))
    if rows:
        rec = table.iloc[rows[0]]
        ui.set_state(highlight=f"{kind}|{rec['run'] if kind == 'pred' else ''}|{int(rec['row'])}")


@st.fragment
def view_3d(ctx, image_id: int, meta: dict, rows, vocabulary, shown: list[str], next_image=None):
    """The 3D view. ``next_image``: a function giving ``(image_id, meta, rows)`` of the image "Next" shows (None
    when there is none), whose figure is computed ahead while this one is on screen."""
    st.toggle("3D view (point cloud, boxes, camera frustum)", **ui.bind("show_3d"))
    if not ui.get("show_3d"):
        st.caption("Off: turn it on for the point cloud with this image's boxes and the camera frustum (camera "
                   f"presets ego, top-down and side above the scene). {_renderer_note()}")
    hidden = not ui.get("show_3d")
    # The scene is one element that stays in the page (``gl_scene``): a new image, budget or highlight redraws the
    # WebGL scene the browser built; off hides it, on again with the same figure only shows it. Its controls come
    # in a container before it, so the scene's place in the page never moves (a moved element is a new one), and
    # are filled after it, so the browser starts drawing before it lays out the controls.
    controls = st.container(key="scene3d_controls")
    settings = _settings_3d(shown)
    pc = fig_json = rev = None
    if not hidden:
        with controls, ui.guard("The 3D view"):
            pc, fig_json, rev = _figure_3d(ctx.cfg_key, ctx.dataset, image_id, meta, rows, vocabulary, **settings,
                                           highlight=ui.get("highlight"))
    # one WebGL pixel per CSS pixel: a software-rendered browser (no GPU) draws the scene several times faster
    gl_scene(fig_json, rev, key="scene3d_gl", hidden=hidden, config={"plotGlPixelRatio": 1},
             standin=drawing.scene3d_standin() if hidden else None, on_renderer=_on_renderer)
    if not hidden:
        with controls:
            _controls_3d(ctx, image_id, meta, rows, vocabulary, shown, settings, pc, drawn=fig_json is not None)
    # What the next click will likely ask for, computed while the user looks at this image: off, this image's figure
    # (the toggle); on, the next image's ("Next"). Under the same settings, with the highlight a step clears.
    if hidden:
        cache.compute_ahead(_figure_3d, ctx.cfg_key, ctx.dataset, image_id, meta, rows, vocabulary, **settings,
                            highlight=ui.get("highlight"))
    elif next_image is not None:
        cache.compute_ahead(_next_figure_3d, ctx.cfg_key, ctx.dataset, next_image, vocabulary, **settings)


def _on_renderer(renderer: str) -> None:
    """The browser reported its WebGL renderer (once per session): the point budget follows it unless the user chose
    one."""
    if not st.session_state.get("_pts3d_user"):
        st.session_state["pts3d"] = drawing.budget_for_renderer(renderer)


def _renderer_note() -> str:
    """Which default point budget this browser got, and why (its WebGL renderer)."""
    renderer = st.session_state.get(drawing.RENDERER_KEY)
    budget = drawing.budget_for_renderer(renderer)
    if renderer is None:
        return f"Default budget {budget // 1000}k until the browser reports its WebGL renderer."
    kind = "software WebGL" if drawing.software_renderer(renderer) else "GPU"
    return (f"Default budget {budget // 1000}k for this browser's WebGL renderer ({kind}: "
            f"{ui.md(renderer[:80]) or 'not reported'}).")


def _settings_3d(shown: list[str]) -> dict:
    """The 3D view's settings in this session: its widgets' values (the run shown, the point budget) or, when they
    are not on the page, the values they start at; the colouring and presentation mode."""
    run_opts = shown or [""]
    budgets = drawing.POINT_BUDGETS
    run3d = st.session_state.get("run3d")
    budget = st.session_state.get("pts3d")
    return dict(run3d=run3d if run3d in run_opts else run_opts[0],
                budget=budget if budget in budgets else drawing.session_budget(),
                color_by=ui.get("color_by"), presenting=bool(ui.get("presentation")))


def _figure_3d(cfg_key: str, dataset: str, image_id: int, meta: dict, rows, vocabulary, *, run3d: str, budget: int,
               color_by: str, highlight: str | None, presenting: bool):
    """The 3D view's point cloud and figure of one image: ``(points or None, figure JSON, its digest)``."""
    sub = _run_rows(rows, run3d)
    pc = cache.point_cloud(cfg_key, dataset, image_id, budget)
    fig_json, rev = drawing.scene3d_json(cfg_key, dataset, image_id, sub, pc, meta, color_by=color_by,
                                         vocabulary=vocabulary, highlight=highlight, budget=budget,
                                         presenting=presenting)
    return pc, fig_json, rev


def _next_figure_3d(cfg_key: str, dataset: str, next_image, vocabulary, **settings) -> None:
    found = next_image()
    if found is not None:
        image_id, meta, rows = found
        _figure_3d(cfg_key, dataset, image_id, meta, rows, vocabulary, **settings, highlight=None)


def _controls_3d(ctx, image_id: int, meta: dict, rows, vocabulary, shown: list[str], settings: dict, pc, *,
                 drawn: bool) -> None:
    """The 3D view's widgets (their values are ``settings``, read before they are drawn), its caption and export."""
    c1, c2, c3 = st.columns([4, 4, 1], vertical_alignment="bottom")
    c1.selectbox("Run shown in 3D", shown or [""], key="run3d", format_func=lambda r: r or "GT only")
    if st.session_state.get("pts3d") not in drawing.POINT_BUDGETS:
        st.session_state["pts3d"] = settings["budget"]  # the default for this browser's renderer
    c2.select_slider("Points", drawing.POINT_BUDGETS, key="pts3d", format_func=lambda n: f"{n // 1000}k",
                     on_change=lambda: st.session_state.update(_pts3d_user=True),
                     help="Most points drawn: the voxel size of the downsampling follows from it. The default "
                          "follows the browser's WebGL renderer: the full cloud on a GPU, 10k in software WebGL.")
    if not drawn:  # the figure failed: its message is shown above
        return
    if pc is None:
        st.caption("No point cloud or depth map for this image (benchmark config `points:` / `depth:`); "
                   "showing boxes and the camera frustum only.")
    else:
        vox = f"voxel {pc.voxel * 100:.1f} cm" if pc.voxel > 0 else "not downsampled"
        st.caption(f"{len(pc.points):,} of {pc.n_full:,} points from the {pc.source} ({vox}). Camera presets: "
                   f"the buttons above the scene; drag to orbit. {_renderer_note()}")
    highlight = ui.get("highlight")

    def figure():  # built on an export click only
        return drawing.scene3d_figure(ctx.cfg_key, ctx.dataset, image_id, _run_rows(rows, settings["run3d"]), pc,
                                      meta, color_by=settings["color_by"], vocabulary=vocabulary,
                                      highlight=highlight, budget=settings["budget"])

    with c3:
        ui.export_figure(figure, f"scene3d_{ctx.dataset}_{image_id}", "scene3d_fig")


with ui.guard("The scene inspector"):
    info = cache.dataset_info(ctx.cfg_key, ctx.dataset, ctx.subset)
    ctx, _ = ui.per_box(ctx)  # the subset's images listed above; rows and statuses: ui.per_box
    vocab = info["vocabulary"]
    all_images = info["images"]["image_id"].astype(int).tolist()
    runs = list(ctx.runs)

    f1, f2, f3, f4, f5, f6 = st.columns([2.2, 2, 1.6, 1.6, 1.6, 1.1])
    ui.ensure_subset("f_classes", vocab)
    f1.multiselect("Classes", vocab, placeholder="all classes", **ui.bind("f_classes"))
    f2.multiselect("Images with", list(S.ERROR_FILTERS), placeholder="any status",
                   format_func={"FP": "false positives", "FN": "missed GT", "mislabelled": "mislabelled",
                                "TP": "true positives"}.get, **ui.bind("f_errors"))
    ui.ensure_valid("f_run", [""] + runs)
    f3.selectbox("Error filter on", [""] + runs, format_func=lambda r: r or "any shown run", **ui.bind("f_run"))
    f4.slider("Hide predictions below", 0.0, 1.0, step=0.05, **ui.bind("f_min_score"))
    tag_filter = T.filter_widget(ctx.cfg_key, ctx.dataset, "scene_tags", f5)
    f6.radio("Colour", list(S.COLOR_BY), **ui.bind("color_by"))

    boxes = cache.boxes(ctx.cfg_key, ctx.view(), tuple(runs))
    filt_runs = [ui.get("f_run")] if ui.get("f_run") in runs else runs
    images = selection.filtered_images(boxes, all_images, classes=ui.get("f_classes"), errors=ui.get("f_errors"),
                                       runs=filt_runs, min_score=ui.get("f_min_score"))
    tagged = T.tagged_images(ctx.cfg_key, ctx.dataset, tag_filter)
    if tagged is not None:
        images = [i for i in images if i in tagged]
    if not images:
        st.info("No image matches these filters. Clear the class, error or tag filter, or lower the score threshold.")
        st.stop()
    if ui.get("image_id") not in images:
        st.session_state["image_id"] = images[0]

    n1, n2, n3, n4 = st.columns([1, 3, 1, 2])
    n1.button("Previous", icon=":material/arrow_back:", on_click=_step, args=(images, -1), width="stretch")
    n2.selectbox("Image", images, format_func=lambda i: f"image {i}", label_visibility="collapsed",
                 **ui.bind("image_id", on_change=lambda: ui.set_state(highlight=None)))
    n3.button("Next", icon=":material/arrow_forward:", on_click=_step, args=(images, 1), width="stretch")
    image_id = int(ui.get("image_id"))
    n4.markdown(f"**{images.index(image_id) + 1} / {len(images)}** filtered images · {len(all_images)} in "
                f"{ui.md(ctx.dataset)}")

    meta = cache.image_meta(ctx.cfg_key, ctx.dataset, image_id)
    box_filter = dict(classes=ui.get("f_classes"), runs=runs, min_score=ui.get("f_min_score"))
    rows = _image_rows(boxes, image_id, box_filter)
    counts = selection.run_counts(rows, runs)

    # one or two runs large, the others a click away
    focus = ui.get("focus_run") if ui.get("focus_run") in runs else None
    default = selection.default_panels(runs, focus)
    chosen = st.pills("Runs shown", runs, selection_mode="multi", default=default, key=f"scene_big:{ctx.dataset}",
                      format_func=lambda r: f"{r} · {counts.get(r, '')}",
                      help="Pick the runs drawn side by side (one or two show large); the counts are on this image.")
    shown = [r for r in runs if r in (chosen or [])] or ([] if runs else [""])
    per_row = 1 if len(shown) <= 2 else 2  # in the image column: one or two runs one above the other
    col_px = PANEL_PX[per_row]
    fig_h = int(np.clip(col_px * meta["height"] / max(meta["width"], 1), 200, 720))
    uri, scale = None, 1.0
    if meta["path"] is None:
        st.warning(f"Image file of image {image_id} not found; drawing on a blank canvas.")
    else:
        uri, _, _, scale = cache.image_uri(meta["path"], {1: 1100, 2: 800}[per_row])
    if not shown:
        st.caption("No run selected: the ground truth alone.")
        shown = [""]

    panels = []
    for run in shown:
        sub = _run_rows(rows, run)
        layers = drawing.image_layers(ctx.cfg_key, ctx.dataset, sub, color_by=ui.get("color_by"),
                                      vocabulary=vocab, highlight=ui.get("highlight"))
        panels.append((run, layers))
    st.markdown(legend_html(legend_items([lay for _, ls in panels for lay in ls])), unsafe_allow_html=True)
    # At the top, side by side: the image panels and the 3D view (filled last, in its fixed place: the scene's place
    # in the page never moves), the tags and notes under the 3D view.
    left, right = st.columns(TOP_COLUMNS)
    with right:
        top_3d = st.container(key="scene3d")
    with left:
        for start in range(0, len(panels), per_row):
            cols = st.columns(per_row) if per_row > 1 else [st.container()]
            for col, (run, layers) in zip(cols, panels[start:start + per_row]):
                fig = image_overlay(uri, meta["K"], layers, width=meta["width"], height=meta["height"],
                                    image_scale=scale, fig_height=fig_h, display_width=col_px, show_legend=False)
                with col:
                    st.markdown(f"**{ui.md(run or 'ground truth')}** · {counts.get(run, '')}")
                    key = f"img_{run}"
                    ui.plot(fig, key, on_select=lambda k=key: _on_box(k),
                            export_name=f"{ctx.dataset}_{image_id}_{run}")

    with right, st.container(border=True):
        t1, t2 = st.columns([3, 2])
        t1.markdown(f"**Tags and notes** · image {image_id} · saved in `{T.store(ctx.cfg_key).path.name}` beside the "
                    "benchmark config")
        t2.download_button("Tags (JSON)", data=lambda: T.store(ctx.cfg_key).to_json(ctx.dataset).encode("utf-8"),
                           file_name=f"tags_{ctx.dataset}.json", mime="application/json", on_click="ignore",
                           icon=":material/sell:", key="tags_dl", width="stretch")
        T.editor(ctx.cfg_key, ctx.dataset, image_id, label="image")
        hl = selection.parse_highlight(ui.get("highlight"))
        if hl is not None:
            kind, run, row = hl
            what = f"GT box {row}" if kind == "gt" else f"{run} prediction {row}"
            st.caption(f"Selected: {what}")
            T.editor(ctx.cfg_key, ctx.dataset, image_id, box=(kind, run if kind == "pred" else "", row), label="box")
    with right:  # this image, every run, as a Rerun recording (built on click)
        rerun_button(ctx, [image_id], name=f"scene_{ctx.dataset}_{image_id}", key="scene_rrd")

    detail_runs = [r for r in shown if r]
    if detail_runs:
        A = cache.analysis(ctx.cfg_key)
        preds = T.with_tags(ctx.cfg_key, ctx.dataset, selection.image_details(
            {r: A.pred_details(ctx.view(r), image_id=image_id) for r in detail_runs}, image_id, "pred"), kind="pred",
            image_id=image_id)
        gts = T.with_tags(ctx.cfg_key, ctx.dataset, selection.image_details(
            {r: A.gt_details(ctx.view(r)) for r in detail_runs}, image_id, "gt"), kind="gt", image_id=image_id)
        st.markdown(f"**Boxes on image {image_id}** (at 3D IoU {ctx.iou:g}; click a header to sort, a row to select "
                    "the box)")
        tp, tg = st.tabs([f"Predictions ({len(preds)})", f"Ground truth ({len(gts)})"])
        with tp:
            st.dataframe(preds, hide_index=True, key="box_preds", placeholder=MISSING,
                         on_select=lambda: _on_row("box_preds", preds, "pred"), selection_mode="single-row",
                         column_config=ui.fmt_table(preds, fraction=PRED_FRACTIONS) | {
                             "yaw_err": st.column_config.NumberColumn("yaw_err (°)", format="%.1f")})
            ui.export_table(preds, f"pred_boxes_{ctx.dataset}_{image_id}", "box_preds_x")
        with tg:
            st.dataframe(gts, hide_index=True, key="box_gts", placeholder=MISSING,
                         on_select=lambda: _on_row("box_gts", gts, "gt"), selection_mode="single-row",
                         column_config=ui.fmt_table(gts, fraction=GT_FRACTIONS))
            ui.export_table(gts, f"gt_boxes_{ctx.dataset}_{image_id}", "box_gts_x")

    def next_image():
        nxt = selection.step_image(images, image_id, 1)
        if nxt is None or nxt == image_id:
            return None
        return nxt, cache.image_meta(ctx.cfg_key, ctx.dataset, nxt), _image_rows(boxes, nxt, box_filter)

    with top_3d:
        view_3d(ctx, image_id, meta, rows, vocab, [r for r in shown if r], next_image)
