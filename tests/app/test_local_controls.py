"""AppTest on the tiny demo: controls a page labels as its own stay local, and a bad custom template is an error
beside its input while the preset templates are still scored (issue 13, "State you can trust")."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def _app(page: str, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception and not at.error, [e.value for e in [*at.exception, *at.error]]
    return at


def test_the_oracle_pages_draw_radio_leaves_the_global_protocol_alone(tiny_demo):
    at = AppTest.from_file(APP, default_timeout=180)
    at.query_params["ds"] = "demo_indoor"
    at.run()  # the Overview
    board = at.dataframe[0].value.set_index(["dataset", "run"])["AP3D"]
    at.switch_page("app_pages/oracle.py")
    at.run()
    assert at.sidebar.radio(key="w:protocol").value == "dataset-level"
    at.radio(key="or_draw").set_value("target-aware").run()
    assert not at.exception and not at.error
    assert at.session_state["protocol"] == "dataset-level"
    assert at.sidebar.radio(key="w:protocol").value == "dataset-level"
    assert "proto" not in at.query_params
    at.switch_page("app_pages/overview.py")
    at.run()
    assert at.sidebar.radio(key="w:protocol").value == "dataset-level"
    assert at.dataframe[0].value.set_index(["dataset", "run"])["AP3D"].equals(board)  # still dataset-level
    at.sidebar.radio(key="w:protocol").set_value("target-aware").run()  # what the global switch would have shown
    assert not at.dataframe[0].value.set_index(["dataset", "run"])["AP3D"].equals(board)


def _template_table(at: AppTest):
    for df in at.dataframe:
        v = df.value
        if {"template", "text", "AP3D"} <= set(v.columns):
            return v
    raise AssertionError("no template table on the page")


def test_a_template_without_a_slot_is_an_error_beside_the_input_and_the_presets_stay(tiny_demo):
    at = _app("app_pages/prompt_lab.py", ds="demo_outdoor")
    presets = _template_table(at)
    assert len(presets) == 15

    at.text_input(key="w:custom_template").input("a photo of a thing").run()
    assert not at.exception
    box = next(c for c in at.columns if any(t.key == "w:custom_template" for t in c.text_input))
    assert len(box.error) == 1 and "{}" in box.error[0].value  # the message sits in the input's column
    assert len(at.error) == 1  # and nowhere else
    still = _template_table(at)
    assert list(still["template"]) == list(presets["template"])
    assert still["AP3D"].tolist() == presets["AP3D"].tolist()

    text = "a {} seen from above."
    at.text_input(key="w:custom_template").input(text).run()
    assert not at.exception and not at.error
    table = _template_table(at)
    assert len(table) == 16
    custom = table[table["text"] == text]
    assert len(custom) == 1 and custom["template"].iloc[0] == text  # labelled with its text, not a hash


def test_missing_values_show_as_a_dash_in_the_prompt_lab_and_splits(tiny_demo):
    for page, ds in (("app_pages/prompt_lab.py", "demo_outdoor"), ("app_pages/splits.py", "demo_indoor")):
        at = _app(page, ds=ds)
        assert at.dataframe and all(d.proto.placeholder == "—" for d in at.dataframe), page
