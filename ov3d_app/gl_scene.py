"""One WebGL scene that stays in the page: the Scene inspector's 3D view.

``st.plotly_chart`` builds a new chart, and so a new WebGL scene, for every new figure (Streamlit 1.67 hashes the
figure into the chart's element id, key or not), and then draws it a second time once mounted. In a browser without
a GPU building a scene takes 1-2 s. This component (``st.components.v2``, in the page's own DOM) keeps one plotly.js
graph div for as long as the page shows the inspector and hands every new figure to ``Plotly.react``, which redraws
the existing scene's traces; turning the view off hides the div (the scene stays), turning it on again with the same
figure only shows it. While hidden before its first figure, the div draws a stand-in scene once, when the page has
settled (script run over, every chart drawn) and the browser is idle, so that the first figure reuses a scene whose
shaders are compiled, and a page switch into the inspector is not held up by it. The scene draws only while shown:
plotly.js's 3D render loop asks for every animation frame (60 a second) for as long as a scene exists, so the hidden
scene parks its loop, and a scene leaving the page is purged (before, an idle inspector with the view off cost
Chromium ~13 % of a core in software WebGL, and every page visited afterwards kept the loop running).

The camera presets are buttons of the component, above the scene (the figure's own ``updatemenus`` of
``scene.camera`` relayouts, taken out of the figure): a click relayouts the scene's camera in the browser, no script
run. Once per session the component reports the browser's WebGL renderer (``WEBGL_debug_renderer_info``), from
which the page picks its default point budget (``drawing.budget_for_renderer``: software WebGL a small cloud, a GPU
the full one).

plotly.js is the copy the page already has in ``window.Plotly`` (Streamlit's own, which its charts load, and
``warm_code`` ahead of them), the same that draws every other figure of the app; without one, the installed
``plotly`` package's ``plotly.min.js``, served by Streamlit's component file route (the browser caches it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import streamlit as st

from ov3d_app.warm_code import PAGE_SETTLED_JS

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

// The unmasked name of the browser's WebGL renderer ("" without WebGL or when the browser will not say).
const probeRenderer = () => {
  try {
    const canvas = document.createElement('canvas');
    const gl = canvas.getContext('webgl') || canvas.getContext('experimental-webgl');
    if (!gl) return '';
    const info = gl.getExtension('WEBGL_debug_renderer_info');
    const name = gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER);
    const lose = gl.getExtension('WEBGL_lose_context');
    if (lose) lose.loseContext();
    return String(name || '');
  } catch (e) {
    return '';
  }
};

// The figure's camera-preset menu (buttons that relayout ``scene.camera`` only): [[label, camera], ...] and the
// layout without it.
const takeCameras = (layout) => {
  const menus = layout.updatemenus || [];
  const isCams = (m) => (m.buttons || []).length > 0 && m.buttons.every((b) => b.method === 'relayout' && b.args
    && b.args[0] && Object.keys(b.args[0]).length === 1 && b.args[0]['scene.camera']);
  const i = menus.findIndex(isCams);
  if (i < 0) return [null, layout, -1];
  const rest = menus.filter((_, k) => k !== i);
  const menu = menus[i];
  return [menu.buttons.map((b) => [String(b.label), b.args[0]['scene.camera']]), { ...layout, updatemenus: rest },
          menu.active === undefined ? 0 : menu.active];
};

// gl-plot3d, which draws plotly.js's 3D scenes, redraws in a requestAnimationFrame loop for as long as a scene exists:
// 60 callbacks a second, each a frame the browser composes, whether the scene is shown or not, and after its graph
// has left the page. The page's scene parks its loop while it is hidden (after a few frames, so that a scene drawn
// while hidden, the stand-in, is drawn) and restarts it when shown; a scene that leaves the page is purged, which
// ends its loop and releases its WebGL context. The loop is told from other callbacks by its source: it checks
// `_stopped` and `contextLost`, then asks for its next frame. (This is the app's only 3D scene: while it is hidden,
// every such loop in the page is its own.)
const glLoops = () => {
  if (window.__ov3dGlLoops) return window.__ov3dGlLoops;
  const raf = window.requestAnimationFrame.bind(window);
  const kinds = new WeakMap();
  const isLoop = (cb) => {
    let v = kinds.get(cb);
    if (v === undefined) {
      const src = Function.prototype.toString.call(cb);
      v = src.length < 400 && src.includes('_stopped') && src.includes('contextLost')
        && src.includes('requestAnimationFrame');
      kinds.set(cb, v);
    }
    return v;
  };
  const loops = { hidden: false, grace: 0, parked: [] };
  window.requestAnimationFrame = (cb) => {
    if (loops.hidden && typeof cb === 'function' && isLoop(cb)) {
      if (loops.grace > 0) { loops.grace -= 1; return raf(cb); }
      loops.parked.push(cb);
      return 0;
    }
    return raf(cb);
  };
  loops.hide = () => { if (!loops.hidden) { loops.hidden = true; loops.grace = 3; } };
  loops.drawn = () => { loops.grace = 3; };  // a scene drawn while hidden: a few frames to draw it
  loops.show = () => { loops.hidden = false; loops.parked.splice(0).forEach((cb) => raf(cb)); };
  loops.reset = () => { loops.hidden = false; loops.parked.length = 0; };
  window.__ov3dGlLoops = loops;
  return loops;
};

export default function (component) {
  const { data, parentElement, setStateValue } = component;
  const root = parentElement.querySelector('.__ROOT__');
  const graph = root.querySelector('.__ROOT__-graph');
  const bar = root.querySelector('.__ROOT__-cams');
  const state = root.__ov3d || (root.__ov3d = { want: null, queue: Promise.resolve(), standin: false,
                                                 probed: false, cams: '' });
  if (data.probe && !state.probed) {
    // once per session (the page keeps the answer), once the page has settled and the browser is idle: the report
    // is a script run of the 3D view, which must not delay what a page switch is drawing
    state.probed = true;
    const idle = window.requestIdleCallback || ((f) => setTimeout(f, 200));
    let calm = 0;
    const poll = () => {
      if (!root.isConnected) return;
      calm = pageSettled() ? calm + 1 : 0;
      if (calm < 2) { setTimeout(poll, 200); return; }
      idle(() => { if (root.isConnected) setStateValue('renderer', probeRenderer()); }, { timeout: 1000 });
    };
    setTimeout(poll, 200);
  }
  const cameras = (cams, active) => {  // the preset buttons above the scene
    const sig = JSON.stringify(cams);
    if (sig === state.cams) return;
    state.cams = sig;
    bar.replaceChildren();
    (cams || []).forEach(([label, cam], k) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = label;
      b.className = '__ROOT__-cam' + (k === active ? ' __ROOT__-cam-on' : '');
      b.title = 'Camera: ' + label + ' (drag in the scene to orbit)';
      b.addEventListener('click', () => {
        for (const o of bar.children) o.classList.toggle('__ROOT__-cam-on', o === b);
        draw(async () => { const Plotly = await loadPlotly(data.src); await Plotly.relayout(graph, { 'scene.camera': cam }); });
      });
      bar.appendChild(b);
    });
    if (cams && cams.length) {
      const label = document.createElement('span');
      label.className = '__ROOT__-cams-label';
      label.textContent = 'Camera';
      bar.prepend(label);
    }
  };
  const message = (text) => { root.querySelector('.__ROOT__-error').textContent = text; };
  const error = (e) => message('3D view: ' + e.message);
  const draw = (fn) => { state.queue = state.queue.then(fn).catch(error); };
  const loops = glLoops();
  const hide = () => { root.classList.add('__ROOT__-hidden'); loops.hide(); };
  const reveal = () => { root.classList.remove('__ROOT__-hidden'); loops.show(); };
  // Streamlit calls this when the component leaves the page (not on its updates)
  const purge = () => {
    loops.reset();
    if (window.Plotly && graph._fullLayout) window.Plotly.purge(graph);
  };
  if (data.hidden) {
    state.want = null;
    hide();
    if (!graph.dataset.rev && !state.standin && data.standin) {
      state.standin = true;
      // Building a WebGL scene blocks the browser for a second or more without a GPU: the stand-in waits until
      // the page has settled (its script run over, every chart drawn, twice in a row) and the browser is idle, so
      // that it never delays what a page switch or a click is drawing.
      const idle = window.requestIdleCallback || ((f) => setTimeout(f, 200));
      draw(() => new Promise((resolve) => {
        let calm = 0;
        const poll = () => {
          if (!root.isConnected || graph.dataset.rev || state.want !== null) { resolve(); return; }
          calm = pageSettled() ? calm + 1 : 0;
          if (calm < 2) { setTimeout(poll, 250); return; }
          idle(async () => {
            try {
              const Plotly = await loadPlotly(data.src);
              const fig = JSON.parse(data.standin);
              // skipped when a figure came first: the stand-in only fills idle time
              if (root.isConnected && !graph.dataset.rev && state.want === null) {
                await Plotly.react(graph, fig.data, takeCameras(fig.layout || {})[1], data.config);
                loops.drawn();
              }
            } finally { resolve(); }
          }, { timeout: 3000 });
        };
        setTimeout(poll, 250);
      }));
    }
    return purge;
  }
  state.want = data.rev;
  if (graph.dataset.rev === data.rev) { reveal(); return purge; }  // the same figure: only show it
  if (!data.figure) { hide(); return purge; }  // nothing to show (the page says why)
  // A new figure: redraw the scene in place; a hidden scene is shown once it holds the new figure, a shown one
  // keeps the previous figure until then.
  const fig = JSON.parse(data.figure), rev = data.rev;
  const [cams, layout, active] = takeCameras(fig.layout || {});
  draw(async () => {
    const Plotly = await loadPlotly(data.src);
    if (state.want !== rev || !root.isConnected) return;  // superseded while waiting, or the page was left
    await Plotly.react(graph, fig.data, layout, data.config);
    cameras(cams, active);
    graph.dataset.rev = rev;
    message('');
    if (state.want === rev) reveal();
  });
  return purge;
}
"""

