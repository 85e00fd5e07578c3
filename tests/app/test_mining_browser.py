"""The failure-mining page and the object view in headless Chromium (a real ``streamlit run app.py`` on the tiny
demo, ``tests.app.live``): each renders its main content without a Streamlit exception; a click on "Every run on
its GT" in the mining list opens the object view, which draws one crop per run; "Open" on a ranked image, or a
click on its row of the ranked table, opens the scene inspector on that image with its top box highlighted (the
first "Open" of a tab fetching no JavaScript: ``ov3d_app.warm_code``).
Screenshots (1600 x 1000) go to a temporary folder (printed)."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout
from playwright.sync_api import expect

from tests.app.live import ARGS, CHROMIUM, open_page, wait_idle, wait_js


@pytest.fixture(scope="module")
def live(demo_server, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    base, url = tmp_path_factory.mktemp("mining_browser"), demo_server
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            page = browser.new_page(viewport={"width": 1600, "height": 1000})
            page.set_default_timeout(90_000)
            yield url, page, base
        finally:
            browser.close()


def _no_exception(page) -> None:
    exc = page.locator('[data-testid="stException"]')
    assert exc.count() == 0, exc.first.inner_text()[:2000]


def test_mining_list_and_object_view_in_chromium(live):
    url, page, shots = live
    open_page(page, f"{url}/mining?ds=demo_indoor&mine=disagreement", "Failure mining")
    _no_exception(page)
    assert page.get_by_text("Runs disagree on the label").count() >= 1
    page.locator('[data-testid="stImage"] img').first.wait_for()  # the top images' thumbnails
    page.screenshot(path=str(shots / "mining.png"))

    page.get_by_role("button", name="Every run on its GT").click()
    page.locator('[data-testid="stMainBlockContainer"] h1', has_text="Object view").first.wait_for()
    wait_idle(page)
    _no_exception(page)
    assert "gt=" in page.url  # the object is in the URL: the view can be shared and pinned
    # counts that settle as the browser lays the page out: retried until they hold (or the timeout fails the test)
    expect(page.locator("h3", has_text=re.compile(r"\d+ of 6 runs localise this"))).to_have_count(1, timeout=60_000)
    expect(page.locator('[data-testid="stImage"] img')).to_have_count(6, timeout=60_000)  # one crop per run
    page.screenshot(path=str(shots / "object.png"))
    print(f"\nscreenshots: {shots}")


def test_a_ranked_image_opens_the_inspector_in_chromium(live):
    """A ranked image's "Open" opens the inspector on it, its top box highlighted. The code of the inspector's charts,
    tables, pills and HTML legend was loaded while the failure-mining page (which has no chart) sat idle
    (``ov3d_app.warm_code``): the tab's first "Open" fetches no JavaScript module, and plotly.js is not compiled
    between the click and the image panels."""
    from ov3d_app.warm_code import MODULES, module_files

    assert [name.split(".")[0] for name in module_files()] == list(MODULES)  # the installed Streamlit has each one
    url, page, _ = live
    open_page(page, f"{url}/mining?ds=demo_indoor&mine=cross-class", "Failure mining")  # a new document: a new tab
    wait_js(page, f"() => window.__ov3dWarm && window.__ov3dWarm.done.length === {len(MODULES)}",
            timeout=60_000)
    fetched: list[str] = []
    page.on("request", lambda r: fetched.append(r.url))
    page.locator('[class*="st-key-mine_open_"] button').first.click()  # the top-ranked image's "Open"
    page.locator('[data-testid="stMainBlockContainer"] h1', has_text="Scene inspector").first.wait_for()
    wait_js(page, "() => document.querySelectorAll('.js-plotly-plot .imagelayer image').length >= 1",
            timeout=60_000)  # the image panels: the tab's first charts
    wait_idle(page)
    _no_exception(page)
    assert [u for u in fetched if "/static/js/" in u] == []
    wait_js(page, "() => location.search.includes('img=') && location.search.includes('hl=pred')",
            timeout=30_000)


def test_a_click_on_a_ranked_image_row_opens_the_inspector(live, tiny_demo):
    from ov3d_core.analysis import Analysis

    url, page, _ = live
    a = Analysis.from_yaml(tiny_demo / "benchmark.yaml")
    run = a.runs("demo_indoor")[0]  # the page's default run
    ranking = a.mine(a.view("demo_indoor", run), "depth-error")
    second = int(ranking.images["image_id"].iloc[1])
    top = int(ranking.boxes.loc[ranking.boxes["image_id"] == second, "pred_row"].iloc[0])
    open_page(page, f"{url}/mining?ds=demo_indoor&mine=depth-error", "Failure mining")
    table = page.locator('[data-testid="stMainBlockContainer"] [data-testid="stDataFrame"]').first
    table.wait_for()
    wait_idle(page)  # the grid is drawn on a canvas: click once the page has settled
    heading = page.locator('[data-testid="stMainBlockContainer"] h1', has_text="Scene inspector").first
    for attempt in range(3):  # a click that lands while the canvas grid is still laying out is lost: click again
        box = table.bounding_box()
        page.mouse.click(box["x"] + 14, box["y"] + 35 + 35 + 17)  # the selection cell of the second-ranked image
        try:
            heading.wait_for(timeout=30_000)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
            wait_idle(page)
    wait_idle(page)
    _no_exception(page)
    wait_js(page, "() => location.search.includes('img=') && location.search.includes('hl=pred')",
            timeout=30_000)
    params = page.evaluate("() => Object.fromEntries(new URLSearchParams(location.search))")
    assert params["img"] == str(second) and params["hl"] == f"pred|{run}|{top}"
