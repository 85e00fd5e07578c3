"""OV3D Explorer: the Streamlit entry point. Router and frame only.

``main()`` sets the page up, restores state from the URL, draws the shared sidebar (data source, dataset, runs,
protocol, score threshold, lab-meeting tools), publishes the page context and runs the selected page. Every page
lives in ``app_pages/`` and is registered here explicitly.

Run: ``streamlit run app.py`` (the demo benchmark is built on first start). A shared server names the folders it
serves: ``streamlit run app.py -- --data-root /data/lab`` (repeatable; or ``$OV3D_DATA_ROOT``); configs, data and
images are read only from those, the demo and the app's cache (``ov3d_app.sources``). ``OV3D_DEMO_DIR`` points the
demo source at another folder (the tests use a tiny demo); ``OV3D_DEMO_IMAGES`` sets the images per dataset of the
demo the first start builds (150), in a process of its own (``ov3d_core.demo.build.build_demo_isolated``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import streamlit as st

from ov3d_app import cache, selection, ui
from ov3d_app import navigate
from ov3d_app import state as S
from ov3d_app import tags as T
from ov3d_app.warm_code import warm_code
from ov3d_core.errors import InputError

HERE = Path(__file__).parent
CSS = HERE / "assets" / "style.css"


def _duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def _wait_for_demo() -> str:
    """The demo's config; on the server's first start, the shared build's progress until it is ready (every
    session shows the same build; closing the tab does not stop it)."""
    bar = None
    while True:
        s = cache.demo_status()
        if s.error is not None:
            raise s.error
        if s.path is not None:
            if bar is not None:
                bar.empty()
            return s.path
        left = f"about {_duration(s.eta)} left" if s.eta is not None else "estimating the time left"
        text = (f"Building the demo benchmark (first start of this server only): {s.fraction:.0%} · "
                f"{ui.md(s.message)} · {_duration(s.elapsed)} so far, {left}")
        if bar is None:
            bar = st.progress(s.fraction, text=text)
        else:
            bar.progress(s.fraction, text=text)
        time.sleep(0.5)


def _source_config() -> str | None:
    """The benchmark config path of the chosen source, or None (with the reason shown)."""
    if ui.get("source") == "config":
        path = (ui.get("config_path") or "").strip()
        if not path:
            st.info("Type the path of a benchmark config (YAML) in the sidebar, upload files or scan a folder on "
                    "the **Data source** page, or switch back to the demo.")
            return None
        return path
    return cache.demo_ready() or _wait_for_demo()


def _session_key(base: str) -> str:
    """The data key this session reads: re-checked against the input files on disk (``cache.fresh_key``) when the
    session first opens a source and whenever its source or config changes, then kept, so one session's numbers
    never change under it."""
    ss = st.session_state
    if ss.get("_inputs_base") != base or "_inputs_key" not in ss:
        ss["_inputs_key"] = cache.fresh_key(base)
        ss["_inputs_base"] = base
    return ss["_inputs_key"]


def _sidebar_source() -> None:
    st.sidebar.radio("Data", S.SOURCES, format_func={"demo": "Demo benchmark", "config": "Benchmark config"}.get,
                     horizontal=True, **ui.bind("source", on_change=ui.switch_source))
    if ui.get("source") == "config":
        st.sidebar.text_input("Config file (YAML)", placeholder="/path/to/benchmark.yaml",
                              **ui.bind("config_path", on_change=ui.switch_source))
    st.sidebar.page_link(ui.PAGE_FILE["data"], label="Use your own data", icon=":material/upload_file:",
                         help="Upload GT and prediction files, or scan a folder on the server (Data source page).")


def _sidebar_selection(cat: dict, subsets_of=lambda ds: ()) -> None:
    datasets = cat["datasets"]
    fixes = S.sanitize({k: st.session_state.get(k) for k in ("dataset", "runs", "focus_run")}, datasets=datasets,
                       runs_of=lambda d: cat["runs"].get(d, []))
    st.session_state.update(fixes)
    st.sidebar.selectbox("Dataset", datasets, **ui.bind("dataset"))
    _sidebar_subset(list(subsets_of(ui.get("dataset"))))
    runs = cat["runs"].get(ui.get("dataset"), [])
    st.sidebar.multiselect("Runs", runs, placeholder="all runs", help="Empty: every run on the dataset.",
                           **ui.bind("runs"))
    st.sidebar.radio("Protocol", S.PROTOCOLS, horizontal=True,
                     help="dataset-level: every class is scored on every image (OV3D-Bench). target-aware: each "
                          "image is prompted only with its GT classes (the oracle of OVMono3D / DetAny3D).",
                     **ui.bind("protocol"))
    st.sidebar.slider("Score threshold", 0.0, 1.0, step=0.05, help="Predictions below it are dropped before scoring.",
                      **ui.bind("min_score"))
    st.sidebar.select_slider("IoU for TP / FP / FN", options=list(S.IOU_CHOICES),
                             help="3D IoU at which the inspector and tables mark boxes as TP, FP or FN.",
                             **ui.bind("iou"))


def _sidebar_subset(subsets: list[str]) -> None:
    """The image-subset selector (all images, or one of the dataset's ``image_subsets``): every page scores only
    its images (``Context.view``). A name the dataset lacks (an old link, another dataset) is said, then dropped."""
    chosen = ui.get("subset")
    if chosen is not None and chosen not in subsets:
        st.warning(f"Dataset **{ui.md(ui.get('dataset'))}** has no image subset **{ui.md(chosen)}** (its subsets: "
                   f"{', '.join(ui.md(n) for n in subsets) or 'none'}): showing all images.",
                   icon=":material/warning:")
        ui.set_state(subset=None)
    if not subsets:
        return
    st.sidebar.selectbox("Images", [None, *subsets], format_func=lambda n: "all images" if n is None else n,
                         help="Score every page on one of the dataset's image subsets (`image_subsets` in the "
                              "benchmark config: the prompt probe, the runtime subset), GT and predictions alike.",
                         **ui.bind("subset"))


def _sidebar_lab_meeting() -> None:
    with st.sidebar.expander("Lab meeting", icon=":material/co_present:"):
        st.toggle("Presentation mode", help="Larger fonts, no sidebar; step through pinned views.",
                  **ui.bind("presentation"))
        if st.button("Pin this view", icon=":material/push_pin:", width="stretch"):
            views = list(ui.get("saved_views") or [])
            view = ui.current_view()  # titled by what its page shows (not the image last opened elsewhere)
            view["title"] = selection.pinned_title(view["params"], ui.PAGE_TITLE.get(view["page"], view["page"]),
                                                   view["page"])
            views.append(view)
            ui.set_state(saved_views=views, view_idx=len(views) - 1)
        views = ui.get("saved_views") or []
        for i, v in enumerate(views):
            c1, c2 = st.columns([5, 1])
            if c1.button(f"{i + 1}. {ui.md(v['title'])}", key=f"view_go_{i}", width="stretch"):
                _go_to_view(i)
            if c2.button("", key=f"view_rm_{i}", icon=":material/close:", help="Unpin"):
                ui.set_state(saved_views=[w for j, w in enumerate(views) if j != i], view_idx=0)
                st.rerun()
        if not views:
            st.caption("No pinned views yet. Set up a view, then pin it; the list steps through them.")
        else:
            _download_pinned_views(views)


def _download_pinned_views(views: list[dict]) -> None:
    """The pinned views with every tag and note of the datasets they show, as one JSON file."""
    ctx = st.session_state.get("_ctx")
    source, cfg_path = ui.get("source"), ui.get("config_path") or ""
    with ui.guard("The pinned-views download"):
        store = T.store(ctx.cfg_key) if ctx is not None else None
        datasets = list(cache.catalog(ctx.cfg_key)["datasets"]) if ctx is not None else []
        bundle = T.pinned_bundle(views, tag_store=store, source=source, config_path=cfg_path, datasets=datasets,
                                 default_page=ui.PAGES[0][3])  # built here: a bad tags file is a message
        st.download_button("Download pinned views (JSON)", data=json.dumps(bundle, indent=1, ensure_ascii=False),
                           file_name="pinned_views.json", mime="application/json", on_click="ignore",
                           icon=":material/download:", key="views_dl", width="stretch",
                           help="The pinned views (title, page, settings, link) and every tag and note of the "
                                "datasets they show, for a colleague.")
        if store is None:
            st.caption("No benchmark is loaded: the file lists the views without tags.")
            return
        elsewhere = sum(1 for v in views if not T.of_source(v, source, cfg_path))
        if elsewhere:
            st.caption(f"{elsewhere} pinned view{'s are' if elsewhere != 1 else ' is'} of another data source: the "
                       f"file lists {'them' if elsewhere != 1 else 'it'} without tags (those are saved beside that "
                       "config).")


def _go_to_view(i: int) -> None:
    views = ui.get("saved_views") or []
    if not views:
        return
    i %= len(views)
    ui.set_state(view_idx=i)
    ui.apply_view(views[i])
    st.switch_page(ui.PAGE_FILE.get(views[i]["page"], ui.PAGES[0][0]))


def _presentation_bar() -> None:
    """Top bar of presentation mode: step through pinned views, leave the mode."""
    views = ui.get("saved_views") or []
    i = int(ui.get("view_idx") or 0)
    c1, c2, c3, c4 = st.columns([1.4, 5, 1.2, 2])
    if c1.button("Previous", icon=":material/arrow_back:", disabled=not views, key="pres_prev"):
        _go_to_view(i - 1)
    title = f"{i + 1} / {len(views)} · {views[i % len(views)]['title']}" if views else "No pinned views"
    with c2.container(key="ov3d-view-title"):  # styled through its key's CSS class (assets/style.css)
        st.markdown(ui.md(title))
    if c3.button("Next", icon=":material/arrow_forward:", disabled=not views, key="pres_next"):
        _go_to_view(i + 1)
    if c4.button("Exit presentation", icon=":material/close_fullscreen:", key="pres_exit"):
        ui.set_state(presentation=False)
        st.rerun()


def main() -> None:
    ui.init_state()
    presenting = bool(ui.get("presentation"))
    st.set_page_config(page_title="OV3D Explorer", page_icon="🧊", layout="wide",
                       initial_sidebar_state="collapsed" if presenting else "auto")
    if presenting and CSS.exists():
        st.markdown(f"<style>{CSS.read_text()}</style>", unsafe_allow_html=True)
    pages = [st.Page(HERE / f, title=t, icon=i, default=True) if k == 0  # the default page is served at "/"
             else st.Page(HERE / f, title=t, icon=i, url_path=u) for k, (f, t, i, u) in enumerate(ui.PAGES)]
    nav = st.navigation(pages, position="hidden" if presenting else "sidebar")
    st.session_state["_page"] = nav.url_path or ui.PAGES[0][3]  # the default page is served at "/"
    navigate.pending_switch()  # an "Open" click (a callback) asked for another page: go there before any page runs

    st.sidebar.markdown("### OV3D Explorer")
    _sidebar_source()
    st.session_state["_ctx"] = None
    try:
        cfg = _source_config()
        if cfg is not None:
            key = _session_key(cache.config_key(cfg))
            cat = cache.catalog(key)
            if not cat["datasets"]:
                raise InputError(cfg, None, "datasets", "at least one dataset", "none")
            _sidebar_selection(cat, cache.benchmark(key).image_subsets)
            ds = ui.get("dataset")
            all_runs = tuple(cat["runs"].get(ds, []))
            st.session_state["_ctx"] = ui.Context(
                cfg_key=key, dataset=ds, runs=tuple(S.active_runs(st.session_state, list(all_runs))),
                all_runs=all_runs, protocol=ui.get("protocol"), min_score=float(ui.get("min_score")),
                iou=float(ui.get("iou")), subset=ui.get("subset"))
            where = "Demo benchmark" if ui.get("source") == "demo" else Path(cache.path_of(key)).name
            st.sidebar.caption(f"{ui.md(where)} · {ui.md(cat['name'])}")
    except Exception as exc:  # noqa: BLE001 - a bad source is a message, never a traceback
        ui.show_error(exc)
    _sidebar_lab_meeting()
    warm_code()  # the code of the charts and tables the next page may draw, loaded while the browser is idle
    if presenting:
        _presentation_bar()
    ui.sync_query_params()  # sidebar and callback changes (a page may st.stop() before the end)
    try:
        nav.run()
    except Exception as exc:  # noqa: BLE001 - whatever a page did not catch: a message, never a traceback
        ui.show_error(exc, "This page")
    with ui.guard("The load warnings"):
        ui.show_load_warnings()  # with those of the loads the page caused, under its header
    ui.sync_query_params()  # changes the page made
    ctx = st.session_state.get("_ctx")
    if ctx is not None:
        cache.warm_in_background(ctx.cfg_key, ctx, ui.get("focus_run"))  # after the first paint: the prompt lab's crops, the other runs


main()