_CSS = """
.__ROOT__ { contain: content; }
.__ROOT__-hidden { height: 0; overflow: hidden; visibility: hidden; }
.__ROOT__-error { color: #b00020; font-size: 0.9rem; }
.__ROOT__-cams { display: flex; flex-wrap: wrap; gap: 0.4rem; align-items: center; margin: 0 0 0.4rem 0; }
.__ROOT__-cams-label { font-size: 0.875rem; margin-right: 0.2rem; }
.__ROOT__-cam { font: inherit; font-size: 0.875rem; padding: 0.25rem 0.75rem; border-radius: 0.5rem; cursor: pointer;
  border: 1px solid rgba(49, 51, 63, 0.2); background: #fff; color: inherit; }
.__ROOT__-cam:hover { border-color: #ff4b4b; color: #ff4b4b; }
.__ROOT__-cam-on { border-color: #ff4b4b; background: rgba(255, 75, 75, 0.08); }
"""


def _component():
    from streamlit.components.v2 import component

    return component(
        "ov3d.gl_scene", html=f"<div class='{ROOT_CLASS}'><div class='{ROOT_CLASS}-cams' role='toolbar' "
                              f"aria-label='Camera presets'></div><div class='{ROOT_CLASS}-error'></div>"
                              f"<div class='{ROOT_CLASS}-graph'></div></div>",
        css=_CSS.replace("__ROOT__", ROOT_CLASS), js=PAGE_SETTLED_JS + _JS.replace("__ROOT__", ROOT_CLASS),
        isolate_styles=False)


