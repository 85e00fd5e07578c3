"""Benchmark of the app: first paint and interaction latency on the demo benchmark.

Two measurements:

1. Page render functions through ``streamlit.testing.v1.AppTest`` (in this process): the first run of the app
   (fresh process: empty Streamlit caches; the pair geometry on disk is warm unless ``--cold``), the first visit of
   every page, a cached re-render of every page, and widget interactions on cached data (protocol toggle, score
   threshold, next image, confusion level, prompt template).
2. The whole app in headless Chromium (Playwright) against ``streamlit run``: seconds to the page title, to its
   first data element (metric, table, chart or message) and to the end of the script run with its charts drawn.
   ``first_paint_s``: opening the app in a fresh server process; ``first_visit_s`` / ``second_visit_s``: clicking
   each page in the sidebar (one session); ``reload_s``: a new session (page reload) on warm caches.

Targets (issue "The Streamlit app"): first paint of the demo < 3 s once it is built; any interaction on cached data
< 300 ms.

    python bench/bench_app.py                     # the demo in data/demo (built first if missing)
    python bench/bench_app.py --views             # the 3D view, inspector, grid and PR curves only
    python bench/bench_app.py --screenshots DIR   # full-page screenshots of every page at 1600 x 1000
    OV3D_DEMO_DIR=/tmp/demo python bench/bench_app.py --cold --skip-browser
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

PAGES = ("app_pages/overview.py", "app_pages/scene.py", "app_pages/grid.py", "app_pages/curves.py",
         "app_pages/confusion.py", "app_pages/prompt_lab.py", "app_pages/oracle.py", "app_pages/errors.py",
         "app_pages/splits.py")
URLS = {"overview": "", "scene": "scene", "grid": "grid", "curves": "curves", "confusion": "confusion",
        "prompt_lab": "prompts", "oracle": "oracle", "errors": "errors", "splits": "splits"}
NAV = {"overview": "Overview", "scene": "Scene inspector", "grid": "Sample grid", "curves": "PR curves",
       "confusion": "Confusion", "prompt_lab": "Prompt lab", "oracle": "Oracle", "errors": "Error breakdown",
       "splits": "Splits & transfer"}
TITLES = {"overview": "Overview", "scene": "Scene inspector", "grid": "Sample grid", "curves": "PR curves",
          "confusion": "Confusion", "prompt_lab": "Prompt lab", "oracle": "Oracle", "errors": "Error breakdown",
          "splits": "Class splits"}


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def timed_cpu(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process) of ``fn()``. AppTest runs the script in a thread of this process,
    so on a shared machine the CPU time is what the step costs and the wall time what it took under the load."""
    c, t = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t, time.process_time() - c


def wall_cpu_ms(pairs) -> str:
    """"<median wall> ms (<median CPU> ms CPU)" of (wall, CPU) pairs."""
    return f"{median_ms([w for w, _ in pairs])} ms ({median_ms([c for _, c in pairs])} ms CPU)"


def check(at) -> None:
    bad = [e.value for e in at.exception] + [e.value for e in at.error]
    if bad:
        raise RuntimeError(f"the app failed: {bad[0][:2000]}")


def median_ms(xs) -> float:
    return round(1000 * statistics.median(xs), 1)


