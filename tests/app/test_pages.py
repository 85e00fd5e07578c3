"""AppTest: every page renders on the tiny demo, and the main widgets change what is shown.

AppTest renders one page per run, starting from app.py (``switch_page`` + ``run``). Charts and selection events
need a browser (``test_browser.py``); here state is driven through widgets and ``session_state``.
"""

from __future__ import annotations

import numpy as np
import pytest
from pathlib import Path

from streamlit.testing.v1 import AppTest

from tests.app.conftest import PAGES

TIMEOUT = 180
APP = str(Path(__file__).resolve().parents[2] / "app.py")


def app(page: str | None = None, **query) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    if page is not None:
        at.switch_page(page)
        at.run()
    return at


def problems(at: AppTest) -> list[str]:
    return [e.value for e in at.exception] + [e.value for e in at.error]


def metric(at: AppTest, label: str) -> str:
    for m in at.metric:
        if m.label == label:
            return m.value
    raise AssertionError(f"no metric {label!r}; have {[m.label for m in at.metric]}")


@pytest.mark.parametrize("page", PAGES)
def test_every_page_renders_on_the_tiny_demo(tiny_demo, page):
    at = app(page)
    assert not problems(at), problems(at)
    assert at.title, "page has no title"


def test_protocol_toggle_changes_the_ap_shown(tiny_demo):
    at = app(None)
    at.toggle(key="lb_all").set_value(True).run()  # every dataset in the leaderboard
    assert not problems(at)
    assert at.dataframe[0].value["dataset"].nunique() == 3
    before = at.dataframe[0].value.set_index(["dataset", "run"])["AP3D"]
    at.sidebar.radio(key="w:protocol").set_value("target-aware").run()
    assert not problems(at)
    assert at.query_params["proto"] == "target-aware"
    after = at.dataframe[0].value.set_index(["dataset", "run"])["AP3D"]
    assert (after >= before - 1e-9).all()  # the oracle only removes false positives
    ds, run = (after - before).idxmax()
    assert after[(ds, run)] > before[(ds, run)] + 1e-6
    at.session_state["dataset"] = ds  # a programmatic change (as a leaderboard click makes) moves the widgets too
    at.session_state["focus_run"] = run
    at.run()
    assert at.sidebar.selectbox(key="w:dataset").value == ds
    oracle = metric(at, "mAP3D")
    assert oracle == f"{after[(ds, run)]:.2f}"
    at.sidebar.radio(key="w:protocol").set_value("dataset-level").run()
    assert metric(at, "mAP3D") == f"{before[(ds, run)]:.2f}" != oracle


def test_score_threshold_changes_counts(tiny_demo):
    at = app(None, ds="demo_indoor")
    n_before = at.dataframe[1].value["n_pred"].sum()  # per-category table
    at.sidebar.slider(key="w:min_score").set_value(0.6).run()
    assert not problems(at)
    n_after = at.dataframe[1].value["n_pred"].sum()
    assert n_after < n_before
    assert at.query_params["thr"] == "0.6"


def test_url_reproduces_a_view(tiny_demo):
    at = app("app_pages/scene.py", ds="demo_outdoor", proto="target-aware", cls="car", err="FP", thr="0.2")
    assert not problems(at)
    assert at.sidebar.selectbox(key="w:dataset").value == "demo_outdoor"
    assert at.sidebar.radio(key="w:protocol").value == "target-aware"
    assert at.multiselect(key="w:f_classes").value == ["car"]
    assert at.multiselect(key="w:f_errors").value == ["FP"]
    assert at.session_state["min_score"] == pytest.approx(0.2)


def test_bad_and_unknown_url_params_fall_back_to_defaults(tiny_demo):
    at = app(None, ds="no_such_dataset", proto="oracle", thr="7", utm="x", runs="ghost")
    assert not problems(at)
    assert at.sidebar.selectbox(key="w:dataset").value == "demo_indoor"
    assert at.sidebar.radio(key="w:protocol").value == "dataset-level"
    assert at.session_state["runs"] == []


def test_scene_inspector_steps_through_filtered_images(tiny_demo):
    at = app("app_pages/scene.py", ds="demo_indoor")
    first = at.session_state["image_id"]
    at.button[1].click().run()  # Next
    assert not problems(at)
    second = at.session_state["image_id"]
    assert second != first
    at.button[0].click().run()  # Previous
    assert at.session_state["image_id"] == first
    at.toggle(key="w:show_3d").set_value(True).run()
    assert not problems(at)
    assert any("points" in c.value for c in at.caption)


def test_scene_filters_to_no_image_shows_a_hint(tiny_demo):
    at = app("app_pages/scene.py", ds="demo_indoor", err="TP", thr="0.99")
    assert not problems(at)
    assert any("No image matches" in i.value for i in at.info)


def test_confusion_cell_opens_a_gallery(tiny_demo):
    at = app("app_pages/confusion.py", ds="demo_indoor", run="ovmono_like")
    top = at.dataframe[0].value
    assert len(top), "the demo has confusions"
    cell = (top.iloc[0]["gt_class"], top.iloc[0]["pred_class"])
    at.session_state["conf_cell"] = cell
    at.run()
    assert not problems(at)
    assert any(f"{cell[0]} → {cell[1]}" in s.value for s in at.subheader)
    opens = [b for b in at.button if b.label == "Open"]
    assert opens
    at.radio(key="w:conf_level").set_value("super").run()
    assert not problems(at)
    assert any(m.label.startswith("Confusions crossing") for m in at.metric)
    at.radio(key="w:conf_level").set_value("fine").run()
    [b for b in at.button if b.label == "Open"][0].click().run()  # opens the scene inspector on that box
    assert not problems(at)
    assert at.session_state["highlight"].startswith("pred|ovmono_like|")
    assert at.title[0].value == "Scene inspector"
    assert at.selectbox(key="w:image_id").value == at.session_state["image_id"]