def _plotly_src() -> str:
    """The page-relative URL of the installed plotly package's ``plotly.min.js`` (Streamlit's component file route,
    registered for this script run)."""
    import plotly
    from streamlit.components.v1 import declare_component

    served = declare_component("plotlyjs", path=str(Path(plotly.__file__).parent / "package_data"))
    return f"component/{served.name}/plotly.min.js"


def gl_scene(fig_json: str | None, rev: str | None, *, key: str, hidden: bool = False, config: dict | None = None,
             standin: str | None = None, on_renderer: Callable[[str], None] | None = None) -> None:
    """Mount (or update) the page's WebGL scene.

    ``fig_json``: the figure as plotly JSON (``fig.to_json()``); None keeps what the browser drew. ``rev`` names the
    figure: the browser redraws only when it changes. ``hidden`` hides the scene without dropping it; ``standin``
    (plotly JSON): what a hidden scene with no figure yet draws once, when the browser is idle.

    The browser reports its WebGL renderer once per session: it is stored in ``st.session_state`` under
    ``drawing.RENDERER_KEY`` ("" when it has no WebGL or will not say), then ``on_renderer(name)`` is called (in the
    callback, before the run it causes)."""
    from ov3d_app.drawing import RENDERER_KEY

    probe = RENDERER_KEY not in st.session_state
    data = {"hidden": bool(hidden), "rev": rev, "src": _plotly_src(), "probe": probe,
            "config": {"displaylogo": False, "responsive": True, **(config or {})}}
    if fig_json is not None and not hidden:
        data["figure"] = fig_json
    if hidden and standin is not None:
        data["standin"] = standin

    def reported():
        got = st.session_state.get(key) or {}
        name = got.get("renderer") if hasattr(got, "get") else None
        if name is None or RENDERER_KEY in st.session_state:
            return
        st.session_state[RENDERER_KEY] = str(name)[:200]
        if on_renderer is not None:
            on_renderer(st.session_state[RENDERER_KEY])

    _COMPONENT(key=key, data=data, width="stretch", height="content", on_renderer_change=reported)


_COMPONENT = _component()
