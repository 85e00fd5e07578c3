"""Streamlit's code for the elements the pages draw, loaded in the browser ahead of the click that needs it.

Streamlit loads an element's JavaScript the first time a page of the tab shows one: plotly.js (the 4.7 MB
``PlotlyChart`` module) with the first chart, the data grid with the first table, ``st.pills``' module with the
first pills. The failure-mining page has no chart, so in a fresh tab its first "Open" fetched, compiled and ran
plotly.js between the click and the inspector's image panels (~0.4 s on 2 cores, bench/RESULTS.md). This
component, in the sidebar of every page (hidden), imports those modules once per tab, one at a time, each when the
page has settled (script run over, no element loading, every chart drawn) and the browser is idle; Streamlit's
own import of the same URL later finds the module loaded.

The modules are found by name in the installed Streamlit's static files (Streamlit 1.67 names each
``<Element>.<hash>.js``); a Streamlit without them warms nothing, and a module that fails to load is left to
Streamlit, which loads it when a page needs it as it would without this component.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import streamlit as st

#: The root element's class (CSS, browser tests).
ROOT_CLASS = "ov3d-warm"
#: Modules of the elements the pages draw, the largest first: charts (plotly.js), tables, pills, markdown with HTML
#: (the legends), text inputs (the tag editors' notes): every module the Scene inspector needs beyond the Overview's
#: and the failure-mining page's (tests/app/test_mining_browser.py).
MODULES = ("PlotlyChart", "DataFrame", "ButtonGroup", "rehype-raw", "TextInput")

#: Whether the page has finished what the user is waiting for: no script run in progress, no element still
#: loading, every chart drawn (shared with ``gl_scene``'s stand-in and renderer probe).
PAGE_SETTLED_JS = r"""
const pageSettled = () => {
  const app = document.querySelector('.stApp');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.querySelector('[data-testid="stSkeleton"]')) return false;
  return [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].every(
    (c) => c.querySelector('.js-plotly-plot .main-svg'));
};
"""

_JS = PAGE_SETTLED_JS + r"""
export default function (component) {
  const { data } = component;
  if (window.__ov3dWarm || !data.modules || !data.modules.length) return;
  // Streamlit's entry module: its chunks are imported relative to it (the same URL is the same module)
  const entry = document.querySelector('script[type="module"][src*="/static/js/index."]');
  if (!entry) return;
  window.__ov3dWarm = { done: [] };
  const idle = window.requestIdleCallback || ((f) => setTimeout(f, 200));
  const queue = [...data.modules];
  let calm = 0;
  const poll = () => {
    if (!queue.length) return;
    calm = pageSettled() ? calm + 1 : 0;  // settled twice, 250 ms apart, then the next idle period
    if (calm < 2) { setTimeout(poll, 250); return; }
    calm = 0;
    idle(() => {
      const name = queue.shift();
      import(new URL(name, entry.src).href)
        .then(() => window.__ov3dWarm.done.push(name))
        .catch((e) => console.debug('ov3d: ' + name + ' is left to Streamlit (' + e + ')'))
        .finally(() => setTimeout(poll, 250));
    }, { timeout: 2000 });
  };
  setTimeout(poll, 250);
}
"""

#: An element of its own that takes no room (its container is taken out of the sidebar's layout). More than one
#: line: Streamlit reads a one-line string with brackets as a file name.
_CSS = f"""[data-testid="stElementContainer"]:has(.{ROOT_CLASS}) {{
  display: none;
}}"""


@functools.cache
def module_files() -> tuple[str, ...]:
    """File names of ``MODULES`` in the installed Streamlit's ``static/js`` (those found, in ``MODULES``' order)."""
    js = Path(st.__file__).parent / "static" / "static" / "js"
    names = sorted(p.name for p in js.glob("*.js")) if js.is_dir() else []
    found = []
    for module in MODULES:
        pattern = re.compile(re.escape(module) + r"\.[A-Za-z0-9_-]+\.js")
        found += [n for n in names if pattern.fullmatch(n)][:1]
    return tuple(found)


def warm_code() -> None:
    """Mount the warmer (in the sidebar; it does its work once per browser tab)."""
    with st.sidebar:
        _COMPONENT(key="ov3d_warm", data={"modules": list(module_files())}, width="stretch", height="content")


def _component():
    from streamlit.components.v2 import component

    return component("ov3d.warm_code", html=f"<div class='{ROOT_CLASS}'></div>", css=_CSS, js=_JS,
                     isolate_styles=False)


_COMPONENT = _component()