def bench_apptest(repeats: int) -> dict:
    from streamlit.testing.v1 import AppTest

    out: dict = {}
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=1800)
    out["first_run_s"] = round(timed(at.run), 3)
    check(at)
    first, cached = {}, {}
    for page in PAGES:
        name = Path(page).stem
        at.switch_page(page)
        first[name] = round(timed(at.run), 3)
        check(at)
        cached[name] = median_ms([timed(at.run) for _ in range(repeats)])
    out["page_first_visit_s"] = first
    out["page_cached_rerun_ms"] = cached

    inter: dict = {}

    def toggle(at, key: str, a, b, widget="radio", sidebar=True, n=repeats) -> float:
        root = at.sidebar if sidebar else at
        get = getattr(root, widget)
        get(key=key).set_value(b).run()  # compute both states once
        get(key=key).set_value(a).run()
        times = []
        for k in range(n):
            times.append(timed(lambda: get(key=key).set_value(b if k % 2 == 0 else a).run()))
            check(at)
        get(key=key).set_value(a).run()
        return median_ms(times)

    at.switch_page("app_pages/overview.py")
    at.run()
    inter["overview: protocol toggle"] = toggle(at, "w:protocol", "dataset-level", "target-aware")
    inter["overview: score threshold"] = toggle(at, "w:min_score", 0.0, 0.3, widget="slider")
    at.switch_page("app_pages/scene.py")
    at.run()
    inter["scene: protocol toggle"] = toggle(at, "w:protocol", "dataset-level", "target-aware")
    next_btn = [b for b in at.button if b.label == "Next"]
    for _ in range(3):  # visit a few images once
        next_btn[0].click().run()
        next_btn = [b for b in at.button if b.label == "Next"]
    times = []
    for _ in range(repeats):
        prev = [b for b in at.button if b.label == "Previous"][0]
        times.append(timed(lambda: prev.click().run()))
        check(at)
        nxt = [b for b in at.button if b.label == "Next"][0]
        times.append(timed(lambda: nxt.click().run()))
    inter["scene: previous / next image (visited)"] = median_ms(times)
    inter["scene: colour by class"] = toggle(at, "w:color_by", "status", "class", sidebar=False)
    at.switch_page("app_pages/confusion.py")
    at.run()
    inter["confusion: fine / super level"] = toggle(at, "w:conf_level", "fine", "super", sidebar=False)
    inter["confusion: hide diagonal"] = toggle(at, "w:hide_diag", False, True, widget="toggle", sidebar=False)
    at.switch_page("app_pages/prompt_lab.py")
    at.run()
    if not at.info:
        tpl = at.selectbox(key="w:template")
        opts = list(tpl.options)
        if len(opts) > 1:
            inter["prompt lab: template change"] = toggle(at, "w:template", opts[0], opts[-1], widget="selectbox",
                                                          sidebar=False)
    at.switch_page("app_pages/oracle.py")
    at.run()
    inter["oracle: run change"] = None
    runs = at.selectbox(key="w:focus_run:or").options
    if len(runs) > 1:
        inter["oracle: run change"] = toggle(at, "w:focus_run:or", runs[0], runs[1], widget="selectbox",
                                             sidebar=False)
    out["interaction_cached_ms"] = inter
    return out


