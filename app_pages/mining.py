"""Failure mining: the images (and the boxes behind them) to open first, ranked by what the user asks
(``Analysis.mine``: cross-class false positives, what the oracle hides, depth error of true positives, runs that
disagree on a label, GT that every run misses). A click on a ranked image opens it in the scene inspector with its
top box highlighted; a GT box opens the object view (every run on that object); a list or an image can be pinned for
presentation (the Lab-meeting list; a pinned image is also tagged "for the talk")."""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from ov3d_app import cache, drawing, navigate, selection, ui
from ov3d_app import state as S
from ov3d_app import tags as T
from ov3d_app.drawing import MISSING
from ov3d_core.analysis import MINING_KINDS

ui.page_header("Failure mining", "The images where the detectors fail, ranked: open one in the scene inspector, a "
               "GT object in the object view, or pin the list for a talk. Statuses at the sidebar's IoU under its "
               "protocol and threshold.")
ctx, in_subset = ui.per_box(ui.need_context())  # the lists' images: the subset's (see ui.per_box)

KIND_LABEL = {"cross-class": "Cross-class false positives", "oracle-gain": "What the target-aware oracle hides",
              "depth-error": "Depth error of true positives", "disagreement": "Runs disagree on the label",
              "missed-by-all": "Missed by every run"}
#: What each list is for (the Ranking's own description says what it counts).
KIND_HELP = {"cross-class": "Well localised, wrongly named: the errors an open-vocabulary detector makes and a "
                            "target-aware evaluation hides.",
             "oracle-gain": "The false positives the target-aware oracle deletes, with the AP3D each image's removals "
                            "alone would win (exact for the top 20 images).",
             "depth-error": "Monocular depth is the hard part of 3D: matched boxes whose centre depth is furthest off.",
             "disagreement": "GT objects several runs find but name differently (one column per run: its label).",
             "missed-by-all": "Objects no run matches; n_localised counts the runs that find the box under another "
                              "label."}
#: Kinds over several runs (the others rank one run).
MULTI_RUN = ("disagreement", "missed-by-all")
GALLERY = 12
COLS = 6
PIN_TAG = "for the talk"


def _box_key(kind: str, run: str, rec) -> tuple[str, int, int | None]:
    """(highlight key, image id, GT row of the object view or None) of one box row of a ranking."""
    g = rec.get("gt_row", rec.get("other_gt_row"))
    g = None if g is None or pd.isna(g) else int(g)
    if "pred_row" in rec and kind not in MULTI_RUN:
        return f"pred|{run}|{int(rec['pred_row'])}", int(rec["image_id"]), g
    return f"gt||{int(rec['gt_row'])}", int(rec["image_id"]), g


def _columns(df: pd.DataFrame) -> dict:
    """Counts as integers (``n_*`` and ``disagreement``, stored as floats by the ranking), other floats with three
    decimals."""
    cfg = {c: st.column_config.NumberColumn(c, format="%d") for c in df.columns
           if c.startswith("n_") or c == "disagreement"}
    rest = tuple(c for c in df.columns if c not in cfg and df[c].dtype.kind == "f")
    return ui.fmt_table(df, fraction=rest) | cfg


def _open_scene(image_id: int, highlight: str | None, run: str | None):
    """The scene inspector on one image with one box highlighted (a callback: this page does not run again before
    the inspector opens, ``navigate``)."""
    navigate.go_to("scene", image_id=int(image_id), highlight=highlight, focus_run=run or ui.get("focus_run"),
                   f_classes=[], f_errors=[], f_run="", f_min_score=0.0)


def _open_object(gt_row: int):
    navigate.go_to("object", gt_row=int(gt_row))


def _on_image_row(images: pd.DataFrame, first: pd.DataFrame, kind: str, run: str | None, key: str):
    """A ranked image selected: open it in the scene inspector, its top box highlighted; the table comes back
    without the selection (a fresh key) when the user returns."""
    rows = selection.dataframe_rows(st.session_state.get(key))
    if rows:
        opened = int(images.iloc[rows[0]]["image_id"])
        st.session_state["_mine_nonce"] = int(st.session_state.get("_mine_nonce", 0)) + 1
        hl, _, _ = _box_key(kind, run, first.loc[opened].to_dict() | {"image_id": opened})
        _open_scene(opened, hl, run)


def _on_box_row(key: str):
    rows = selection.dataframe_rows(st.session_state.get(key))
    st.session_state["_mine_box"] = (key, rows[0] if rows else 0)  # a row of that table only


