"""The sidebar shows what the page computes, after any source, dataset or run change.

AppTest reads a widget's value from the server's session state, which is not what a browser shows: a widget that
was not drawn in the previous run is mounted afresh and shows what the server sends with it (its ``default``, or
the ``value`` when ``set_value`` is on). ``Screen`` applies that rule to every run's element tree, so these tests
check the values a person sees against the ``Context`` the pages score (the browser check is in
``test_state_browser.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")
SIDEBAR = ("w:source", "w:dataset", "w:protocol", "w:min_score", "w:iou")


def _decode(w):
    """The value a freshly mounted widget shows, from its proto (the sidebar's kinds of widget)."""
    p = w.proto
    kind = type(p).__name__
    if kind in ("Radio", "Selectbox"):
        return p.raw_value if p.set_value else (p.options[p.default] if p.HasField("default") else None)
    if kind == "Slider":
        if p.options:  # select_slider: the formatted option when set, else an index into them
            return p.raw_value[0] if p.set_value else p.options[int(p.default[0])]
        return (p.value if p.set_value else p.default)[0]
    if kind == "MultiSelect":
        return list(p.raw_values) if p.set_value else [p.options[i] for i in p.default]
    raise AssertionError(f"no decoder for {kind}")


class Screen:
    """An AppTest session plus what a browser would show for the widgets of ``keys``."""

    def __init__(self, keys=SIDEBAR, **query):
        self.at = AppTest.from_file(APP, default_timeout=180)
        for k, v in query.items():
            self.at.query_params[k] = v
        self.keys = keys
        self.shown: dict[str, object] = {}
        self.run()

    def _widgets(self):
        out = {}
        for kind in ("radio", "selectbox", "slider", "select_slider", "multiselect"):
            for w in getattr(self.at.sidebar, kind):
                if w.key in self.keys:
                    out[w.key] = w
        return out

    def run(self, user: tuple[str, object] | None = None):
        """One script run; ``user``: (key, value) the person just chose (the browser shows it already)."""
        if user is not None:
            key, value = user
            w = self._widgets()[key]
            w.set_value(value)
            kind = type(w.proto).__name__
            self.shown[key] = w.options[w.index] if kind in ("Radio", "Selectbox") else value
        self.at.run()
        assert not self.at.exception, [e.value for e in self.at.exception]
        now = self._widgets()
        for key in list(self.shown):
            if key not in now:  # not drawn: unmounted in the browser
                del self.shown[key]
        for key, w in now.items():
            if key not in self.shown or w.proto.set_value:
                self.shown[key] = _decode(w)
        return self

    def text(self, key: str, value: str):
        self.at.sidebar.text_input(key=key).input(value)
        return self.run()

    @property
    def ctx(self):
        return self.at.session_state["_ctx"]

    def assert_agree(self):
        """The sidebar as shown == the view the pages compute."""
        ctx = self.ctx
        assert ctx is not None, [e.value for e in self.at.error]
        assert self.shown["w:protocol"] == ctx.protocol
        assert self.shown["w:min_score"] == pytest.approx(ctx.min_score)
        assert float(self.shown["w:iou"]) == pytest.approx(ctx.iou)
        assert self.shown["w:dataset"] == ctx.dataset


SETTINGS = {"proto": "target-aware", "thr": "0.3", "iou": "0.5"}


def test_sidebar_agrees_with_the_scores_after_switching_demo_to_a_config(tiny_demo, mini_config):
    s = Screen(**SETTINGS)
    s.assert_agree()
    s.run(user=("w:source", "config"))       # the path field is empty: the page stops, the sidebar shrinks
    assert s.ctx is None and "w:protocol" not in s.shown
    s.text("w:config_path", str(mini_config))
    s.assert_agree()
    assert (s.ctx.protocol, s.ctx.min_score, s.ctx.iou) == ("target-aware", 0.3, 0.5)  # the settings stayed
    assert s.ctx.dataset == "MiniIndoor"
    shown = [m.value for m in s.at.markdown if "protocol" in m.value]
    assert any(v.endswith("· target-aware protocol") for v in shown), shown  # the page says what it scores


def test_sidebar_agrees_after_dataset_run_and_source_changes(tiny_demo, mini_config):
    s = Screen(src="config", cfg=str(mini_config), **SETTINGS)
    s.assert_agree()
    s.run(user=("w:dataset", "MiniOutdoor"))
    s.assert_agree()
    runs = s.at.sidebar.multiselect(key="w:runs")
    runs.set_value(["sloppy"])
    s.run()
    assert s.ctx.runs == ("sloppy",)
    s.assert_agree()
    s.run(user=("w:protocol", "dataset-level"))
    s.run(user=("w:source", "demo"))         # back to the demo: its first dataset, the settings kept
    s.assert_agree()
    assert s.ctx.protocol == "dataset-level" and s.ctx.dataset == "demo_indoor" and s.ctx.runs == s.ctx.all_runs


def test_a_source_switch_forgets_the_previous_benchmarks_selection(tiny_demo, mini_config):
    s = Screen(src="config", cfg=str(mini_config), cat="chair", img="100", run="good", cls="chair", **SETTINGS)
    ss = s.at.session_state
    assert (ss["category"], ss["image_id"], ss["focus_run"]) == ("chair", 100, "good")  # from the URL
    s.run(user=("w:source", "demo"))
    assert (ss["category"], ss["image_id"], ss["focus_run"], ss["f_classes"]) == (None, None, None, [])
    assert ss["protocol"] == "target-aware" and ss["min_score"] == 0.3  # settings are not the benchmark's
    s.assert_agree()