def test_oracle_lists_removed_predictions(tiny_demo):
    at = app("app_pages/oracle.py", ds="demo_indoor", run="detany_like")
    assert not problems(at)
    removed = int(metric(at, "Predictions removed"))
    assert removed > 0
    assert float(metric(at, "mAP3D target-aware")) >= float(metric(at, "mAP3D dataset-level"))


def test_prompt_lab_template_change_rescores(tiny_demo):
    at = app("app_pages/prompt_lab.py", ds="demo_outdoor", tpl="U1,S1,O4")
    assert not problems(at)
    table = at.dataframe[1].value.set_index("template")
    assert list(table.index) == ["U1", "S1", "O4"]
    sel = at.selectbox(key="w:template")
    for tid in ("O4", "U1"):
        sel.set_value(tid).run()
        assert not problems(at)
        assert metric(at, f"mAP3D with {tid}") == f"{table.loc[tid, 'AP3D']:.2f}"
    at.slider(key="w:theta").set_value(0.9).run()  # a strict θ keeps fewer boxes
    assert not problems(at)
    assert at.dataframe[1].value["n_kept"].sum() < table["n_kept"].sum()


def test_pin_a_view_and_present_it(tiny_demo):
    at = app("app_pages/oracle.py", ds="demo_outdoor")
    pin = [b for b in at.sidebar.button if b.label == "Pin this view"][0]
    pin.click().run()
    views = at.session_state["saved_views"]
    assert len(views) == 1 and views[0]["page"] == "oracle" and views[0]["params"]["ds"] == "demo_outdoor"
    at.sidebar.selectbox(key="w:dataset").set_value("demo_indoor").run()
    at.sidebar.toggle(key="w:presentation").set_value(True).run()
    assert not problems(at)
    assert any(m.value.startswith("1 / 1 · Oracle") for m in at.markdown)  # the pinned view's title (escaped)
    [b for b in at.button if b.label == "Next"][0].click().run()
    assert not problems(at)
    assert at.session_state["dataset"] == "demo_outdoor"  # the pinned view's state is back


def test_a_bad_config_path_is_an_error_message_not_a_traceback(tiny_demo, tmp_path):
    at = app(None, src="config", cfg=str(tmp_path / "missing.yaml"))
    assert not at.exception
    assert any("missing.yaml" in e.value and "no such file" in e.value for e in at.error)
    bad = tmp_path / "bad.yaml"
    bad.write_text("datasets:\n  - name: x\n    gt: 3\n")
    at.sidebar.text_input(key="w:config_path").set_value(str(bad)).run()
    assert not at.exception
    assert any("`gt`" in e.value for e in at.error)
    at.sidebar.radio(key="w:source").set_value("demo").run()  # the rest of the app keeps working
    assert not problems(at) and at.dataframe


@pytest.mark.parametrize("page", ["app_pages/overview.py", "app_pages/scene.py", "app_pages/oracle.py",
                                  "app_pages/splits.py"])
def test_pages_on_a_user_benchmark_config(mini_config, page):
    at = app(page, src="config", cfg=str(mini_config))
    assert not problems(at), problems(at)
    assert at.sidebar.selectbox(key="w:dataset").value == "MiniIndoor"


def test_prompt_robustness_toggle_fills_the_three_axis_table(tiny_demo):
    """Off: no prompt number is invented (NaN). On: 1 - the mean CV over datasets, for the runs with a prompt
    response of their own: the closed-vocabulary run remapped (cubercnn_star*, beside cubercnn_star: the "Remapped
    runs" toggle is on with the demo's encoder) with the same CV the prompt lab shows for it, and the
    prompt-conditioned run from its per-template files; the others stay NaN."""
    at = app("app_pages/prompt_lab.py", ds="demo_outdoor", run="cubercnn_star")  # the 15 preset templates
    assert not problems(at)
    assert at.session_state["focus_run"] == "cubercnn_star"
    cv_outdoor = metric(at, "CV (σ/μ)")
    at.switch_page("app_pages/overview.py")
    at.run()
    assert not problems(at)

    def axes():
        return next(d.value for d in at.dataframe if "prompt_robustness" in d.value.columns).set_index("run")

    assert "cubercnn_star*" in axes().index and "cubercnn_star" in axes().index
    assert axes()["prompt_robustness"].isna().all()
    at.toggle(key="axes_prompts").set_value(True).run()
    assert not problems(at)
    from ov3d_core.analysis import Analysis, RemapSpec, View

    a = Analysis.from_yaml(tiny_demo / "benchmark.yaml")
    cvs = [a.prompt_sensitivity(View(d, "cubercnn_star", remap=RemapSpec())).cv for d in a.datasets]
    assert f"{cvs[a.datasets.index('demo_outdoor')]:.3f}" == cv_outdoor
    got = axes()
    assert got.loc["cubercnn_star*", "prompt_robustness"] == pytest.approx(1 - np.mean(cvs), rel=1e-12)
    own = [a.prompt_sensitivity(View(d, "promptable")).cv for d in a.datasets]
    assert got.loc["promptable", "prompt_robustness"] == pytest.approx(1 - np.mean(own), rel=1e-12)
    assert got.drop(index=["cubercnn_star*", "promptable"])["prompt_robustness"].isna().all()
