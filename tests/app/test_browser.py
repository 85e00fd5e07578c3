"""The whole app in a real browser: ``streamlit run app.py`` on localhost (tiny demo) and headless Chromium via
Playwright. Every page must render its main content with no Streamlit exception element; a click on a confusion
cell (the scatter-of-squares matrix) must come back to Python and open its gallery. Console errors are collected
into the report (``record_property``) and printed; screenshots go to a temporary folder (printed)."""

from __future__ import annotations

import os
import shutil
import socket
import time
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("OV3D_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
assert CHROMIUM is not None, "the browser tests need Debian's chromium (apt-get install chromium)"

REPO = Path(__file__).resolve().parents[2]
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--disable-quic"]
#: url path -> the page title (h1) that proves the page's main content rendered.
PAGES = {"": "Overview", "scene": "Scene inspector", "grid": "Sample grid", "curves": "PR curves",
         "confusion": "Confusion", "prompts": "Prompt lab",
         "oracle": "Oracle", "errors": "Error breakdown", "splits": "Class splits", "mining": "Failure mining",
         "object": "Object view"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(demo_server):
    """URL of the process's Streamlit server on the tiny demo (``conftest.demo_server``)."""
    return demo_server


@pytest.fixture(scope="module")
def browser_page(server, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    profile = tmp_path_factory.mktemp("chromium-profile")
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(str(profile), executable_path=CHROMIUM, headless=True, args=ARGS,
                                                   viewport={"width": 1500, "height": 1100})
        page = ctx.new_page()
        page.set_default_timeout(90_000)
        console: list[str] = []
        page.on("console", lambda m: console.append(f"{m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
        try:
            yield page, console
        finally:
            ctx.close()


#: How often a ``wait_js`` predicate is evaluated (ms). Playwright's default polls on every animation frame, which
#: keeps a headless renderer drawing 60 frames a second for as long as a test waits: measured on this file, 13 % of
#: Chromium's CPU (bench/RESULTS.md).
POLL_MS = 50


def wait_js(page, expression: str, arg=None, timeout: float | None = None):
    """``page.wait_for_function`` polled every ``POLL_MS`` instead of on every animation frame."""
    return page.wait_for_function(expression, arg=arg, timeout=timeout, polling=POLL_MS)


def wait_idle(page) -> None:
    """Wait until the script run has finished (Streamlit marks the app container while running)."""
    wait_js(
        page, "() => { const a = document.querySelector('.stApp');"
        " return a && a.getAttribute('data-test-script-state') === 'notRunning'; }", timeout=120_000)


def wait_probed(page) -> None:
    """Wait until the 3D view's one-time WebGL renderer probe has come back and its script run has finished (the
    probe reports when the page has settled: a check that no script runs must start after it)."""
    page.locator('[data-testid="stCaptionContainer"]', has_text="for this browser's WebGL renderer").first.wait_for(
        timeout=120_000)
    wait_idle(page)


def open_page(page, url: str, title: str) -> float:
    t = time.perf_counter()
    page.goto(url)
    page.locator('[data-testid="stMainBlockContainer"] h1', has_text=title).first.wait_for(timeout=120_000)
    wait_idle(page)
    return time.perf_counter() - t


def sidebar_to(page, path: str, title: str) -> float:
    """Seconds to reach a page through its sidebar link (the same session and document: what a user's click does),
    expanding the navigation's "View more" first when the link is folded away."""
    from ov3d_app.ui import PAGES as APP_PAGES

    label = {u: t for _, t, _, u in APP_PAGES}[path or "overview"]
    nav = page.locator('[data-testid="stSidebarNav"]')
    t = time.perf_counter()
    link = nav.locator('[data-testid="stSidebarNavLink"]', has_text=label).first
    if not link.is_visible():
        nav.locator('[data-testid="stSidebarNavViewButton"]').click()
    link.click()
    wait_js(page, "(p) => location.pathname.replace(/^\\/+/, '') === p", arg=path)
    page.locator('[data-testid="stMainBlockContainer"] h1', has_text=title).first.wait_for(timeout=120_000)
    wait_idle(page)
    return time.perf_counter() - t


def test_every_page_renders_in_chromium(server, browser_page, tmp_path_factory, record_property):
    page, console = browser_page
    shots = tmp_path_factory.mktemp("screenshots")
    timings = {}
    open_page(page, f"{server}/", "Overview")  # a deep link; then every page as a user goes there: the sidebar
    for path, title in PAGES.items():
        timings[path or "overview"] = round(sidebar_to(page, path, title), 2)
        if page.locator(".js-plotly-plot").count():
            page.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=60_000)
        page.wait_for_timeout(300)
        page.screenshot(path=str(shots / f"{path or 'overview'}.png"), full_page=True)
        exceptions = page.locator('[data-testid="stException"]')
        assert exceptions.count() == 0, f"/{path}: {exceptions.first.inner_text()[:2000]}"
    record_property("page_seconds", timings)
    record_property("console_errors", console)
    record_property("screenshots", str(shots))
    print(f"\nscreenshots: {shots}\nseconds to main content: {timings}\nconsole errors: {console}")


def test_confusion_cell_click_opens_its_gallery(server, browser_page):
    page, _ = browser_page
    open_page(page, f"{server}/confusion?ds=demo_indoor&run=ovmono_like", "Confusion")
    cells = page.locator(".js-plotly-plot .scatterlayer .trace").first.locator(".points path")
    cells.first.wait_for(timeout=60_000)
    box = cells.first.bounding_box()
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)  # plotly's drag layer is on top
    page.locator("h3", has_text="→").first.wait_for(timeout=60_000)
    wait_idle(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    assert "cell=" in page.url  # the selection is mirrored to the URL


def test_sidebar_protocol_is_mirrored_to_the_url(server, browser_page):
    page, _ = browser_page
    open_page(page, f"{server}/oracle?ds=demo_outdoor_av", "Oracle")
    page.locator('[data-testid="stSidebar"]').get_by_text("target-aware", exact=True).click()
    wait_js(page, "() => location.search.includes('proto=target-aware')", timeout=60_000)
    wait_idle(page)
    assert page.locator('[data-testid="stException"]').count() == 0


def test_figure_export_downloads_a_png(server, browser_page):
    page, _ = browser_page
    open_page(page, f"{server}/splits?ds=demo_indoor&k=3&n=200", "Class splits")
    page.locator('[data-testid="stPopover"] button', has_text="Export").first.click()
    button = page.locator('[data-testid="stDownloadButton"] button', has_text="PNG").first
    button.wait_for(timeout=30_000)
    with page.expect_download(timeout=120_000) as info:
        button.click()
    path = info.value.path()
    assert info.value.suggested_filename.endswith(".png")
    assert Path(path).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ------------------------------------------------------------------------------------------------ views (issue 13)
def test_3d_view_camera_presets_relayout_in_the_browser(server, browser_page):
    page, _ = browser_page
    open_page(page, f"{server}/scene?ds=demo_indoor&3d=1", "Scene inspector")
    plot = ".js-plotly-plot:has(canvas)"  # the WebGL scene (2D charts have no canvas)
    wait_js(page, "(s) => { const g = document.querySelector(s); return g && g._fullLayout && "
            "g._fullLayout.scene && g.querySelector('canvas'); }", arg=plot, timeout=120_000)
    camera = "(s) => document.querySelector(s)._fullLayout.scene._scene.getCamera()"  # what WebGL draws with
    assert page.evaluate(camera, plot)["up"]["y"] < -0.8  # ego: -y (up in the camera frame) is up on screen
    wait_probed(page)
    page.locator(".ov3d-gl-cams button", has_text="top-down").first.click()  # the presets above the scene
    wait_js(page, "(s) => document.querySelector(s)._fullLayout.scene._scene.getCamera().up.z > 0.99",
            arg=plot, timeout=30_000)
    state = page.evaluate("() => document.querySelector('.stApp').getAttribute('data-test-script-state')")
    assert state == "notRunning"  # a layout change in the browser: no script run
    assert page.locator('[data-testid="stException"]').count() == 0


#: Per WebGL scene in the page: [is it the one marked, is it visible] (a hidden scene keeps its size inside a
#: collapsed, invisible wrapper).
_SCENES = ("(s) => [...document.querySelectorAll(s)].map(g => [g.__ov3d_mark === 1, "
           "g.checkVisibility({visibilityProperty: true})])")


#: Animation-frame callbacks the page asks for per second, counted over ``ms``: plotly.js's 3D scenes ask for one per
#: frame (60 a second) while their render loop runs.
_FRAME_RATE = """(ms) => new Promise((done) => {
  if (!window.__frames) {
    const raf = window.requestAnimationFrame.bind(window);
    window.__frames = { n: 0 };
    window.requestAnimationFrame = (cb) => { window.__frames.n += 1; return raf(cb); };
  }
  const n0 = window.__frames.n;
  setTimeout(() => done((window.__frames.n - n0) * 1000 / ms), ms);
})"""


def test_3d_view_toggled_off_and_on_keeps_its_webgl_scene(server, browser_page):
    """Turning the 3D view off and on again on one image shows the scene the browser already built (hidden while
    off), not a new one: building a WebGL scene takes seconds in a browser without a GPU. Its render loop runs only
    while it is shown: hidden, or once the page is left, the scene asks for no animation frames."""
    page, _ = browser_page
    open_page(page, f"{server}/scene?ds=demo_indoor&3d=1", "Scene inspector")
    plot = ".js-plotly-plot:has(canvas)"
    wait_js(page, "(s) => { const g = document.querySelector(s); return g && g._fullLayout && "
            "g._fullLayout.scene && g._fullLayout.scene._scene; }", arg=plot, timeout=120_000)
    page.evaluate("(s) => { document.querySelector(s).__ov3d_mark = 1; }", plot)
    toggle = page.locator('[data-testid="stCheckbox"]', has_text="3D view").first
    # The click starts a script run a moment later, so wait for what it changes, then check which scene it is.
    toggle.click()
    wait_js(page, f"(s) => !({_SCENES})(s).some(v => v[1])", arg=plot, timeout=60_000)
    wait_idle(page)
    assert page.evaluate(_SCENES, plot) == [[True, False]]  # the same scene, hidden
    assert page.evaluate(_FRAME_RATE, 1500) <= 3  # ... with its render loop parked
    toggle.click()
    wait_js(page, f"(s) => ({_SCENES})(s).some(v => v[1])", arg=plot, timeout=60_000)
    wait_idle(page)
    assert page.evaluate(_SCENES, plot) == [[True, True]]  # the same scene, shown again
    assert page.evaluate(_FRAME_RATE, 1000) >= 10  # ... drawn in its loop again (60 a second, fewer under load)
    assert page.locator('[data-testid="stException"]').count() == 0
    sidebar_to(page, "curves", "PR curves")  # the page left: its scene purged, its loop over
    assert page.evaluate(_FRAME_RATE, 1500) <= 3


def test_next_image_with_the_3d_view_on_redraws_the_same_webgl_scene(server, browser_page):
    """Stepping to the next image with the 3D view on draws the new image's figure in the scene the browser already
    holds (one scene, marked before the step, now holding another figure), not in a new one."""
    page, _ = browser_page
    open_page(page, f"{server}/scene?ds=demo_indoor&3d=1", "Scene inspector")
    plot = ".js-plotly-plot:has(canvas)"
    wait_js(page, f"(s) => ({_SCENES})(s).some(v => v[1])", arg=plot, timeout=120_000)
    before = page.evaluate("(s) => { const g = document.querySelector(s); g.__ov3d_mark = 1; "
                           "return [g.dataset.rev, g._fullLayout.uirevision]; }", plot)
    page.locator('[data-testid="stMainBlockContainer"] button', has_text="Next").first.click()
    wait_js(page, "([s, r]) => { const g = document.querySelector(s); return g && g.dataset.rev !== r; }",
            arg=[plot, before[0]], timeout=60_000)
    wait_idle(page)
    after = page.evaluate("(s) => { const g = document.querySelector(s); return [g.dataset.rev, "
                          "g._fullLayout.uirevision]; }", plot)
    assert page.evaluate(_SCENES, plot) == [[True, True]]  # the same scene, shown
    assert after[1] != before[1]  # with the next image's figure (its own camera revision)
    assert page.locator('[data-testid="stException"]').count() == 0


def test_scene_panels_have_one_size_in_the_browser(server, browser_page):
    page, _ = browser_page
    open_page(page, f"{server}/scene?ds=demo_indoor", "Scene inspector")
    from playwright.sync_api import expect

    panels = page.locator(".js-plotly-plot:has(.imagelayer image)")
    expect(panels).to_have_count(2, timeout=60_000)  # retried while the browser lays the panels out
    boxes = [panels.nth(i).bounding_box() for i in range(2)]
    assert max(b["width"] for b in boxes) - min(b["width"] for b in boxes) <= 1
    assert max(b["height"] for b in boxes) - min(b["height"] for b in boxes) <= 1
    expect(page.locator(".ov3d-legend")).to_have_count(1, timeout=60_000)


_READABLE_JS = """() => {
  const out = {small: [], overlaps: []};
  const hit = (a, b) => a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  for (const g of document.querySelectorAll('.js-plotly-plot')) {
    for (const t of g.querySelectorAll('text.bartext')) {
      const r = t.getBoundingClientRect();
      if (r.width > 0 && parseFloat(getComputedStyle(t).fontSize) < 10.5) out.small.push(t.textContent);
    }
    for (const ax of ['x', 'y']) {
      for (const title of g.querySelectorAll('.g-' + ax + 'title text, text.' + ax + 'title')) {
        const tr = title.getBoundingClientRect();
        if (!tr.width) continue;
        for (const tick of g.querySelectorAll('.' + ax + 'tick text')) {
          const kr = tick.getBoundingClientRect();
          if (kr.width && hit(tr, kr)) out.overlaps.push(title.textContent + ' / ' + tick.textContent);
        }
      }
    }
  }
  return out;
}"""


@pytest.mark.parametrize("path, title", [("?ds=demo_indoor", "Overview"), ("curves?ds=demo_indoor", "PR curves"),
                                         ("confusion?ds=demo_indoor&lvl=super", "Confusion"),
                                         ("confusion?ds=demo_indoor", "Confusion")])
def test_chart_text_is_readable_and_titles_clear_the_ticks(server, browser_page, path, title):
    page, _ = browser_page
    open_page(page, f"{server}/{path}", title)
    page.locator(".js-plotly-plot .main-svg").first.wait_for(timeout=60_000)
    page.wait_for_timeout(500)
    found = page.evaluate(_READABLE_JS)
    assert not found["small"], f"bar labels under 10.5 px: {found['small'][:5]}"
    assert not found["overlaps"], f"axis titles on tick labels: {found['overlaps'][:5]}"


def test_a_bar_click_leaves_no_fade(server, browser_page):
    page, _ = browser_page
    open_page(page, f"{server}/?ds=demo_indoor", "Overview")
    bars = page.locator(".js-plotly-plot:has(.barlayer) .barlayer .point path")
    bars.first.wait_for(timeout=60_000)
    b = bars.nth(3).bounding_box()
    page.mouse.click(b["x"] + b["width"] / 2, b["y"] + b["height"] - 2)
    wait_idle(page)
    page.wait_for_timeout(800)
    opacities = page.evaluate("() => [...document.querySelectorAll('.barlayer .point')].map(p => "
                              "parseFloat(getComputedStyle(p).opacity))")
    assert opacities and min(opacities) == 1.0