def bench_views(repeats: int) -> dict:
    """The views of issue 13 through AppTest (script time in this process, warm geometry): the 3D toggle (first on an
    image, then cached), the point budget, the next image with the 3D view on, the run picker, the sample grid's
    filters and the PR-curves page."""
    from streamlit.testing.v1 import AppTest

    out: dict = {}
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=1800)

    def steps(actions) -> str:
        """Median wall and CPU ms of running each action (a widget change + run), checked for errors."""
        pairs = []
        for act in actions:
            pairs.append(timed_cpu(act))
            check(at)
        return wall_cpu_ms(pairs)

    at.query_params["ds"] = "demo_indoor"
    at.run()
    check(at)
    at.switch_page("app_pages/scene.py")
    out["scene: first visit (s)"] = round(timed(at.run), 3)
    check(at)
    first, cached, nxt = [], [], []
    for k in range(repeats):
        first.append(timed_cpu(lambda: at.toggle(key="w:show_3d").set_value(True).run()))
        check(at)
        at.toggle(key="w:show_3d").set_value(False).run()
        cached.append(timed_cpu(lambda: at.toggle(key="w:show_3d").set_value(True).run()))
        nxt.append(timed_cpu(lambda: [b for b in at.button if b.label == "Next"][0].click().run()))  # 3D stays on
        check(at)
        at.toggle(key="w:show_3d").set_value(False).run()
    out["scene: 3D toggle on, first time on the image"] = wall_cpu_ms(first)
    out["scene: 3D toggle on, cached"] = wall_cpu_ms(cached)
    out["scene: next image with the 3D view on"] = wall_cpu_ms(nxt)
    at.toggle(key="w:show_3d").set_value(True).run()
    out["scene: point budget change, first time"] = steps(
        lambda b=b: at.select_slider(key="pts3d").set_value(b).run() for b in (150_000, 20_000, 310_000))
    at.toggle(key="w:show_3d").set_value(False).run()
    pills = at.pills(key="scene_big:demo_indoor")
    runs = [o.split(" · ")[0] for o in pills.options]
    out["scene: run picker change"] = steps(
        lambda k=k: at.pills(key="scene_big:demo_indoor").set_value(runs[: 3 if k % 2 == 0 else 2]).run()
        for k in range(repeats))
    at.switch_page("app_pages/grid.py")
    out["grid: first visit (s)"] = round(timed(at.run), 3)
    check(at)
    vocab = at.multiselect(key="grid_classes").options
    out["grid: class filter change"] = steps(
        lambda k=k: at.multiselect(key="grid_classes").set_value([vocab[k % len(vocab)]]).run() for k in range(repeats))
    out["grid: sort change"] = steps(
        lambda n=n: at.selectbox(key="grid_sort").set_value(n).run()
        for n in ("highest score", "largest error (centre distance)", "image id"))
    at.switch_page("app_pages/curves.py")
    out["curves: first visit (s)"] = round(timed(at.run), 3)
    check(at)
    classes = at.selectbox(key="pr_class").options
    out["curves: class change"] = steps(
        lambda k=k: at.selectbox(key="pr_class").set_value(classes[1 + k % (len(classes) - 1)]).run()
        for k in range(repeats))
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(demo_dir: str | None):
    """``streamlit run app.py`` on a free port (the demo in ``demo_dir`` or the default one); yields its URL."""
    port = free_port()
    env = dict(os.environ)
    if demo_dir:
        env["OV3D_DEMO_DIR"] = demo_dir
    with streamlit_server(REPO, port, env, timeout=180) as base:
        yield base


@contextlib.contextmanager
def streamlit_server(tree: Path, port: int, env: dict, *, timeout: float = 180):
    """``streamlit run <tree>/app.py`` headless on ``port`` (no file watcher), waited for until healthy; yields its
    URL and stops it afterwards. The log goes to a temporary file named in the error if it does not start."""
    log = tempfile.NamedTemporaryFile("w", suffix=".log", delete=False)
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(tree / "app.py"), "--server.headless",
                             "true", "--server.port", str(port), "--server.address", "127.0.0.1",
                             "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none"],
                            cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.time() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"{base}/_stcore/health", timeout=2):
                    break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError(f"streamlit did not start, see {log.name}")
                time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()


BROWSER_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--disable-quic"]
MAIN = '[data-testid="stMainBlockContainer"] '
DATA = ", ".join(MAIN + s for s in ('[data-testid="stMetric"]', '[data-testid="stDataFrame"]',
                                    ".js-plotly-plot .main-svg", '[data-testid="stAlert"]',
                                    '[data-testid="stImage"]'))


@contextlib.contextmanager
def browser(viewport=(1500, 1000)):
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise RuntimeError("no chromium (apt-get install chromium)")
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(tempfile.mkdtemp(), executable_path=chromium, headless=True,
                                                   args=BROWSER_ARGS,
                                                   viewport={"width": viewport[0], "height": viewport[1]})
        page = ctx.new_page()
        page.set_default_timeout(1_800_000)
        try:
            yield page
        finally:
            ctx.close()


