"""Issue 25, items 4 and 11 on the Data source page.

4. A folder outside the allowed roots is refused, and the first thing the page then says is how to allow it (the
   server's ``streamlit run app.py -- --data-root DIR`` or ``OV3D_DATA_ROOT``), in the same words whether the folder
   exists or not, naming no more than the refusal does (README, "What a visitor cannot reach").
11. Paths in the page's captions are code spans shown as typed: no ``\\_`` inside them.
"""

from __future__ import annotations

import re

import pytest

from ov3d_app import sources
from tests.app.test_pages import app, problems

HINT_START = "**This server reads only from its allowed folders**"


def _scan(folder: str):
    at = app("app_pages/data_source.py")
    at.text_input(key="scan_folder").input(folder).run()
    at.button(key="scan_go").click().run()
    assert not at.exception
    return at


def _messages(at) -> list[tuple[str, str]]:
    """Every alert of the page, in the order shown."""
    return [(type(e).__name__, e.value) for e in at.main if type(e).__name__ in ("Error", "Info", "Warning")]


@pytest.mark.parametrize("folder", ["/etc", "/no_such_folder_ov3d/deeper"])
def test_a_refused_folder_is_answered_first_with_how_to_allow_it(tiny_demo, folder):
    at = _scan(folder)
    msgs = _messages(at)
    first = next(i for i, (_, text) in enumerate(msgs) if "outside" in text or HINT_START in text)
    kind, text = msgs[first]
    assert kind == "Info" and text.startswith(HINT_START), msgs
    assert "`streamlit run app.py -- --data-root DIR`" in text and "`OV3D_DATA_ROOT=DIR" in text
    assert folder not in text and "passwd" not in text
    refusal = [t for k, t in msgs[first + 1:] if k == "Error"]
    assert len(refusal) == 1 and "outside" in refusal[0]  # the refusal itself follows, as before


def test_the_hint_reads_the_same_whether_the_folder_exists_or_not(tiny_demo):
    a, b = (_messages(_scan(f)) for f in ("/etc", "/no_such_folder_ov3d"))
    hint = [t for _, t in a if t.startswith(HINT_START)]
    assert hint and hint == [t for _, t in b if t.startswith(HINT_START)]


def test_a_folder_inside_the_roots_gets_no_hint(mini_config):
    at = _scan(str(mini_config.parent))
    assert not problems(at), problems(at)
    assert not [t for _, t in _messages(at) if t.startswith(HINT_START)]


def test_paths_in_captions_are_code_spans_without_escapes(tiny_demo, mini_config):
    at = _scan(str(mini_config.parent))
    roots = next(c.value for c in at.caption if c.value.startswith("Folders this server reads from"))
    for r in sources.allowed_roots():
        assert f"`{sources.display_path(r)}`" in roots
    assert "_" in roots  # the test's app cache folder is named app_cache...: an underscore to escape or not
    written = next(c.value for c in at.caption if c.value.startswith("Written to "))
    spans = re.findall(r"`([^`]+)`", roots + written)
    assert spans and not [s for s in spans if "\\" in s], spans
