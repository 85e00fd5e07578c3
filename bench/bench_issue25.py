"""Issue 25's interactions in headless Chromium, side by side: two app trees (before / after), each served by its own
``streamlit run`` on the same benchmark, timed in alternating rounds (before, after, before, after, ...) by one
browser at a time.

Interactions (seconds from the click until what it asked for is on screen and the script run is over):

- ``open mining → scene``: a failure-mining gallery "Open" until the inspector's image panels are drawn;
- ``open grid → scene``: a sample-grid thumbnail's "Open", the same;
- ``3D toggle on`` (first time on an image) and ``Next with 3D on`` (until the next image's scene is drawn);
- ``camera preset`` (ego / top-down / side: until the scene is redrawn with another camera);
- ``prompt lab θ`` (one slider step by keyboard: until the θ caption shows the new value);
- ``confusion cell`` (a cell of the matrix: until its gallery shows the new cell);
- ``page switch`` (sidebar links: scene, grid, mining, confusion, prompt lab, overview, until the title, the end of
  the script run and every chart drawn).
- with ``--prompt-lab-only``: ``page switch to the prompt lab`` (from the Overview) and two ``prompt lab θ step``
  after each switch, nothing else.

Both sides read the same benchmark as a config (``?src=config&cfg=...``), so a demo generator version that differs
between the trees cannot trigger a rebuild.

    git worktree add /tmp/ov3d_before <commit>; git worktree add /tmp/ov3d_after <commit>
    python bench/bench_issue25.py --before /tmp/ov3d_before --after /tmp/ov3d_after \\
        --config /tmp/ov3d25_demo/benchmark.yaml --rounds 2 --json /tmp/issue25.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_app import (PLOT_3D, browser, camera_preset, free_port, next_image_3d,  # noqa: E402
                             streamlit_server, toggle_3d)

MAIN = '[data-testid="stMainBlockContainer"] '
#: Every chart of the page drawn, no element loading, the script run over.
_SETTLED = """() => { const a = document.querySelector('.stApp');
  if (!a || a.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.querySelector('[data-testid="stSkeleton"]')) return false;
  return [...document.querySelectorAll('[data-testid="stPlotlyChart"]')].every(c => c.querySelector('.main-svg')); }"""
NAV = {"scene": "Scene inspector", "grid": "Sample grid", "mining": "Failure mining", "confusion": "Confusion",
       "prompts": "Prompt lab", "overview": "Overview"}
TITLE = {"scene": "Scene inspector", "grid": "Sample grid", "mining": "Failure mining", "confusion": "Confusion",
         "prompts": "Prompt lab", "overview": "Overview"}


@contextlib.contextmanager
def serve(tree: Path, data_root: str):
    """``streamlit run app.py`` of ``tree`` on a free port; yields its URL."""
    port = free_port()
    env = dict(os.environ, OV3D_DATA_ROOT=data_root, PYTHONUNBUFFERED="1")
    with streamlit_server(tree, port, env, timeout=300) as base:
        yield base


def settle(page) -> None:
    page.wait_for_function(_SETTLED, polling=20)


def goto(page, url: str, title: str) -> None:
    page.goto(url)
    page.locator(MAIN + "h1", has_text=title).first.wait_for()
    settle(page)
    page.wait_for_timeout(1500)  # the hidden 3D view's stand-in, the renderer probe
    settle(page)


def _scene_drawn(page) -> None:
    page.locator(MAIN + "h1", has_text="Scene inspector").first.wait_for()
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot .imagelayer image').length >= 2",
                           polling=20)
    settle(page)


def open_from(page, q: str, src: str, prefix: str, k: int) -> float:
    """Seconds from the k-th "Open" of a page until the inspector's panels are drawn."""
    goto(page, q(src), TITLE[src])
    btn = page.locator(f'[class*="st-key-{prefix}"] button:visible').nth(k)  # (a tooltip's copy is hidden)
    btn.scroll_into_view_if_needed()
    t0 = time.perf_counter()
    btn.click()
    page.wait_for_function("() => location.pathname.endsWith('/scene')", polling=20)
    _scene_drawn(page)
    return round(time.perf_counter() - t0, 3)


