"""Data source: your own benchmark in a minute. Upload GT and prediction files (and an image folder), or scan a
folder on the server as ``ov3d init FOLDER`` does; either way the app writes a commented benchmark config into its
cache (never next to your data, never over an existing file), shows what it found and guessed, and opens it.
The current benchmark's runs that fail to load are listed with their messages."""

from __future__ import annotations

import streamlit as st

from ov3d_app.drawing import MISSING
from ov3d_app import cache, sources, ui

ui.page_header("Data source", "Bring your own GT and predictions: upload the files, or point at a folder on the "
               "server. The app recognises Omni3D GT JSON, Cube R-CNN / DetAny3D JSON and Cube R-CNN .pth "
               "predictions, KITTI label_2 and result folders, images, depth and point-cloud folders, and writes "
               "a commented benchmark config (what `ov3d init FOLDER` writes).")
RESULT = "_source_result"  # the last config written on this page: path, YAML text, summary tables


def _open(path: str) -> None:
    ui.switch_source(source="config", config_path=path)
    st.session_state.pop(RESULT, None)
    st.switch_page(ui.PAGE_FILE["overview"])


def _remember(fc) -> None:
    st.session_state[RESULT] = {"path": sources.display_path(fc.path), "text": fc.text,
                                "summary": sources.scan_summary(fc.scan)}


def _current() -> None:
    ctx = ui.context()
    if ctx is None:
        return
    cat = cache.catalog(ctx.cfg_key)
    st.subheader("Open now")
    st.markdown(f"**{ui.md(cat['name'])}** · {len(cat['datasets'])} dataset(s) · "
                f"{sum(len(r) for r in cat['runs'].values())} run(s)")
    with st.spinner("Checking every run file…"):
        failed = cache.failures(ctx.cfg_key)
    for dataset, run, exc in failed:
        st.error(f"Run **{ui.md(run)}** on {ui.md(dataset)} could not be loaded: {ui.md(ui.error_text(exc))}",
                 icon=":material/error:")
    warned = cache.load_warnings(ctx.cfg_key)  # every dataset and run is loaded by now
    for w in warned:
        st.warning(ui.warning_text(w), icon=":material/warning:")
    if not failed:
        st.caption("Every run file of this benchmark loads" + (f", with {len(warned)} warning(s) above."
                                                                if warned else "."))


def _result() -> None:
    res = st.session_state.get(RESULT)
    if not res:
        return
    st.subheader("Found")
    summary = res["summary"]
    if summary["datasets"]:
        st.dataframe(summary["datasets"], hide_index=True, placeholder=MISSING)
    if summary["runs"]:
        st.dataframe(summary["runs"], hide_index=True, placeholder=MISSING)
    else:
        st.warning("No prediction files were recognised; the benchmark has GT only.")
    if summary["skipped"]:
        with st.expander(f"Not used ({len(summary['skipped'])})"):
            st.dataframe(summary["skipped"], hide_index=True, placeholder=MISSING)
    c1, c2 = st.columns([2, 1])
    if c1.button("Open this benchmark", type="primary", icon=":material/play_arrow:", key="src_open"):
        _open(res["path"])
    c2.download_button("Download the config", res["text"].encode("utf-8"), file_name="benchmark.yaml",
                       mime="application/x-yaml", on_click="ignore", icon=":material/download:")
    st.caption(f"Written to {ui.code(res['path'])}. Lines marked \"guessed\" are guesses; check them.")
    with st.expander("The config"):
        st.code(res["text"], language="yaml")


with ui.guard("The current benchmark"):
    _current()

upload, scan = st.tabs(["Upload files", "A folder on the server"])
with upload:
    gt = st.file_uploader("Ground truth: Omni3D JSON (one file per dataset)", type=["json"],
                          accept_multiple_files=True, key="up_gt")
    preds = st.file_uploader("Predictions: Cube R-CNN / DetAny3D JSON or Cube R-CNN .pth (with its "
                             "category_list.txt)", type=["json", "pth", "txt"], accept_multiple_files=True,
                             key="up_pred")
    images = st.file_uploader("Images (optional): the folder the GT's file_path values are relative to",
                              type=["jpg", "jpeg", "png"], accept_multiple_files="directory", key="up_img")
    # what this script run received (an upload is in the server's hands once it is counted here)
    st.caption(f"Received: {len(gt or [])} GT file(s) · {len(preds or [])} prediction file(s) · "
               f"{len(images or [])} image(s)")
    name = st.text_input("Benchmark name", placeholder="my benchmark", key="up_name")
    st.caption("Uploaded files are stored in a new folder of the app's cache on the server; nothing is "
               "overwritten, and the same files uploaded again reuse that folder.")
    if st.button("Build the benchmark", icon=":material/build:", disabled=not gt, key="up_build"):
        with ui.guard("The upload"), st.spinner("Storing and reading the files…"):
            def files(items):
                return [sources.Upload(f.name, f.getvalue()) for f in items or ()]

            folder = sources.store_upload(files(gt), files(preds), files(images))
            _remember(sources.config_for_folder(folder, out_dir=folder, name=name.strip() or "uploaded benchmark"))

with scan:
    roots = sources.allowed_roots()
    st.caption("Folders this server reads from: " + ", ".join(ui.code(sources.display_path(r)) for r in roots))
    folder = st.text_input("Folder", placeholder="data/my_benchmark", key="scan_folder",
                           help="Searched recursively, as `ov3d init FOLDER` does. The config is written into "
                                "the app's cache, not into the folder.")
    if st.button("Scan", icon=":material/search:", disabled=not folder.strip(), key="scan_go"):
        if not sources.is_under_roots(folder.strip(), roots):  # the same words whether the folder exists or not
            st.info(sources.ALLOW_ROOT_HINT, icon=":material/lock_open:")
        with ui.guard("The scan"), st.spinner("Looking at the files…"):
            _remember(sources.config_for_folder(folder.strip(), roots=roots))

with ui.guard("The result"):
    _result()

with ui.guard("The runs"):
    ctx = ui.context()
    if ctx is not None:
        st.subheader("The runs of the open benchmark")
        st.caption("OV3D-Bench Table 1, as far as the config says it: vocabulary, prompt, training data, format.")
        st.dataframe(cache.analysis(ctx.cfg_key).methods(), hide_index=True, placeholder=MISSING, key="src_methods")