def _scene_view(image_id: int, highlight: str | None, run: str | None) -> dict:
    """A pinnable snapshot of the scene inspector on one image with one box highlighted."""
    state = {k: st.session_state.get(k) for k in S.URL_KEYS}
    state.update(image_id=int(image_id), highlight=highlight, focus_run=run or state.get("focus_run"), f_classes=[],
                 f_errors=[], f_run="", f_min_score=0.0)
    params = S.state_to_query(state)
    return {"title": S.view_title(params, ui.PAGE_TITLE["scene"]), "page": "scene", "params": params}


def _pin(view: dict):
    ui.set_state(saved_views=[*(ui.get("saved_views") or []), view])


def _pin_image(image_id: int, highlight: str | None, run: str | None):
    _pin(_scene_view(image_id, highlight, run))
    store = T.store(ctx.cfg_key)
    item = store.get(ctx.dataset, image_id)
    store.set(ctx.dataset, image_id, tags=[*item.tags, PIN_TAG])


with ui.guard("The failure-mining list"):
    runs = list(ctx.runs)
    if not runs:
        st.stop()
    A = cache.analysis(ctx.cfg_key)
    c1, c2, c3 = st.columns([2.2, 3, 1.4])
    ui.ensure_valid("mine_kind", list(MINING_KINDS))
    c1.selectbox("List", list(MINING_KINDS), format_func=KIND_LABEL.get, **ui.bind("mine_kind"))
    kind = ui.get("mine_kind")
    if kind in MULTI_RUN:
        chosen = c2.multiselect("Runs compared", runs, default=runs, key="mine_runs",
                                help="The list is over these runs (at least one).") or runs
        run, view = None, ctx.view()
    else:
        ui.ensure_valid("focus_run", runs)
        run = c2.selectbox("Run", runs, **ui.bind("focus_run", ":mine"))
        chosen = None
        view = ctx.view(run)
        if kind == "oracle-gain" and ctx.protocol != "dataset-level":
            view = view.with_(protocol="dataset-level")
            st.caption("The oracle's gain is measured against the dataset-level protocol: this list scores the run "
                       "dataset-level whatever the sidebar says.")
    with st.spinner("Mining"):
        ranking = A.mine(view, kind, runs=None if chosen is None else tuple(chosen))
    images, boxes = ranking.images, ranking.boxes
    if in_subset is not None:  # the whole dataset's ranking, cut to the subset's images (per-image values)
        images = images[images["image_id"].isin(in_subset)].reset_index(drop=True)
        boxes = boxes[boxes["image_id"].isin(in_subset)].reset_index(drop=True)
        if "rank" in images:
            images["rank"] = np.arange(1, len(images) + 1)
    if c3.button("Pin this list", icon=":material/push_pin:", key="mine_pin", width="stretch",
                 help="Add this list to the Lab-meeting views (presentation mode steps through them)."):
        v = ui.current_view()
        v["title"] = f"{KIND_LABEL[kind]} · {run or ', '.join(chosen)} · {ctx.dataset}"
        _pin(v)
        st.toast("Pinned the list", icon=":material/push_pin:")
    st.markdown(f"**{ui.md(KIND_LABEL[kind])}**: {ui.md(ranking.description)}. {ui.md(KIND_HELP[kind])}")
    m1, m2, m3 = st.columns(3)
    m1.metric("Images", f"{len(images)}")
    m2.metric("Boxes", f"{len(boxes)}")
    m3.metric("Top image", f"{int(images['image_id'].iloc[0])}" if len(images) else MISSING,
              help=f"Images are ranked by {ranking.value} (ties: more boxes, then the lower image id).")
    if images.empty:
        st.info("Nothing to mine: no image has such a box for this run, protocol and threshold.")
        st.stop()

    n_open = int(st.session_state.get("_mine_nonce", 0))
    first = boxes.groupby("image_id", sort=False).head(1).set_index("image_id")  # each image's top box
    left, right = st.columns([2, 3])
    with left:
        st.markdown("**Ranked images** (select a row to open it in the scene inspector)")
        key = f"mine_images:{kind}:{n_open}"
        st.dataframe(images, hide_index=True, key=key,
                     on_select=lambda: _on_image_row(images, first, kind, run, key),
                     selection_mode="single-row", placeholder=MISSING, height=min(38 + 35 * len(images), 420),
                     column_config=_columns(images))
        ui.export_table(T.with_tags(ctx.cfg_key, ctx.dataset, images, kind="image"), f"mining_{kind}_{ctx.dataset}",
                        "mine_img_x")

    with right:
        choices = images["image_id"].astype(int).tolist()
        pick = st.selectbox("Boxes behind the ranking, on", [None, *choices], key=f"mine_img_sel:{kind}",
                            format_func=lambda i: "every ranked image" if i is None else f"image {i}")
        sub = boxes if pick is None else boxes[boxes["image_id"] == pick]
        sub = sub.reset_index(drop=True)
        bkey = f"mine_boxes:{kind}:{pick}"
        st.dataframe(sub, hide_index=True, key=bkey, on_select=lambda: _on_box_row(bkey),
                     selection_mode="single-row", placeholder=MISSING, height=min(38 + 35 * len(sub), 380),
                     column_config=_columns(sub))
        box_of = ({"kind": "pred", "row": "pred_row", "run": run} if "pred_row" in sub and kind not in MULTI_RUN
                  else {"kind": "gt", "row": "gt_row"})  # the box a row stands for, as ``_box_key`` reads it
        ui.export_table(T.with_tags(ctx.cfg_key, ctx.dataset, sub, **box_of), f"mining_{kind}_boxes_{ctx.dataset}",
                        "mine_box_x")
        box_key, i = st.session_state.get("_mine_box") or (None, 0)
        i = int(i) if box_key == bkey else 0
        rec = sub.iloc[min(i, len(sub) - 1)].to_dict()
        hl, img, g = _box_key(kind, run, rec)
        what = hl.split("|")
        st.caption(f"Box: {'GT' if what[0] == 'gt' else ui.md(what[1]) + ' prediction'} {what[2]} on image {img} "
                   "(select a row for another)")
        b1, b2, b3 = st.columns(3)
        b1.button("Open in the scene inspector", key="mine_box_open", icon=":material/view_in_ar:", width="stretch",
                  on_click=_open_scene, args=(img, hl, run))
        b2.button("Every run on its GT", key="mine_box_object", icon=":material/center_focus_strong:",
                  width="stretch", disabled=g is None, on_click=_open_object, args=(g,),
                  help="The object view: each run's best-overlapping box for this GT object, side by side.")
        if b3.button("Pin this image", key="mine_box_pin", icon=":material/push_pin:", width="stretch",
                     help=f"Pin the inspector on this image and box, and tag the image '{PIN_TAG}'."):
            _pin_image(img, hl, run)
            st.toast(f"Pinned image {img}", icon=":material/push_pin:")

    st.subheader(f"Top {min(GALLERY, len(images))} images")
    st.caption("The boxes that put the image on the list are drawn thick, the others thin.")
    vocab = cache.dataset_info(ctx.cfg_key, ctx.dataset)["vocabulary"]
    draw_runs = (run,) if run else (runs[0],)
    table = cache.boxes(ctx.cfg_key, view, draw_runs)
    keys = [(_box_key(kind, run, r)[0]) for r in boxes.to_dict("records")]
    listed = {k.replace("gt||", f"gt|{draw_runs[0]}|") for k in keys}
    gallery = images.head(GALLERY)
    by_image = selection.rows_by_image(table[table["run"] == draw_runs[0]], gallery["image_id"])
    grid = st.columns(COLS)
    for k, rec in enumerate(gallery.itertuples()):
        image_id = int(rec.image_id)
        rows = by_image[image_id]
        if run is None:
            rows = rows[rows["kind"] == "gt"]  # lists over several runs are about GT objects
        with grid[k % COLS]:
            st.image(drawing.grid_thumbnail(ctx.cfg_key, view, draw_runs, image_id, tuple(rows.index.tolist()),
                                            selection.labels_with_keys(rows, listed), color_by="status",
                                            vocabulary=vocab), width="stretch")
            value = getattr(rec, ranking.value)
            st.caption(f"#{rec.rank} · image {image_id} · {ranking.value} {value:g} · {rec.n_boxes} box"
                       f"{'es' if rec.n_boxes != 1 else ''}")
            top = first.loc[image_id].to_dict() | {"image_id": image_id}
            hl, _, _ = _box_key(kind, run, top)
            o1, o2 = st.columns([3, 1.3])
            o1.button("Open", key=f"mine_open_{image_id}", icon=":material/open_in_new:", width="stretch",
                      help="This image in the scene inspector, its top box highlighted.", on_click=_open_scene,
                      args=(image_id, hl, run))
            if o2.button("", key=f"mine_pin_{image_id}", icon=":material/push_pin:", width="stretch",
                         help=f"Pin the inspector on this image and tag it '{PIN_TAG}'."):
                _pin_image(image_id, hl, run)
                st.toast(f"Pinned image {image_id}", icon=":material/push_pin:")