_WATCH_RUN = """() => { window.__ov3dRan = false; const a = document.querySelector('.stApp');
  if (window.__ov3dRunObs) window.__ov3dRunObs.disconnect();
  window.__ov3dRunObs = new MutationObserver(() => {
    if (a.getAttribute('data-test-script-state') === 'running') window.__ov3dRan = true; });
  window.__ov3dRunObs.observe(a, {attributes: true, attributeFilter: ['data-test-script-state']}); }"""


def theta_step(page) -> float:
    """Seconds from one keyboard step of the prompt lab's θ slider until the script run it started is over and
    every chart is drawn (the step is seen by a watcher of the app's run state, installed before the key press)."""
    # Streamlit 1.67's slider is a react-aria group around a visually hidden <input type="range"> (no role="slider")
    thumb = page.locator('[data-testid="stSlider"]', has_text="θ: keep a box").first.locator('input[type="range"]')
    thumb.focus()
    value = float(thumb.input_value() or 0)
    page.evaluate(_WATCH_RUN)
    t0 = time.perf_counter()
    page.keyboard.press("ArrowRight" if value < 0.9 else "ArrowLeft")
    page.wait_for_function("() => window.__ov3dRan", polling=20)
    settle(page)
    return round(time.perf_counter() - t0, 3)


def confusion_cell(page, k: int) -> float:
    """Seconds from a click on the k-th cell of the matrix until its gallery is shown for that cell."""
    cells = page.locator(".js-plotly-plot .scatterlayer .trace").first.locator(".points path")
    cells.first.wait_for()
    before = page.evaluate("() => new URLSearchParams(location.search).get('cell')")
    box = cells.nth(k).bounding_box()
    t0 = time.perf_counter()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # plotly's drag layer is on top
    page.wait_for_function("(b) => { const c = new URLSearchParams(location.search).get('cell'); "
                           "return c && c !== b; }", arg=before, polling=20)
    page.locator(MAIN + "h3", has_text="→").first.wait_for()
    settle(page)
    return round(time.perf_counter() - t0, 3)


def page_switch(page, name: str) -> float:
    link = page.locator('[data-testid="stSidebarNav"]').get_by_text(NAV[name], exact=True)
    t0 = time.perf_counter()
    link.click()
    page.locator(MAIN + "h1", has_text=TITLE[name]).first.wait_for()
    settle(page)
    return round(time.perf_counter() - t0, 3)


def preset_buttons(page):
    """The camera-preset controls: the buttons above the scene (after) or the figure's own menu (before)."""
    bar = page.locator(".ov3d-gl-cams button")
    if bar.count():
        return lambda name: bar.filter(has_text=name).first
    return lambda name: page.locator(f"{PLOT_3D} .updatemenu-button", has_text=name).first


def one_round(base: str, query: str, reps: int, only: str | None = None) -> dict:
    """One browser session's interactions; ``only``: "opens" (the two "Open") or "prompts" (the sidebar switch to the
    prompt lab and its θ steps)."""
    out: dict[str, list[float]] = {k: [] for k in (
        "open mining → scene", "open grid → scene", "3D toggle on (first time on the image)", "Next with 3D on",
        "camera preset", "prompt lab θ step", "confusion cell click", "page switch", "page switch to the prompt lab")}

    def q(path: str, extra: str = "") -> str:
        return f"{base}/{'' if path == 'overview' else path}?{query}{extra}"  # the default page is served at "/"

    with browser() as page:
        page.set_default_timeout(150_000)
        goto(page, q("overview"), "Overview")
        if only == "prompts":
            with failed(out):
                for _ in range(reps):
                    out["page switch to the prompt lab"].append(page_switch(page, "prompts"))
                    for _ in range(2):
                        out["prompt lab θ step"].append(theta_step(page))
                    page_switch(page, "overview")
            return out
        with failed(out):
            for k in range(reps):
                out["open mining → scene"].append(open_from(page, q, "mining", "mine_open_", k + 1))
                out["open grid → scene"].append(open_from(page, q, "grid", "grid_open_", k + 1))
        if only != "opens":
            rest_of_round(page, q, reps, out)
    return out