def wait_idle(page) -> None:
    page.wait_for_function("() => { const a = document.querySelector('.stApp'); return a && "
                           "a.getAttribute('data-test-script-state') === 'notRunning'; }")


def wait_page(page, t0: float, title: str) -> dict:
    page.locator(MAIN + "h1", has_text=title).first.wait_for()
    t_title = time.perf_counter() - t0
    page.locator(DATA).first.wait_for()
    t_data = time.perf_counter() - t0
    wait_idle(page)
    if page.locator(".js-plotly-plot").count():
        page.locator(".js-plotly-plot .main-svg").first.wait_for()
    return {"title": round(t_title, 2), "first_data": round(t_data, 2),
            "complete": round(time.perf_counter() - t0, 2)}


def bench_browser(demo_dir: str | None) -> dict:
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        return {"skipped": "no chromium"}
    out: dict = {}
    with serve(demo_dir) as base, browser() as page:
        t0 = time.perf_counter()
        page.goto(base)
        out["first_paint_s"] = wait_page(page, t0, TITLES["overview"])
        nav = page.locator('[data-testid="stSidebarNav"]')
        for label in ("first_visit_s", "second_visit_s"):
            out[label] = {}
            for name in list(URLS)[1:] + ["overview"]:
                link = nav.get_by_text(NAV[name], exact=True)
                t0 = time.perf_counter()
                link.click()
                out[label][name] = wait_page(page, t0, TITLES[name])
        t0 = time.perf_counter()
        page.goto(base)
        out["reload_s"] = wait_page(page, t0, TITLES["overview"])
        out["scene_3d"] = bench_browser_3d(page, base)
    return out


def _plot_drawn(page, selector: str) -> None:
    page.locator(selector).first.wait_for()
    page.wait_for_function("(s) => { const g = document.querySelector(s); return g && g._fullLayout && "
                           "g.querySelector('canvas'); }", arg=selector)


PLOT_3D = ".js-plotly-plot:has(canvas)"  # the WebGL scene (2D charts have no canvas)
_FRAMES = "() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"


#: Drawn and visible WebGL scenes (the page's scene is shown once it holds its figure; hidden, it keeps its size
#: inside a collapsed, invisible wrapper).
_VISIBLE_3D = ("(s) => [...document.querySelectorAll(s)].filter(g => g.checkVisibility({visibilityProperty: true}) "
               "&& g._fullLayout && g._fullLayout.scene && g._fullLayout.scene._scene).length")


def toggle_3d(page, toggle) -> float:
    """Seconds from a click on the 3D toggle until the WebGL scene is drawn and visible (off: until none is visible;
    the page keeps a toggled-off scene of the same image hidden, so that turning it on again is instant)."""
    had = page.evaluate(_VISIBLE_3D, PLOT_3D) > 0
    t0 = time.perf_counter()
    toggle.click()
    if had:
        page.wait_for_function(f"(s) => ({_VISIBLE_3D})(s) === 0", arg=PLOT_3D)
    else:
        page.wait_for_function(f"(s) => ({_VISIBLE_3D})(s) > 0", arg=PLOT_3D)
        page.evaluate(_FRAMES)
    took = time.perf_counter() - t0
    wait_idle(page)
    return round(took, 3)


def camera_preset(page, click) -> float:
    """Seconds from ``click()`` (a camera control) until the scene is redrawn with another camera eye."""
    eye = ("(s) => JSON.stringify([...document.querySelectorAll(s)].find(g => g.checkVisibility())"
           "._fullLayout.scene._scene.getCamera().eye)")
    before = page.evaluate(eye, PLOT_3D)
    t0 = time.perf_counter()
    click()
    page.wait_for_function("([s, c]) => { const g = [...document.querySelectorAll(s)].find(g => "
                           "g.checkVisibility()); return g && g._fullLayout.scene && "
                           "g._fullLayout.scene._scene && JSON.stringify(g._fullLayout.scene._scene.getCamera().eye)"
                           " !== c; }", arg=[PLOT_3D, before])
    page.evaluate(_FRAMES)
    took = time.perf_counter() - t0
    wait_idle(page)
    return round(took, 3)


