"""Issue 25, items 8 and 15: the scene inspector's 3D view at the top beside the image panels, its camera presets as
visible buttons; its default point budget from the WebGL renderer the browser reports (one probe per session).

Headless Chromium (``--disable-gpu``: SwiftShader, software WebGL) against ``streamlit run`` on the tiny demo. The GPU
branch of the round trip runs in the same browser with WebGL's renderer query answering a GPU's name (an init script
in the page; the app and Streamlit run unchanged); the decision itself is checked on real renderer strings."""

from __future__ import annotations

import pytest

from ov3d_app import drawing
from tests.app.test_browser import (ARGS, CHROMIUM, open_page, server,  # noqa: F401 - server: a fixture here too
                                    wait_idle, wait_js, wait_probed)

SCENE = ".ov3d-gl-graph.js-plotly-plot"  # the page's WebGL scene (ov3d_app.gl_scene)
GPU_NAME = "ANGLE (NVIDIA, NVIDIA GeForce RTX 4090 (0x00002684) Direct3D11 vs_5_0 ps_5_0, D3D11)"
#: WebGL's UNMASKED_RENDERER_WEBGL (0x9246) answers GPU_NAME; every other query as before.
GPU_INIT = """(() => {
  const real = WebGLRenderingContext.prototype.getParameter;
  WebGLRenderingContext.prototype.getParameter = function (p) {
    return p === 0x9246 ? %r : real.call(this, p);
  };
})();""" % GPU_NAME


@pytest.mark.parametrize("renderer, software", [
    ("ANGLE (Google, Vulkan 1.3.0 (SwiftShader Device (Subzero) (0x0000C0DE)), SwiftShader driver)", True),
    ("Google SwiftShader", True),
    ("llvmpipe (LLVM 15.0.6, 256 bits)", True),
    ("Mesa OffScreen softpipe", True),
    ("Microsoft Basic Render Driver", True),
    ("", True),
    (None, True),
    (GPU_NAME, False),
    ("ANGLE (Apple, ANGLE Metal Renderer: Apple M2 Pro, Unspecified Version)", False),
    ("Mesa Intel(R) UHD Graphics 620 (KBL GT2)", False),
    ("AMD Radeon RX 7900 XTX (radeonsi, navi31, LLVM 17.0.6, DRM 3.54)", False),
])
def test_the_budget_follows_the_renderer(renderer, software):
    assert drawing.software_renderer(renderer) is software
    want = drawing.POINT_BUDGETS[0] if software else drawing.POINT_BUDGETS[-1]
    assert drawing.budget_for_renderer(renderer) == want
    assert drawing.POINT_BUDGETS[0] == 10_000 and drawing.POINT_BUDGETS[-1] >= 300_000


@pytest.fixture(scope="module")
def browser(server):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        try:
            yield b
        finally:
            b.close()


def _page(browser, init: str | None = None):
    ctx = browser.new_context(viewport={"width": 1500, "height": 1100})
    if init:
        ctx.add_init_script(init)
    page = ctx.new_page()
    page.set_default_timeout(120_000)
    return ctx, page


def _scene_drawn(page) -> None:
    wait_js(page, "(s) => { const g = document.querySelector(s); return g && g._fullLayout && "
            "g._fullLayout.scene && g._fullLayout.scene._scene && g.checkVisibility(); }", arg=SCENE,
            timeout=180_000)


def _caption_with(page, text: str) -> str:
    cap = page.locator('[data-testid="stCaptionContainer"]', has_text=text).first
    cap.wait_for(timeout=120_000)
    return cap.inner_text()


def test_the_3d_view_is_beside_the_images_at_the_top(server, browser):
    ctx, page = _page(browser)
    try:
        open_page(page, f"{server}/scene?ds=demo_indoor&3d=1", "Scene inspector")
        _scene_drawn(page)
        wait_probed(page)  # the probe's caption is in: the layout is still while it is measured
        panel = page.locator(".js-plotly-plot:has(.imagelayer image)").first
        panel.wait_for(timeout=120_000)
        p, s = panel.bounding_box(), page.locator(SCENE).bounding_box()
        assert s["x"] >= p["x"] + p["width"] - 1  # to the right of the first image panel
        assert s["y"] < p["y"] + p["height"] and p["y"] < s["y"] + s["height"]  # in the same band
        assert s["y"] < 1100  # on the first screen (the viewport is 1100 px high)
        toggle = page.locator('[data-testid="stCheckbox"]', has_text="3D view").first.bounding_box()
        assert toggle["y"] < p["y"] + p["height"] and toggle["x"] >= p["x"] + p["width"] - 1
        # the tables come after both
        tables = page.locator('[data-testid="stDataFrame"]').first.bounding_box()
        assert tables["y"] > p["y"] + p["height"]
        assert page.locator('[data-testid="stException"]').count() == 0
    finally:
        ctx.close()


