"""One WebGL scene that stays in the page: the Scene inspector's 3D view.

``st.plotly_chart`` builds a new chart, and so a new WebGL scene, for every new figure (Streamlit 1.67 hashes the
figure into the chart's element id, key or not), and then draws it a second time once mounted. In a browser without
a GPU building a scene takes 1-2 s. This component (``st.components.v2``, in the page's own DOM) keeps one plotly.js
graph div for as long as the page shows the inspector and hands every new figure to ``Plotly.react``, which redraws
the existing scene's traces; turning the view off hides the div (the scene stays), turning it on again with the same
figure only shows it. While hidden before its first figure, the div draws a stand-in scene once, when the browser
is idle, so that the first figure reuses a scene whose shaders are compiled.

plotly.js is the copy the page already has in ``window.Plotly`` (Streamlit's own, which its charts load: the Scene
inspector's image panels do), the same that draws every other figure of the app; without one, the installed
``plotly`` package's ``plotly.min.js``, served by Streamlit's component file route (the browser caches it).
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

#: The element the scene lives in (its class, for CSS and browser tests).
ROOT_CLASS = "ov3d-gl"

_JS = r"""
const loadPlotly = (src) => {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.__ov3dPlotly) {
    window.__ov3dPlotly = new Promise((resolve, reject) => {
      const s = document.createElement('script');
      s.src = src;
      s.onload = () => resolve(window.Plotly);
      s.onerror = () => { window.__ov3dPlotly = null; reject(new Error('could not load ' + src)); };
      document.head.appendChild(s);
    });
  }
  return window.__ov3dPlotly;
};

export default function (component) {
  const { data, parentElement } = component;
  const root = parentElement.querySelector('.__ROOT__');
  const graph = root.querySelector('.__ROOT__-graph');
  const state = root.__ov3d || (root.__ov3d = { want: null, queue: Promise.resolve(), standin: false });
  const message = (text) => { root.querySelector('.__ROOT__-error').textContent = text; };
  const error = (e) => message('3D view: ' + e.message);
  const draw = (fn) => { state.queue = state.queue.then(fn).catch(error); };
  const hide = () => root.classList.add('__ROOT__-hidden');
  const reveal = () => root.classList.remove('__ROOT__-hidden');
  if (data.hidden) {
    state.want = null;
    hide();
    if (!graph.dataset.rev && !state.standin && data.standin) {
      state.standin = true;
      const idle = window.requestIdleCallback || ((f) => setTimeout(f, 200));
      draw(() => new Promise((resolve) => idle(async () => {
        try {
          const Plotly = await loadPlotly(data.src);
          const fig = JSON.parse(data.standin);
          // skipped when a figure came first: the stand-in only fills idle time
          if (!graph.dataset.rev && state.want === null) await Plotly.react(graph, fig.data, fig.layout, data.config);
        } finally { resolve(); }
      }, { timeout: 3000 })));
    }
    return;
  }
  state.want = data.rev;
  if (graph.dataset.rev === data.rev) { reveal(); return; }  // the same figure: only show it
  if (!data.figure) { hide(); return; }  // nothing to show (the page says why)
  // A new figure: redraw the scene in place; a hidden scene is shown once it holds the new figure, a shown one
  // keeps the previous figure until then.
  const fig = JSON.parse(data.figure), rev = data.rev;
  draw(async () => {
    const Plotly = await loadPlotly(data.src);
    if (state.want !== rev) return;  // superseded while waiting
    await Plotly.react(graph, fig.data, fig.layout, data.config);
    graph.dataset.rev = rev;
    message('');
    if (state.want === rev) reveal();
  });
}
"""

_CSS = """
.__ROOT__ { contain: content; }
.__ROOT__-hidden { height: 0; overflow: hidden; visibility: hidden; }
.__ROOT__-error { color: #b00020; font-size: 0.9rem; }
"""


def _component():
    from streamlit.components.v2 import component

    return component(
        "ov3d.gl_scene", html=f"<div class='{ROOT_CLASS}'><div class='{ROOT_CLASS}-error'></div>"
                              f"<div class='{ROOT_CLASS}-graph'></div></div>",
        css=_CSS.replace("__ROOT__", ROOT_CLASS), js=_JS.replace("__ROOT__", ROOT_CLASS), isolate_styles=False)


def _plotly_src() -> str:
    """The page-relative URL of the installed plotly package's ``plotly.min.js`` (Streamlit's component file route,
    registered for this script run)."""
    import plotly
    from streamlit.components.v1 import declare_component

    served = declare_component("plotlyjs", path=str(Path(plotly.__file__).parent / "package_data"))
    return f"component/{served.name}/plotly.min.js"


def gl_scene(fig_json: str | None, rev: str | None, *, key: str, hidden: bool = False, config: dict | None = None,
             standin: str | None = None) -> None:
    """Mount (or update) the page's WebGL scene.

    ``fig_json``: the figure as plotly JSON (``fig.to_json()``); None keeps what the browser drew. ``rev`` names the
    figure: the browser redraws only when it changes. ``hidden`` hides the scene without dropping it; ``standin``
    (plotly JSON): what a hidden scene with no figure yet draws once, when the browser is idle."""
    data = {"hidden": bool(hidden), "rev": rev, "src": _plotly_src(),
            "config": {"displaylogo": False, "responsive": True, **(config or {})}}
    if fig_json is not None and not hidden:
        data["figure"] = fig_json
    if hidden and standin is not None:
        data["standin"] = standin
    _COMPONENT(key=key, data=data, width="stretch", height="content")


_COMPONENT = _component()
