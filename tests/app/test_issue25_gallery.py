"""Issue 25, item 12: the confusion-cell gallery in a real browser (``streamlit run`` on the tiny demo, headless
Chromium). At six columns its "Open" buttons were cut to "O..." and its thumbnails, each as tall as its crop's
aspect made it, left the rows ragged. Now: four examples a row, each row its own columns, every thumbnail the same
square; every button label is shown whole and every row of thumbnails starts and ends level."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest

from tests.app.test_browser import ARGS, CHROMIUM, open_page, wait_idle, wait_js

DS = "demo_outdoor"


@pytest.fixture(scope="module")
def cell(tiny_demo):
    """The (run, gt class, predicted class, n) of the fullest cell on DS: a gallery of more than one row."""
    from ov3d_core.analysis import Analysis

    a = Analysis.from_yaml(tiny_demo / "benchmark.yaml")
    best = (0, None, None, None)
    for run in a.runs(DS):
        cm = a.confusion(a.view(DS, run), level="fine").compact()
        for g in cm.class_names:
            for p in cm.class_names:
                best = max(best, (len(cm.cell_pairs(g, p)), run, g, p), key=lambda t: t[0])
    n, run, g, p = best
    assert n >= 5, "the tiny demo has no confusion cell of two gallery rows"
    return run, g, p, n


@pytest.fixture(scope="module")
def page(demo_server, tmp_path_factory):
    from playwright.sync_api import sync_playwright

    url = demo_server
    with sync_playwright() as p:
        ctx = p.chromium.launch_persistent_context(str(tmp_path_factory.mktemp("gallery_profile")),
                                                   executable_path=CHROMIUM, headless=True, args=ARGS,
                                                   viewport={"width": 1500, "height": 1100})
        pg = ctx.new_page()
        pg.set_default_timeout(90_000)
        try:
            yield url, pg
        finally:
            ctx.close()


_CUT = """(root) => [...root.querySelectorAll('button')].filter(b => /Open|Runs/.test(b.textContent)
                                                          && b.getBoundingClientRect().width > 0).map(b => {
    const cut = [...b.querySelectorAll('*')].filter(e => e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0);
    return {text: b.textContent.trim(), cut: cut.length, width: b.getBoundingClientRect().width};
})"""

#: True once at least ``n`` gallery buttons are laid out in the main block.
_LAID_OUT = f"""(n) => ({_CUT})(document.querySelector('[data-testid="stMainBlockContainer"]')).length >= n"""

_THUMBS = """(root) => [...root.querySelectorAll('[data-testid="stImage"] img')]
                               .filter(i => i.getBoundingClientRect().width > 0).map(i => {
    const r = i.getBoundingClientRect(); return {top: Math.round(r.top), height: r.height, width: r.width};
})"""


def test_gallery_buttons_are_whole_and_thumbnails_line_up(page, cell):
    url, pg = page
    run, g, p, n = cell
    query = urlencode({"ds": DS, "run": run, "cell": f"{g}|{p}"})
    open_page(pg, f"{url}/confusion?{query}", "Confusion")
    pg.locator("h3", has_text=f"{n} examples").first.wait_for(timeout=60_000)
    wait_idle(pg)
    main = pg.locator('[data-testid="stMainBlockContainer"]').first
    assert pg.locator('[data-testid="stException"]').count() == 0
    shown = min(n, 24)

    # the script run is over when the page says so; its last elements may be laid out a moment later (a loaded machine)
    wait_js(pg, _LAID_OUT, arg=2 * shown, timeout=90_000)
    buttons = main.evaluate(_CUT)
    assert len(buttons) == 2 * shown, buttons
    assert all(b["text"].endswith(("Open", "Runs")) for b in buttons), buttons
    cut = [b for b in buttons if b["cut"]]
    assert not cut, f"labels cut short: {cut}"

    # every thumbnail loaded and laid out first (a loaded machine draws them after the buttons)
    wait_js(pg, """(n) => [...document.querySelectorAll(
        '[data-testid="stMainBlockContainer"] [data-testid="stImage"] img')].filter(
        i => i.complete && i.naturalWidth > 0 && i.getBoundingClientRect().width > 0).length >= n""", arg=shown,
                         timeout=90_000)
    thumbs = main.evaluate(_THUMBS)
    assert len(thumbs) == shown, thumbs
    heights = {round(t["height"]) for t in thumbs}
    assert max(heights) - min(heights) <= 1, f"ragged thumbnails: {sorted(heights)}"
    rows: dict[int, list] = {}
    for t in thumbs:
        rows.setdefault(t["top"], []).append(t)
    assert len(rows) == -(-shown // 4), f"rows of thumbnails by top edge: {sorted(rows)}"  # 4 a row, level