def test_camera_presets_are_visible_buttons_that_move_the_camera(server, browser):
    ctx, page = _page(browser)
    try:
        open_page(page, f"{server}/scene?ds=demo_indoor&3d=1", "Scene inspector")
        _scene_drawn(page)
        wait_probed(page)  # the probe's caption is in and its run is over: the layout is still, no run is pending
        bar = page.locator(".ov3d-gl-cams")
        buttons = bar.locator("button")
        buttons.first.wait_for(timeout=60_000)
        assert buttons.all_inner_texts() == ["ego", "top-down", "side"]
        for i in range(3):
            assert buttons.nth(i).is_visible()
        scene, button = page.locator(SCENE).bounding_box(), buttons.nth(1).bounding_box()
        assert button["y"] + button["height"] <= scene["y"] + 1  # above the scene, not inside the figure
        assert page.locator(f"{SCENE} .updatemenu-button").count() == 0  # no second set inside the figure
        camera = "(s) => document.querySelector(s)._fullLayout.scene._scene.getCamera()"
        assert page.evaluate(camera, SCENE)["up"]["y"] < -0.8  # ego first
        buttons.nth(1).click()  # top-down
        wait_js(page, "(s) => document.querySelector(s)._fullLayout.scene._scene.getCamera().up.z > 0.99",
                arg=SCENE, timeout=30_000)
        classes = buttons.nth(1).get_attribute("class")
        assert classes is not None and "ov3d-gl-cam-on" in classes.split()
        state = page.evaluate("() => document.querySelector('.stApp').getAttribute('data-test-script-state')")
        assert state == "notRunning"  # in the browser only: no script run
        buttons.nth(0).click()  # ego again
        wait_js(page, "(s) => document.querySelector(s)._fullLayout.scene._scene.getCamera().up.y < -0.8",
                arg=SCENE, timeout=30_000)
    finally:
        ctx.close()


def test_software_webgl_reports_its_renderer_and_keeps_the_small_budget(server, browser):
    """Chromium with --disable-gpu draws WebGL with SwiftShader: the probe reports it and the budget stays 10k."""
    ctx, page = _page(browser)
    try:
        open_page(page, f"{server}/scene?ds=demo_indoor", "Scene inspector")
        text = _caption_with(page, "WebGL renderer (")  # the 3D view off: the note is in its caption
        assert "software WebGL" in text and "SwiftShader" in text and "Default budget 10k" in text
        page.locator('[data-testid="stCheckbox"]', has_text="3D view").first.click()
        _scene_drawn(page)
        wait_idle(page)
        slider = page.locator('[data-testid="stSlider"]', has_text="Points").first
        assert "10k" in slider.inner_text()
        points = _caption_with(page, " points from the ")
        shown = int(points.split(" of ")[0].replace(",", ""))
        assert 0 < shown <= 10_000
    finally:
        ctx.close()


def test_a_gpu_renderer_gets_the_full_cloud(server, browser):
    """The same round trip when WebGL names a GPU: the page's default budget becomes the full cloud (310k)."""
    ctx, page = _page(browser, GPU_INIT)
    try:
        open_page(page, f"{server}/scene?ds=demo_indoor", "Scene inspector")
        text = _caption_with(page, "WebGL renderer (")
        assert "(GPU: " in text and "RTX 4090" in text
        assert f"Default budget {drawing.POINT_BUDGETS[-1] // 1000}k" in text
        page.locator('[data-testid="stCheckbox"]', has_text="3D view").first.click()
        slider = page.locator('[data-testid="stSlider"]', has_text="Points").first
        slider.wait_for(timeout=120_000)
        wait_js(page, "(t) => [...document.querySelectorAll('[data-testid=\"stSlider\"]')].some(e => "
                "e.innerText.includes('Points') && e.innerText.includes(t))",
                arg=f"{drawing.POINT_BUDGETS[-1] // 1000}k", timeout=120_000)
        points = _caption_with(page, " points from the ")
        assert int(points.split(" of ")[0].replace(",", "")) > 100_000
    finally:
        ctx.close()