_SCENE_RANGE = ("(s) => { const g = [...document.querySelectorAll(s)].find(g => g.checkVisibility() && g._fullLayout "
                "&& g._fullLayout.scene); return g ? JSON.stringify(g._fullLayout.scene.xaxis.range) : null; }")


def next_image_3d(page) -> float:
    """Seconds from a click on "Next" with the 3D view on until a visible scene shows the next image (another scene
    extent) and its frame is drawn."""
    before = page.evaluate(_SCENE_RANGE, PLOT_3D)
    t0 = time.perf_counter()
    page.locator('[data-testid="stMainBlockContainer"] button', has_text="Next").first.click()
    page.wait_for_function(f"([s, b]) => {{ const r = ({_SCENE_RANGE})(s); return r !== null && r !== b; }}",
                           arg=[PLOT_3D, before])
    page.evaluate(_FRAMES)
    took = time.perf_counter() - t0
    wait_idle(page)
    return round(took, 3)


def bench_browser_3d(page, base: str, repeats: int = 3, buttons: bool = True) -> dict:
    """The scene inspector's 3D view in the browser: seconds from the toggle click until the WebGL scene is drawn
    (first time on an image, then again on cached data), from a camera-preset click until the scene is redrawn
    (``buttons``: the in-figure relayout buttons; else the older Python radio "Camera"), from "Next" with the
    view on until the next image's scene is drawn, and from "Next" with the view off until the page is idle."""
    out: dict = {"toggle_on_first_s": [], "toggle_on_cached_s": [], "camera_preset_s": [], "next_image_3d_on_s": [],
                 "next_image_3d_off_s": []}
    page.goto(f"{base}/scene?ds=demo_indoor")
    wait_page(page, time.perf_counter(), TITLES["scene"])
    toggle = page.locator('[data-testid="stCheckbox"]', has_text="3D view").first
    for k in range(repeats):
        if k:  # "Next" with the view off: until the page shows the next position and its script run has ended
            where = page.get_by_text(" filtered images ·").first
            before = where.inner_text()
            t0 = time.perf_counter()
            page.locator('[data-testid="stMainBlockContainer"] button', has_text="Next").first.click()
            page.wait_for_function("([s, b]) => { const e = [...document.querySelectorAll(s)].find(e => "
                                   "e.innerText.includes(' filtered images ·')); return e && e.innerText !== b; }",
                                   arg=['[data-testid="stMarkdownContainer"]', before])
            wait_idle(page)
            out["next_image_3d_off_s"].append(round(time.perf_counter() - t0, 3))
        out["toggle_on_first_s"].append(toggle_3d(page, toggle))
        toggle_3d(page, toggle)
        out["toggle_on_cached_s"].append(toggle_3d(page, toggle))
        for preset in ("top-down", "side", "ego"):
            if buttons:
                btn = page.locator(f"{PLOT_3D} .updatemenu-button", has_text=preset).first
            else:
                btn = page.locator('[data-testid="stRadio"] label', has_text=preset).first
            out["camera_preset_s"].append(camera_preset(page, btn.click))
        out["next_image_3d_on_s"].append(next_image_3d(page))
        toggle_3d(page, toggle)
    out["median_s"] = {k: round(statistics.median(v), 3) for k, v in list(out.items())}
    return out


