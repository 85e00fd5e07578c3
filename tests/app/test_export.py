"""Figure and table exports (issue 25 item 7): safe file names from one function, PNG / SVG from one export browser
kept open for the process (renders from several threads at once each get their own figure), a small HTML that loads
plotly.js from the CDN beside the self-contained one, and the whole path in headless Chromium on the PR-curves page,
whose default class is "(all classes)"."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import plotly.graph_objects as go
import pytest

from ov3d_core.viz import export
from tests.app.test_browser import browser_page, open_page, server  # noqa: F401 - fixtures of this module too

SAFE = re.compile(r"^[\w][\w.-]*$")


@pytest.mark.parametrize("stem, ext, name", [
    ("pr_demo_indoor_(all classes)", "png", "pr_demo_indoor_all_classes.png"),
    ("scene3d_demo_indoor_100000", "svg", "scene3d_demo_indoor_100000.svg"),
    ("a  b/c\\d:e*f?g\"h<i>j|k", "csv", "a_b_c_d_e_f_g_h_i_j_k.csv"),
    ("../../etc/passwd", "tex", "etc_passwd.tex"),
    ("-rf --all", "html", "rf_--all.html"),  # no leading dash
    (".hidden", None, "hidden"),
    ("()", "png", "figure.png"),
    ("prompt_a photo of a {}._per_category", "png", "prompt_a_photo_of_a_._per_category.png"),
    ("chaise_longue_étagère", "png", "chaise_longue_étagère.png"),  # letters of any script stay
])
def test_safe_file_names(stem, ext, name):
    assert export.safe_file_name(stem, ext) == name


def test_a_long_name_is_cut_before_its_extension():
    name = export.safe_file_name("x" * 500, "png")
    assert name == "x" * export.MAX_NAME + ".png"


def _fig(title: str) -> go.Figure:
    return go.Figure(go.Bar(x=["a", "b"], y=[1, 2]), layout={"title": {"text": title}, "width": 300, "height": 200})


def test_png_and_svg_come_from_one_browser_kept_open():
    png = export.figure_bytes(_fig("first"), "png", scale=1)
    opened = export.renderer_generation()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and opened >= 1
    svg = export.figure_bytes(_fig("second"), "svg")
    png2 = export.figure_bytes(_fig("third"), "png", scale=1)
    assert b"<svg" in svg[:500] and b"second" in svg and png2[:8] == b"\x89PNG\r\n\x1a\n"
    assert export.renderer_generation() == opened  # no browser started for the later renders


def test_renders_from_several_threads_each_get_their_own_figure():
    titles = [f"figure number {k}" for k in range(4)]
    out: dict[str, bytes] = {}

    def work(t):
        out[t] = export.figure_bytes(_fig(t), "svg")

    threads = [threading.Thread(target=work, args=(t,)) for t in titles]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert sorted(out) == sorted(titles)
    for t, svg in out.items():
        assert t.encode() in svg and all(o.encode() not in svg for o in titles if o != t)


def test_the_small_html_loads_plotly_from_the_cdn():
    fig = _fig("html")
    small = export.figure_bytes(fig, "html", offline=False)
    full = export.figure_bytes(fig, "html")
    assert len(small) < 20_000 and b"cdn.plot.ly" in small and b"Plotly.newPlot" in small
    assert len(full) > 3_000_000 and b"cdn.plot.ly/plotly" not in full


def test_pr_curve_exports_in_the_browser_have_safe_names(server, browser_page):  # noqa: F811
    page, _ = browser_page
    open_page(page, f"{server}/curves?ds=demo_indoor", "PR curves")
    page.locator('[data-testid="stPopover"] button', has_text="Export").first.click()
    got = {}
    for label in ("PNG", "SVG", "HTML, small"):
        button = page.locator('[data-testid="stDownloadButton"] button',
                              has_text=label).first
        button.wait_for(timeout=30_000)
        with page.expect_download(timeout=120_000) as info:
            button.click()
        got[label] = (info.value.suggested_filename, Path(info.value.path()).read_bytes())
    assert got["PNG"][0] == "pr_demo_indoor_all_classes.png" and got["PNG"][1][:8] == b"\x89PNG\r\n\x1a\n"
    assert got["SVG"][0] == "pr_demo_indoor_all_classes.svg" and b"<svg" in got["SVG"][1][:500]
    name, html = got["HTML, small"]
    assert name == "pr_demo_indoor_all_classes_cdn.html" and len(html) < 200_000 and b"cdn.plot.ly" in html
    assert all(SAFE.match(n) for n, _ in got.values())


def test_the_browser_sign_off_is_not_logged_as_an_error_and_other_bad_messages_are(caplog):
    """choreographer (kaleido's browser driver) logs a JSON error with a traceback when the browser's sign-off
    ``{bye}`` arrives in one read with another message, as it may when the export browser closes at exit (a server
    log then showed a traceback); that record is dropped once the export browser is open, any other is kept."""
    import os

    from choreographer.channels.pipe import Pipe

    assert export.figure_bytes(_fig("opens the export browser"), "svg")[:5]  # (or reuses it)
    pipe = Pipe()
    pipe.open()
    try:
        with caplog.at_level("ERROR", logger="choreographer.channels.pipe"):
            os.write(pipe._write_from_browser, b'{"id": 1}\x00{bye}\n\x00')
            assert pipe.read_jsons(blocking=False)[0] == [{"id": 1}]
            assert not [r for r in caplog.records if "JSONError" in r.getMessage()]
            os.write(pipe._write_from_browser, b'{"id": 2}\x00{"id": \x00')
            assert pipe.read_jsons(blocking=False)[0] == [{"id": 2}]
            assert [r.getMessage() for r in caplog.records] == ["JSONError decoding message. Ignoring"]
    finally:
        pipe.close()
