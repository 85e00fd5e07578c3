"""A shared server reads only from its allowed roots and shows names from files and URLs as text.

Unit tests of ``ov3d_app.sources`` / ``ov3d_app.cache`` (roots, refusals that name only a basename and say the same
for existing and missing paths, symlinks resolved first), and AppTest runs of every page on a benchmark whose names
are markup (``tests/app/hostile.py``). The same in a real browser: ``test_security_browser.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ov3d_app import cache, sources, ui
from ov3d_core.errors import InputError
from tests.app import hostile
from tests.app.conftest import PAGES
from tests.app.test_pages import app

APP = str(Path(__file__).resolve().parents[2] / "app.py")
SECRET = "s3cr3t-Zx81"


@pytest.fixture(scope="module")
def hostile_config(tmp_path_factory):
    return hostile.build(tmp_path_factory.mktemp("hostile"))


@pytest.fixture()
def outside(tmp_path_factory):
    """A folder outside every allowed root, with a config whose content is a secret."""
    base = Path("/tmp") if Path("/tmp").is_dir() else tmp_path_factory.getbasetemp().parent
    d = Path(os.path.realpath(base)) / f"ov3d-outside-{os.getpid()}"
    d.mkdir(exist_ok=True)
    (d / "secret.yaml").write_text(f"datasets: {SECRET}\n# {SECRET}\n")
    assert not sources.is_under_roots(d, sources.allowed_roots())
    yield d
    for p in d.iterdir():
        p.unlink()
    d.rmdir()


# ================================================================================================ roots
def test_roots_come_from_the_flag_the_environment_or_the_working_directory(tmp_path):
    a, b, c = (tmp_path / n for n in "abc")
    env = {sources.APP_CACHE_ENV: str(tmp_path / "cache")}
    roots = sources.allowed_roots(["--data-root", str(a), f"--data-root={b}", "--other", "x"],
                                  {**env, sources.DATA_ROOT_ENV: str(c)})
    assert {a, b, c, tmp_path / "cache"} <= set(roots)
    assert Path.cwd().resolve() not in roots  # naming roots replaces the working directory
    plain = sources.allowed_roots([], env)
    assert Path.cwd().resolve() in plain and (tmp_path / "cache") in plain
    assert sources.server_data_roots(["-k", "data-root", "--data-root", str(a)]) == [str(a)]


def test_a_config_outside_the_roots_is_refused_by_basename_whether_it_exists_or_not(outside):
    messages = []
    for p in (outside / "secret.yaml", outside / "missing" / "secret.yaml"):
        with pytest.raises(InputError) as info:
            cache.config_key(str(p))
        messages.append(ui.error_text(info.value))
    assert messages[0] == messages[1]  # the page cannot tell which one exists
    assert messages[0].startswith("secret.yaml: ") and str(outside) not in messages[0]
    assert SECRET not in messages[0]


def test_a_symlink_is_judged_by_where_it_points(outside, tmp_path, mini_config):
    escape = tmp_path / "escape.yaml"
    escape.symlink_to(outside / "secret.yaml")
    with pytest.raises(InputError, match="outside them"):
        cache.config_key(str(escape))
    inside = tmp_path / "inside.yaml"
    inside.symlink_to(mini_config)
    assert cache.config_key(str(inside)).startswith(str(mini_config.resolve()) + "::")


def test_files_a_config_names_outside_the_roots_are_refused_without_their_path(outside, tmp_path):
    (outside / "gt.json").write_text('{"images": [], "categories": [], "annotations": []}')
    cfg = tmp_path / "bench.yaml"
    cfg.write_text(f"datasets:\n  - name: d\n    gt: {outside / 'gt.json'}\n")
    with pytest.raises(InputError) as info:
        cache.analysis(cache.config_key(cfg))
    text = ui.error_text(info.value)
    assert "datasets[0]" in text and "`gt`" in text and str(outside) not in text and "gt.json" not in text


def test_image_and_asset_paths_outside_the_roots_read_as_missing(outside, mini_config):
    (outside / "x.jpg").write_bytes(b"\xff\xd8\xff")
    assert cache.readable(outside / "x.jpg") is None
    assert cache.readable(mini_config) == str(mini_config.resolve())
    assert cache.readable(mini_config.parent / "nope.jpg") is None


# ================================================================================================ pages
def shown_texts(at: AppTest) -> list[str]:
    """Every string of the run that Streamlit renders as markdown: text elements, messages, labels, options."""
    out = []
    for kind in ("markdown", "caption", "subheader", "header", "title", "error", "warning", "info", "success"):
        out += [e.value for e in at.get(kind)]
    for kind in ("button", "metric", "expander", "toggle", "checkbox", "radio", "selectbox", "multiselect",
                 "text_input", "slider", "select_slider", "tab"):
        for e in at.get(kind):
            out.append(getattr(e, "label", "") or "")
            if kind == "radio":
                out += list(e.options)
    return out


@pytest.mark.parametrize("page", [*PAGES, "app_pages/data_source.py"])
def test_markup_in_names_is_shown_as_text_on_every_page(tiny_demo, hostile_config, page):
    at = app(page, src="config", cfg=str(hostile_config), cat=hostile.CAT_IMG, run=hostile.RUN)
    assert not at.exception, [e.value for e in at.exception]
    texts = shown_texts(at)
    for t in texts:
        for bad in hostile.ALL:
            assert bad not in t, f"{bad!r} rendered raw in {t!r}"
    assert at.session_state["dataset"] == hostile.DATASET
    if page.endswith("overview.py"):  # the names are on the page, escaped
        joined = "\n".join(texts)
        for name in (hostile.CAT_IMG, hostile.RUN, hostile.DATASET, hostile.NAME, hostile.DESCRIPTION):
            assert ui.md(name) in joined, name


def test_markup_in_url_parameters_and_pinned_titles_is_text(tiny_demo, hostile_config):
    at = app("app_pages/overview.py", src="config", cfg=str(hostile_config), cat=hostile.CAT_META)
    [b for b in at.sidebar.button if b.label == "Pin this view"][0].click().run()
    at.sidebar.toggle(key="w:presentation").set_value(True).run()
    assert not at.exception
    texts = shown_texts(at)
    assert any(t.startswith("1 / 1 · Overview") and ui.md(hostile.CAT_META) in t for t in texts)
    assert not any(hostile.CAT_META in t for t in texts)
    assert all(not m.proto.allow_html for m in at.markdown if "·" in m.value)  # no HTML in the title


def test_error_messages_name_the_basename_and_never_the_content(tiny_demo, outside, tmp_path):
    inside = tmp_path / "typed.yaml"
    inside.write_text(f"datasets: {SECRET}\n")
    for cfg in (outside / "secret.yaml", inside):
        at = app(None, src="config", cfg=str(cfg))
        assert not at.exception
        errors = [e.value for e in at.error]
        assert errors and all(SECRET not in e and str(cfg.parent) not in e for e in errors), errors
        assert any(ui.md(cfg.name) in e for e in errors)


def test_inert_figure_escapes_markup_and_leaves_typed_arrays_alone():
    """Names with Plotly links become text; numeric data held as plotly's typed-array dicts (a figure rebuilt from
    ``to_dict()``, as the 3D view's memo does) is not read as names, and a figure without markup is not copied."""
    import numpy as np
    import plotly.graph_objects as go

    bar = go.Figure(go.Bar(x=['<a href="https://x.example">a</a>', "b"], y=[1, 2]))
    safe = ui.inert_figure(bar)
    assert safe is not bar and safe.layout.xaxis.ticktext[0].startswith("&lt;a")
    assert list(safe.data[0].x) == list(bar.data[0].x)  # selections still return the real names
    pts = go.Figure(go.Figure(go.Scatter3d(x=np.arange(3.0), y=np.arange(3.0), z=np.arange(3.0))).to_dict())
    assert isinstance(pts.data[0].x, dict)
    assert ui.inert_figure(pts) is pts