#: Page views of the screenshot tour: file name -> (url path + query, title).
SHOTS = {
    "overview": ("?ds=demo_indoor", "Overview"),
    "scene": ("scene?ds=demo_indoor", "Scene inspector"),
    "scene_3d": ("scene?ds=demo_indoor&3d=1", "Scene inspector"),
    "scene_outdoor": ("scene?ds=demo_outdoor", "Scene inspector"),
    "grid": ("grid?ds=demo_indoor", "Sample grid"),
    "curves": ("curves?ds=demo_indoor&thr=0.3", "PR curves"),
    "confusion": ("confusion?ds=demo_indoor", "Confusion"),
    "confusion_super": ("confusion?ds=demo_indoor&lvl=super", "Confusion"),
    "prompt_lab": ("prompts?ds=demo_indoor", "Prompt lab"),
    "oracle": ("oracle?ds=demo_indoor", "Oracle"),
    "errors": ("errors?ds=demo_indoor", "Error breakdown"),
    "splits": ("splits?ds=demo_indoor", "Class splits"),
    "overview_presenting": ("?ds=demo_indoor&present=1", "Overview"),
}


def screenshots(out_dir: Path, demo_dir: str | None, only: list[str] | None = None) -> dict:
    """Full-page screenshots of every page at 1600 x 1000 (headless Chromium) into ``out_dir``; returns seconds per
    page. Keep them out of git."""
    out_dir.mkdir(parents=True, exist_ok=True)
    took = {}
    with serve(demo_dir) as base, browser((1600, 1000)) as page:
        for name, (path, title) in SHOTS.items():
            if only and name not in only:
                continue
            t0 = time.perf_counter()
            page.goto(f"{base}/{path}")
            took[name] = wait_page(page, t0, title)
            page.wait_for_timeout(1500)
            # the app scrolls inside its main section, not the document: grow the viewport to the content first
            h = page.evaluate("() => { const m = document.querySelector('[data-testid=\"stMain\"]'); "
                              "return m ? m.scrollHeight : document.body.scrollHeight; }")
            page.set_viewport_size({"width": 1600, "height": int(max(1000, min(h, 12000)))})
            page.wait_for_timeout(1200)
            page.screenshot(path=str(out_dir / f"{name}.png"), full_page=True)
            page.set_viewport_size({"width": 1600, "height": 1000})
    return took


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--cold", action="store_true", help="delete the demo's on-disk caches first")
    ap.add_argument("--skip-browser", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--screenshots", type=Path, metavar="DIR", help="only take full-page screenshots of every page at "
                    "1600 x 1000 into DIR (keep them out of git)")
    ap.add_argument("--only", nargs="*", help="with --screenshots: these views only")
    ap.add_argument("--views", action="store_true", help="only the views of issue 13 (3D view, inspector, grid, PR "
                    "curves): AppTest script times and the browser's 3D toggle and camera presets")
    args = ap.parse_args()
    if args.screenshots:
        print(json.dumps(screenshots(args.screenshots, os.environ.get("OV3D_DEMO_DIR"), args.only), indent=1))
        return 0

    from ov3d_app import cache

    t = time.perf_counter()
    cfg = cache.ensure_demo_config()
    build_s = time.perf_counter() - t
    if args.cold:
        for d in (Path(cfg).parent / ".ov3d_cache",):
            shutil.rmtree(d, ignore_errors=True)
    results = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "demo": {"config": cfg, "ensure_demo_s": round(build_s, 2), "cold_disk_cache": args.cold},
    }
    if args.views:
        results["apptest_views"] = bench_views(args.repeats)
        if not args.skip_browser:
            with serve(os.environ.get(cache.DEMO_ENV)) as base, browser() as page:
                page.goto(base)
                wait_page(page, time.perf_counter(), TITLES["overview"])
                results["browser_views"] = {"scene_3d": bench_browser_3d(page, base, args.repeats)}
                for name in ("grid", "curves"):
                    t0 = time.perf_counter()
                    page.goto(f"{base}/{URLS[name]}?ds=demo_indoor")
                    results["browser_views"][f"{name}_open_s"] = wait_page(page, t0, TITLES[name])
    else:
        results["apptest"] = bench_apptest(args.repeats)
        if not args.skip_browser:
            results["browser"] = bench_browser(os.environ.get(cache.DEMO_ENV))
    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
