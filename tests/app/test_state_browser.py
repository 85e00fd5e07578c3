"""In headless Chromium: after switching the data source with non-default settings, the sidebar shows what the
page scores; and a benchmark uploaded on the Data source page (GT, predictions, an image folder) opens."""

from __future__ import annotations

import urllib.parse

import pytest

from tests.app.live import chromium, open_page, wait_idle, wait_js


@pytest.fixture(scope="module")
def app_url(demo_server):
    """The process's tiny-demo server (``conftest.demo_server``): a source switch and an upload live in this
    module's browser session only."""
    return demo_server


@pytest.fixture(scope="module")
def page(app_url):
    with chromium() as b:
        p = b.new_page(viewport={"width": 1500, "height": 1100})
        p.set_default_timeout(120_000)
        yield p


def sidebar_state(page) -> dict:
    """What the sidebar shows: the checked radio options and the slider values, once its two radio groups and two
    sliders are drawn (the script run can be over before the browser has loaded their code and laid them out)."""
    sb = page.locator('[data-testid="stSidebar"]')
    wait_js(page, """() => { const sb = document.querySelector('[data-testid="stSidebar"]');
      return sb !== null && sb.querySelectorAll('input[type=radio]:checked').length >= 2
        && sb.querySelectorAll('[data-testid="stSliderThumbValue"]').length >= 2; }""")
    radios = [r.evaluate("e => e.closest('label').innerText") for r in sb.locator("input[type=radio]:checked").all()]
    sliders = sb.locator('[data-testid="stSliderThumbValue"]').all_inner_texts()
    return {"radios": radios, "sliders": sliders}


def test_sidebar_shows_what_the_page_scores_after_a_source_switch(app_url, page, mini_config):
    open_page(page, f"{app_url}/?proto=target-aware&thr=0.3&iou=0.5", "Overview")
    assert sidebar_state(page) == {"radios": ["Demo benchmark", "target-aware"], "sliders": ["0.30", "0.5"]}
    sb = page.locator('[data-testid="stSidebar"]')
    sb.get_by_text("Benchmark config", exact=True).click()
    page.get_by_text("Type the path").first.wait_for()
    wait_idle(page)
    box = sb.locator("input[type=text]").first
    box.fill(str(mini_config))
    box.press("Enter")
    page.get_by_text("good on MiniIndoor").first.wait_for()
    wait_idle(page)
    page.wait_for_timeout(1000)
    # the page scores target-aware at 0.3 / 0.5, and the sidebar says so (it said 0.00 / 0.15 / dataset-level)
    assert page.get_by_text("· target-aware protocol").count() >= 1
    assert sidebar_state(page) == {"radios": ["Benchmark config", "target-aware"], "sliders": ["0.30", "0.5"]}
    assert "proto=target-aware" in page.url and "thr=0.3" in page.url and "iou=0.5" in page.url
    assert page.locator('[data-testid="stException"]').count() == 0


def test_an_uploaded_benchmark_opens_with_its_images(app_url, page, mini_config, tmp_path):
    root = mini_config.parent
    images = tmp_path / "my_images"
    images.mkdir()
    for p in sorted((root / "MiniIndoor" / "images").glob("*.jpg")):
        (images / p.name).write_bytes(p.read_bytes())
    preds = []
    for run in ("good", "sloppy"):
        f = tmp_path / f"{run}.json"
        f.write_bytes((root / "MiniIndoor" / run / "preds.json").read_bytes())
        preds.append(str(f))
    open_page(page, f"{app_url}/data?proto=target-aware", "Data source")
    def uploader(label: str):
        box = page.locator('[data-testid="stFileUploader"]').filter(has_text=label)
        return box.locator("input[type=file]").first

    n_images = len(list(images.glob("*.jpg")))

    def received(gt: int, pred: int, img: int):
        # each upload reruns the page; the next upload starts once the page counts this one as received and that
        # run has ended (a file given to an uploader that the running script is re-rendering can be lost, which a
        # busy machine showed in CI twice: the uploader's own file list shows the name before the server has it)
        page.get_by_text(f"Received: {gt} GT file(s) · {pred} prediction file(s) · {img} image(s)").wait_for()
        wait_idle(page)

    received(0, 0, 0)
    uploader("Ground truth").set_input_files(str(root / "MiniIndoor" / "gt.json"))
    received(1, 0, 0)
    uploader("Predictions").set_input_files(preds)
    received(1, 2, 0)
    page.get_by_text("sloppy.json").first.wait_for()
    uploader("Images").set_input_files(str(images))  # a folder, as the browser's folder picker gives it
    received(1, 2, n_images)
    page.get_by_text("my_images/100.jpg").first.wait_for()
    page.get_by_role("button", name="Build the benchmark").click()
    page.get_by_role("button", name="Open this benchmark").wait_for()
    wait_idle(page)
    assert page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]').count() == 0
    page.get_by_role("button", name="Open this benchmark").click()
    page.locator('[data-testid="stMainBlockContainer"] h1', has_text="Overview").wait_for()
    page.get_by_text("· target-aware protocol").first.wait_for()
    wait_idle(page)
    assert "src=config" in page.url
    cfg = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)["cfg"][0]
    assert cfg.endswith("benchmark.yaml") and "uploads" in cfg
    assert page.locator('[data-testid="stException"]').count() == 0
    # the scene inspector draws the uploaded image (an <image> in the overlay), not a blank canvas
    open_page(page, page.url.replace("/?", "/scene?", 1) if "/?" in page.url else page.url, "Scene inspector")
    page.locator(".js-plotly-plot .layer-below image, .js-plotly-plot image").first.wait_for(timeout=60_000)
    assert page.get_by_text("not found; drawing on a blank canvas").count() == 0