@contextlib.contextmanager
def failed(out: dict):
    """A failed interaction is reported (and the round goes on with what it has)."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - a benchmark reports, it does not stop
        out.setdefault("errors", []).append(f"{type(exc).__name__}: {str(exc)[:300]}")
        print("error:", out["errors"][-1], flush=True)


def rest_of_round(page, q, reps: int, out: dict) -> None:
    with failed(out):
        goto(page, q("scene"), "Scene inspector")
        toggle = page.locator('[data-testid="stCheckbox"]', has_text="3D view").first
        for k in range(reps):
            out["3D toggle on (first time on the image)"].append(toggle_3d(page, toggle))
            pick = preset_buttons(page)
            for name in ("top-down", "side", "ego"):
                out["camera preset"].append(camera_preset(page, pick(name).click))
            out["Next with 3D on"].append(next_image_3d(page))
            settle(page)
            toggle_3d(page, toggle)  # off
            page.locator(MAIN + "button", has_text="Next").first.click()  # a new image for the next toggle
            page.wait_for_timeout(300)
            settle(page)
    with failed(out):
        goto(page, q("prompts"), "Prompt lab")
        for _ in range(reps):
            out["prompt lab θ step"].append(theta_step(page))
    with failed(out):
        goto(page, q("confusion", "&run=ovmono_like"), "Confusion")
        for k in range(reps):
            out["confusion cell click"].append(confusion_cell(page, 3 + 2 * k))
    with failed(out):
        goto(page, q("overview"), "Overview")
        for _ in range(max(1, reps // 2)):
            for name in ("scene", "grid", "mining", "confusion", "prompts", "overview"):
                out["page switch"].append(page_switch(page, name))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True)
    ap.add_argument("--after", type=Path, default=REPO)
    ap.add_argument("--config", required=True, help="the benchmark both sides open (e.g. a demo's benchmark.yaml)")
    ap.add_argument("--dataset", default="demo_indoor")
    ap.add_argument("--rounds", type=int, default=2, help="rounds per side, alternating")
    ap.add_argument("--reps", type=int, default=2, help="repetitions of each interaction per round")
    ap.add_argument("--opens-only", action="store_true", help="only the two 'Open' interactions")
    ap.add_argument("--prompt-lab-only", action="store_true",
                    help="only the sidebar switch to the prompt lab and two θ steps after it, per repetition")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    only = "opens" if args.opens_only else "prompts" if args.prompt_lab_only else None
    query = urllib.parse.urlencode({"src": "config", "cfg": args.config, "ds": args.dataset})
    root = str(Path(args.config).resolve().parent)
    results: dict = {"before": {}, "after": {}, "load": [], "order": []}
    with serve(args.before, root) as b_url, serve(args.after, root) as a_url:
        sides = {"before": b_url, "after": a_url}
        for name, url in sides.items():  # warm each server once (caches, the benchmark loaded), untimed
            t = time.perf_counter()
            warm = one_round(url, query, 1, only)
            print("warm-up", name, round(time.perf_counter() - t, 1), "s", json.dumps(warm, ensure_ascii=False),
                  flush=True)
        for r in range(args.rounds):
            for name in ("before", "after") if r % 2 == 0 else ("after", "before"):
                results["load"].append(round(os.getloadavg()[0], 1))
                results["order"].append(name)
                got = one_round(sides[name], query, args.reps, only)
                for k, v in got.items():
                    results[name].setdefault(k, []).extend(v)
                print(name, r, json.dumps(got, ensure_ascii=False), "load", results["load"][-1], flush=True)
    table = {}
    for k in results["after"] if args.rounds else ():
        b, a = results["before"].get(k) or [], results["after"][k]
        if k == "errors" or not a or not b:  # (not measured in this run)
            continue
        table[k] = {"before_median": round(statistics.median(b), 2), "before_range": [min(b), max(b)],
                    "after_median": round(statistics.median(a), 2), "after_range": [min(a), max(a)],
                    "ratio": round(statistics.median(a) / statistics.median(b), 2), "n": [len(b), len(a)]}
    results["table"] = table
    text = json.dumps(results, indent=1, ensure_ascii=False)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
