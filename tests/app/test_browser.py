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
PAGES = {"": "Overview", "scene": "Scene inspector", "confusion": "Confusion", "prompts": "Prompt lab",
         "oracle": "Oracle", "errors": "Error breakdown", "splits": "Class splits"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tiny_demo, tmp_path_factory):
    """A Streamlit server on a free port serving app.py on the tiny demo; always terminated."""
    from tests.app.live import serve  # (live imports this module's helpers)

    with serve(tmp_path_factory.mktemp("server") / "streamlit.log", env={"OV3D_DEMO_DIR": str(tiny_demo)}) as (url, _):
        yield url


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


def wait_idle(page) -> None:
    """Wait until the script run has finished (Streamlit marks the app container while running)."""
    page.wait_for_function(
        "() => { const a = document.querySelector('.stApp');"
        " return a && a.getAttribute('data-test-script-state') === 'notRunning'; }", timeout=120_000)


def open_page(page, url: str, title: str) -> float:
    t = time.perf_counter()
    page.goto(url)
    page.locator('[data-testid="stMainBlockContainer"] h1', has_text=title).first.wait_for(timeout=120_000)
    wait_idle(page)
    return time.perf_counter() - t


def test_every_page_renders_in_chromium(server, browser_page, tmp_path_factory, record_property):
    page, console = browser_page
    shots = tmp_path_factory.mktemp("screenshots")
    timings = {}
    for path, title in PAGES.items():
        timings[path or "overview"] = round(open_page(page, f"{server}/{path}", title), 2)
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
    page.wait_for_function("() => location.search.includes('proto=target-aware')", timeout=60_000)
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
