"""Opening another page from a click without running the page the click was on.

A button that calls ``st.switch_page`` in the script (``if st.button(...): st.switch_page(...)``) costs a whole run
of the page it is on before the switch: the click's run draws that page again up to the button (the sample grid's
thumbnails, the failure-mining lists and gallery), then the target page runs. ``st.switch_page`` cannot be called
from a widget callback (the callback runs before ``st.navigation`` has registered the pages of the run). So the
"Open" buttons are callbacks (``go_to``): they write the target page's state and name the page; ``app.py`` switches
to it right after registering the pages (``pending_switch``), before the sidebar and before any page runs.
"""

from __future__ import annotations

import streamlit as st

from ov3d_app import ui

#: Session-state key of the page a callback asked to open (a url path of ``ui.PAGES``).
GOTO_KEY = "_ov3d_goto"


def go_to(page: str, **state) -> None:
    """An ``on_click`` callback: write the canonical ``state`` keys (``ui.set_state``) and open ``page`` (a url path
    of ``ui.PAGES``, e.g. "scene") in the run the click starts."""
    if page not in ui.PAGE_FILE:
        raise KeyError(f"unknown page {page!r}")
    ui.set_state(**state)
    st.session_state[GOTO_KEY] = page


def pending_switch() -> None:
    """Switch to the page a callback asked for (``go_to``), if any; app.py calls it right after ``st.navigation``."""
    page = st.session_state.pop(GOTO_KEY, None)
    if page is not None and page in ui.PAGE_FILE and st.session_state.get("_page") != page:
        st.switch_page(ui.PAGE_FILE[page])
