"""Where the browser's time goes when the Scene inspector's 3D view is toggled (run by hand:
``python bench/trace_3d_toggle.py [--images 2]``).

``streamlit run app.py`` on the default demo and headless Chromium (software WebGL, as ``bench/bench_app.py``). For
each image: the 3D view on (first time on the image), off, on again, off. Per step it prints one JSON line with the
seconds from the click to the drawn (or hidden) scene, the main thread's long tasks (start after the click, duration,
both in seconds) and plotly's events on the scene's chart div (``new chart``: a chart div the page had not drawn
before; ``plotly_react``: a draw, with the layout keys that changed since the chart's previous draw).

A step whose events hold ``new chart`` built a WebGL scene from scratch; more than one ``plotly_react`` is a redraw.
bench/RESULTS.md, "The 3D toggle's second draw", reads these lines.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_app import _FRAMES, _VISIBLE_3D, PLOT_3D, TITLES, browser, serve, wait_idle, wait_page  # noqa: E402

_OBSERVE = """() => {
  window.__ev = [];
  const now = () => performance.now();
  new PerformanceObserver(l => { for (const e of l.getEntries()) window.__ev.push(['long task', e.startTime, e.duration]); })
    .observe({type: 'longtask'});
  const seen = new WeakSet();
  const attach = () => {
    for (const g of document.querySelectorAll('.js-plotly-plot')) {
      if (seen.has(g) || !g.on || !(g._fullLayout && g._fullLayout.scene)) continue;
      seen.add(g);
      window.__ev.push(['new chart', now()]);
      g.on('plotly_react', () => {
        const layout = g.layout || {}, prev = g.__prev || {};
        const changed = Object.keys({...layout, ...prev}).filter(k => JSON.stringify(layout[k]) !== JSON.stringify(prev[k]));
        g.__prev = JSON.parse(JSON.stringify(layout));
        window.__ev.push(['plotly_react', now(), changed.join(',')]);
      });
    }
  };
  new MutationObserver(attach).observe(document.body, {subtree: true, childList: true, attributes: true,
                                                       attributeFilter: ['class']});
}"""


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=2)
    ap.add_argument("--dataset", default="demo_indoor")
    args = ap.parse_args(argv)
    with serve(None) as base, browser() as page:
        page.goto(f"{base}/scene?ds={args.dataset}")
        wait_page(page, time.perf_counter(), TITLES["scene"])
        page.evaluate(_OBSERVE)
        toggle = page.locator('[data-testid="stCheckbox"]', has_text="3D view").first
        for k in range(args.images):
            for step in ("on, first time", "off", "on again", "off"):
                had = page.evaluate(_VISIBLE_3D, PLOT_3D) > 0
                p0 = page.evaluate("() => { window.__ev = []; return performance.now(); }")
                t0 = time.perf_counter()
                toggle.click()
                page.wait_for_function(f"(s) => ({_VISIBLE_3D})(s) {'===' if had else '>'} 0", arg=PLOT_3D)
                page.evaluate(_FRAMES)
                took = time.perf_counter() - t0
                wait_idle(page)
                page.wait_for_timeout(1000)  # a redraw after the script run ends shows up here
                events = [[e[0], round((e[1] - p0) / 1000, 3)] + ([round(e[2] / 1000, 3)] if e[0] == "long task"
                                                                  else e[2:])
                          for e in page.evaluate("() => window.__ev")]
                print(json.dumps({"image": k, "step": step, "seconds": round(took, 3),
                                  "events": sorted(events, key=lambda e: e[1])}), flush=True)
            page.locator('[data-testid="stMainBlockContainer"] button', has_text="Next").first.click()
            wait_idle(page)


if __name__ == "__main__":
    main()
