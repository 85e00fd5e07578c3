"""The "Rerun (.rrd)" button of the scene inspector and the object view: a download of the Rerun recording of the
image shown (``ov3d_core.export.rerun``: image, depth map / point cloud, camera, GT and every run's boxes in their
status colours), built when the button is clicked, like the figure exports (``ui.export_figure``).

rerun-sdk is optional (the ``rerun`` extra) and is imported only when a recording is built. Without it the button
is a plain button whose click shows the one-line message naming the extra."""

from __future__ import annotations

from typing import Sequence

import streamlit as st

from ov3d_app import cache
from ov3d_core.viz.export import safe_file_name

LABEL = "Rerun (.rrd)"
HELP = ("The image, its depth map / point cloud, the camera and the GT and every run's boxes (status colours and "
        "labels) as a Rerun recording: open it with `rerun FILE.rrd` (pip install rerun-sdk).")


def file_name(name: str) -> str:
    """``name`` as a safe ``.rrd`` file name (the figure exports' rule, ``viz.export.safe_file_name``)."""
    return safe_file_name(name or "scene", "rrd")


def rerun_button(ctx, image_ids: Sequence[int], *, name: str, key: str, runs: Sequence[str] | None = None) -> None:
    """A download button for the recording of ``image_ids`` of the page's dataset under the sidebar's view (protocol,
    score threshold, IoU), with the boxes of ``runs`` (default: the page's runs). Files are read only inside the
    allowed roots (``cache.readable``)."""
    from ov3d_core.export.rerun import MISSING_MESSAGE, rerun_available

    if not rerun_available():
        if st.button(LABEL, key=f"rrd:{key}", icon=":material/3d_rotation:", width="stretch", help=HELP):
            st.error(MISSING_MESSAGE, icon=":material/error:")
        return
    analysis, view = cache.analysis(ctx.cfg_key), ctx.view()
    ids, chosen = [int(i) for i in image_ids], tuple(ctx.runs if runs is None else runs)

    def data() -> bytes:  # on click only, outside the script run: no Streamlit calls here
        from ov3d_core.export.rerun import export_rerun

        return export_rerun(analysis, view, ids, chosen, readable=cache.readable).data

    st.download_button(LABEL, data=data, file_name=file_name(name), mime="application/octet-stream",
                       key=f"dl:{key}:rrd", on_click="ignore", icon=":material/3d_rotation:", width="stretch",
                       help=HELP)
